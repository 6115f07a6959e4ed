// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* An embedder's loader: aa_shared.h for its skeleton (the library's
 * globals), before arena_alloc.h here; the order is free. In C and C++. */
#include "aa_shared.h"
#include "arena_alloc.h"

int main(void)
{
	struct aa_root r;

	return sizeof(r.stats) == sizeof(struct aa_heap_stats) && aa_heap__flags(NULL) == 0 ? 0 : 1;
}
