// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_user_cache.bpf.c - the BPF side of the user-cache tests:
 *  - uc_churn (syscall, one per CPU): allocates and frees through the
 *    inline API, counting NULLs and refused frees; with xchg, it also
 *    trades objects with userspace threads through uc_slots[]: an object
 *    userspace left there is freed here, one of ours goes in its place.
 * Loops use bpf_loop().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_user_cache.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

/* Exchange slots: 0 empty; bit 0 set: a BPF object for userspace to
 * free; else a userspace object for BPF to free (objects are 16-byte
 * aligned, so bit 0 is free to say whose). */
__u64 __arena uc_slots[UC_SLOTS];
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

static long xchg_step(__u64 i, void *data)
{
	struct churn_ctx *c = data;
	__u64 __arena *slot = &uc_slots[(i + next_rand(c)) & (UC_SLOTS - 1)];
	__u64 v = *slot, p;

	if (v & 1)
		return 0;	/* ours, waiting for userspace */
	if (v) {
		if (__sync_val_compare_and_swap(slot, v, 0) != v)
			return 0;	/* userspace took it back meanwhile */
		if (aa_free((void __arena *)v))
			c->a.refused++;
		else
			c->a.taken++;
	}
	p = (__u64)aa_malloc(16 + (next_rand(c) & 31) * 16);
	if (!p) {
		c->a.nulls++;
		return 0;
	}
	c->a.allocs++;
	if (__sync_val_compare_and_swap(slot, 0, p | 1) == 0)
		c->a.given++;
	else if (aa_free((void __arena *)p))
		c->a.refused++;
	return 0;
}

static long round_step(__u64 i, void *data)
{
	struct churn_ctx *c = data;
	__u64 p;
	int k;

	for (k = 0; k < UC_KEEP; k++) {
		p = (__u64)aa_malloc(16 + (next_rand(c) & 31) * 16);
		c->held[k] = p;
		if (p)
			c->a.allocs++;
		else
			c->a.nulls++;
	}
	for (k = 0; k < UC_KEEP; k++)
		if (c->held[k] && aa_free((void __arena *)c->held[k]))
			c->a.refused++;
	if (c->a.xchg)
		bpf_loop(8, xchg_step, c, 0);
	return 0;
}

SEC("syscall")
int uc_churn(struct uc_churn_args *a)
{
	struct churn_ctx c = {};

	c.a.xchg = a->xchg;
	c.seed = bpf_get_prandom_u32();
	c.held = uc_held[bpf_get_smp_processor_id() & 63];
	bpf_loop(a->rounds, round_step, &c, 0);
	a->allocs = c.a.allocs;
	a->nulls = c.a.nulls;
	a->refused = c.a.refused;
	a->taken = c.a.taken;
	a->given = c.a.given;
	return 0;
}
