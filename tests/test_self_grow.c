// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_self_grow.c - a heap that grows itself where the kernel allows it
 * (AA_F_SELF_GROW: Linux >= 7.0 lets every program allocate arena pages)
 * and keeps its size where it does not: bursts from a tc program
 * (tests/bpf/test_self_grow.bpf.c) with no refill agent and no grow from
 * userspace. What a kernel allows is read from its version here, not from
 * the library, so that a gate that is wrong either way fails a test.
 */
#include <sys/utsname.h>
#include "common.h"
#include "test_self_grow.h"
#include "test_self_grow.skel.h"

#define MiB (1ULL << 20)

static struct test_self_grow *skel;
static struct aa_heap *h;
static const struct aa_root *r;

/* Linux >= 7.0: page kfuncs callable from non-sleepable programs. */
static bool kernel_grows(void)
{
	return t_kernel_major() >= 7;
}

/* An arena of arena_mib MiB, a heap of init_mib MiB, flags. */
static void open_heap(__u32 arena_mib, __u64 init_mib, __u32 flags)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = init_mib * MiB, .flags = flags);

	t_need_arena();
	skel = test_self_grow__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, arena_mib << 8), 0);
	cr_assert_eq(test_self_grow__load(skel), 0, "load: %s", strerror(errno));
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	r = aa_heap__root(h);
}

static void close_heap(void)
{
	aa_heap__destroy(h);
	test_self_grow__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(self_grow, .fini = close_heap);

/* Keep `bytes` of size-byte objects from tc runs of 4096 allocations
 * (fewer at the end): the NULLs. */
static __u64 burst(__u64 size, __u64 bytes)
{
	__u64 n = bytes / size, done = 0, nulls = skel->bss->out.nulls;

	skel->bss->cfg.size = size;
	skel->bss->cfg.keep = 1;
	while (done < n) {
		skel->bss->cfg.per_run = n - done < 4096 ? n - done : 4096;
		t_run_pkt(skel->progs.burst);
		done += skel->bss->cfg.per_run;
	}
	return skel->bss->out.nulls - nulls;
}

static __u64 cache_pages(void)
{
	__u64 pages = 0;
	int cpu;

	for (cpu = 0; aa_heap__cpu_cache(h, cpu); cpu++)
		pages += AA_CPU_CACHE_PAGES;
	return pages;
}

/* Pages got from the kernel less pages given back: the chunks' and their
 * metadata's (pages_mapped) and the CPU caches', exactly. */
static void assert_ledger(void)
{
	__u64 held = r->fault.pages_got - r->fault.pages_put, caches = cache_pages();

	cr_assert_eq(held, r->stats.pages_mapped + caches,
		     "pages: %llu held, %llu mapped + %llu in caches",
		     (unsigned long long)held, (unsigned long long)r->stats.pages_mapped,
		     (unsigned long long)caches);
}

/*
 * A 1-MiB heap in a 256-MiB arena; a tc program keeps 64 MiB more than
 * the heap holds: 65 MiB of 64-B objects (CPU cache refills), 8 MiB of
 * 64-KiB page runs, two 3-MiB allocations of whole chunks. Linux >= 7.0:
 * no NULL, the heap grew itself by the chunks that took. Older kernels:
 * the documented behaviour: NULLs once the heap is empty, counted in
 * err[NOMEM], need_refill up for the loader, no self-grow; after
 * aa_heap__refill() the program gets memory again.
 */
Test(self_grow, a_tc_burst_64_mib_past_the_heap)
{
	__u64 nulls, chunks;

	open_heap(256, 1, 0);
	chunks = r->stats.nr_chunks;
	nulls = burst(64, 65 * MiB);
	nulls += burst(64 << 10, 8 * MiB);
	nulls += burst(3 * MiB, 6 * MiB);
	cr_log_info("%llu allocations, %llu NULLs; %llu chunks grown by allocations "
		    "(%llu ns each), %llu self-grows that got none\n",
		    (unsigned long long)(skel->bss->out.ok + skel->bss->out.nulls),
		    (unsigned long long)nulls, (unsigned long long)r->stats.self_grows,
		    (unsigned long long)(r->stats.self_grow_ns /
					 (r->stats.self_grows ? r->stats.self_grows : 1)),
		    (unsigned long long)r->stats.self_grow_fails);
	t_check(h);
	assert_ledger();
	if (kernel_grows()) {
		cr_assert(r->flags & AA_F_SELF_GROW, "init did not turn self-growth on");
		cr_assert_eq(nulls, 0, "%llu NULLs with room in the arena (first after %llu)",
			     (unsigned long long)nulls,
			     (unsigned long long)skel->bss->out.ok_at_first_null);
		cr_assert_eq(r->stats.err[AA_ERR_NOMEM], 0);
		cr_assert_geq(r->stats.self_grows, 78, "%llu chunks for 79 MiB",
			      (unsigned long long)r->stats.self_grows);
		cr_assert_eq(r->stats.nr_chunks, chunks + r->stats.self_grows);
		return;
	}
	cr_assert_eq(r->flags & AA_F_SELF_GROW, 0, "self-growth on a kernel without it");
	cr_assert_gt(nulls, 0, "a 1-MiB heap served 79 MiB");
	cr_assert_leq(skel->bss->out.ok_at_first_null * 64, MiB, "more than the heap held");
	cr_assert_eq(r->need_refill, 1, "no low-watermark signal for the loader");
	cr_assert_geq(r->stats.err[AA_ERR_NOMEM], nulls, "NULLs not counted");
	cr_assert_eq(r->stats.self_grows + r->stats.self_grow_fails, 0);
	cr_assert_eq(r->stats.nr_chunks, chunks, "the heap grew with no grow");
	cr_assert_geq(aa_heap__refill(h, 4 * MiB), 1, "refill: %s", strerror(errno));
	cr_assert_eq(burst(64, MiB), 0, "NULLs after the refill");
}

/* AA_F_NO_SELF_GROW, any kernel: the heap keeps its size, the burst gets
 * NULLs after it and raises need_refill. */
Test(self_grow, no_self_grow_keeps_the_heap_at_its_size)
{
	__u64 chunks;

	open_heap(64, 1, AA_F_NO_SELF_GROW);
	chunks = r->stats.nr_chunks;
	cr_assert_eq(r->flags & AA_F_SELF_GROW, 0);
	cr_assert_gt(burst(64, 4 * MiB), 0, "a 1-MiB heap served 4 MiB");
	cr_assert_leq(skel->bss->out.ok_at_first_null * 64, MiB);
	cr_assert_eq(r->need_refill, 1);
	cr_assert_eq(r->stats.nr_chunks, chunks);
	cr_assert_eq(r->stats.self_grows + r->stats.self_grow_fails, 0);
	t_check(h);
}

/* Linux >= 7.0: a burst past the end of a 16-MiB arena gets NULL only
 * once the arena is full: self-grows that mapped nothing are counted,
 * need_refill is up with an AA_EV_NOMEM event, the heap and the page
 * ledger are exact, and teardown returns every chunk. */
Test(self_grow, ends_at_the_arena_with_null_and_need_refill)
{
	struct aa_refill_event ev = {};
	__u64 nulls, chunks, caches;

	if (!kernel_grows())
		cr_skip_test("Linux < 7.0: a tc program cannot map arena pages");
	open_heap(16, 1, 0);
	nulls = burst(4096, 32 * MiB);
	cr_assert_gt(nulls, 0, "32 MiB from a 16-MiB arena");
	cr_assert_geq(skel->bss->out.ok_at_first_null * 4096, 8 * MiB,
		      "NULL after %llu pages: the arena had room",
		      (unsigned long long)skel->bss->out.ok_at_first_null);
	cr_assert_gt(r->stats.self_grow_fails, 0);
	cr_assert_eq(r->need_refill, 1);
	cr_assert_eq(aa_heap__wait_refill(h, 0, &ev), 1);
	t_check(h);
	assert_ledger();
	chunks = r->stats.nr_chunks;
	caches = cache_pages();
	cr_assert_eq(aa_heap__teardown(h), chunks, "teardown returned another count of chunks");
	cr_assert_eq(r->fault.pages_got - r->fault.pages_put, caches,
		     "pages left after teardown but the caches'");
}

/* Linux >= 7.0: every 3rd page allocation refused (fault injection):
 * self-grows fail now and then, each failure gives back what it got (the
 * ledger), and a NULL comes only from a self-grow that failed. */
Test(self_grow, refused_pages_leave_the_ledger_exact)
{
	__u64 nulls;

	if (!kernel_grows())
		cr_skip_test("Linux < 7.0: a tc program cannot map arena pages");
	open_heap(64, 1, 0);
	cr_assert_eq(aa_heap__set_fault(h, 3, 0), 0);
	nulls = burst(64 << 10, 32 * MiB);
	cr_assert_gt(r->fault.page_faults, 0, "no page was refused");
	cr_assert_leq(nulls, r->stats.self_grow_fails, "%llu NULLs, %llu failed self-grows",
		      (unsigned long long)nulls, (unsigned long long)r->stats.self_grow_fails);
	cr_assert_gt(r->stats.self_grows, 0);
	t_check(h);
	assert_ledger();
}
