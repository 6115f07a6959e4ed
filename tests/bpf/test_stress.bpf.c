// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_stress.bpf.c - programs of the long stress (test_stress.c), on a
 * heap with deferred free (AA_F_DEFER):
 *  - st_run (syscall; several pinned threads per CPU): each step allocates
 *    an object of a random kind (malloc over the 52 size classes, a page
 *    run of 3 .. 34 pages, calloc checked zero, aligned_alloc checked
 *    aligned), stamps it and swaps it into a random shared slot; the object
 *    swapped out, most likely allocated on another CPU, is checked
 *    (stamps, sometimes aa_usable_size()) and freed plainly or deferred.
 *    Some steps are bulk calls: aa_malloc_bulk(), stamp and check, one
 *    object into a slot, the rest through aa_free_bulk() or
 *    aa_free_deferred_bulk();
 *  - st_irq (perf_event, hard IRQ on every CPU): frees one slot's object
 *    and allocates into another, over the task programs of its CPU;
 *  - st_flush: empties the slots at the end.
 * Userspace threads (test_stress.c) trade objects through the same slots
 * with the same stamps, allocating and freeing through the library's
 * userspace calls.
 * Counters per owner (struct st_counts in ../test_stress.h); slot and
 * stamp format there too.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "aa_size_classes.h"
#include "../test_stress.h"

#ifndef ENOMEM
#define ENOMEM	12
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

__u64 __arena st_slots[ST_SLOTS];
__u64 __arena st_bulk_arr[ST_THREADS][ST_BULK];	/* one bulk array per task thread */

struct st_counts st_cnt[ST_OWNERS];
__u32 st_cpu_of[ST_OWNERS];	/* owner -> its CPU (set by userspace) */
__u64 st_hi;			/* upper 32 bits of arena addresses (userspace) */
__u32 st_pause;			/* 1: the perf_event program does nothing */
__u32 st_debug;			/* heap in debug mode: usable size = size asked */
__u32 st_irq_inflight;		/* perf_event programs inside their work */
__u32 st_user_first, st_user_end;	/* owners that are userspace threads */

/* A program's state: random seed, owner, sequence number, CPU. */
struct st_ctx {
	__u32 seed, me, seq, cpu;
};

#define CNT(me)	st_cnt[(me) & (ST_OWNERS - 1)]

#define ST_CLASS_SIZE(c, sz, pg, ob, ba, ca, rc) sz,
static const __u32 st_class_size[AA_NR_CLASSES] = { AA_SIZE_CLASSES(ST_CLASS_SIZE) };

static __always_inline __u32 st_csize(__u32 code)
{
	barrier_var(code);	/* keep the clamp: 6.12 needs it (see bpf/internal.h) */
	return st_class_size[code < AA_NR_CLASSES ? code : 0];
}

/* The size asked for, from the stamp (../test_stress.h). */
static __always_inline __u64 st_size(__u32 stamp)
{
	if (ST_KIND(stamp) == ST_K_RUN)
		return (__u64)ST_CODE(stamp) * 4096 + 1 + (stamp & 0xfff);
	return st_csize(ST_CODE(stamp)) - (stamp & 3);
}

static __always_inline __u32 st_rand(struct st_ctx *x)
{
	__u32 s = x->seed;	/* xorshift32: every bit is random */

	s ^= s << 13;
	s ^= s >> 17;
	s ^= s << 5;
	return x->seed = s;
}

/* A random class: half of the time one of the 16 up to 144 B (most
 * allocations are small; their caches are the deep ones), else any of the
 * AA_NR_CLASSES (a multiply, not a modulo: the verifier bounds it). */
static __always_inline __u32 st_class(__u32 r)
{
	if (r & 1)
		return (r >> 8) & 15;
	return (((r >> 8) & 0xffff) * AA_NR_CLASSES) >> 16;
}

static __always_inline void st_stamp(__u64 p, __u32 stamp)
{
	st_stamp_size(p, stamp, st_size(stamp));
}

static __always_inline bool st_intact(__u64 p, __u32 stamp)
{
	return st_intact_size(p, stamp, st_size(stamp));
}

static __always_inline bool st_usable_ok(__u32 stamp, __u64 usable)
{
	switch (ST_KIND(stamp)) {
	case ST_K_CLASS:
		return usable == (st_debug ? st_size(stamp) : st_csize(ST_CODE(stamp)));
	case ST_K_RUN:
		return usable == (st_debug ? st_size(stamp) :
				  (st_size(stamp) + AA_PAGE_SIZE - 1) & ~(__u64)(AA_PAGE_SIZE - 1));
	default:
		return usable >= st_size(stamp);
	}
}

/* --- Free ------------------------------------------------------------------ */

/*
 * The work is split into global functions (verified once each, not per
 * path of their callers: inlined, st_run passed the verifier's 10^6
 * instructions). They take the owner `me` and count into st_cnt[me]. Call
 * depth: program > bpf_loop() callback > st_* > library (AA_API_FRAMES),
 * so no st_* calls another one.
 */

/* Check a slot value's object and free it: r & 3 == 0 checks its usable
 * size, (r >> 2) & 127 == 0 defers the free. */
static __always_inline void st_release(__u32 me, __u32 cpu, __u64 v, __u32 r)
{
	__u64 p = st_hi | v >> 32;
	__u32 stamp = (__u32)v;
	int err;

	if (!st_intact(p, stamp))
		CNT(me).bad_stamp++;
	if (st_cpu_of[ST_OWNER(stamp)] != cpu)
		CNT(me).xcpu++;
	if (ST_OWNER(stamp) >= st_user_first && ST_OWNER(stamp) < st_user_end)
		CNT(me).xside++;
	if ((r & 3) == 0) {
		CNT(me).usable++;
		if (!st_usable_ok(stamp, aa_usable_size(p)))
			CNT(me).bad_usable++;
	}
	if (((r >> 2) & 127) == 0) {
		err = aa_free_deferred(p);
		if (!err) {
			CNT(me).free[ST_DEFER]++;
			return;
		}
		if (err != -ENOMEM) {
			CNT(me).bad_free++;
			return;
		}
		CNT(me).defer_nomem++;
	}
	if (aa_free(p))
		CNT(me).bad_free++;
	else
		CNT(me).free[ST_FREE]++;
}

/* Put v into slot k; check and free what was there. */
static __always_inline void st_swap(__u32 me, __u32 cpu, __u32 k, __u64 v, __u32 r)
{
	__u64 old = __sync_lock_test_and_set(&st_slots[k & (ST_SLOTS - 1)], v);

	if (old)
		st_release(me, cpu, old, r);
}

__attribute__((noinline)) int st_swap_g(__u32 me, __u32 cpu, __u32 k, __u64 v, __u32 r)
{
	st_swap(me, cpu, k, v, r);
	return 0;
}

__attribute__((noinline)) int st_release_g(__u32 me, __u32 cpu, __u64 v, __u32 r)
{
	st_release(me, cpu, v, r);
	return 0;
}

/* --- Allocate -------------------------------------------------------------- */

/*
 * A new stamped object as a slot value, 0 when the allocation failed. sel
 * (0 .. 63) picks the call: 0-3 a page run (3 .. 6 pages; 1 in 32 of them
 * up to 34), 4-7 calloc, 8-11 aligned_alloc (16 .. 4096), else malloc.
 */
__attribute__((noinline)) __u64 st_new(__u32 me, __u32 seq, __u32 r, __u32 sel)
{
	__u32 kind = ST_K_CLASS, code = st_class(r), stamp, k = ST_MALLOC;
	__u64 size, p, align = 16;

	if (sel < 4) {
		kind = ST_K_RUN;
		k = ST_RUN;
		code = 2 + ((r >> 24) & 3);
		if (sel == 0 && ((r >> 26) & 7) == 0)
			code = 2 + ((r >> 16) & 31);	/* bits 24-28 are known here */
	} else if (sel < 8) {
		k = ST_CALLOC;
	} else if (sel < 12) {
		kind = ST_K_ALIGNED;
		k = ST_ALIGNED;
		align = 1ULL << (4 + (r >> 23) % 9);
	}
	stamp = ST_STAMP(kind, code, me, seq);
	size = st_size(stamp);
	if (kind == ST_K_CLASS)	/* the alignment rule (aa_shared.h), debug mode too */
		align = AA_OBJ_ALIGN(size);
	if (k == ST_CALLOC)
		p = (size & 1) ? (__u64)aa_calloc(1, size) : (__u64)aa_calloc(2, size >> 1);
	else if (k == ST_ALIGNED)
		p = (__u64)aa_aligned_alloc(align, size);
	else
		p = (__u64)aa_malloc(size);
	if (!p) {
		CNT(me).nulls++;
		if (kind == ST_K_RUN)
			CNT(me).nulls_run++;
		return 0;
	}
	CNT(me).alloc[k]++;
	if (p & (align - 1)) {
		CNT(me).bad_align++;
		if (!aa_free(p))
			CNT(me).free[ST_FREE]++;
		return 0;
	}
	if (k == ST_CALLOC && !st_zeroed(p, size))
		CNT(me).bad_zero++;
	st_stamp(p, stamp);
	return p << 32 | stamp;
}

/* Bulk: n objects of one class (stamps seq .. seq + n - 1), stamped and
 * checked; the first goes to a slot, the rest back through a bulk free (1
 * in 32: a deferred one first; what it refuses for want of nodes stays in
 * arr and is freed plainly). */
__attribute__((noinline)) int st_bulk(__u32 me, __u32 cpu, __u32 seq, __u32 r, __u32 r2)
{
	__u64 __arena *arr = st_bulk_arr[me & (ST_THREADS - 1)];
	__u32 code = st_class(r), n = 1 + ((r >> 24) & (ST_BULK - 1));
	int got = aa_malloc_bulk(arr, n, st_csize(code)), i, left, freed;
	__u64 v, misaligned;

	if (got < 0 || got > ST_BULK)
		got = 0;
	CNT(me).nulls += n - got;
	CNT(me).alloc[ST_BULK_ALLOC] += got;
	misaligned = CNT(me).bad_align;
	/* stamps' low 2 bits are what st_size() takes off the class size:
	 * 0 here, where the whole class size was asked for (debug mode's
	 * usable size is exactly that) */
	/* no counter of ours in the loops: the verifier would walk them once
	 * per value (iterator loops converge only on equal states) */
	bpf_for(i, 0, got) {
		if (arr[i] & (AA_OBJ_ALIGN(st_csize(code)) - 1)) {
			CNT(me).bad_align++;
			arr[i] = 0;	/* not ours to touch: leaked, and the end shows it */
			continue;
		}
		st_stamp(arr[i], ST_STAMP(ST_K_CLASS, code, me, (seq + i) << 2));
	}
	bpf_for(i, 0, got)
		if (arr[i] && !st_intact(arr[i], ST_STAMP(ST_K_CLASS, code, me, (seq + i) << 2)))
			CNT(me).bad_stamp++;
	left = got - (int)(CNT(me).bad_align - misaligned);
	v = arr[0];
	if (v) {
		arr[0] = 0;
		left--;
		st_swap(me, cpu, r2 >> 16, v << 32 | ST_STAMP(ST_K_CLASS, code, me, seq << 2), r2 >> 20);
	}
	if (left <= 0)
		return 0;
	if (((r2 >> 8) & 31) == 0) {
		freed = aa_free_deferred_bulk(arr, got);
		if (freed < 0)
			freed = 0;
		CNT(me).free[ST_DEFER_BULK] += freed;
		CNT(me).defer_nomem += left - freed;
		left -= freed;
		if (left <= 0)
			return 0;
	}
	freed = aa_free_bulk(arr, got);
	if (freed < 0)
		freed = 0;
	CNT(me).free[ST_FREE_BULK] += freed;
	CNT(me).bad_free += left - freed;
	return 0;
}

/* --- Programs -------------------------------------------------------------- */

static long st_step(__u64 i, void *data)
{
	struct st_ctx *x = data;
	__u32 r = st_rand(x), r2 = st_rand(x), sel = r2 & 63;
	__u64 v;

	if (sel == 12 || sel == 13) {
		st_bulk(x->me, x->cpu, x->seq + 1, r, r2);
		x->seq += ST_BULK;
		return 0;
	}
	v = st_new(x->me, ++x->seq, r, sel);
	if (v)
		st_swap_g(x->me, x->cpu, r2 >> 16, v, r2 >> 6);
	return 0;
}

SEC("syscall")
int st_run(struct st_args *a)
{
	struct st_ctx x = { .seed = a->seed | 1, .me = a->me & (ST_THREADS - 1),
			    .cpu = bpf_get_smp_processor_id() };

	bpf_loop(a->iters, st_step, &x, 0);
	CNT(x.me).runs++;
	return 0;
}

/* Free one slot's object, then allocate one into another slot (no bulk
 * call): the free first, so that it too lands over what the task was
 * doing. Does nothing while userspace pauses the run (st_pause), which
 * waits for st_irq_inflight to drop to 0. */
SEC("perf_event")
int st_irq(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct st_ctx x = { .seed = bpf_get_prandom_u32() | 1, .cpu = cpu,
			    .me = ST_IRQ_OWNER + (cpu & (ST_IRQ_OWNER - 1)) };
	__u32 r, r2;
	__u64 v;

	__sync_fetch_and_add(&st_irq_inflight, 1);
	if (st_pause)
		goto out;
	r = st_rand(&x);
	r2 = st_rand(&x);
	v = __sync_lock_test_and_set(&st_slots[r & (ST_SLOTS - 1)], 0);
	if (v)
		st_release_g(x.me, cpu, v, r2 >> 6);
	v = st_new(x.me, r2, r, (r2 & 63) == 12 ? 63 : r2 & 63);
	if (v)
		st_swap_g(x.me, cpu, r2 >> 16, v, r2 >> 12);
	CNT(x.me).runs++;
out:
	__sync_fetch_and_sub(&st_irq_inflight, 1);
	return 0;
}

static long st_flush_step(__u64 i, void *data)
{
	struct st_ctx *x = data;
	__u64 v = __sync_lock_test_and_set(&st_slots[i & (ST_SLOTS - 1)], 0);

	if (v)
		st_release_g(x->me, x->cpu, v, 64);	/* plain free, usable size checked */
	return 0;
}

SEC("syscall")
int st_flush(struct st_args *a)
{
	struct st_ctx x = { .me = ST_FLUSH_OWNER, .cpu = bpf_get_smp_processor_id() };

	bpf_loop(ST_SLOTS, st_flush_step, &x, 0);
	CNT(x.me).runs++;
	return 0;
}
