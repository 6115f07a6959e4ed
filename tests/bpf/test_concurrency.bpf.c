// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_concurrency.bpf.c - programs for the concurrency tests:
 *  - df_free: two threads on two CPUs free the same array of objects in
 *    lockstep (each waits until the other reached the same index), so
 *    every object gets two simultaneous frees.
 *  - sf_free: frees one pointer over and over (a stale pointer whose
 *    chunk is trimmed and grown again meanwhile).
 * Loops use bpf_loop() (test_embed.bpf.c is the object that uses bpf_for()).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_concurrency.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

/* Index each df_free thread has reached. */
__u32 __arena df_progress[2];

struct df_ctx {
	__u64 __arena *arr;
	__s64 __arena *res;
	__u32 me, i;
	__u64 timeouts;
};

static long df_wait(__u64 k, void *data)
{
	struct df_ctx *c = data;

	/* stop once the other thread is at our index or past it */
	return *(volatile __u32 __arena *)&df_progress[(c->me ^ 1) & 1] >= c->i;
}

static long df_step(__u64 i, void *data)
{
	struct df_ctx *c = data;
	__u32 idx = i & (DF_MAX - 1);

	c->i = i;
	if (bpf_loop(1 << 20, df_wait, c, 0) == 1 << 20)
		c->timeouts++;
	c->res[idx] = aa_free(c->arr[idx]);
	*(volatile __u32 __arena *)&df_progress[c->me & 1] = i + 1;
	return 0;
}

SEC("syscall")
int df_free(struct df_args *a)
{
	struct df_ctx c = {
		.arr = (__u64 __arena *)a->arr,
		.res = (__s64 __arena *)a->res,
		.me = a->me,
	};

	bpf_loop(a->n < DF_MAX ? a->n : DF_MAX, df_step, &c, 0);
	a->waits_timed_out = c.timeouts;
	return 0;
}

static long sf_step(__u64 i, void *data)
{
	struct sf_args *c = data;

	if (aa_free(c->ptr))
		c->refused++;
	else
		c->accepted++;
	return 0;
}

SEC("syscall")
int sf_free(struct sf_args *a)
{
	struct sf_args c = { .ptr = a->ptr };

	bpf_loop(a->n < SF_MAX ? a->n : SF_MAX, sf_step, &c, 0);
	a->accepted = c.accepted;
	a->refused = c.refused;
	return 0;
}
