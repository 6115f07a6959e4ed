// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_stats.c - the totals of aa_heap__stats() count the calls programs
 * made: a workload whose calls are known (a BPF program's inline
 * aa_malloc/aa_calloc/aa_free, and aa_heap__malloc/aa_heap__free from
 * userspace), and the totals checked exactly, whatever the caches,
 * the quarantine or limbo hold.
 */
#include "common.h"
#include "test_cpu_cache.h"
#include "test_cpu_cache.skel.h"

#define MiB (1ULL << 20)

static struct test_cpu_cache *skel;
static struct aa_heap *h;

static void setup(void)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 * MiB);

	t_need_arena();
	skel = test_cpu_cache__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(32 * MiB)), 0);
	cr_assert_eq(test_cpu_cache__load(skel), 0);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
}

static void teardown(void)
{
	aa_heap__destroy(h);
	test_cpu_cache__destroy(skel);
}

/* n calls by a BPF program: allocations of size bytes (0: frees) into
 * (of) its slots first ... Returns how many succeeded. */
static __u64 bpf_calls(__u32 first, __u32 n, __u64 size)
{
	struct calls_args a = { .first = first, .n = n, .size = size, .free = !size };

	cr_assert_eq(t_run(skel->progs.calls, &a, sizeof(a)), 0);
	return a.done;
}

/* p[0 .. n) = n aa_heap__malloc(size), then p[0 .. frees) freed: a heap
 * of flags, set up by t_open_flags(). */
static struct aa_heap *calls_from_userspace(__u32 flags, __u64 *p, int n, int frees)
{
	struct aa_heap *uh = t_open_flags(T_PAGES(16 * MiB), 4 * MiB, flags);
	int i;

	for (i = 0; i < n; i++)
		cr_assert_neq(p[i] = aa_heap__malloc(uh, 64), 0);
	for (i = 0; i < frees; i++)
		cr_assert_eq(aa_heap__free(uh, p[i]), 0);
	return uh;
}

/* 2,000 allocations and 1,400 frees of 64 B by a BPF program, 50
 * allocations of 128 B and one of 3 pages from userspace and 21 frees:
 * the totals are those calls, the caches' refills and spills are not. */
Test(stats, the_totals_count_the_calls_programs_made, .init = setup, .fini = teardown)
{
	__u64 p[50], run;
	struct aa_stats st;
	int i;

	cr_assert_eq(bpf_calls(0, 1000, 64), 1000);
	cr_assert_eq(bpf_calls(0, 1000, 0), 1000);
	cr_assert_eq(bpf_calls(0, 1000, 64), 1000);
	cr_assert_eq(bpf_calls(0, 400, 0), 400);
	for (i = 0; i < 50; i++)
		cr_assert_neq(p[i] = aa_heap__malloc(h, 128), 0);
	for (i = 0; i < 20; i++)
		cr_assert_eq(aa_heap__free(h, p[i]), 0);
	cr_assert_neq(run = aa_heap__malloc(h, 3 * 4096), 0);
	cr_assert_eq(aa_heap__free(h, run), 0);

	cr_assert_eq(aa_heap__stats(h, &st), 0);
	cr_log_info("allocs %llu frees %llu live %llu bytes %llu\n",
		    (unsigned long long)st.nr_allocs, (unsigned long long)st.nr_frees,
		    (unsigned long long)st.live_allocs, (unsigned long long)st.bytes_in_use);
	cr_expect_eq(st.nr_allocs, 2000 + 51, "allocs %llu", (unsigned long long)st.nr_allocs);
	cr_expect_eq(st.nr_frees, 1400 + 21, "frees %llu", (unsigned long long)st.nr_frees);
	cr_expect_eq(st.live_allocs, 600 + 30, "live %llu", (unsigned long long)st.live_allocs);
	cr_expect_eq(st.bytes_in_use, 600 * 64 + 30 * 128, "bytes %llu",
		     (unsigned long long)st.bytes_in_use);
	/* the heap's view holds the caches too, shown apart */
	cr_expect_gt(st.cached_objs, 0, "nothing cached after 2,050 small calls?");
	st = t_assert_stats(h, "calls");
	cr_expect_eq(st.heap_bytes, st.bytes_in_use + st.cached_bytes);
}

/* Debug mode: what the quarantine holds was freed by the program. */
Test(stats, quarantined_objects_are_not_live)
{
	struct aa_stats st;
	__u64 p[40];
	struct aa_heap *dh = calls_from_userspace(AA_F_DEBUG, p, 40, 30);

	st = t_assert_stats(dh, "debug");
	cr_log_info("allocs %llu frees %llu live %llu bytes %llu\n",
		    (unsigned long long)st.nr_allocs, (unsigned long long)st.nr_frees,
		    (unsigned long long)st.live_allocs, (unsigned long long)st.bytes_in_use);
	cr_expect_eq(st.nr_allocs, 40);
	cr_expect_eq(st.nr_frees, 30);
	cr_expect_eq(st.live_allocs, 10, "live %llu", (unsigned long long)st.live_allocs);
	cr_expect_eq(st.quarantined_objs, 30);
	cr_expect_eq(st.heap_live, 40 + st.cached_objs, "the quarantine is the heap's");
	cr_expect_eq(st.bytes_in_use, st.heap_bytes - st.quarantined_bytes - st.cached_bytes);
	cr_expect_eq(st.bytes_in_use * 3, st.quarantined_bytes, "10 and 30 of one class");
	aa_heap__destroy(dh);
}

/* Deferred frees count when called; limbo holds the objects, and its
 * nodes are its own memory, no caller's call. */
Test(stats, deferred_frees_count_when_called)
{
	struct aa_stats st;
	__u64 p[20];
	struct aa_heap *dh = calls_from_userspace(AA_F_DEFER, p, 20, 5);
	int i;

	for (i = 5; i < 10; i++)
		cr_assert_eq(aa_heap__free_deferred(dh, p[i]), 0);
	st = t_assert_stats(dh, "deferred");
	cr_expect_eq(st.nr_allocs, 20, "allocs %llu", (unsigned long long)st.nr_allocs);
	cr_expect_eq(st.nr_frees, 10, "frees %llu", (unsigned long long)st.nr_frees);
	cr_expect_eq(st.live_allocs, 10, "live %llu", (unsigned long long)st.live_allocs);
	cr_expect_eq(st.bytes_in_use, 10 * 64);
	cr_expect_eq(st.limbo_objs, 5, "limbo %llu", (unsigned long long)st.limbo_objs);
	cr_expect_eq(st.limbo_bytes, 5 * 64);
	cr_expect_geq(st.limbo_nodes, 5, "a node per object in limbo");
	cr_expect_eq(st.limbo_node_bytes, st.limbo_nodes * AA_MIN_SIZE);
	while (aa_heap__stats(dh, &st) == 0 && st.limbo_objs)
		cr_assert_geq(aa_heap__reclaim(dh), 0);
	st = t_assert_stats(dh, "reclaimed");
	cr_expect_eq(st.nr_allocs, 20);
	cr_expect_eq(st.nr_frees, 10);
	cr_expect_eq(st.live_allocs, 10);
	cr_expect_eq(st.bytes_in_use, 10 * 64);
	cr_expect_gt(st.limbo_nodes, 0, "the nodes stay, spare");
	cr_assert_geq(aa_heap__drain(dh), 0);
	st = t_assert_stats(dh, "drained");
	cr_expect_eq(st.limbo_nodes, 0, "a drain gives the spare nodes back");
	cr_expect_eq(st.heap_live, 10, "the heap holds the 10 live objects only");
	aa_heap__destroy(dh);
}

/* A deferral that finds no spare node while the heap lock is out of
 * reach (held, as by another CPU past the wait budget; an interrupt over
 * the holder is the same) takes its node from this CPU's cache, which
 * takes no lock: the node is the limbo's, not a call, and the equations
 * hold. */
Test(stats, a_deferral_without_the_heap_lock_takes_its_node_from_the_cpu_cache)
{
	struct aa_heap *dh = t_open_flags(T_PAGES(16 * MiB), 4 * MiB, AA_F_DEFER);
	struct aa_root *r = (struct aa_root *)aa_heap__root(dh);
	__u64 p, q[4];
	__u32 cached;
	struct aa_stats st;
	int i, err;

	cr_assert_eq(t_pin_cpu(0), 0);
	for (i = 0; i < 4; i++)
		cr_assert_neq(q[i] = t_malloc(dh, AA_MIN_SIZE), 0);
	for (i = 0; i < 4; i++)
		cr_assert_eq(t_free(dh, q[i]), 0);
	cached = aa_heap__cpu_cache(dh, 0)->cls[0].count;
	cr_assert_gt(cached, 0, "no 16-byte object in CPU 0's cache");
	cr_assert_neq(p = t_malloc(dh, 64), 0);
	__atomic_store_n(&r->lock, 2, __ATOMIC_SEQ_CST);	/* held, as by CPU 1 */
	err = aa_heap__free_deferred(dh, p);
	__atomic_store_n(&r->lock, 0, __ATOMIC_SEQ_CST);
	cr_assert_eq(err, 0, "a deferral without the heap lock failed: %d", err);
	cr_assert_eq(aa_heap__cpu_cache(dh, 0)->cls[0].count, cached - 1,
		     "the node did not come from CPU 0's cache");
	st = t_assert_stats(dh, "deferred without the lock");
	cr_expect_eq(st.limbo_objs, 1);
	cr_expect_eq(st.limbo_nodes, 1);
	cr_expect_eq(st.nr_allocs, 5, "the node counted as a call: nr_allocs %llu",
		     (unsigned long long)st.nr_allocs);
	while (aa_heap__stats(dh, &st) == 0 && st.limbo_objs)
		cr_assert_geq(aa_heap__reclaim(dh), 0);
	cr_assert_geq(aa_heap__drain(dh), 0);
	st = t_assert_stats(dh, "reclaimed and drained");
	cr_expect_eq(st.limbo_nodes, 0);
	cr_expect_eq(st.heap_live, 0, "the heap counts %llu blocks out",
		     (unsigned long long)st.heap_live);
	t_check(dh);
	aa_heap__destroy(dh);
}

/* --- The equations under a mixed workload --------------------------------- */

/* The totals after a step of mixed_workload(): the equations hold
 * (t_assert_stats()), and the calls are the test's own. */
static void expect_calls(struct aa_heap *mh, const char *when, __u64 allocs, __u64 frees,
			 __u64 limbo)
{
	struct aa_stats st = t_assert_stats(mh, when);

	cr_assert_eq(st.nr_allocs, allocs, "%s: nr_allocs %llu, the test made %llu", when,
		     (unsigned long long)st.nr_allocs, (unsigned long long)allocs);
	cr_assert_eq(st.nr_frees, frees, "%s: nr_frees %llu, the test made %llu", when,
		     (unsigned long long)st.nr_frees, (unsigned long long)frees);
	cr_assert_eq(st.limbo_objs, limbo, "%s: limbo_objs %llu, the test deferred %llu", when,
		     (unsigned long long)st.limbo_objs, (unsigned long long)limbo);
}

#define MIXED_N	300

/* MIXED_N allocations of mixed sizes (every 50th a 3-page run), half by
 * the aa__run program (a CPU cache) and half by this thread (its user
 * cache, where the mode has them); a third freed plainly, a third
 * deferred; reclaim rounds; a drain; the rest freed. The equations hold
 * after every step, and the totals are the calls the test made. */
static void mixed_workload(__u32 flags)
{
	struct aa_heap *mh = t_open_flags(T_PAGES(32 * MiB), 8 * MiB, flags);
	__u64 p[MIXED_N], allocs = 0, frees = 0, size;
	struct aa_stats st;
	int i;

	for (i = 0; i < MIXED_N; i++, allocs++) {
		size = i % 50 == 49 ? 3 * 4096 : 16 + (i * 40) % 2000;
		p[i] = i & 1 ? t_malloc(mh, size) : aa_heap__malloc(mh, size);
		cr_assert_neq(p[i], 0, "allocation %d of %llu B", i, (unsigned long long)size);
	}
	expect_calls(mh, "allocated", allocs, frees, 0);
	for (i = 0; i < MIXED_N; i += 3, frees++)
		cr_assert_eq(i & 1 ? t_free(mh, p[i]) : aa_heap__free(mh, p[i]), 0);
	for (i = 1; i < MIXED_N; i += 3, frees++)
		cr_assert_eq(aa_heap__free_deferred(mh, p[i]), 0);
	expect_calls(mh, "freed and deferred", allocs, frees, MIXED_N / 3);
	while (aa_heap__stats(mh, &st) == 0 && st.limbo_objs)
		cr_assert_geq(aa_heap__reclaim(mh), 0);
	expect_calls(mh, "reclaimed", allocs, frees, 0);
	cr_assert_geq(aa_heap__drain(mh), 0);
	expect_calls(mh, "drained", allocs, frees, 0);
	for (i = 2; i < MIXED_N; i += 3, frees++)
		cr_assert_eq(i & 1 ? t_free(mh, p[i]) : aa_heap__free(mh, p[i]), 0);
	cr_assert_geq(aa_heap__drain(mh), 0);
	expect_calls(mh, "all freed", allocs, frees, 0);
	st = t_stats(mh);
	cr_assert_eq(st.live_allocs, 0);
	cr_assert_eq(st.heap_live, 0, "the heap still counts %llu blocks out (limbo nodes %llu)",
		     (unsigned long long)st.heap_live, (unsigned long long)st.limbo_nodes);
	t_check(mh);
	aa_heap__destroy(mh);
}

Test(stats, equations_hold_with_caches_and_deferred_free)
{
	mixed_workload(AA_F_DEFER);
}

Test(stats, equations_hold_in_debug_mode_with_deferred_free)
{
	mixed_workload(AA_F_DEFER | AA_F_DEBUG);
}

Test(stats, equations_hold_without_caches)
{
	mixed_workload(AA_F_DEFER | AA_F_NO_CACHES);
}
