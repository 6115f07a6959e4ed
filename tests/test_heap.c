// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_heap.c - the buddy tier and the loader, driven from userspace
 * through the library's syscall programs (aa__run, aa__grow, aa__trim, ...):
 * sizes, alignment, calloc, bad pointers, exhaustion, large allocations,
 * bulk API, grow/trim/teardown and stats read from the mmap.
 */
#include <stdlib.h>
#include "common.h"
#include "diff_model.h"	/* model_usable(): the size rule */

#define MiB (1ULL << 20)

static struct aa_heap *h;

static void open_default(void)
{
	h = t_open(T_PAGES(64 * MiB), 4 * MiB);
}

static void close_heap(void)
{
	aa_heap__destroy(h);
	h = NULL;
}

/* Every test starts with the suite's heap (Criterion runs a suite's init
 * before a test's own, whatever the test says); a test that needs another
 * heap closes it first (close_heap()). */
TestSuite(heap, .init = open_default, .fini = close_heap);

/* --- loader ------------------------------------------------------------ */

Test(heap, root_is_valid_in_the_mmap)
{
	const struct aa_root *r = aa_heap__root(h);

	cr_assert_not_null(r);
	cr_assert_eq(r->magic, AA_ROOT_MAGIC);
	cr_assert_eq(r->version, AA_LAYOUT_VERSION);
	cr_assert_eq(r->root_size, sizeof(*r));
	cr_assert_eq(r->arena_size, 64 * MiB);
	cr_assert_eq(aa_heap__arena_size(h), 64 * MiB);
	cr_assert_eq(r->stats.nr_chunks, 4);
	cr_assert_eq(r->stats.free_blocks[AA_MAX_ORDER], 4);
	cr_assert_eq(r->stats.pages_mapped, 4 * (AA_CHUNK_PAGES + AA_META_PAGES));
	t_check(h);
}

Test(heap, init_is_idempotent)
{
	cr_assert_eq(aa_heap__init(h, 0), 0);
	cr_assert_eq(t_stats(h).nr_chunks, 4);
}

Test(heap, bad_opts_are_rejected)
{
	struct { struct aa_heap_opts o; char extra[8]; } big = { 0 };
	AA_OPTS(aa_heap_opts, huge, .arena_pages = AA_MAX_ARENA_PAGES + 1);

	t_need_arena();
	big.o.sz = sizeof(big);
	big.extra[3] = 1;	/* unknown non-zero field past the last one */
	cr_assert_null(aa_heap__open(&big.o));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(aa_heap__open(&huge));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(aa_heap__attach(NULL, NULL));
	cr_assert_eq(errno, EINVAL);
}

Test(heap, ptr_translation)
{
	__u64 p = t_malloc(h, 100);
	char *u = aa_heap__ptr(h, p);

	cr_assert_not_null(u);
	cr_assert_eq(aa_heap__addr(h, u), p);
	cr_assert_null(aa_heap__ptr(h, 16));
	cr_assert_eq(errno, EFAULT);
	cr_assert_eq(aa_heap__addr(h, &p), 0);
	cr_assert_eq(errno, EFAULT);
}

/* Every entry point takes a NULL handle as -EINVAL, errno EINVAL: none
 * dereferences it (they used to crash). */
#define T_NULL(call, want)						\
	do {								\
		errno = 0;						\
		cr_assert_eq((long)(call), (long)(want), "%s", #call);	\
		cr_assert_eq(errno, EINVAL, "%s: errno %d", #call, errno); \
	} while (0)

Test(heap, null_heap_is_einval_everywhere)
{
	struct aa_op_args op = { .op = AA_OP_MALLOC, .size = 16 };
	struct aa_stats st;
	__u64 n;

	T_NULL(aa_heap__init(NULL, 0), -EINVAL);
	T_NULL(aa_heap__reinit(NULL, NULL), -EINVAL);
	T_NULL(aa_heap__grow(NULL, 1 << 20), -EINVAL);
	T_NULL(aa_heap__trim(NULL, 0), -EINVAL);
	T_NULL(aa_heap__teardown(NULL), -EINVAL);
	T_NULL(aa_heap__drain(NULL), -EINVAL);
	T_NULL(aa_heap__refill(NULL, 0), -EINVAL);
	T_NULL(aa_heap__check(NULL), -EINVAL);
	T_NULL(aa_heap__call(NULL, &op), -EINVAL);
	T_NULL(aa_heap__malloc(NULL, 16), 0);
	T_NULL(aa_heap__free(NULL, 0), -EINVAL);
	T_NULL(aa_heap__batch(NULL, 0, 1), -EINVAL);
	T_NULL(aa_heap__ptr(NULL, 0), NULL);
	T_NULL(aa_heap__addr(NULL, &n), 0);
	T_NULL(aa_heap__root(NULL), NULL);
	T_NULL(aa_heap__stats(NULL, &st), -EINVAL);
	T_NULL(aa_heap__object(NULL), NULL);
	T_NULL(aa_heap__arena_size(NULL), 0);
	T_NULL(aa_heap__flags(NULL), 0);
	T_NULL(aa_heap__cpu_cache(NULL, 0), NULL);
	T_NULL(aa_heap__cached_bytes(NULL, &n), 0);
	T_NULL(aa_heap__print_caches(NULL, stderr), -EINVAL);
	aa_heap__destroy(NULL);
}

/* --- sizes and alignment ------------------------------------------------ */

Test(heap, sizes_round_up_to_their_class)
{
	static const __u64 sizes[] = { 1, 15, 16, 17, 24, 40, 72, 100, 136, 1000, 4096, 4097,
				       8192, 8193, 65535, 1 << 20, (1 << 20) + 1, 3 << 20 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		__u64 p = t_malloc(h, sizes[i]), want = model_usable(sizes[i]);

		cr_assert_neq(p, 0, "malloc(%llu)", (unsigned long long)sizes[i]);
		cr_assert_eq(t_usable(h, p), want, "usable(%llu) = %llu, want %llu",
			     (unsigned long long)sizes[i], (unsigned long long)t_usable(h, p),
			     (unsigned long long)want);
		cr_assert_eq(p % (want <= AA_MAX_CLASS_SIZE ? AA_OBJ_ALIGN(want) : AA_PAGE_SIZE), 0,
			     "alignment of %llu", (unsigned long long)sizes[i]);
		cr_assert_eq(t_free(h, p), 0);
	}
	t_check(h);
}

/* Every request size up to the largest class, and a sweep above it, gets
 * exactly its class (or its pages) from the BPF side, and objects of one
 * class sit size bytes apart in their span. */
Test(heap, every_size_gets_its_class)
{
	__u64 size, p, q;

	for (size = 1; size <= AA_MAX_CLASS_SIZE + 3 * AA_PAGE_SIZE; size += size < 2048 ? 1 : 7) {
		p = t_malloc(h, size);
		q = t_malloc(h, size);
		cr_assert(p && q, "malloc(%llu)", (unsigned long long)size);
		cr_assert_eq(t_usable(h, p), model_usable(size), "usable(%llu) = %llu",
			     (unsigned long long)size, (unsigned long long)t_usable(h, p));
		if (size <= AA_MAX_CLASS_SIZE && (p >> 12) == (q >> 12))
			cr_assert_eq((q > p ? q - p : p - q) % model_usable(size), 0,
				     "objects of %llu B at 0x%llx and 0x%llx",
				     (unsigned long long)size, (unsigned long long)p,
				     (unsigned long long)q);
		cr_assert_eq(t_free(h, p), 0);
		cr_assert_eq(t_free(h, q), 0);
	}
	t_check(h);
}

Test(heap, size_zero_and_too_big_give_null)
{
	struct aa_op_args a;

	cr_assert_eq(t_malloc(h, 0), 0);
	cr_assert_eq(t_malloc(h, AA_MAX_ALLOC + 1), 0);
	cr_assert_eq(t_malloc(h, 128 * MiB), 0);	/* over the arena */
	cr_assert_eq(t_stats(h).err[AA_ERR_SIZE], 3);
	a = t_call(h, AA_OP_CALLOC, 1ULL << 33, 1ULL << 33, 0, 0);	/* n * size overflows */
	cr_assert_eq(a.ptr, 0);
	cr_assert_eq(t_stats(h).err[AA_ERR_SIZE], 4);
	cr_assert_eq(t_stats(h).live_allocs, 0);
}

Test(heap, aligned_alloc)
{
	__u64 align;

	for (align = 16; align <= AA_PAGE_SIZE; align <<= 1) {
		struct aa_op_args a = t_call(h, AA_OP_ALIGNED, 24, align, 0, 0);

		cr_assert_neq(a.ptr, 0);
		cr_assert_eq(a.ptr % align, 0, "align %llu", (unsigned long long)align);
		cr_assert_geq(t_usable(h, a.ptr), align);
		cr_assert_eq(t_free(h, a.ptr), 0);
	}
}

Test(heap, aligned_alloc_bad_alignment)
{
	cr_assert_eq(t_call(h, AA_OP_ALIGNED, 24, 3, 0, 0).ptr, 0);
	cr_assert_eq(t_call(h, AA_OP_ALIGNED, 24, 2 * AA_PAGE_SIZE, 0, 0).ptr, 0);
	cr_assert_eq(t_call(h, AA_OP_ALIGNED, 24, 0, 0, 0).ptr, 0);
	cr_assert_eq(t_stats(h).err[AA_ERR_ALIGN], 3);
}

Test(heap, calloc_zeroes_reused_memory)
{
	__u64 p = t_malloc(h, 512), q;
	unsigned char *u = aa_heap__ptr(h, p);
	int i;

	memset(u, 0xab, 512);
	cr_assert_eq(t_free(h, p), 0);
	q = t_call(h, AA_OP_CALLOC, 64, 8, 0, 0).ptr;
	cr_assert_eq(q, p, "expected the LIFO buddy to hand back the same block");
	u = aa_heap__ptr(h, q);
	for (i = 0; i < 512; i++)
		cr_assert_eq(u[i], 0, "byte %d not zeroed", i);
}

/* --- bad pointers: error, counter, heap unchanged ----------------------- */

static void snapshot(struct aa_stats *st)
{
	*st = t_stats(h);
	memset(st->err, 0, sizeof(st->err));
}

Test(heap, double_free_is_refused)
{
	__u64 p = t_malloc(h, 64);
	struct aa_stats before, after;

	cr_assert_eq(t_free(h, p), 0);
	snapshot(&before);
	cr_assert_eq(t_free(h, p), -EALREADY);
	snapshot(&after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "heap changed");
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], 1);
	t_check(h);
}

Test(heap, double_free_after_coalescing_is_refused)
{
	__u64 a = t_malloc(h, 16), b = t_malloc(h, 16);

	cr_assert_eq(t_free(h, a), 0);
	cr_assert_eq(t_free(h, b), 0);	/* a and b merge upwards */
	cr_assert_eq(t_free(h, b), -EALREADY);
	cr_assert_eq(t_free(h, a), -EALREADY);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], 2);
	t_check(h);
}

Test(heap, foreign_pointers_are_refused)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 root_addr = aa_heap__addr(h, r);

	cr_assert_eq(t_free(h, 16), -EFAULT);			/* not in the arena */
	cr_assert_eq(t_free(h, root_addr), -EFAULT);		/* arena, not heap */
	cr_assert_eq(t_free(h, r->arena_base + r->arena_size - 16), -EFAULT); /* unmapped slot */
	cr_assert_eq(t_stats(h).err[AA_ERR_FOREIGN], 3);
	cr_assert_eq(t_usable(h, root_addr), 0);
	t_check(h);
}

Test(heap, interior_and_misaligned_pointers_are_refused)
{
	__u64 p = t_malloc(h, 256);
	struct aa_stats before, after;

	snapshot(&before);
	cr_assert_eq(t_free(h, p + 16), -ENOENT);
	cr_assert_eq(t_free(h, p + 128), -ENOENT);
	cr_assert_eq(t_free(h, p + 8), -ENOENT, "8-byte aligned: an object start or interior");
	cr_assert_eq(t_free(h, p + 1), -EINVAL);
	cr_assert_eq(t_free(h, p + 4), -EINVAL);
	snapshot(&after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "heap changed");
	cr_assert_eq(t_stats(h).err[AA_ERR_INTERIOR], 3);
	cr_assert_eq(t_stats(h).err[AA_ERR_MISALIGNED], 2);
	cr_assert_eq(t_usable(h, p + 16), 0);
	cr_assert_eq(t_free(h, p), 0);	/* the real pointer still frees */
	t_check(h);
}

/* The page map judges every pointer in O(1): object starts of a span
 * (not just multiples of the alignment), its unused tail, free objects, page runs
 * and their tails, free pages. Nothing changes on a refusal. */
Test(heap, span_and_run_pointers_are_judged_by_the_page_map)
{
	__u64 a = t_malloc(h, 48), b = t_malloc(h, 48), run = t_malloc(h, 3 * AA_PAGE_SIZE);
	__u64 span = a & ~(__u64)(AA_PAGE_SIZE - 1);	/* 48 B: 1-page spans */
	__u32 objs = aa_class_span_pages(aa_size_class(48)) * AA_PAGE_SIZE / 48;
	struct aa_stats before, after;

	cr_assert(a && b && run);
	cr_assert_eq(b, a + 48, "a fresh span hands out neighbours");
	snapshot(&before);
	cr_assert_eq(t_free(h, a + 16), -ENOENT, "aligned, not an object start");
	cr_assert_eq(t_free(h, a + 32), -ENOENT);
	cr_assert_eq(t_free(h, span + objs * 48), -ENOENT, "the span's unused tail");
	cr_assert_eq(t_free(h, b + 48), -EALREADY, "a free object of the span");
	cr_assert_eq(t_free(h, run + 16), -ENOENT, "inside a run's first page");
	cr_assert_eq(t_free(h, run + AA_PAGE_SIZE), -ENOENT, "a run's tail page");
	cr_assert_eq(t_free(h, run + 3 * AA_PAGE_SIZE), -EALREADY, "the free page after the run");
	snapshot(&after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "heap changed");
	cr_assert_eq(t_stats(h).err[AA_ERR_INTERIOR], 5);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], 2);
	cr_assert_eq(t_usable(h, a), 48);
	cr_assert_eq(t_usable(h, run), 3 * AA_PAGE_SIZE);
	cr_assert_eq(t_free(h, a), 0);
	cr_assert_eq(t_free(h, a), -EALREADY);
	cr_assert_eq(t_free(h, b), 0);
	cr_assert_eq(t_free(h, run), 0);
	t_check(h);
}

/* Beyond a chunk: whole chunks plus a run in the next one, whose other
 * pages stay usable; at most a page lost to rounding. */
Test(heap, large_allocations_give_back_their_last_chunk)
{
	/* a chunk and a 2-page tail, whatever the page */
	__u64 bytes = AA_CHUNK_SIZE + AA_PAGE_SIZE + 904, p = t_malloc(h, bytes), q;
	struct aa_stats st = t_stats(h);

	cr_assert_neq(p, 0);
	cr_assert_eq(t_usable(h, p), AA_CHUNK_SIZE + 2 * AA_PAGE_SIZE);
	cr_assert_eq(st.large_chunks, 1);
	cr_assert_eq(st.run_pages, 2, "the rest is a 2-page run in the next chunk");
	cr_assert_eq(t_free(h, p + AA_CHUNK_SIZE), -ENOENT, "inside the tail run");
	/* its pages 2.. went back as blocks of 2, 4, .. half a chunk: a run
	 * of one page less than half a chunk fits that last block best */
	q = t_malloc(h, (AA_CHUNK_PAGES / 2 - 1) * AA_PAGE_SIZE);
	cr_assert_eq(q, p + AA_CHUNK_SIZE + AA_CHUNK_PAGES / 2 * AA_PAGE_SIZE,
		     "the next chunk's free pages serve others (got 0x%llx)", (unsigned long long)q);
	memset(aa_heap__ptr(h, p), 0x5a, bytes);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(t_free(h, q), 0);
	st = t_stats(h);
	cr_assert(st.large_chunks == 0 && st.run_pages == 0 && st.span_pages == 0);
	cr_assert_eq(st.free_blocks[AA_MAX_ORDER], 4, "everything coalesced back");
	t_check(h);
}

Test(heap, free_null_is_a_no_op)
{
	struct aa_stats before, after;

	snapshot(&before);
	cr_assert_eq(t_free(h, 0), 0);
	snapshot(&after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0);
}

/* --- exhaustion, growth, large allocations ------------------------------ */

Test(heap, exhaustion_gives_null_then_recovers)
{
	__u64 ptrs[64], p;
	int n = 0;

	close_heap();
	h = t_open(T_PAGES(8 * MiB), 2 * MiB);
	while (n < 64 && (p = t_malloc(h, 256 << 10)))
		ptrs[n++] = p;
	cr_assert_eq(n, 8, "2 MiB heap holds 8 blocks of 256 KiB, got %d", n);
	cr_assert_eq(t_stats(h).err[AA_ERR_NOMEM], 1);
	cr_assert_eq(t_malloc(h, 16), 0);
	cr_assert_eq(t_free(h, ptrs[3]), 0);
	cr_assert_neq(t_malloc(h, 16), 0, "allocator did not recover after a free");
	cr_assert_eq(aa_heap__grow(h, 1), 1);
	cr_assert_neq(t_malloc(h, 256 << 10), 0, "allocator did not use the new chunk");
	t_check(h);
}

Test(heap, grow_until_the_arena_is_full)
{
	int chunks;

	close_heap();
	h = t_open(T_PAGES(8 * MiB) /* 8 slots */, 1 * MiB);
	chunks = aa_heap__grow(h, 64 * MiB);
	/* root and metadata pages occupy at least one slot */
	cr_assert(chunks >= 5 && chunks <= 7, "grew %d chunks", chunks);
	cr_assert_eq(aa_heap__grow(h, MiB), -ENOMEM);
	cr_assert_eq(aa_heap__grow(h, 0), -EINVAL);
	t_check(h);
}

Test(heap, large_allocations_are_chunk_runs)
{
	__u64 p = t_malloc(h, 3 * MiB - 100);
	struct aa_stats st = t_stats(h);
	unsigned char *u;

	cr_assert_neq(p, 0);
	cr_assert_eq(p % AA_PAGE_SIZE, 0);
	cr_assert_eq(t_usable(h, p), 3 * MiB);
	cr_assert_eq(st.large_chunks, 3);
	cr_assert_eq(st.bytes_in_use, 3 * MiB);
	u = aa_heap__ptr(h, p);
	memset(u, 0x5a, 3 * MiB - 100);	/* every byte is mapped */
	cr_assert_eq(t_free(h, p + MiB), -ENOENT);	/* interior, tail chunk */
	cr_assert_eq(t_free(h, p + 4096), -ENOENT);	/* interior, head chunk */
	cr_assert_eq(t_malloc(h, 2 * MiB), 0, "only one chunk left");
	cr_assert_eq(t_free(h, p), 0);
	st = t_stats(h);
	cr_assert_eq(st.large_chunks, 0);
	cr_assert_eq(st.free_blocks[AA_MAX_ORDER], 4);
	t_check(h);
}

/* --- bulk API ------------------------------------------------------------ */

Test(heap, bulk_alloc_and_free)
{
	__u64 arr = t_malloc(h, 128 * sizeof(__u64)), *u = aa_heap__ptr(h, arr);
	struct aa_op_args a;
	int i, j;

	a = t_call(h, AA_OP_MALLOC_BULK, 40, 0, arr, 128);
	cr_assert_eq(a.ret, 128);
	for (i = 0; i < 128; i++) {
		cr_assert_neq(u[i], 0);
		cr_assert_eq(t_usable(h, u[i]), 40, "40 B is served by the 40-B class");
		for (j = 0; j < i; j++)
			cr_assert_neq(u[i], u[j], "duplicate object");
	}
	cr_assert_eq(t_stats(h).live_allocs, 129);
	a = t_call(h, AA_OP_FREE_BULK, 0, 0, arr, 128);
	cr_assert_eq(a.ret, 128);
	for (i = 0; i < 128; i++)
		cr_assert_eq(u[i], 0, "freed slot %d not cleared", i);
	cr_assert_eq(t_stats(h).live_allocs, 1);
	t_check(h);
}

Test(heap, bulk_free_reports_invalid_pointers)
{
	__u64 arr = t_malloc(h, 8 * sizeof(__u64)), *u = aa_heap__ptr(h, arr);
	__u64 p = t_malloc(h, 32), q = t_malloc(h, 32);
	struct aa_op_args a;

	u[0] = p;
	u[1] = q + 16;	/* interior (q is still live then) */
	u[2] = 0;	/* NULL: skipped */
	u[3] = q;
	u[4] = 12345;	/* foreign */
	a = t_call(h, AA_OP_FREE_BULK, 0, 0, arr, 5);
	cr_assert_eq(a.ret, 2);
	cr_assert_eq(u[0], 0);
	cr_assert_eq(u[1], q + 16);
	cr_assert_eq(u[3], 0);
	cr_assert_eq(u[4], 12345);
	cr_assert_eq(t_stats(h).err[AA_ERR_INTERIOR], 1);
	cr_assert_eq(t_stats(h).err[AA_ERR_FOREIGN], 1);
	/* nothing valid left: the call fails */
	a = t_call(h, AA_OP_FREE_BULK, 0, 0, arr, 5);
	cr_assert_eq(a.ret, -EINVAL);
	t_check(h);
}

Test(heap, bulk_alloc_returns_what_it_got)
{
	__u64 arr, *u;
	struct aa_op_args a;

	close_heap();
	h = t_open(T_PAGES(8 * MiB), 1 * MiB);
	arr = t_malloc(h, 64 * sizeof(__u64));	/* 512 B of the 1-MiB heap */
	u = aa_heap__ptr(h, arr);
	a = t_call(h, AA_OP_MALLOC_BULK, 128 << 10, 0, arr, 64);
	cr_assert_eq(a.ret, 7, "1 MiB minus a span of 512-B objects holds 7 runs of 128 KiB, got %lld",
		     (long long)a.ret);
	cr_assert_neq(u[6], 0);
	cr_assert_eq(t_stats(h).err[AA_ERR_NOMEM], 1);
	t_check(h);
}

/* --- grow, trim, teardown ------------------------------------------------ */

Test(heap, trim_returns_free_chunks_beyond_keep)
{
	__u64 p = t_malloc(h, 100);
	struct aa_stats st;

	cr_assert_eq(aa_heap__trim(h, 1 * MiB), 2, "4 chunks, 1 busy, keep 1 free");
	st = t_stats(h);
	cr_assert_eq(st.nr_chunks, 2);
	cr_assert_eq(st.nr_trims, 2);
	cr_assert_eq(st.pages_mapped, 2 * (AA_CHUNK_PAGES + AA_META_PAGES));
	cr_assert_eq(aa_heap__trim(h, 0), 1);
	cr_assert_eq(t_usable(h, p), 104, "live object survives trim");
	cr_assert_eq(aa_heap__grow(h, 2 * MiB), 2);
	cr_assert_eq(t_stats(h).nr_chunks, 3);
	t_check(h);
}

Test(heap, teardown_returns_everything_and_init_restarts)
{
	cr_assert_neq(t_malloc(h, 100), 0);
	cr_assert_eq(aa_heap__teardown(h), 4);
	cr_assert_eq(t_stats(h).pages_mapped, 0);
	cr_assert_eq(t_malloc(h, 100), 0);
	cr_assert_eq(t_stats(h).err[AA_ERR_UNINIT], 1);
	cr_assert_eq(aa_heap__init(h, 2 * MiB), 0);
	cr_assert_eq(t_stats(h).nr_chunks, 2);
	cr_assert_neq(t_malloc(h, 100), 0);
	t_check(h);
}

/* --- stats from the mmap --------------------------------------------------- */

Test(heap, stats_are_live_in_the_mmap)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 p, q;

	p = t_malloc(h, 1000);
	cr_assert_eq(r->stats.heap_bytes, 1024);
	q = t_malloc(h, 10);
	cr_assert_eq(r->stats.heap_bytes, 1040);
	cr_assert_eq(r->stats.heap_live, 2);
	cr_assert_eq(r->stats.heap_peak_bytes, 1040);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(r->stats.heap_bytes, 16);
	cr_assert_eq(r->stats.heap_peak_bytes, 1040);
	cr_assert_eq(r->stats.heap_allocs, 2);
	cr_assert_eq(r->stats.heap_frees, 1);
	cr_assert_eq(t_free(h, q), 0);
	cr_assert_eq(r->stats.span_pages, 2, "each class keeps its empty span");
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(r->stats.span_pages, 0);
	cr_assert_eq(r->stats.free_blocks[AA_MAX_ORDER], 4, "drained: everything coalesced back");
}

Test(heap, split_and_coalesce_a_whole_chunk)
{
	static __u64 p[4096];
	int i;

	for (i = 0; i < 4096; i++)
		cr_assert_neq(p[i] = t_malloc(h, 16), 0);
	cr_assert_eq(t_stats(h).free_blocks[AA_MAX_ORDER], 3);
	for (i = 4095; i >= 0; i -= 2)
		cr_assert_eq(t_free(h, p[i]), 0);
	t_check(h);
	for (i = 0; i < 4096; i += 2)
		cr_assert_eq(t_free(h, p[i]), 0);
	cr_assert_eq(t_stats(h).span_pages, 1, "16 spans of 1 page; the last one is kept");
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).free_blocks[AA_MAX_ORDER], 4);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

/* The root's tables (the slot table, the transfer caches) are arena
 * memory like the rest: the checker holds them to their geometry and to
 * the page ledger's count of their pages (26). */
Test(heap, checker_finds_broken_root_tables)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u32 pages = r->table_pages, tc = r->tc_off;
	__u64 slots = r->slots;

	t_check(h);
	cr_assert_neq(r->slots, 0, "no slot table");
	r->table_pages = pages + 1;
	cr_assert_eq(aa_heap__check(h), 26, "one table page too many");
	r->table_pages = pages;
	r->slots = slots + 8;
	cr_assert_eq(aa_heap__check(h), 26, "a slot table not on a page");
	r->slots = slots;
	if (!(r->flags & AA_F_NO_CACHES)) {
		r->tc_off = 0;
		cr_assert_eq(aa_heap__check(h), 26, "CPU caches without transfer caches");
		r->tc_off = tc;
	}
	t_check(h);
}

/* The modes the flags name are the ones the fast paths and the tiers
 * follow (27): a carve tail on a heap without debug mode (new spans would
 * end with the poison, and debug's claim check would run), or none in
 * debug mode (fresh objects could read as underflows). */
Test(heap, checker_finds_modes_that_disagree)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 tail = r->carve_tail;

	t_check(h);
	cr_assert_eq(tail, r->flags & AA_F_DEBUG ? AA_DEBUG_POISON : 0,
		     "init set the carve tail of the heap's mode");
	r->carve_tail = tail ? 0 : AA_DEBUG_POISON;
	cr_assert_eq(aa_heap__check(h), 27, "a carve tail that is not the mode's");
	r->carve_tail = tail;
	t_check(h);
}

/* The lock-free lookups take a page-map entry for what its page is, so
 * the entries of a slot that holds no chunk (a multi-chunk allocation's
 * here; UNMAPPED alike) must be 0, never a span's (29). */
Test(heap, checker_finds_page_map_entries_where_no_chunk_is)
{
	__u64 p = t_malloc(h, 2 * AA_CHUNK_SIZE), rel;
	const struct aa_root *r = aa_heap__root(h);
	__u32 *e;

	cr_assert_neq(p, 0);
	rel = p - r->arena_base;
	cr_assert_eq(t_slot(h, rel >> AA_CHUNK_SHIFT)->state, AA_SLOT_LARGE_HEAD);
	t_check(h);
	e = t_pm(h, rel + AA_PAGE_SIZE);
	cr_assert_eq(*e, 0, "a multi-chunk allocation's page-map entry %#x", *e);
	*e = AA_PM_SPAN_ENTRY(0, 1);
	cr_assert_eq(aa_heap__check(h), 29, "a span entry in a slot without a chunk");
	*e = 0;
	t_check(h);
	cr_assert_eq(t_free(h, p), 0);
	t_check(h);
}

/* The checker is the oracle of most tests: it must see a broken free list
 * of any order, not only of the first (it once walked them unrolled, one
 * order at a time; now one loop covers them all). A 5-page run leaves the
 * first chunk one free block of orders 0, 1 and 3..7. */
Test(heap, checker_finds_broken_free_lists)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 p = t_malloc(h, 5 * AA_PAGE_SIZE), *word;
	struct aa_chunk_meta *m;
	__u32 *link, s = 0;

	cr_assert_neq(p, 0);
	t_check(h);
	while (s < r->nr_slots && t_slot(h, s)->state != AA_SLOT_CHUNK)
		s++;
	cr_assert_lt(s, r->nr_slots);
	m = aa_heap__ptr(h, r->arena_base + t_slot(h, s)->meta_off);
	cr_assert_not_null(m);
	cr_assert_neq(m->free_head[1], AA_NIL);
	word = aa_heap__ptr(h, r->arena_base + m->free_head[1]);
	link = (__u32 *)(word + 1);	/* struct aa_free_hdr: mark, next, prev */

	r->stats.free_blocks[5]++;
	cr_assert_eq(aa_heap__check(h), 9, "an order-5 count one too high");
	r->stats.free_blocks[5]--;
	*word ^= 1;
	cr_assert_eq(aa_heap__check(h), 4, "a broken order-1 custody mark");
	*word ^= 1;
	link[1] = 0x1000;
	cr_assert_eq(aa_heap__check(h), 5, "a broken order-1 prev link");
	link[1] = AA_NIL;
	r->order_summary[AA_MAX_ORDER - 1] ^= 1;
	cr_assert_eq(aa_heap__check(h), 19, "an order-%u summary bit flipped", AA_MAX_ORDER - 1);
	r->order_summary[AA_MAX_ORDER - 1] ^= 1;
	if (AA_NR_ORDERS < AA_LAYOUT_ORDERS) {	/* 16-KiB pages: orders 7 and 8 stay empty */
		r->order_summary[AA_NR_ORDERS] ^= 1;
		cr_assert_eq(aa_heap__check(h), 19, "a summary bit of order %u, past the last",
			     AA_NR_ORDERS);
		r->order_summary[AA_NR_ORDERS] ^= 1;
		r->stats.free_blocks[AA_LAYOUT_ORDERS - 1]++;
		cr_assert_eq(aa_heap__check(h), 19, "a free block of order %u, past the last",
			     AA_LAYOUT_ORDERS - 1);
		r->stats.free_blocks[AA_LAYOUT_ORDERS - 1]--;
	}
	t_check(h);
	cr_assert_eq(t_free(h, p), 0);
	t_check(h);
}

/* The parked list against its counters (bpf/heap.bpf.c): more completed
 * than parked, a listed block that is not in transit, a block listed twice
 * (here: a cycle). The list is written through the mmap, as anyone who
 * maps the arena can; no allocator call runs meanwhile (it would complete
 * the blocks). */
Test(heap, checker_finds_a_broken_parked_list)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 p = t_malloc(h, 64), q = t_malloc(h, 64), *w;
	__u32 off = q - r->arena_base;

	cr_assert(p && q);
	cr_assert_eq(r->parked, AA_NIL);
	cr_assert_eq(t_free(h, q), 0);	/* q: free in its span */
	t_check(h);

	r->stats.frees_unparked = r->stats.frees_parked + 1;
	cr_assert_eq(aa_heap__check(h), 20, "more parked frees completed than parked");
	r->stats.frees_unparked = r->stats.frees_parked;

	r->stats.frees_parked++;	/* one block counted, as a free parks it */
	r->parked = off;
	cr_assert_eq(aa_heap__check(h), 21, "a parked block with a span mark");

	w = aa_heap__ptr(h, p);	/* p: live, given the FREED mark, linked to itself */
	off = p - r->arena_base;
	w[0] = r->cache_key ^ p ^ 1;	/* AA_TAG_FREED */
	((__u32 *)w)[2] = off;		/* struct aa_parked: mark, next */
	r->parked = off;
	cr_assert_eq(aa_heap__check(h), 22, "one block counted, the list never ends");
	((__u32 *)w)[2] = AA_NIL;
	t_check(h);	/* the same block once: what a parked free is */

	r->parked = AA_NIL;
	r->stats.frees_parked--;
	w[0] = 0;
	cr_assert_eq(t_free(h, p), 0);
	t_check(h);
}

/* --- bounds ------------------------------------------------------------- */

Test(heap, bulk_calls_refuse_more_than_the_maximum)
{
	__u64 arr = t_malloc(h, (AA_BULK_MAX + 1ULL) * sizeof(__u64));
	__u64 live = t_stats(h).live_allocs, sizes = t_stats(h).err[AA_ERR_SIZE];
	struct aa_op_args a;

	cr_assert_neq(arr, 0);
	a = t_call(h, AA_OP_MALLOC_BULK, 16, 0, arr, AA_BULK_MAX + 1);
	cr_assert_eq(a.ret, -E2BIG, "malloc_bulk(n = max + 1): %lld", (long long)a.ret);
	a = t_call(h, AA_OP_MALLOC_BULK, 16, 0, arr, (1U << 23) + 1);
	cr_assert_eq(a.ret, -E2BIG, "malloc_bulk(n = 2^23 + 1): %lld", (long long)a.ret);
	a = t_call(h, AA_OP_FREE_BULK, 0, 0, arr, AA_BULK_MAX + 1);
	cr_assert_eq(a.ret, -E2BIG, "free_bulk(n = max + 1): %lld", (long long)a.ret);
	cr_assert_eq(t_stats(h).live_allocs, live, "a refused bulk call changed the heap");
	cr_assert_eq(t_stats(h).err[AA_ERR_SIZE], sizes + 3);
	cr_assert_eq(t_stats(h).err[AA_ERR_NOMEM], 0);
	cr_assert_eq(aa_heap__root(h)->need_refill, 0, "refill signal raised with free memory");
	a = t_call(h, AA_OP_MALLOC_BULK, 16, 0, arr, 0);
	cr_assert_eq(a.ret, 0, "n = 0 is a no-op");
	cr_assert_eq(t_free(h, arr), 0);
}

Test(heap, malloc_grow_checks_the_size_before_growing)
{
	__u64 chunks = t_stats(h).nr_chunks;
	struct aa_op_args a;

	a = t_call(h, AA_OP_MALLOC_GROW, 0, 0, 0, 0);
	cr_assert_eq(a.ptr, 0);
	cr_assert_eq(a.ret, -EINVAL, "size 0: %lld", (long long)a.ret);
	a = t_call(h, AA_OP_MALLOC_GROW, ~0ULL, 0, 0, 0);	/* size + 1 MiB wraps */
	cr_assert_eq(a.ret, -EINVAL, "size 2^64 - 1: %lld", (long long)a.ret);
	a = t_call(h, AA_OP_MALLOC_GROW, AA_MAX_ALLOC + 1, 0, 0, 0);
	cr_assert_eq(a.ret, -EINVAL);
	cr_assert_eq(t_stats(h).nr_chunks, chunks, "an invalid size grew the heap");
}

Test(heap, trim_keep_is_64_bit)
{
	cr_assert_eq(aa_heap__trim(h, 1ULL << 52), 0, "keep 2^52 bytes must keep every chunk");
	cr_assert_eq(t_stats(h).nr_chunks, 4);
	cr_assert_eq(aa_heap__trim(h, 0), 4);
}

Test(heap, malloc_errno_names_the_cause)
{
	errno = 0;
	cr_assert_eq(aa_heap__malloc(h, 0), 0);
	cr_assert_eq(errno, EINVAL, "size 0: errno %d", errno);
	errno = 0;
	cr_assert_eq(aa_heap__malloc(h, AA_MAX_ALLOC + 1), 0);
	cr_assert_eq(errno, EINVAL, "size over the maximum: errno %d", errno);
	errno = 0;
	cr_assert_eq(aa_heap__malloc(h, 32 * MiB), 0);	/* valid, but the heap is 4 MiB */
	cr_assert_eq(errno, ENOMEM, "heap exhausted: errno %d", errno);
}
