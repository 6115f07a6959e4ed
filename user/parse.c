// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * parse.c - the one number parser of the library and its CLI:
 * aa__parse_u64() reads the tunables (tunables.c, from options, the
 * environment and `arena-alloc tune`), the numeric environment knobs
 * (aa__env_u64(): fault.c's ARENA_ALLOC_FAULT_*_EVERY, defer.c's
 * ARENA_ALLOC_GP_FALLBACK) and the CLI's numbers and sizes. Calls nothing
 * of the library but messages.
 */
#include <stdlib.h>
#include "internal.h"

int aa__parse_u64(const char *s, int base, bool sized, __u64 *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	bool big;
	char *end;

	errno = 0;
	v = strtoull(s, &end, base);
	big = errno == ERANGE;
	/* strtoull() negates "-N", also behind white space */
	if (end == s || (errno && !big) || strchr(s, '-'))
		return -EINVAL;
	if (sized) {
		switch (*end) {
		case 'K': case 'k': shift = 10; end++; break;
		case 'M': case 'm': shift = 20; end++; break;
		case 'G': case 'g': shift = 30; end++; break;
		}
	}
	if (*end)
		return -EINVAL;
	if (big || v > (~0ULL >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int aa__env_u64(const char *name, __u64 *out)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return 0;
	if (aa__parse_u64(v, 10, false, out)) {
		pr_warn("%s=%s is not a number\n", name, v);
		return -EINVAL;
	}
	return 1;
}
