// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_size_classes.c - the rules of the size-class table
 * (include/aa_size_classes.h, written by scripts/gen_size_classes.py), checked
 * for every request size, and the library's view of it (aa_size_class(),
 * aa_class_size(): what the BPF side uses is the same table, checked
 * against real allocations by heap/every_size_gets_its_class).
 *
 * Waste of a request of s bytes served by a class of C bytes: (C - s) / C,
 * the share of the object the request does not use.
 */
#include "common.h"
#include "aa_size_classes.h"

struct row {
	__u32 cls, size, pages, objs, batch, cap, recip;
};

#define ROW(c, sz, pg, ob, ba, ca, rc) { c, sz, pg, ob, ba, ca, rc },
static const struct row rows[] = { AA_SIZE_CLASSES(ROW) };
static const __u8 index_table[] = { AA_CLASS_INDEX };
#define NROWS (sizeof(rows) / sizeof(rows[0]))

Test(size_classes, the_table_has_the_documented_shape)
{
	unsigned int i;

	cr_assert_eq(NROWS, AA_NR_CLASSES);
	cr_assert_eq(sizeof(index_table), AA_CLASS_INDEX_LEN);
	cr_assert_eq(AA_CLASS_INDEX_LEN, AA_MAX_CLASS_SIZE / AA_CLASS_GRAIN + 1);
	cr_assert_geq(rows[NROWS - 1].size, 8192, "the largest class is at least 8 KiB");
	cr_assert_eq(rows[NROWS - 1].size, AA_MAX_CLASS_SIZE);
	for (i = 0; i < 15; i++)
		cr_assert_eq(rows[i].size, AA_MIN_SIZE + 8 * i, "multiples of 8 B from 16 to 128 B");
	for (i = 0; i < NROWS; i++) {
		cr_assert_eq(rows[i].cls, i);
		cr_assert_eq(rows[i].size % (rows[i].size < 128 ? 8 : 16), 0,
			     "class %u: %u B is not a multiple of %u", i, rows[i].size,
			     rows[i].size < 128 ? 8 : 16);
		if (i)
			cr_assert_gt(rows[i].size, rows[i - 1].size, "class %u out of order", i);
		cr_assert_eq(aa_class_size(i), rows[i].size, "library and table disagree");
		cr_assert_eq(aa_class_span_pages(i), rows[i].pages);
	}
	cr_assert_eq(aa_class_size(AA_NR_CLASSES), 0);
	cr_assert_eq(aa_size_class(0), -EINVAL);
	cr_assert_eq(aa_size_class(AA_MAX_CLASS_SIZE + 1), -EINVAL);
}

/* Waste <= 1/8 of the object for every request from 128 B to the largest
 * class, under 8 bytes from 16 B to 128; and every request gets the smallest class
 * that holds it. */
Test(size_classes, waste_is_at_most_an_eighth_from_128_bytes)
{
	double worst = 0, w;
	__u64 s, worst_s = 0;
	unsigned int c, best;

	for (s = 1; s <= AA_MAX_CLASS_SIZE; s++) {
		c = aa_size_class(s);
		for (best = 0; rows[best].size < s; best++)
			;
		cr_assert_eq(c, best, "%llu B: class %u (%u B), the smallest fit is %u (%u B)",
			     (unsigned long long)s, c, rows[c].size, best, rows[best].size);
		cr_assert_eq(index_table[AA_CLASS_INDEX_OF(s)], c);
		if (s < 128) {	/* the smallest object, else under a grain */
			cr_assert(s <= AA_MIN_SIZE ? rows[c].size == AA_MIN_SIZE
						   : rows[c].size - s < AA_CLASS_GRAIN,
				  "%llu B in %u B", (unsigned long long)s, rows[c].size);
			continue;
		}
		w = (double)(rows[c].size - s) / rows[c].size;
		cr_assert_leq(w, 0.125, "%llu B in a %u-B object wastes %.1f%%",
			      (unsigned long long)s, rows[c].size, 100 * w);
		if (w > worst) {
			worst = w;
			worst_s = s;
		}
	}
	cr_log_info("size classes: worst waste from 128 B: %.2f%% (%llu B in %u B)", 100 * worst,
		    (unsigned long long)worst_s, aa_class_size(aa_size_class(worst_s)));
}

/* The "BPF structs" mix (the sizes of bench/memory.c's mix, equally
 * likely): the mean waste per object at most 8%, and so of its bytes. */
Test(size_classes, bpf_struct_mix_wastes_at_most_8_percent)
{
	static const __u32 mix[] = { 24, 40, 48, 72, 96, 136, 200 };
	const unsigned int n = sizeof(mix) / sizeof(mix[0]);
	__u64 asked = 0, got = 0;
	double per_obj = 0;
	unsigned int i;
	__u32 size;

	for (i = 0; i < n; i++) {
		size = aa_class_size(aa_size_class(mix[i]));
		asked += mix[i];
		got += size;
		per_obj += (double)(size - mix[i]) / size / n;
	}
	cr_assert_leq(per_obj, 0.08, "the mix wastes %.2f%% per object", 100 * per_obj);
	cr_assert_leq((double)(got - asked) / got, 0.08, "mix wastes %llu of %llu bytes",
		      (unsigned long long)(got - asked), (unsigned long long)got);
}

/* The alignment rule (include/aa_shared.h): a request whose size is a
 * multiple of 16 gets a class that is one (its objects are 16-byte
 * aligned: spans start on a page); every class keeps 8. */
Test(size_classes, a_multiple_of_16_gets_16_byte_alignment)
{
	__u64 s;
	__u32 size;

	for (s = 1; s <= AA_MAX_CLASS_SIZE; s++) {
		size = aa_class_size(aa_size_class(s));
		cr_assert_eq(size % AA_MIN_ALIGN, 0, "%llu B: class of %u B",
			     (unsigned long long)s, size);
		if (s % 16 == 0)
			cr_assert_eq(size % 16, 0, "%llu B: class of %u B, 8-byte aligned",
				     (unsigned long long)s, size);
		cr_assert_eq(AA_OBJ_ALIGN(size), size % 16 ? 8 : 16);
	}
}

/* Spans: a power of two of pages (one page-heap block), whole objects, at
 * least 4 of them, at most 256 per 4 KiB of page (the carving loop's
 * bound, AA_SPAN_OBJS_MAX: 256, or 1024 with 16-KiB pages), at most 1/12 of
 * the span left over at its end (1/16 where a span of up to 16 pages
 * allows it). */
Test(size_classes, spans_hold_their_objects)
{
	unsigned int i;
	__u32 bytes;

	cr_assert_leq(AA_SPAN_OBJS_MAX, 256U << (AA_PAGE_SHIFT - 12), "the carving loop's bound");
	for (i = 0; i < NROWS; i++) {
		bytes = rows[i].pages * AA_PAGE_SIZE;
		cr_assert(rows[i].pages >= 1 && rows[i].pages <= 16 &&
			  !(rows[i].pages & (rows[i].pages - 1)), "class %u: %u pages", i,
			  rows[i].pages);
		cr_assert_eq(rows[i].objs, bytes / rows[i].size, "class %u", i);
		cr_assert(rows[i].objs >= 4 && rows[i].objs <= AA_SPAN_OBJS_MAX, "class %u: %u objects",
			  i, rows[i].objs);
		cr_assert_leq((bytes % rows[i].size) * 12, bytes, "class %u: %u B unused of %u",
			      i, bytes % rows[i].size, bytes);
	}
}

/* The page map finds an object's index with a multiplication: exact for
 * every offset of every span. */
Test(size_classes, reciprocals_divide_exactly)
{
	unsigned int i;
	__u32 off;

	for (i = 0; i < NROWS; i++) {
		cr_assert_eq(rows[i].recip, (__u32)(((1ULL << 32) + rows[i].size - 1) / rows[i].size));
		for (off = 0; off < rows[i].pages * AA_PAGE_SIZE; off++)
			cr_assert_eq(((__u64)off * rows[i].recip) >> 32, off / rows[i].size,
				     "class %u, offset %u", i, off);
	}
}

/* A free tells an object's start from an interior pointer with one
 * multiplication (__aa_object_start() in include/arena_alloc_fast.bpf.h): the
 * same arithmetic, against a division, at every offset of every span
 * (past the last object, and every misaligned one, included). */
Test(size_classes, object_starts_take_one_multiplication)
{
	unsigned int i;
	__u32 rel, fill;
	bool fast, slow;

	for (i = 0; i < NROWS; i++) {
		fill = rows[i].objs * rows[i].size;
		for (rel = 0; rel < rows[i].pages * AA_PAGE_SIZE; rel++) {
			fast = rel < fill && rel * rows[i].recip < rows[i].recip;
			slow = rel % rows[i].size == 0 && rel / rows[i].size < rows[i].objs;
			cr_assert_eq(fast, slow, "class %u (%u B), offset %u: %d, not %d", i,
				     rows[i].size, rel, fast, slow);
		}
	}
}

/* aligned_alloc: for every alignment up to a page and every size up to the
 * largest class, a class of at least that size whose size is a multiple of
 * the alignment exists (objects of such a class are aligned to it), unless
 * the request is a page run anyway. */
Test(size_classes, every_alignment_has_a_class)
{
	__u64 align, s;
	unsigned int c;

	for (align = 32; align <= AA_PAGE_SIZE && align <= AA_MAX_CLASS_SIZE; align <<= 1)
		for (s = 1; s <= AA_MAX_CLASS_SIZE; s += 7) {
			for (c = aa_size_class(s > align ? s : align); c < NROWS; c++)
				if (rows[c].size % align == 0)
					break;
			cr_assert_lt(c, NROWS, "no class for %llu B aligned to %llu",
				     (unsigned long long)s, (unsigned long long)align);
		}
}

/* Defaults the loader derives from the table pass its own validation. */
Test(size_classes, cache_defaults_are_valid)
{
	struct aa_tunables t;
	unsigned int i;

	for (i = 0; i < NROWS; i++)
		cr_assert(rows[i].cap <= AA_CPU_CACHE_MAX && rows[i].batch >= 1 &&
			  rows[i].batch <= rows[i].cap / 2, "class %u: cap %u batch %u", i,
			  rows[i].cap, rows[i].batch);
	cr_assert_eq(aa_tunables__default(&t), 0);
	cr_assert_eq(aa_tunables__validate(&t), 0);
}

/* Per-chunk metadata (the span table) fits its pages and stays
 * under 1% of what a chunk maps: with 16-KiB pages, one page (1.5%), the
 * least there can be. */
Test(size_classes, chunk_metadata_is_under_one_percent)
{
	cr_assert_leq(sizeof(struct aa_chunk_meta), AA_META_PAGES * AA_PAGE_SIZE);
	if (AA_PAGE_SIZE == 4096)
		cr_assert_lt(AA_META_PAGES * 100, AA_CHUNK_PAGES + AA_META_PAGES);
	else
		cr_assert_eq(AA_META_PAGES, 1);
}
