// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * size_class.c - the size classes from userspace: a class's object size
 * and span pages, a request size's class, all from the generated table
 * (include/aa_size_classes.h) that the BPF side compiles too. Pure: reads
 * no heap; calls nothing of the library.
 */
#include "internal.h"

#define AA_CLASS_ROW(c, sz, pg, ob, ba, ca, rc) { sz, pg },
static const struct { __u32 size, pages; } class_table[AA_NR_CLASSES] = {
	AA_SIZE_CLASSES(AA_CLASS_ROW)
};
static const __u8 class_index[AA_CLASS_INDEX_LEN] = { AA_CLASS_INDEX };

AA_API __u32 aa_class_size(__u32 cls)
{
	return cls < AA_NR_CLASSES ? class_table[cls].size : 0;
}

AA_API __u32 aa_class_span_pages(__u32 cls)
{
	return cls < AA_NR_CLASSES ? class_table[cls].pages : 0;
}

AA_API int aa_size_class(__u64 size)
{
	if (size == 0 || size > AA_MAX_CLASS_SIZE)
		return aa_err(-EINVAL);
	return class_index[AA_CLASS_INDEX_OF(size)];
}
