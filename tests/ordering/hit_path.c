// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hit_path.c - the userspace hit path of include/aa_hit.h, for the
 * ordering check (scripts/ordering-check.py, `make ordering-check`): built
 * with -DAA_ORDERING_CHECK, which keeps each ordering primitive of aa_hit.h
 * out of line under its own name, so that the assembly shows what it is
 * made of and where the hit path calls it. Never linked.
 */
#include "aa_hit.h"

__u64 aa_oc_hit_alloc(struct aa_cpu_cache *cc, __u32 c, __u64 size);
bool aa_oc_hit_free(struct aa_cpu_cache *cc, __u64 ptr, __u32 c);
void aa_oc_cache_release(struct aa_cpu_cache *cc);
int aa_oc_claim_object(const struct aa_fast *f, __u64 ptr);

__u64 aa_oc_hit_alloc(struct aa_cpu_cache *cc, __u32 c, __u64 size)
{
	return __aa_hit_alloc(cc, c, size);
}

bool aa_oc_hit_free(struct aa_cpu_cache *cc, __u64 ptr, __u32 c)
{
	return __aa_hit_free(cc, ptr, c);
}

void aa_oc_cache_release(struct aa_cpu_cache *cc)
{
	__aa_cache_release(cc);
}

int aa_oc_claim_object(const struct aa_fast *f, __u64 ptr)
{
	struct aa_seen s = { 0 };

	if (__aa_class_of(f, ptr, &s) < 0)
		return -1;
	return __aa_claim_object(f, ptr, &s, f->defer);
}
