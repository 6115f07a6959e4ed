// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_irq_nulls.bpf.c - allocations in hard-IRQ context against long
 * heap-lock holds on another CPU:
 *  - in_irq (perf_event, CPU in_cpu only): allocates one 64-B object and
 *    puts it in a ring, for the worker to free; counts runs and NULLs;
 *  - in_worker (syscall, the other CPU): frees what the ring holds, and
 *    makes large allocations and bulk calls, the holds of the heap lock
 *    that an IRQ-context caller may have to wait for.
 * Loops use bpf_loop().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_irq_nulls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

__u64 __arena in_ring[IN_RING];
__u64 __arena in_bulk[IN_BULK];

__u32 in_cpu;			/* in: the CPU whose IRQs allocate */
__u64 in_runs, in_nulls;	/* out */
__u32 in_next;

SEC("perf_event")
int in_irq(void *ctx)
{
	__u64 p, old;

	if (bpf_get_smp_processor_id() != in_cpu)
		return 0;
	in_runs++;
	p = (__u64)aa_malloc(64);
	if (!p) {
		in_nulls++;
		return 0;
	}
	old = __sync_lock_test_and_set(&in_ring[in_next++ & (IN_RING - 1)], p);
	if (old)
		aa_free(old);	/* the worker fell behind: ours to free */
	return 0;
}

struct in_ctx {
	struct in_worker_args a;
};

static long free_step(__u64 i, void *data)
{
	struct in_ctx *c = data;
	__u64 old = __sync_lock_test_and_set(&in_ring[i & (IN_RING - 1)], 0);

	if (!old)
		return 0;
	if (aa_free(old))
		c->a.errors++;
	else
		c->a.freed++;
	return 0;
}

static long round_step(__u64 i, void *data)
{
	struct in_ctx *c = data;
	void __arena *big;
	int got;

	bpf_loop(IN_RING, free_step, c, 0);
	big = aa_malloc(IN_BIG);
	if (big) {
		c->a.big++;
		aa_free(big);
	}
	got = aa_malloc_bulk(in_bulk, IN_BULK, 64);
	if (got > 0) {
		c->a.bulk += got;
		if (aa_free_bulk(in_bulk, got) != got)
			c->a.errors++;
	}
	return 0;
}

SEC("syscall")
int in_worker(struct in_worker_args *a)
{
	struct in_ctx c = {};

	bpf_loop(a->rounds, round_step, &c, 0);
	a->freed = c.a.freed;
	a->big = c.a.big;
	a->bulk = c.a.bulk;
	a->errors = c.a.errors;
	return 0;
}
