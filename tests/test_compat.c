// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_compat.c - include/compat/bpf_arena_alloc.h as a program written
 * for the kernel selftests' header uses it (tests/bpf/test_compat.bpf.c):
 * a 100-page arena, sleepable programs, a loader that never heard of
 * arena-alloc (open_and_load, no attach), pages of the arena taken with
 * the page kfuncs beside the heap's. The heap is read from the
 * skeleton's arena until the end, when an attach checks it.
 */
#include <time.h>
#include "common.h"
#include "test_compat.h"
#include "test_compat.skel.h"

static struct test_compat *skel;
static struct aa_heap *heap;

static void setup(void)
{
	skel = test_compat__open_and_load();
	cr_assert_not_null(skel, "open_and_load: %s", strerror(errno));
}

static void teardown(void)
{
	aa_heap__destroy(heap);
	heap = NULL;
	test_compat__destroy(skel);
	skel = NULL;
}

TestSuite(compat, .init = setup, .fini = teardown);

static const struct aa_root *root(void)
{
	return (const struct aa_root *)&skel->arena->aa__root;
}

static int run(struct bpf_program *prog, struct compat_args *a)
{
	return t_run(prog, a, sizeof(*a));
}

/* n allocations of size bytes: how many the program got (checked: each
 * 8-byte aligned and zeroed). */
static __u32 alloc(__u32 size, __u32 n)
{
	struct compat_args a = { .size = size, .n = n };

	run(skel->progs.alloc, &a);
	cr_assert_eq(a.misaligned, 0, "%u of %u allocations of %u bytes misaligned", a.misaligned,
		     a.got, size);
	cr_assert_eq(a.not_zero, 0, "%u of %u allocations of %u bytes not zeroed", a.not_zero,
		     a.got, size);
	return a.got;
}

/* The heap's stats balance, no error but those expected; then an attach
 * (which grows it: the loader's default) and the checker. */
static void check_heap(__u64 nomem)
{
	const struct aa_heap_stats *st = &root()->stats;
	__u32 i;

	cr_assert_eq(st->heap_allocs - st->heap_frees, st->heap_live);
	for (i = 0; i < AA_NR_ERRORS; i++)
		cr_assert_eq(st->err[i], i == AA_ERR_NOMEM ? nomem : 0, "err[%s] = %llu",
			     aa_error_str(i), (unsigned long long)st->err[i]);
	heap = aa_heap__attach(skel->obj, NULL);
	cr_assert_not_null(heap, "attach: %s", strerror(errno));
	t_check(heap);
}

/* The first bpf_alloc() initialises the heap (on every kernel: the
 * program is sleepable) and maps a few pages, not the arena. */
Test(compat, the_first_bpf_alloc_initialises_the_heap)
{
	cr_assert_eq(root()->magic, 0, "a heap before any allocation");
	cr_assert_eq(alloc(24, 1), 1, "no memory (self-init error %d)", root()->self_init_err);
	cr_assert_eq(root()->magic, AA_ROOT_MAGIC);
	cr_assert_eq(root()->self_inits, 1);
	cr_assert_eq(root()->arena_size, COMPAT_ARENA_PAGES * (__u64)AA_PAGE_SIZE);
	cr_assert_lt(root()->stats.pages_mapped, 16, "%llu pages mapped for one allocation",
		     (unsigned long long)root()->stats.pages_mapped);
	cr_assert_eq(alloc(24, 99), 99);
	cr_assert_eq(root()->self_inits, 1);
	check_heap(0);
}

/* The same through aa_malloc_grow_u64(), libarena's arena_malloc() on
 * arena-alloc: its size check reads the arena's size from the heap, so
 * it may check only once the heap is initialised. */
Test(compat, the_first_aa_malloc_grow_initialises_the_heap)
{
	struct compat_args a = { .size = 24 };

	cr_assert_eq(root()->magic, 0, "a heap before any allocation");
	run(skel->progs.malloc_grow, &a);
	cr_assert_eq(a.got, 1, "no memory (self-init error %d, grow failures %llu)",
		     root()->self_init_err, (unsigned long long)root()->stats.self_grow_fails);
	cr_assert_eq(a.misaligned, 0);
	cr_assert_eq(root()->self_inits, 1);
	cr_assert_eq(root()->stats.self_grow_fails, 0);
	run(skel->progs.free_all, &a);
	cr_assert_eq(root()->stats.heap_live, 0);
	check_heap(0);
}

/* The kernel header's limits: rounded to 8 bytes, NULL at PAGE_SIZE - 8
 * and above; bpf_alloc(0) is an allocation. Freed bytes come back zeroed. */
Test(compat, sizes_and_zeroing_as_the_kernels_header)
{
	struct compat_args a = {};

	cr_assert_eq(alloc(4096 - 8, 1), 0, "PAGE_SIZE - 8 bytes: not NULL");
	cr_assert_eq(alloc(4096 - 9, 1), 0, "rounds up to PAGE_SIZE - 8: not NULL");
	cr_assert_eq(alloc(4096 - 16, 1), 1);
	cr_assert_eq(alloc(0, 1), 1);
	cr_assert_eq(alloc(100, 8), 8);
	run(skel->progs.free_all, &a);
	cr_assert_eq(root()->stats.heap_live, 0);
	/* the same sizes again: the bytes the first ones filled, zeroed */
	cr_assert_eq(alloc(100, 8), 8);
	cr_assert_eq(alloc(4096 - 16, 1), 1);
	run(skel->progs.free_all, &a);
	check_heap(0);
}

/* The heap grows in steps: the arena keeps pages for its other users (a
 * program's own bpf_arena_alloc_pages(), as bpf_arena_htab.h's buckets).
 * When the arena is full an allocation fails, counted, and the heap asks
 * the kernel again once the others freed pages. */
Test(compat, the_arenas_other_users_keep_their_pages)
{
	struct compat_args a = { .n = 16 };
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };
	__u32 got, more;
	__u64 absent;

	cr_assert_eq(alloc(64, 1), 1);
	run(skel->progs.pages_get, &a);
	cr_assert_eq(a.got, 16, "the heap left no 16 pages to the arena's other users");
	got = alloc(2048, COMPAT_MAX_PTRS);
	cr_assert(got > 0 && got < COMPAT_MAX_PTRS, "%u allocations of 2 KiB in 100 pages", got);
	cr_assert_geq(root()->stats.err[AA_ERR_NOMEM], 1, "the arena full: no failure counted");
	cr_assert_geq(root()->stats.self_grow_fails, 1, "the arena full: no grow failure counted");
	absent = root()->stats.absent_pages;
	/* the others give their pages back; the heap gets them (after the
	 * retry interval: 10 ms) */
	run(skel->progs.pages_put, &a);
	nanosleep(&ten_ms, NULL);
	nanosleep(&ten_ms, NULL);
	more = alloc(2048, COMPAT_MAX_PTRS);
	cr_assert_geq(more, 16, "%u more allocations of 2 KiB once 16 pages were free", more);
	cr_assert_leq(root()->stats.absent_pages, absent - 16, "absent pages %llu, were %llu",
		      (unsigned long long)root()->stats.absent_pages, (unsigned long long)absent);
	run(skel->progs.free_all, &a);
	cr_assert_eq(root()->stats.heap_live, 0);
	check_heap(2);
}
