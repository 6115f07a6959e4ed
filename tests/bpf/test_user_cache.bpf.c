// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_user_cache.bpf.c - the BPF side of the user-cache tests:
 *  - uc_churn (syscall, one per CPU): allocates and frees through the
 *    inline API, counting NULLs and refused frees (objects cross between
 *    the sides in the stress suite, test_stress.c).
 * Loops use bpf_loop().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_user_cache.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

/* What a round holds, per CPU (off the stack: the allocator's frames
 * share its 512 bytes) */
__u64 __arena uc_held[64][UC_KEEP];

struct churn_ctx {
	struct uc_churn_args a;
	__u64 __arena *held;
	__u32 seed;
};

static __u32 next_rand(struct churn_ctx *c)
{
	c->seed = c->seed * 1103515245 + 12345;
	return c->seed >> 16;
}

/* Step i of a run: rounds of UC_KEEP allocations, then their frees. */
static long churn_step(__u64 i, void *data)
{
	struct churn_ctx *c = data;
	__u64 __arena *slot = &c->held[i % UC_KEEP];
	__u64 p;

	if ((i / UC_KEEP) & 1) {
		p = *slot;
		if (p && aa_free((void __arena *)p))
			c->a.refused++;
		return 0;
	}
	p = (__u64)aa_malloc(16 + (next_rand(c) & 31) * 16);
	*slot = p;
	if (p)
		c->a.allocs++;
	else
		c->a.nulls++;
	return 0;
}

SEC("syscall")
int uc_churn(struct uc_churn_args *a)
{
	struct churn_ctx c = {};

	c.seed = bpf_get_prandom_u32();
	c.held = uc_held[bpf_get_smp_processor_id() & 63];
	bpf_loop(a->rounds * 2 * UC_KEEP, churn_step, &c, 0);
	a->allocs = c.a.allocs;
	a->nulls = c.a.nulls;
	a->refused = c.a.refused;
	return 0;
}
