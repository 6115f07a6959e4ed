// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_irq_nulls.bpf.c - allocations in hard-IRQ context against long
 * heap-lock holds on another CPU:
 *  - in_irq (perf_event, CPU in_cpu only): allocates one 64-B object and
 *    puts it in a ring, for the worker to free; counts runs and NULLs,
 *    the NULLs by the heap-lock hold behind them (judge_null());
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
__u64 in_held[IN_HELD_KINDS];	/* out: NULLs by the hold behind them */
__u64 in_held_max;		/* out: the longest hold behind a NULL, ns */
__u32 in_next;

struct hold {
	__u32 __arena *gen;
	__u32 g0;
	__u64 t0;
};

static long hold_step(__u64 i, void *data)
{
	struct hold *h = data;

	return *(volatile __u32 __arena *)h->gen != h->g0 ||
	       bpf_ktime_get_ns() - h->t0 >= IN_STALL_NS;
}

/*
 * After a NULL that came at t0 with lock_gen g0: if one hold of the heap
 * lock covered the whole call (lock_gen unchanged, the lock still taken),
 * wait for it to end, IN_STALL_NS after t0 at most, and file the NULL by
 * how long the hold lasted (in_held[]). A hold that long is no bounded
 * hold of the allocator's: its holder's CPU stopped (a vCPU the emulator
 * or the host did not run).
 */
static void judge_null(struct aa_root __arena *r, __u32 g0, __u64 t0)
{
	struct hold h = { .gen = &r->lock_gen, .g0 = g0, .t0 = t0 };
	__u64 held;

	if (*(volatile __u32 __arena *)&r->lock == 0 ||
	    *(volatile __u32 __arena *)&r->lock_gen != g0) {
		in_held[IN_HELD_NONE]++;
		return;
	}
	bpf_loop(1 << 20, hold_step, &h, 0);
	held = bpf_ktime_get_ns() - t0;
	if (held > in_held_max)
		in_held_max = held;
	in_held[held >= IN_STALL_NS ? IN_HELD_STALL :
		held >= IN_LONG_NS ? IN_HELD_LONG : IN_HELD_SHORT]++;
}

SEC("perf_event")
int in_irq(void *ctx)
{
	struct aa_root __arena *r = (struct aa_root __arena *)aa_fast.root;
	__u64 p, old, t0;
	__u32 g0;

	if (bpf_get_smp_processor_id() != in_cpu || !r)
		return 0;
	in_runs++;
	g0 = *(volatile __u32 __arena *)&r->lock_gen;
	t0 = bpf_ktime_get_ns();
	p = (__u64)aa_malloc(64);
	if (!p) {
		in_nulls++;
		judge_null(r, g0, t0);
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
