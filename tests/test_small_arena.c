// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_small_arena.c - partial chunks: a slot whose pages the heap only
 * partly gets (the root's slot, an arena smaller than a chunk) serves what
 * the kernel gives of it, gives back only those pages, and the checker
 * holds the page map to its count of absent pages.
 */
#include <stdlib.h>
#include "common.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define NO_TIERS (AA_F_NO_CACHES | AA_F_NO_SELF_GROW)

static struct aa_heap *h;

static void close_heap(void)
{
	aa_heap__destroy(h);
	h = NULL;
}

TestSuite(small_arena, .fini = close_heap);

/* The slot of the heap's partial chunk (-1: none); its 'x' pages in *x. */
static int partial_slot(__u32 *x)
{
	const struct aa_root *r = aa_heap__root(h);
	__u32 s, n, found = 0;
	int slot = -1;

	for (s = 0; s < r->nr_slots; s++) {
		n = t_absent_pages(h, s);
		if (n) {
			slot = s;
			*x = n;
			found++;
		}
	}
	cr_assert_leq(found, 1, "%u partial chunks", found);
	return slot;
}

/* A 4-MiB arena: three whole chunks, and the root's slot (the root is an
 * arena global) as a partial chunk that serves allocations. Teardown
 * gives back the heap's pages only: the root stays, every page the heap
 * got went back (the ledger), and init makes the same heap again. */
Test(small_arena, the_roots_slot_becomes_a_partial_chunk)
{
	const struct aa_root *r;
	struct aa_stats st;
	__u64 p[1024], lo, hi, nr_allocs;
	__u32 x = 0, n, i, in_partial = 0;
	int slot;

	h = t_open_flags(T_PAGES(4 * MiB), 4 * MiB, NO_TIERS);
	r = aa_heap__root(h);
	st = t_stats(h);
	cr_assert_eq(r->nr_slots, 4);
	cr_assert_eq(st.nr_chunks, 4, "the root's slot is no chunk: %llu chunks",
		     (unsigned long long)st.nr_chunks);
	slot = partial_slot(&x);
	cr_assert_geq(slot, 0, "no partial chunk");
	cr_assert_eq(st.absent_pages, x, "absent %llu, 'x' pages %u",
		     (unsigned long long)st.absent_pages, x);
	cr_assert(x > 0 && x < AA_CHUNK_PAGES);
	cr_assert_eq(st.pages_mapped, 4 * (AA_CHUNK_PAGES + AA_META_PAGES) - x);
	t_check(h);

	/* 16 KiB at a time until the heap is empty: some from the partial chunk */
	lo = r->arena_base + ((__u64)slot << AA_CHUNK_SHIFT);
	hi = lo + AA_CHUNK_SIZE;
	for (n = 0; n < 1024; n++) {
		p[n] = t_malloc(h, 16 * KiB);
		if (!p[n])
			break;
		in_partial += p[n] >= lo && p[n] < hi;
	}
	cr_assert_lt(n, 1024, "the heap never ran out");
	cr_assert_gt(in_partial, 0, "nothing from the partial chunk");
	cr_assert_geq(n * 4, 3 * AA_CHUNK_PAGES, "%u allocations of 4 pages", n);
	t_check(h);
	for (i = 0; i < n; i++)
		cr_assert_eq(t_free(h, p[i]), 0);
	st = t_stats(h);
	cr_assert_eq(st.live_allocs, 0);
	t_check(h);

	nr_allocs = st.heap_allocs;
	cr_assert_eq(aa_heap__teardown(h), 4);
	cr_assert_eq(r->version, AA_LAYOUT_VERSION, "teardown gave back the root's pages");
	cr_assert_eq(r->stats.heap_allocs, nr_allocs, "teardown gave back the root's pages");
	cr_assert_eq(r->stats.absent_pages, 0);
	cr_assert_eq(r->fault.pages_got - r->fault.pages_put, r->table_pages,
		     "got %llu pages, put %llu, the root's tables %u",
		     (unsigned long long)r->fault.pages_got, (unsigned long long)r->fault.pages_put,
		     r->table_pages);

	cr_assert_eq(aa_heap__init(h, 4 * MiB), 0);
	cr_assert_eq(t_stats(h).nr_chunks, 4);
	cr_assert_eq(partial_slot(&x), slot);
	cr_assert_eq(t_stats(h).absent_pages, x);
	t_check(h);
}

/* An arena of 100 pages of 4 KiB (25 of 16), as the kernel's arena
 * selftests declare: smaller than a chunk, all of it one partial chunk
 * beside the root. */
Test(small_arena, a_100_page_arena_serves_1000_objects)
{
	static __u64 p[1000];
	struct aa_stats st;
	__u64 run;
	__u32 x = 0, i;

	h = t_open_flags(T_PAGES(400 * KiB), 400 * KiB, NO_TIERS);
	st = t_stats(h);
	cr_assert_eq(st.nr_chunks, 1);
	cr_assert_eq(partial_slot(&x), 0);
	cr_assert_geq(x, AA_CHUNK_PAGES - T_PAGES(400 * KiB), "pages past the arena's end are absent");
	for (i = 0; i < 1000; i++) {
		p[i] = t_malloc(h, 24);
		cr_assert_neq(p[i], 0, "allocation %u of 1000 got NULL", i);
	}
	run = t_malloc(h, 16 * 4096);
	cr_assert_neq(run, 0, "a 16-page run");
	t_check(h);
	cr_assert_eq(t_free(h, run), 0);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(t_free(h, p[i]), 0);
	cr_assert_eq(t_stats(h).live_allocs, 0);
	t_check(h);
}

/* Below the smallest arena: a clear error, before anything is loaded. At
 * the smallest, a heap of one page. */
Test(small_arena, below_the_minimum_is_refused)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = AA_MIN_ARENA_PAGES - 1);

	t_need_arena();
	cr_assert_null(aa_heap__open(&o));
	cr_assert_eq(errno, EINVAL);
	h = t_open_flags(AA_MIN_ARENA_PAGES, 4096, 0);
	cr_assert(aa_heap__flags(h) & AA_F_NO_CACHES, "CPU caches in %u pages",
		  AA_MIN_ARENA_PAGES);
	cr_assert_neq(t_malloc(h, 16), 0, "no 16 bytes in the smallest arena");
	t_check(h);
}

/* 32 pages on the loader's defaults (CPU caches asked for: with 4-KiB
 * pages there is no room for them, so none; 16-KiB pages have it on a
 * few CPUs): the library's globals, the slot table and a chunk's
 * metadata leave the rest to a small workload, a page run and objects of
 * seven classes, which frees back to where it started. */
Test(small_arena, a_32_page_arena_serves_a_small_workload)
{
	static const __u32 sizes[] = { 16, 24, 64, 100, 256, 1000, 2048 };
	const struct aa_root *r;
	static __u64 p[256];
	bool room;
	__u64 run;
	__u32 i, n = 0;

	h = t_open_flags(32, 32 * AA_PAGE_SIZE, 0);
	r = aa_heap__root(h);
	room = 2ULL * AA_CACHE_PAGES(libbpf_num_possible_cpus()) <= 32;
	cr_assert_eq(!(r->flags & AA_F_NO_CACHES), room, "CPU caches in a 32-page arena: %s",
		     room ? "none, with room for them" : "there, without room");
	/* the tables: the slot table and the page map, and the transfer
	 * caches' with caches */
	cr_assert_leq(AA_GLOBALS_PAGES + r->table_pages + AA_META_PAGES,
		      10 + (room ? AA_TC_TABLE_PAGES : 0),
		      "the heap's own pages: globals %u, tables %u, metadata %u",
		      AA_GLOBALS_PAGES, r->table_pages, AA_META_PAGES);
	run = t_malloc(h, 4 * 4096);
	cr_assert_neq(run, 0, "a 4-page run");
	for (i = 0; i < 256; i++) {
		p[n] = t_malloc(h, sizes[i % 7]);
		if (!p[n])
			break;
		n++;
	}
	cr_assert_geq(n, 64, "%u objects of 16 .. 2048 bytes beside the run", n);
	t_check(h);
	t_assert_ledger(r, "32 pages");
	cr_assert_eq(t_free(h, run), 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(t_free(h, p[i]), 0);
	cr_assert_eq(t_stats(h).live_allocs, 0);
	cr_assert_geq(aa_heap__drain(h), 0, "the caches' objects back to the heap");
	cr_assert_eq(t_stats(h).heap_bytes, 0);
	t_check(h);
	t_assert_ledger(r, "32 pages, all freed");
}

/* The checker holds each chunk's page map to its count of absent pages
 * (23) and the chunks' counts to stats.absent_pages (24). */
Test(small_arena, checker_finds_broken_absent_counts)
{
	const struct aa_root *r;
	struct aa_chunk_meta *meta;
	struct aa_heap_stats *st;
	__u32 x = 0;
	int slot;

	h = t_open_flags(T_PAGES(4 * MiB), 4 * MiB, NO_TIERS);
	r = aa_heap__root(h);
	slot = partial_slot(&x);
	cr_assert_geq(slot, 0);
	meta = aa_heap__ptr(h, r->arena_base + t_slot(h, slot)->meta_off);
	cr_assert_not_null(meta);
	t_check(h);

	meta->absent++;
	cr_assert_eq(aa_heap__check(h), 23);
	meta->absent--;
	st = (struct aa_heap_stats *)&r->stats;
	st->absent_pages++;
	cr_assert_eq(aa_heap__check(h), 24);
	st->absent_pages--;
	t_check(h);
}
