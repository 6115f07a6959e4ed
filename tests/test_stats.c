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
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, 1 << 13), 0);
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
	struct aa_heap *uh = t_open_flags(1 << 12, 4 * MiB, flags);
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
	cr_expect_eq(st.heap_live, st.live_allocs + st.cached_objs + st.quarantined_objs +
		     st.limbo_objs + st.parked_objs);
	cr_expect_eq(st.heap_bytes, st.bytes_in_use + st.cached_bytes);
	cr_expect_eq(st.nr_allocs - st.nr_frees, st.live_allocs);
}

/* Debug mode: what the quarantine holds was freed by the program. */
Test(stats, quarantined_objects_are_not_live)
{
	struct aa_stats st;
	__u64 p[40];
	struct aa_heap *dh = calls_from_userspace(AA_F_DEBUG, p, 40, 30);

	cr_assert_eq(aa_heap__stats(dh, &st), 0);
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

/* Deferred frees count when called; the limbo node each one allocates is
 * the library's call, not the program's. */
Test(stats, deferred_frees_count_when_called)
{
	struct aa_stats st;
	__u64 p[20];
	struct aa_heap *dh = calls_from_userspace(AA_F_DEFER, p, 20, 5);
	int i;

	for (i = 5; i < 10; i++)
		cr_assert_eq(aa_heap__free_deferred(dh, p[i]), 0);
	cr_assert_eq(aa_heap__stats(dh, &st), 0);
	cr_expect_eq(st.nr_allocs, 20, "allocs %llu", (unsigned long long)st.nr_allocs);
	cr_expect_eq(st.nr_frees, 10, "frees %llu", (unsigned long long)st.nr_frees);
	cr_expect_eq(st.live_allocs, 10, "live %llu", (unsigned long long)st.live_allocs);
	cr_expect_eq(st.bytes_in_use, 10 * 64);
	cr_expect_eq(st.limbo_objs, 10, "5 objects and their nodes");
	while (aa_heap__stats(dh, &st) == 0 && st.limbo_objs)
		cr_assert_geq(aa_heap__reclaim(dh), 0);
	cr_expect_eq(st.nr_allocs, 20);
	cr_expect_eq(st.nr_frees, 10);
	cr_expect_eq(st.live_allocs, 10);
	cr_expect_eq(st.bytes_in_use, 10 * 64);
	aa_heap__destroy(dh);
}
