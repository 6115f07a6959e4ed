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
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(arena_mib * MiB)), 0);
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

/* Pages got from the kernel less pages given back: the chunks' and their
 * metadata's (pages_mapped) and the caches', exactly. */
static void assert_ledger(void)
{
	t_assert_ledger(r, "self-growth");
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
		cr_assert(aa_heap__flags(h) & AA_F_SELF_GROW, "init did not turn self-growth on");
		cr_assert_eq(nulls, 0, "%llu NULLs with room in the arena (first after %llu)",
			     (unsigned long long)nulls,
			     (unsigned long long)skel->bss->out.ok_at_first_null);
		cr_assert_eq(r->stats.err[AA_ERR_NOMEM], 0);
		cr_assert_geq(r->stats.self_grows, 78, "%llu chunks for 79 MiB",
			      (unsigned long long)r->stats.self_grows);
		cr_assert_eq(r->stats.nr_chunks, chunks + r->stats.self_grows);
		return;
	}
	cr_assert_eq(aa_heap__flags(h) & AA_F_SELF_GROW, 0, "self-growth on a kernel without it");
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
	cr_assert_eq(aa_heap__flags(h) & AA_F_SELF_GROW, 0);
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
	caches = t_cache_pages(r);
	cr_assert_eq(aa_heap__teardown(h), chunks, "teardown returned another count of chunks");
	cr_assert_eq(r->fault.pages_got - r->fault.pages_put, caches + r->table_pages,
		     "pages left after teardown but the caches' and the root's tables'");
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

/* Linux >= 7.0. Pages mapped per whole chunk: the chunk and its metadata
 * pages (a partial chunk maps its absent pages less). */
static __u64 chunk_pages(void)
{
	return (r->stats.pages_mapped + r->stats.absent_pages) / r->stats.nr_chunks;
}

/* Every whole chunk of the heap (n chunks, partial ones included) held
 * by one 1-MiB run; then the runs of the two chunks after the first freed
 * and trimmed: a hole of two unmapped slots between held chunks. Returns
 * the hole's first slot. */
static __u32 hold_all_but_a_hole(__u64 *runs, __u32 n)
{
	__u32 i, s, hole, whole = n - t_partial_chunks(h);

	cr_assert_eq(r->stats.nr_chunks, n, "%llu chunks", (unsigned long long)r->stats.nr_chunks);
	cr_assert_geq(whole, 4);
	for (i = 0; i < whole; i++) {
		runs[i] = aa_heap__malloc(h, MiB);
		cr_assert_neq(runs[i], 0, "run %u: %s", i, strerror(errno));
	}
	cr_assert_eq(r->stats.nr_chunks, n, "holding the runs grew the heap");
	/* runs[1] and runs[2] in two adjacent slots, runs[3] after them */
	for (i = 1; i < 4; i++)
		cr_assert_eq((runs[i] - r->arena_base) >> 20, ((runs[1] - r->arena_base) >> 20) + i - 1,
			     "runs not in adjacent chunks");
	hole = (runs[1] - r->arena_base) >> 20;
	cr_assert_eq(aa_heap__free(h, runs[1]), 0);
	cr_assert_eq(aa_heap__free(h, runs[2]), 0);
	runs[1] = runs[2] = 0;
	cr_assert_eq(aa_heap__trim(h, 0), 2, "trim: %s", strerror(errno));
	for (s = hole; s < hole + 2; s++)
		cr_assert_eq(t_slot(h, s)->state, AA_SLOT_UNMAPPED, "slot %u not trimmed", s);
	return hole;
}

/* One allocation of size bytes from the tc program, kept: whether it
 * got memory. */
static bool tc_alloc(__u64 size)
{
	__u64 ok = skel->bss->out.ok;

	skel->bss->cfg.size = size;
	skel->bss->cfg.keep = 1;
	skel->bss->cfg.per_run = 1;
	t_run_pkt(skel->progs.burst);
	return skel->bss->out.ok == ok + 1;
}

/* Linux >= 7.0: 2 MiB + 4 KiB (three chunks in a row) from a tc program
 * into a heap whose every chunk is held but for a two-slot hole, with
 * room after the heap: the allocation maps three slots in a row (the
 * hole cannot take it) and no more. */
Test(self_grow, a_large_run_after_a_trim_maps_a_run_of_slots)
{
	__u64 runs[8], mapped, per_chunk, grows;

	if (!kernel_grows())
		cr_skip_test("Linux < 7.0: a tc program cannot map arena pages");
	open_heap(32, 8, 0);
	per_chunk = chunk_pages();
	hold_all_but_a_hole(runs, 8);
	mapped = r->stats.pages_mapped;
	grows = r->stats.self_grows;
	cr_assert(tc_alloc(2 * MiB + 4096), "NULL for 2 MiB + 4 KiB with %u free slots",
		  r->nr_slots - 1 - 6);
	cr_assert_eq(r->stats.self_grows - grows, 3, "%llu chunks mapped for 3",
		     (unsigned long long)(r->stats.self_grows - grows));
	cr_assert_eq(r->stats.pages_mapped - mapped, 3 * per_chunk, "%llu pages mapped for 3 chunks",
		     (unsigned long long)(r->stats.pages_mapped - mapped));
	t_check(h);
	assert_ledger();
}

/* Linux >= 7.0: the same hole in an arena with no other room: a request
 * for three chunks in a row gets NULL and maps nothing, however often it
 * is made; two chunks in a row fill the hole exactly. */
Test(self_grow, no_run_of_slots_maps_nothing)
{
	__u64 runs[16], mapped, per_chunk;
	__u32 n, hole, i;

	if (!kernel_grows())
		cr_skip_test("Linux < 7.0: a tc program cannot map arena pages");
	open_heap(16, 16, 0);	/* every slot that takes a chunk */
	n = r->stats.nr_chunks;
	cr_assert_leq(n, 16);
	cr_assert_geq(n, 6);
	per_chunk = chunk_pages();
	hole = hold_all_but_a_hole(runs, n);
	mapped = r->stats.pages_mapped;
	for (i = 0; i < 3; i++)
		cr_assert_not(tc_alloc(2 * MiB + 4096), "three chunks in a row from a two-slot hole");
	cr_assert_eq(r->stats.pages_mapped, mapped, "%llu pages mapped for nothing",
		     (unsigned long long)(r->stats.pages_mapped - mapped));
	cr_assert_geq(r->stats.self_grow_fails, 3);
	cr_assert(tc_alloc(2 * MiB), "NULL for 2 MiB with a two-slot hole");
	cr_assert_eq(r->stats.pages_mapped - mapped, 2 * per_chunk);
	for (i = hole; i < hole + 2; i++)
		cr_assert_neq(t_slot(h, i)->state, AA_SLOT_UNMAPPED, "slot %u still unmapped", i);
	t_check(h);
	assert_ledger();
}
