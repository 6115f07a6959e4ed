// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_defer.c - deferred free through the library's programs: limbo
 * keeps an object allocated and untouched, bad deferred frees are refused
 * and counted like plain ones (plain + deferred of one pointer too),
 * aa_heap__reclaim() frees after a grace period, the limbo bound raises
 * the refill signal. The reader race is in test_defer_race.c.
 */
#include <pthread.h>
#include "common.h"

#define MiB (1ULL << 20)

static struct aa_heap *h;
static const struct aa_root *r;

static void open_defer(void)
{
	h = t_open_flags(T_PAGES(64 * MiB), 4 * MiB, AA_F_DEFER);
	r = aa_heap__root(h);
}

static void close_heap(void)
{
	aa_heap__destroy(h);
	h = NULL;
}

TestSuite(defer, .init = open_defer, .fini = close_heap);

static int t_defer(__u64 p)
{
	return (int)t_call(h, AA_OP_FREE_DEFERRED, 0, 0, p, 0).ret;
}

/* Sizes of every kind: span objects (small, multi-page span), a page
 * run, more than a chunk. */
static const __u64 sizes[] = { 16, 48, 1000, 8192, 5 * 4096, 3 * MiB };

Test(defer, limbo_keeps_the_object_allocated_and_untouched)
{
	__u64 p[6], in_use;
	size_t i;

	for (i = 0; i < 6; i++) {
		__u64 *w;

		p[i] = t_malloc(h, sizes[i]);
		cr_assert_neq(p[i], 0, "malloc(%llu)", (unsigned long long)sizes[i]);
		w = aa_heap__ptr(h, p[i]);
		w[0] = 0x1111 + i;		/* word 0: where a plain free writes */
		w[1] = 0x2222 + i;
	}
	in_use = t_stats(h).heap_bytes;
	for (i = 0; i < 6; i++)
		cr_assert_eq(t_defer(p[i]), 0, "defer(%llu)", (unsigned long long)sizes[i]);
	cr_assert_eq(r->defer.pending_objs, 6);
	for (i = 0; i < 6; i++) {
		__u64 *w = aa_heap__ptr(h, p[i]);

		cr_assert_eq(w[0], 0x1111 + i, "limbo changed word 0 of a %llu-B object",
			     (unsigned long long)sizes[i]);
		cr_assert_eq(w[1], 0x2222 + i);
		cr_assert_eq(t_usable(h, p[i]), t_usable(h, p[i]));
	}
	cr_assert_geq(t_stats(h).heap_bytes, in_use, "limbo objects are the heap's");
	cr_assert_eq(t_stats(h).live_allocs, 0, "but no longer the program's");
	cr_assert_eq(aa_heap__check(h), 0);

	cr_assert_eq(aa_heap__reclaim(h), 6);
	cr_assert_eq(r->defer.pending_objs, 0);
	cr_assert_eq(r->defer.pending_bytes, 0);
	cr_assert_eq(r->defer.reclaimed, 6);
	cr_assert_geq(r->defer.grace_periods, 1);
	cr_assert_gt(r->defer.latency_max_ns, 0);
	for (i = 0; i < 6; i++)	/* freed now: a plain free is a double free */
		cr_assert_eq(t_free(h, p[i]), -EALREADY, "size %llu", (unsigned long long)sizes[i]);
	cr_assert_eq(aa_heap__drain(h) >= 0, 1);
	cr_assert_eq(aa_heap__check(h), 0);
}

Test(defer, a_pointer_freed_twice_any_way_is_refused_and_counted)
{
	__u64 a = t_malloc(h, 64), b = t_malloc(h, 64), c = t_malloc(h, 5 * 4096);
	__u64 dbl = t_stats(h).err[AA_ERR_DOUBLE_FREE];

	cr_assert_eq(t_defer(a), 0);
	cr_assert_eq(t_defer(a), -EALREADY, "deferred twice");
	cr_assert_eq(t_free(h, a), -EALREADY, "deferred, then plain");
	cr_assert_eq(t_free(h, b), 0);
	cr_assert_eq(t_defer(b), -EALREADY, "plain, then deferred");
	cr_assert_eq(t_defer(c), 0);
	cr_assert_eq(t_free(h, c), -EALREADY, "a page run deferred, then plain");
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], dbl + 4);
	cr_assert_eq(r->defer.pending_objs, 2, "a refused free put something in limbo");
	cr_assert_eq(aa_heap__reclaim(h), 2);
	cr_assert_eq(t_defer(a), -EALREADY, "reclaimed, then deferred");
	cr_assert_eq(aa_heap__check(h), 0);
}

Test(defer, bad_pointers_are_refused_like_plain_frees)
{
	__u64 p = t_malloc(h, 256), run = t_malloc(h, 3 * 4096);
	struct aa_stats before = t_stats(h), after;

	cr_assert_eq(t_defer(p + 16), -ENOENT, "interior");
	cr_assert_eq(t_defer(p + 4), -EINVAL, "misaligned");
	cr_assert_eq(t_defer(p + 8), -ENOENT, "8-byte aligned, interior");
	cr_assert_eq(t_defer(0x1000), -EFAULT, "foreign");
	cr_assert_eq(t_defer(run + 4096), -ENOENT, "a run's second page");
	cr_assert_eq(t_defer(0), 0, "NULL is a no-op");
	after = t_stats(h);
	cr_assert_eq(after.err[AA_ERR_INTERIOR], before.err[AA_ERR_INTERIOR] + 3);
	cr_assert_eq(after.err[AA_ERR_MISALIGNED], before.err[AA_ERR_MISALIGNED] + 1);
	cr_assert_eq(after.err[AA_ERR_FOREIGN], before.err[AA_ERR_FOREIGN] + 1);
	cr_assert_eq(r->defer.pending_objs, 0);
	cr_assert_eq(t_free(h, p), 0, "a refused deferred free left the object freeable");
	cr_assert_eq(t_free(h, run), 0);
}

Test(defer, without_the_flag_it_is_refused)
{
	struct aa_heap *plain;

	close_heap();	/* the suite's heap has the flag */
	plain = t_open_flags(T_PAGES(16 * MiB), MiB, 0);
	__u64 p = t_malloc(plain, 64);
	struct aa_op_args a = t_call(plain, AA_OP_FREE_DEFERRED, 0, 0, p, 0);

	cr_assert_eq(a.ret, -EOPNOTSUPP);
	cr_assert_eq(aa_heap__reclaim(plain), -EOPNOTSUPP);
	cr_assert_eq(t_free(plain, p), 0, "the refusal kept it allocated");
	aa_heap__destroy(plain);
}

/* Memory freed deferred comes back only through reclaim; and a reclaim
 * only frees what was deferred before its round began. */
Test(defer, memory_is_reused_only_after_reclaim)
{
	__u64 first = t_malloc(h, 4096), again;
	int i;

	cr_assert_eq(t_defer(first), 0);
	for (i = 0; i < 64; i++) {	/* a LIFO cache would hand it back at once */
		again = t_malloc(h, 4096);
		cr_assert_neq(again, first, "a limbo object was reused before reclaim");
		cr_assert_eq(t_free(h, again), 0);
	}
	cr_assert_eq(aa_heap__reclaim(h), 1);
	cr_assert_eq(aa_heap__check(h), 0);
}

/* The bound: limbo over tun.defer_limit raises need_refill; an allocation
 * that fails while limbo holds memory says so. */
Test(defer, limbo_over_its_limit_raises_the_signal)
{
	struct aa_tunables t;
	__u64 objs[40], signals, x;
	int i;

	close_heap();	/* this one with its own tunables */
	cr_assert_eq(aa_tunables__default(&t), 0);
	t.defer_limit = 64 << 10;
	t.low_watermark = 0;	/* only limbo raises the signal here */
	AA_OPTS(aa_heap_opts, o, .arena_pages = T_PAGES(16 * MiB), .init_bytes = MiB,
		.flags = AA_F_DEFER, .tunables = &t);
	h = aa_heap__open(&o);
	cr_assert_not_null(h);
	r = aa_heap__root(h);
	signals = r->refill_signals;
	for (i = 0; i < 40; i++) {
		objs[i] = t_malloc(h, 4096);
		cr_assert_neq(objs[i], 0);
	}
	for (i = 0; i < 16; i++)
		cr_assert_eq(t_defer(objs[i]), 0);
	cr_assert_eq(r->need_refill, 0, "64 KiB in limbo is not over 64 KiB");
	cr_assert_eq(t_defer(objs[16]), 0);
	cr_assert_eq(r->need_refill, 1, "limbo over its limit raised no signal");
	cr_assert_eq(r->refill_signals, signals + 1);
	cr_assert_eq(r->defer.limit_signals, 1);
	for (i = 17; i < 32; i++)	/* up to the bound, twice the limit */
		cr_assert_eq(t_defer(objs[i]), 0);
	while ((x = t_malloc(h, 4096)))	/* the rest of the heap */
		;
	cr_assert_geq(r->defer.nomem_in_limbo, 1, "a failed allocation did not say limbo held memory");
	cr_assert_eq(aa_heap__reclaim(h), 32);
	cr_assert_neq(t_malloc(h, 4096), 0, "reclaimed memory is not reusable");
}

/* The hard bound, with no agent at all: limbo never holds more than
 * twice tun.defer_limit. The deferred free that would pass it is refused
 * (-ENOMEM, counted) and leaves the object allocated and untouched: a
 * plain free of it works. */
Test(defer, limbo_never_holds_more_than_twice_its_limit)
{
	struct aa_tunables t;
	__u64 objs[40], *w;
	int i;

	close_heap();	/* this one with its own tunables */
	cr_assert_eq(aa_tunables__default(&t), 0);
	t.defer_limit = 64 << 10;
	AA_OPTS(aa_heap_opts, o, .arena_pages = T_PAGES(16 * MiB), .init_bytes = MiB,
		.flags = AA_F_DEFER, .tunables = &t);
	h = aa_heap__open(&o);
	cr_assert_not_null(h);
	r = aa_heap__root(h);
	for (i = 0; i < 40; i++) {
		objs[i] = t_malloc(h, 4096);
		cr_assert_neq(objs[i], 0);
		((__u64 *)aa_heap__ptr(h, objs[i]))[0] = 0x5555 + i;
	}
	for (i = 0; i < 32; i++)	/* 128 KiB: twice the limit, not over it */
		cr_assert_eq(t_defer(objs[i]), 0, "deferred free %d refused", i);
	for (i = 32; i < 40; i++)
		cr_assert_eq(t_defer(objs[i]), -ENOMEM, "limbo past twice its limit (free %d)", i);
	cr_assert_eq(r->defer.pending_bytes, 128 << 10);
	cr_assert_leq(r->defer.peak_pending_bytes, 128 << 10);
	cr_assert_eq(r->defer.limit_refusals, 8);
	cr_assert_eq(r->defer.node_failures, 0, "a refusal is not a node failure");
	cr_assert_eq(r->need_refill, 1, "limbo over its limit raised no signal");
	for (i = 32; i < 40; i++) {	/* refused: still allocated, untouched */
		w = aa_heap__ptr(h, objs[i]);
		cr_assert_eq(w[0], 0x5555 + i);
		cr_assert_eq(t_free(h, objs[i]), 0);
	}
	cr_assert_eq(aa_heap__reclaim(h), 32);
	cr_assert_eq(t_defer(t_malloc(h, 4096)), 0, "limbo emptied: deferred frees again");
	cr_assert_eq(aa_heap__check(h), 0);
}

/* Rounds: what was deferred after a round began waits for the next one;
 * nothing is lost between rounds (an agent that stops and restarts). */
Test(defer, each_round_frees_what_came_before_it)
{
	__u64 p[300];
	long got = 0;
	int i;

	for (i = 0; i < 300; i++) {
		p[i] = t_malloc(h, 32);
		cr_assert_eq(t_defer(p[i]), 0);
	}
	cr_assert_eq(aa_heap__reclaim(h), 300);
	for (i = 0; i < 300; i++)
		p[i] = t_malloc(h, 32);
	for (i = 0; i < 150; i++)
		cr_assert_eq(t_defer(p[i]), 0);
	/* no agent for a while: limbo keeps them */
	cr_assert_eq(r->defer.pending_objs, 150);
	for (i = 150; i < 300; i++)
		cr_assert_eq(t_defer(p[i]), 0);
	for (i = 0; i < 3; i++)
		got += aa_heap__reclaim(h);
	cr_assert_eq(got, 300, "rounds after a pause freed %ld of 300", got);
	cr_assert_eq(r->defer.pending_objs, 0);
	cr_assert_eq(aa_heap__check(h), 0);
}

/* Reclaim latency, deferred free -> memory reusable, with an agent thread
 * asleep on the event ring as `arena-alloc refill-agent` is: limbo's first
 * object wakes it. Logged (--verbose); asserted only to happen (5 s). */
static volatile int agent_stop;

static void *agent(void *arg)
{
	(void)arg;
	while (!agent_stop)
		if (aa_heap__wait_refill(h, 100, NULL) == 2)
			aa_heap__reclaim(h);
	return NULL;
}

Test(defer, a_waiting_agent_reclaims_within_a_grace_period)
{
	double lat[5];
	pthread_t t;
	__u64 p;
	int i, k;

	agent_stop = 0;
	cr_assert_eq(pthread_create(&t, NULL, agent, NULL), 0);
	usleep(20000);
	for (i = 0; i < 5; i++) {
		p = t_malloc(h, 64);
		cr_assert_eq(t_defer(p), 0);
		for (k = 0; k < 500 && r->defer.pending_objs; k++)	/* bounded: 5 s */
			usleep(10000);
		cr_assert_eq(r->defer.pending_objs, 0, "the agent did not reclaim in 5 s");
		lat[i] = r->defer.latency_last_ns / 1e6;
		usleep(20000);
	}
	agent_stop = 1;
	pthread_join(t, NULL);
	cr_log_info("deferred free -> reusable with a waiting agent: %.2f %.2f %.2f %.2f %.2f ms\n",
		    lat[0], lat[1], lat[2], lat[3], lat[4]);
}
