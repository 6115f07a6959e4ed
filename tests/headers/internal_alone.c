// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* arena_alloc_internal.h alone (the tools' header: the API, the layout,
 * the syscall programs' arguments), in C and C++. */
#include "arena_alloc_internal.h"

int main(void)
{
	struct aa_op_args a = { .op = AA_OP_MALLOC, .n = 0, .size = 64, .arg = 0, .ptr = 0, .ret = 0 };

	return aa_heap__root(NULL) == NULL && aa_heap__call(NULL, &a) == -22 &&
	       AA_LAYOUT_VERSION > 0 ? 0 : 1;
}
