// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_irq_nulls.bpf.c - allocations in hard-IRQ context over task-context
 * allocator calls on the same CPU and over heap-lock holders on others:
 *  - in_irq (perf_event on every CPU): allocates one IN_SIZE object,
 *    stamps it and swaps it into a ring (full from the start: in_fill);
 *    checks and frees the object it displaces (most likely another
 *    CPU's). Counts runs and NULLs, the
 *    NULLs by the heap-lock hold behind them (judge_null()).
 *  - in_task (syscall, several threads pinned to each CPU): each round
 *    allocates IN_TASK_OBJS objects, stamps them, hands one in
 *    IN_HAND_EVERY to another thread through a shared array and frees the
 *    rest, checking stamps: the calls the IRQs land in.
 *  - in_worker (syscall, one more thread): large allocations and bulk
 *    calls, the heap-lock holds an IRQ-context caller may meet.
 * A stamp is the object's address with its low bit set: a word no tier
 * writes (custody marks are key ^ address ^ tag), checked before each free.
 * Loops use bpf_loop().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_irq_nulls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

__u64 __arena in_ring[IN_RING];
__u64 __arena in_hand[IN_HAND];
__u64 __arena in_objs[IN_THREADS][IN_TASK_OBJS];
__u64 __arena in_bulk[IN_BULK];

__u32 in_on;			/* in: 1 while the IRQ program works */
__u64 in_runs, in_nulls;	/* out: IRQ runs, their NULLs (atomic adds) */
__u64 in_bad;			/* out: IRQ-side stamps overwritten or frees refused */
__u64 in_held[IN_HELD_KINDS];	/* out: NULLs by the hold behind them */
__u64 in_held_max;		/* out: the longest hold behind a NULL, ns */
__u64 in_why[IN_WHY_KINDS];	/* out: what a NULL found below its cache */
__u64 in_null_run[2];		/* out: the runs before the first and the last NULL */

static __always_inline __u64 stamp(__u64 p)
{
	return p | 1;
}

/* Check p's stamp and free it: 0, or 1 for a bad stamp or a refused free. */
static __always_inline int check_free(__u64 p)
{
	int bad = *(volatile __u64 __arena *)p != stamp(p);

	return aa_free((void __arena *)p) ? 1 : bad;
}

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
 * how long the hold lasted (in_held[]): what a reader of a failure needs
 * to tell a long hold from an empty tier. Every NULL counts all the same.
 */
static void judge_null(struct aa_root __arena *r, __u32 g0, __u64 t0)
{
	struct hold h = { .gen = &r->lock_gen, .g0 = g0, .t0 = t0 };
	__u64 held;

	if (*(volatile __u32 __arena *)&r->lock == 0 ||
	    *(volatile __u32 __arena *)&r->lock_gen != g0) {
		__sync_fetch_and_add(&in_held[IN_HELD_NONE], 1);
		return;
	}
	bpf_loop(1 << 20, hold_step, &h, 0);
	held = bpf_ktime_get_ns() - t0;
	if (held > in_held_max)
		in_held_max = held;
	__sync_fetch_and_add(&in_held[held >= IN_STALL_NS ? IN_HELD_STALL :
				      held >= IN_LONG_NS ? IN_HELD_LONG : IN_HELD_SHORT], 1);
}

/* File a NULL by what it found right after: its CPU's cache claimed by the
 * code it interrupted, that cache's reserve empty, the transfer cache's
 * stack and reserve empty (in_why[]). */
static void why_null(struct aa_root __arena *r)
{
	struct aa_cpu_cache __arena *cc = __aa_this_cache();
	struct aa_transfer_cache __arena *tc;
	__u32 c = __aa_size_class(IN_SIZE), i, n = 0;

	if (cc && *(volatile __u32 __arena *)&cc->busy)
		__sync_fetch_and_add(&in_why[IN_WHY_CLAIMED], 1);
	if (cc && c < AA_NR_CLASSES) {
		for (i = 0; i < AA_RESERVE_SLOTS; i++)
			n += cc->cls[c].reserve.slot[i] != 0;
		if (!n)
			__sync_fetch_and_add(&in_why[IN_WHY_RESERVE_EMPTY], 1);
		if (!cc->cls[c].reserve_want)
			__sync_fetch_and_add(&in_why[IN_WHY_RESERVE_UNWANTED], 1);
	}
	if (!r->tc_off || c >= AA_NR_CLASSES)
		return;
	tc = (struct aa_transfer_cache __arena *)(r->arena_base + r->tc_off) + c;
	if (!tc->count)
		__sync_fetch_and_add(&in_why[IN_WHY_TC_EMPTY], 1);
	for (i = 0, n = 0; i < AA_RESERVE_SLOTS; i++)
		n += tc->reserve.slot[i] != 0;
	if (!n)
		__sync_fetch_and_add(&in_why[IN_WHY_TC_RESERVE_EMPTY], 1);
}

SEC("perf_event")
int in_irq(void *ctx)
{
	struct aa_root __arena *r = (struct aa_root __arena *)aa_fast.root;
	__u64 p, old, t0;
	__u32 g0;

	if (!in_on || !r)
		return 0;
	__sync_fetch_and_add(&in_runs, 1);
	g0 = *(volatile __u32 __arena *)&r->lock_gen;
	t0 = bpf_ktime_get_ns();
	p = (__u64)aa_malloc(IN_SIZE);
	if (!p) {
		if (__sync_fetch_and_add(&in_nulls, 1) == 0)
			in_null_run[0] = in_runs;
		in_null_run[1] = in_runs;
		why_null(r);
		judge_null(r, g0, t0);
		return 0;
	}
	*(__u64 __arena *)p = stamp(p);
	old = __sync_lock_test_and_set(&in_ring[bpf_get_prandom_u32() & (IN_RING - 1)], p);
	if (old && check_free(old))
		__sync_fetch_and_add(&in_bad, 1);
	return 0;
}

struct task_ctx {
	struct in_task_args a;
	__u64 __arena *objs;
};

static long task_alloc(__u64 i, void *data)
{
	struct task_ctx *c = data;
	__u64 p = (__u64)aa_malloc(IN_SIZE);

	c->objs[i & (IN_TASK_OBJS - 1)] = p;
	if (!p) {
		c->a.nulls++;
		return 0;
	}
	*(__u64 __arena *)p = stamp(p);
	c->a.allocs++;
	return 0;
}

static long task_free(__u64 i, void *data)
{
	struct task_ctx *c = data;
	__u64 p = c->objs[i & (IN_TASK_OBJS - 1)];

	if (!p)
		return 0;
	c->objs[i & (IN_TASK_OBJS - 1)] = 0;
	if (i % IN_HAND_EVERY == 0) {
		p = __sync_lock_test_and_set(&in_hand[bpf_get_prandom_u32() & (IN_HAND - 1)], p);
		c->a.handed++;
		if (!p)
			return 0;
	}
	c->a.errors += check_free(p);
	return 0;
}

static long task_round(__u64 i, void *data)
{
	bpf_loop(IN_TASK_OBJS, task_alloc, data, 0);
	bpf_loop(IN_TASK_OBJS, task_free, data, 0);
	return 0;
}

SEC("syscall")
int in_task(struct in_task_args *a)
{
	struct task_ctx c = { .objs = in_objs[a->me & (IN_THREADS - 1)] };

	bpf_loop(a->rounds, task_round, &c, 0);
	a->allocs = c.a.allocs;
	a->nulls = c.a.nulls;
	a->handed = c.a.handed;
	a->errors = c.a.errors;
	return 0;
}

/* Fill the ring (the start): from then on every IRQ run frees one object
 * for the one it allocates, as a program that allocates and frees does. */
static long fill_step(__u64 i, void *data)
{
	__u64 p = (__u64)aa_malloc(IN_SIZE);

	if (!p)
		return 1;
	*(__u64 __arena *)p = stamp(p);
	p = __sync_lock_test_and_set(&in_ring[i & (IN_RING - 1)], p);
	if (p)
		in_bad += check_free(p);
	return 0;
}

SEC("syscall")
int in_fill(void *ctx)
{
	return bpf_loop(IN_RING, fill_step, NULL, 0) == IN_RING ? 0 : 1;
}

/* Free what the ring and the hand-off array still hold (the end). */
static long flush_step(__u64 i, void *data)
{
	__u64 *bad = data, p;

	p = __sync_lock_test_and_set(&in_ring[i & (IN_RING - 1)], 0);
	if (p)
		*bad += check_free(p);
	if (i < IN_HAND) {
		p = __sync_lock_test_and_set(&in_hand[i & (IN_HAND - 1)], 0);
		if (p)
			*bad += check_free(p);
	}
	return 0;
}

SEC("syscall")
int in_flush(void *ctx)
{
	__u64 bad = 0;

	bpf_loop(IN_RING, flush_step, &bad, 0);
	in_bad += bad;
	return 0;
}

static long round_step(__u64 i, void *data)
{
	struct in_worker_args *a = data;
	void __arena *big;
	int got;

	big = aa_malloc(IN_BIG);
	if (big) {
		a->big++;
		aa_free(big);
	}
	got = aa_malloc_bulk(in_bulk, IN_BULK, IN_SIZE);
	if (got > 0) {
		a->bulk += got;
		if (aa_free_bulk(in_bulk, got) != got)
			a->errors++;
	}
	return 0;
}

SEC("syscall")
int in_worker(struct in_worker_args *a)
{
	struct in_worker_args w = {};

	bpf_loop(a->rounds, round_step, &w, 0);
	a->big = w.big;
	a->bulk = w.bulk;
	a->errors = w.errors;
	return 0;
}
