// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * size_class.c - the size classes from userspace: a class's object size
 * and span pages, a request size's class, all from aa_hit.h's table,
 * which the BPF side compiles too. Pure: reads no heap; calls nothing of
 * the library.
 */
#include "internal.h"
#include "aa_hit.h"

AA_API __u32 aa_class_size(__u32 cls)
{
	return cls < AA_NR_CLASSES ? aa_classes[cls].size : 0;
}

AA_API __u32 aa_class_span_pages(__u32 cls)
{
	return cls < AA_NR_CLASSES ? aa_classes[cls].pages : 0;
}

AA_API int aa_size_class(__u64 size)
{
	if (size == 0 || size > AA_MAX_CLASS_SIZE)
		return aa_err(-EINVAL);
	return __aa_size_class(size);
}
