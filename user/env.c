// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * env.c - the numeric environment knobs besides the tunables
 * (tunables.c reads ARENA_ALLOC_<KEY>, heap.c the flags): one parser,
 * aa__env_u64(), for fault.c's ARENA_ALLOC_FAULT_*_EVERY and defer.c's
 * ARENA_ALLOC_GP_FALLBACK. Calls nothing of the library but messages.
 */
#include <stdlib.h>
#include "internal.h"

int aa__env_u64(const char *name, __u64 *out)
{
	const char *v = getenv(name);
	char *end;

	if (!v || !*v)
		return 0;
	errno = 0;
	*out = strtoull(v, &end, 0);
	/* strtoull() negates "-N" (also behind white space) */
	if (errno || *end || strchr(v, '-')) {
		pr_warn("%s=%s is not a number\n", name, v);
		return -EINVAL;
	}
	return 1;
}
