// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_preempt.bpf.c - programs for the preemption stress (test_preempt.c):
 *  - ps_run (syscall, run by several pinned threads per CPU): allocate an
 *    object of a random cached size, stamp it, swap it into a random shared
 *    slot, check the stamps of the object swapped out and free it; every
 *    16th step a bulk alloc/stamp/check/free instead;
 *  - ps_irq (perf_event, hard IRQ on every CPU): frees one slot's object,
 *    then allocates into another, so IRQ programs free and allocate over
 *    preempted and running task programs, objects that tasks allocated
 *    (and the other way round);
 *  - ps_flush: empties the slots at the end.
 * Slot and stamp format: ../test_preempt.h.
 * Loops use bpf_loop() (test_embed.bpf.c is the object that uses bpf_for()).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "aa_size_classes.h"
#include "../test_preempt.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

__u64 __arena ps_slots[PS_SLOTS];
__u64 __arena ps_bulk[PS_THREADS][PS_BULK];	/* one bulk array per task thread */

/* The perf_event program's totals (atomic adds). */
struct ps_counts irq_c;
__u64 irq_runs;

struct ps_ctx {
	struct ps_counts c;
	__u64 hi;	/* upper 32 bits of arena addresses, from an allocation */
	__u32 seed, me, seq;
};

/* Object size per class, from the library's generated table. */
#define PS_CLASS_SIZE(c, sz, pg, ob, ba, ca, rc) sz,
static const __u32 ps_class_size[AA_NR_CLASSES] = { AA_SIZE_CLASSES(PS_CLASS_SIZE) };

static __always_inline __u32 ps_size(__u32 stamp)
{
	__u32 c = PS_CLASS(stamp);

	barrier_var(c);	/* keep the clamp: 6.12 needs it (see bpf/internal.h) */
	return ps_class_size[c < AA_NR_CLASSES ? c : 0] - 2 * PS_SUB(stamp);
}

/* The alignment an object of the stamp's class must have (aa_shared.h's
 * rule). */
static __always_inline __u64 ps_align(__u32 stamp)
{
	return AA_OBJ_ALIGN(ps_size(stamp & ~PS_STAMP(0, 0, 3, 0)));
}

/* A random class from random bits (a multiply, not a modulo: the verifier
 * bounds it). */
static __always_inline __u32 ps_class(__u32 r)
{
	return (((r >> 8) & 0xffff) * AA_NR_CLASSES) >> 16;
}

static __always_inline __u32 ps_rand(struct ps_ctx *x)
{
	return x->seed = x->seed * 1103515245 + 12345;
}

static __always_inline __u32 __arena *ps_tail(__u64 p, __u32 stamp)
{
	return (__u32 __arena *)(p + ((ps_size(stamp) - 4) & ~3U));
}

static __always_inline void ps_stamp(__u64 p, __u32 stamp)
{
	*(__u32 __arena *)p = stamp;
	*ps_tail(p, stamp) = stamp;
}

static __always_inline bool ps_intact(__u64 p, __u32 stamp)
{
	return *(__u32 __arena *)p == stamp && *ps_tail(p, stamp) == stamp;
}

/* Count n missing objects of a call that began at t0: a task gets NULL
 * only after another CPU held a lock for its whole budget. */
static __always_inline void ps_nulls(struct ps_ctx *x, __u64 n, __u64 t0)
{
	x->c.nulls += n;
	if (bpf_ktime_get_ns() - t0 < PS_WAIT_TASK_NS)
		x->c.quick_nulls += n;
}

/* A new stamped object as a slot value, 0 when the allocation failed. */
static __always_inline __u64 ps_new(struct ps_ctx *x, __u32 r)
{
	__u32 stamp = PS_STAMP(x->me, ps_class(r), (r >> 14) & 3, ++x->seq);
	__u64 t0 = bpf_ktime_get_ns();
	__u64 p = (__u64)aa_malloc(ps_size(stamp));

	if (!p) {
		ps_nulls(x, 1, t0);
		return 0;
	}
	x->c.allocs++;
	if (p & (ps_align(stamp) - 1)) {
		x->c.misaligned++;	/* not ours to touch: leave it */
		return 0;
	}
	x->hi = p & ~0xffffffffULL;
	ps_stamp(p, stamp);
	return p << 32 | stamp;
}

/* Check and free a slot value's object. */
static __always_inline void ps_release(struct ps_ctx *x, __u64 v)
{
	__u64 p = x->hi | v >> 32;

	if (!ps_intact(p, (__u32)v))
		x->c.bad_stamp++;
	if (aa_free(p))
		x->c.bad_free++;
	else
		x->c.frees++;
}

static __always_inline void ps_swap(struct ps_ctx *x, __u32 k, __u64 v)
{
	__u64 old = __sync_lock_test_and_set(&ps_slots[k & (PS_SLOTS - 1)], v);

	if (old)
		ps_release(x, old);
}

static __always_inline void ps_bulk_step(struct ps_ctx *x, __u32 r)
{
	__u64 __arena *arr = ps_bulk[x->me & (PS_THREADS - 1)];
	__u32 cls = ps_class(r), seq = x->seq;
	__u64 t0 = bpf_ktime_get_ns();
	int n = aa_malloc_bulk_u64((__u64)arr, PS_BULK, ps_size(PS_STAMP(0, cls, 0, 0))), i, ok;

	x->seq += PS_BULK;
	if (n < 0 || n > PS_BULK)
		n = 0;
	if (n < PS_BULK)
		ps_nulls(x, PS_BULK - n, t0);
	x->c.allocs += n;
	for (i = 0; i < PS_BULK && i < n; i++) {
		if (arr[i] & (ps_align(PS_STAMP(0, cls, 0, 0)) - 1)) {
			x->c.misaligned++;
			return;
		}
		ps_stamp(arr[i], PS_STAMP(x->me, cls, 0, seq + i));
	}
	for (i = 0; i < PS_BULK && i < n; i++)
		if (!ps_intact(arr[i], PS_STAMP(x->me, cls, 0, seq + i)))
			x->c.bad_stamp++;
	ok = n ? aa_free_bulk_u64((__u64)arr, n) : 0;
	if (ok < 0)
		ok = 0;
	x->c.frees += ok;
	x->c.bad_free += n - ok;
}

static long ps_step(__u64 i, void *data)
{
	struct ps_ctx *x = data;
	__u32 r = ps_rand(x);
	__u64 v;

	if ((i & 15) == 15) {
		ps_bulk_step(x, r);
		return 0;
	}
	v = ps_new(x, r);
	if (v)
		ps_swap(x, r >> 17, v);
	return 0;
}

SEC("syscall")
int ps_run(struct ps_args *a)
{
	struct ps_ctx x = { .seed = a->seed, .me = a->me };

	bpf_loop(a->iters, ps_step, &x, 0);
	a->c = x.c;
	return 0;
}

/* Upper 32 bits of arena addresses, set by userspace before attaching. */
__u64 ps_hi;

/* Free one slot's object, then allocate one into another slot: the free
 * comes first, so that it too lands over whatever the task was doing. */
SEC("perf_event")
int ps_irq(void *ctx)
{
	struct ps_ctx x = { .seed = bpf_get_prandom_u32(), .me = PS_IRQ_ME, .hi = ps_hi };
	__u32 r = ps_rand(&x);
	__u64 v = __sync_lock_test_and_set(&ps_slots[r & (PS_SLOTS - 1)], 0);

	if (v)
		ps_release(&x, v);
	v = ps_new(&x, r);
	if (v)
		ps_swap(&x, r >> 17, v);
	__sync_fetch_and_add(&irq_runs, 1);
	__sync_fetch_and_add(&irq_c.allocs, x.c.allocs);
	__sync_fetch_and_add(&irq_c.frees, x.c.frees);
	__sync_fetch_and_add(&irq_c.nulls, x.c.nulls);
	__sync_fetch_and_add(&irq_c.quick_nulls, x.c.quick_nulls);
	__sync_fetch_and_add(&irq_c.bad_stamp, x.c.bad_stamp);
	__sync_fetch_and_add(&irq_c.bad_free, x.c.bad_free);
	__sync_fetch_and_add(&irq_c.misaligned, x.c.misaligned);
	return 0;
}

static long ps_flush_step(__u64 i, void *data)
{
	struct ps_ctx *x = data;
	__u64 old = __sync_lock_test_and_set(&ps_slots[i & (PS_SLOTS - 1)], 0);

	if (old)
		ps_release(x, old);
	return 0;
}

SEC("syscall")
int ps_flush(struct ps_args *a)
{
	struct ps_ctx x = { .hi = a->hi };

	bpf_loop(PS_SLOTS, ps_flush_step, &x, 0);
	a->c = x.c;
	return 0;
}
