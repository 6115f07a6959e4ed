// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* diff_model.c - the differential test's model (diff_model.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include "diff_model.h"

/* --- Random numbers -------------------------------------------------------- */

__u64 splitmix64(__u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* xorshift64*: the workload's generator and the pattern stream. */
__u64 xs_next(__u64 *s)
{
	__u64 x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

__u64 xs_init(__u64 seed)
{
	__u64 s = splitmix64(seed);

	return s ? s : 1;
}

__u64 rnd_below(__u64 *rng, __u64 n)
{
	return n ? xs_next(rng) % n : 0;
}

/* Log-uniform in [lo, hi]: a uniform power-of-two bucket, then uniform. */
__u64 rnd_log(__u64 *rng, __u64 lo, __u64 hi)
{
	unsigned int blo = 63 - __builtin_clzll(lo), bhi = 63 - __builtin_clzll(hi);
	unsigned int b = blo + rnd_below(rng, bhi - blo + 1);
	__u64 from = 1ULL << b, to = (2ULL << b) - 1;

	if (from < lo)
		from = lo;
	if (to > hi)
		to = hi;
	return from + rnd_below(rng, to - from + 1);
}

/* Mostly small (biased to the smallest), some medium, a few big. */
__u64 rnd_size(__u64 *rng)
{
	static const __u64 edges[] = {
		1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097,
		8191, 8192, 8193, 65535, 65536, 65537, (1 << 20) - 1, 1 << 20, (1 << 20) + 1,
	};
	__u64 r = rnd_below(rng, 1000);

	if (r < 20)
		return edges[rnd_below(rng, sizeof(edges) / sizeof(edges[0]))];
	if (r < 880)
		return rnd_log(rng, 1, 4096);
	if (r < 975)
		return rnd_log(rng, 4097, 64 << 10);
	if (r < 998)
		return rnd_log(rng, (64 << 10) + 1, 1 << 20);
	return rnd_log(rng, (1 << 20) + 1, 3 << 20);	/* whole-chunk runs */
}

/* --- The model's rules ----------------------------------------------------- */

/* The size class of a usable size that is one (<= AA_MAX_CLASS_SIZE). */
__u32 model_class(__u64 usable)
{
	int c = aa_size_class(usable);

	cr_assert(c >= 0 && aa_class_size(c) == usable, "%llu B is not a class size",
		  (unsigned long long)usable);
	return c;
}

/* Pages a request of this usable size takes from the page heap when it
 * needs new pages: its class's span, or its own run. */
__u64 model_pages(__u64 usable)
{
	if (usable <= AA_MAX_CLASS_SIZE)
		return aa_class_span_pages(model_class(usable));
	return usable >> AA_PAGE_SHIFT;
}

/* Smallest page-block order that holds pages (<= one chunk). */
__u32 model_order(__u64 pages)
{
	__u32 k = 0;

	while ((1ULL << k) < pages)
		k++;
	return k;
}

/* Chunks a multi-chunk allocation spans (whole ones and its last run). */
__u64 chunks_of(__u64 usable)
{
	return (usable + AA_CHUNK_SIZE - 1) >> AA_CHUNK_SHIFT;
}

/* The size rule: the class's object size up to 8 KiB, whole pages above. */
__u64 model_usable(__u64 size)
{
	if (size <= AA_MAX_CLASS_SIZE)
		return aa_class_size(aa_size_class(size));
	return (size + AA_PAGE_SIZE - 1) & ~((__u64)AA_PAGE_SIZE - 1);
}

/* --- Patterns ---------------------------------------------------------------
 * Byte i of an object is byte (i % 8) of word i / 8 of the xorshift stream
 * seeded by the object's seed: every object holds different data, so a
 * block handed out twice is caught as well as a stray write.
 */
unsigned char *obj_mem(struct aa_heap *h, const struct obj *o)
{
	unsigned char *p = aa_heap__ptr(h, o->addr);

	cr_assert_not_null(p, "object 0x%llx is outside the arena",
			   (unsigned long long)o->addr);
	cr_assert_not_null(aa_heap__ptr(h, o->addr + o->usable - 1),
			   "object 0x%llx + %llu runs past the arena end",
			   (unsigned long long)o->addr, (unsigned long long)o->usable);
	return p;
}

void fill_obj(struct aa_heap *h, const struct obj *o)
{
	unsigned char *p = obj_mem(h, o);
	__u64 s = xs_init(o->seed), off, w;

	for (off = 0; off < o->size; off += 8) {
		w = xs_next(&s);
		memcpy(p + off, &w, o->size - off < 8 ? o->size - off : 8);
	}
}

/*
 * Does every requested byte of o still hold its pattern? fatal: fail the
 * test at the first bad byte (address, offset, expected and actual byte);
 * otherwise return false and put the offset in *bad_off.
 */
bool verify_obj(struct aa_heap *h, const struct obj *o, bool fatal, __u64 *bad_off)
{
	const unsigned char *p = obj_mem(h, o);
	__u64 s = xs_init(o->seed), off, w, n, j;

	for (off = 0; off < o->size; off += 8) {
		w = xs_next(&s);
		n = o->size - off < 8 ? o->size - off : 8;
		if (!memcmp(p + off, &w, n))
			continue;
		for (j = 0; j < n; j++) {
			unsigned char want = ((const unsigned char *)&w)[j];

			if (p[off + j] == want)
				continue;
			if (bad_off)
				*bad_off = off + j;
			cr_assert(!fatal,
				  "pattern mismatch in object 0x%llx (size %llu, usable %llu) "
				  "at offset %llu (address 0x%llx): expected 0x%02x, found 0x%02x",
				  (unsigned long long)o->addr, (unsigned long long)o->size,
				  (unsigned long long)o->usable, (unsigned long long)(off + j),
				  (unsigned long long)(o->addr + off + j), want, p[off + j]);
			return false;
		}
	}
	return true;
}

/* --- Geometry checks --------------------------------------------------------- */

/* The page-map entry of arena offset rel, read from the mmap. */
static __u32 pm_entry(struct aa_heap *h, __u64 rel)
{
	const struct aa_slot *slot = t_slot(h, rel >> AA_CHUNK_SHIFT);

	cr_assert_eq(slot->state, AA_SLOT_CHUNK, "arena offset 0x%llx: slot state %u",
		     (unsigned long long)rel, slot->state);
	return *t_pm(h, rel);
}

/*
 * Where an allocation must be, checked against the page map in the mmap:
 * an object of class c starts size * i bytes into a span of class c (so it
 * is aligned to the largest power of two dividing its size); a page run
 * starts on a page whose entry is RUN_HEAD with its page count; beyond a
 * chunk, a LARGE_HEAD slot with its pages.
 */
void check_placement(struct aa_heap *h, const struct obj *o)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 rel = o->addr - r->arena_base, span, pages = o->usable >> AA_PAGE_SHIFT;
	__u32 e;

	cr_assert(o->addr % AA_OBJ_ALIGN(o->usable) == 0, "object 0x%llx (%llu B) is not "
		  "aligned as the alignment rule says", (unsigned long long)o->addr,
		  (unsigned long long)o->usable);
	cr_assert(rel + o->usable <= aa_heap__arena_size(h),
		  "object 0x%llx + %llu runs past the arena end",
		  (unsigned long long)o->addr, (unsigned long long)o->usable);
	if (o->usable <= AA_MAX_CLASS_SIZE) {
		__u32 c = model_class(o->usable);

		e = pm_entry(h, rel);
		cr_assert(AA_PM_KIND(e) == AA_PM_SPAN && AA_PM_SPAN_CLASS(e) == c,
			  "object 0x%llx (%llu B) lies in a page with entry 0x%x, not a span "
			  "of class %u", (unsigned long long)o->addr,
			  (unsigned long long)o->usable, e, c);
		span = (rel & ~(__u64)(AA_PAGE_SIZE - 1)) -
		       ((__u64)AA_PM_SPAN_INDEX(e) << AA_PAGE_SHIFT);
		cr_assert((rel - span) % o->usable == 0 &&
			  rel + o->usable <= span + ((__u64)aa_class_span_pages(c) << AA_PAGE_SHIFT),
			  "object 0x%llx (%llu B) is not an object of its span at offset 0x%llx",
			  (unsigned long long)o->addr, (unsigned long long)o->usable,
			  (unsigned long long)span);
		return;
	}
	cr_assert(o->usable % AA_PAGE_SIZE == 0 && rel % AA_PAGE_SIZE == 0,
		  "page run 0x%llx (%llu B) is not whole pages", (unsigned long long)o->addr,
		  (unsigned long long)o->usable);
	if (pages <= AA_CHUNK_PAGES) {
		e = pm_entry(h, rel);
		cr_assert_eq(e, AA_PM(AA_PM_RUN_HEAD, pages),
			     "page run 0x%llx (%llu pages): entry 0x%x", (unsigned long long)o->addr,
			     (unsigned long long)pages, e);
		return;
	}
	cr_assert(rel % AA_CHUNK_SIZE == 0 &&
		  t_slot(h, rel >> AA_CHUNK_SHIFT)->state == AA_SLOT_LARGE_HEAD &&
		  t_slot(h, rel >> AA_CHUNK_SHIFT)->large_pages == pages,
		  "large allocation 0x%llx (%llu pages) is not a LARGE_HEAD chunk of its size",
		  (unsigned long long)o->addr, (unsigned long long)pages);
}

int extent_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

const char *extent_name(const struct extent *e, char *buf, size_t sz)
{
	switch (e->kind) {
	case EXT_LIVE:
		snprintf(buf, sz, "live allocation");
		break;
	case EXT_OPS:
		snprintf(buf, sz, "the op array");
		break;
	case EXT_CPU_CACHE:
		snprintf(buf, sz, "object in CPU %u's class-%u cache", e->cpu, e->cls);
		break;
	default:
		snprintf(buf, sz, "object in the class-%u transfer cache", e->cls);
	}
	return buf;
}

/* No two of the n extents share a byte (sorts ext). */
void check_no_overlap(struct extent *ext, unsigned int n)
{
	char a[64], b[64];
	unsigned int i;

	qsort(ext, n, sizeof(*ext), extent_cmp);
	for (i = 0; i + 1 < n; i++)
		cr_assert(ext[i].end <= ext[i + 1].start,
			  "allocations overlap: [0x%llx, 0x%llx) (%s) and [0x%llx, 0x%llx) (%s)",
			  (unsigned long long)ext[i].start, (unsigned long long)ext[i].end,
			  extent_name(&ext[i], a, sizeof(a)),
			  (unsigned long long)ext[i + 1].start, (unsigned long long)ext[i + 1].end,
			  extent_name(&ext[i + 1], b, sizeof(b)));
}

/* --- Model of the heap counters -------------------------------------------- */


void model_alloc(struct model *m, __u64 usable)
{
	m->bytes += usable;
	if (m->bytes > m->peak)
		m->peak = m->bytes;
	m->live++;
	m->allocs++;
	if (usable > AA_CHUNK_SIZE)	/* whole chunks; the rest is a run */
		m->large_chunks += usable >> AA_CHUNK_SHIFT;
	if (usable > AA_MAX_CLASS_SIZE)
		m->run_bytes += usable;
	if (usable <= AA_MAX_CLASS_SIZE)
		m->cls_allocs[model_class(usable)]++;
}

void model_free(struct model *m, __u64 usable)
{
	m->bytes -= usable;
	m->live--;
	m->frees++;
	if (usable > AA_CHUNK_SIZE)
		m->large_chunks -= usable >> AA_CHUNK_SHIFT;
	if (usable > AA_MAX_CLASS_SIZE)
		m->run_bytes -= usable;
	if (usable <= AA_MAX_CLASS_SIZE)
		m->cls_frees[model_class(usable)]++;
}

__u64 env_seed(void)
{
	return t_env_u64("AA_TEST_SEED", D_DEFAULT_SEED);
}

double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
