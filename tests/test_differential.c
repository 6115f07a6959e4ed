// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_differential.c - randomized differential test of the allocator.
 *
 * The allocator runs for real on the kernel (aa_batch program, 1000 mixed
 * frees and allocations per run); next to it a userspace model keeps every
 * live allocation (address, requested size, expected usable size, pattern
 * seed). After each batch the two must agree:
 *
 *   - every allocation succeeds (or fails with -ENOMEM, which is legal:
 *     the test then grows the heap and carries on) and reports the usable
 *     size of the buddy rule: next power of two >= size, at least 16, for
 *     sizes <= 1 MiB; whole 1-MiB chunks above;
 *   - addresses are 16-byte aligned, aligned to min(usable, 4096), and
 *     buddy blocks are naturally aligned inside their chunk;
 *   - no two live allocations overlap (usable extents, sorted sweep);
 *   - every byte of an allocation keeps the pseudo-random pattern written
 *     into it from userspace through the mmap until it is freed (checked
 *     before each free, and for the whole live set every few batches): a
 *     block handed out twice, or allocator metadata written into a live
 *     block, shows up here;
 *   - the heap counters read from the mmap equal the model exactly
 *     (bytes_in_use, peak, live_allocs, nr_allocs, nr_frees, chunk and
 *     error counters, the byte invariant), and the BPF validity checker
 *     (aa_heap__check) passes.
 * At the end everything is freed: the heap must coalesce back into whole
 * free chunks that aa_heap__trim() returns.
 *
 * The seed is printed; AA_TEST_SEED=<n> replays a run.
 *
 * A second test corrupts a byte on purpose and shows that the pattern check
 * reports it, so the checker above is known not to be vacuous.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "common.h"

#define D_ARENA_PAGES	(1U << 15)		/* 128 MiB of address space */
#define D_INIT_BYTES	(16ULL << 20)
#define D_BATCH		1000U			/* ops per aa_batch run */
#define D_MIN_OPS	100000U
#define D_MAX_LIVE	2000U			/* live objects (op array aside) */
#define D_MAX_LIVE_BYTES (40ULL << 20)		/* usable bytes of those */
#define D_CHECK_EVERY	10U			/* batches between full checks */
#define D_DEFAULT_SEED	0x5eedf00dcafe1234ULL
#define D_RET_UNSET	0x7777777777777777LL	/* op.ret before the run */

/* One live allocation of the model. */
struct obj {
	__u64 addr;	/* arena address */
	__u64 size;	/* bytes requested (and patterned) */
	__u64 usable;	/* usable size the buddy must report */
	__u64 seed;	/* pattern seed */
};

struct extent {
	__u64 start, end;
};

/* --- Random numbers -------------------------------------------------------- */

static __u64 splitmix64(__u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* xorshift64*: the workload's generator and the pattern stream. */
static __u64 xs_next(__u64 *s)
{
	__u64 x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static __u64 xs_init(__u64 seed)
{
	__u64 s = splitmix64(seed);

	return s ? s : 1;
}

static __u64 rnd_below(__u64 *rng, __u64 n)
{
	return n ? xs_next(rng) % n : 0;
}

/* Log-uniform in [lo, hi]: a uniform power-of-two bucket, then uniform. */
static __u64 rnd_log(__u64 *rng, __u64 lo, __u64 hi)
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
static __u64 rnd_size(__u64 *rng)
{
	static const __u64 edges[] = {
		1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097,
		65535, 65536, 65537, (1 << 20) - 1, 1 << 20, (1 << 20) + 1,
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

static __u64 model_usable(__u64 size)
{
	__u64 p = AA_MIN_SIZE;

	if (size > AA_CHUNK_SIZE)
		return (size + AA_CHUNK_SIZE - 1) & ~((__u64)AA_CHUNK_SIZE - 1);
	while (p < size)
		p <<= 1;
	return p;
}

/* --- Patterns ---------------------------------------------------------------
 * Byte i of an object is byte (i % 8) of word i / 8 of the xorshift stream
 * seeded by the object's seed: every object holds different data, so a
 * block handed out twice is caught as well as a stray write.
 */
static unsigned char *obj_mem(struct aa_heap *h, const struct obj *o)
{
	unsigned char *p = aa_heap__ptr(h, o->addr);

	cr_assert_not_null(p, "object 0x%llx is outside the arena",
			   (unsigned long long)o->addr);
	cr_assert_not_null(aa_heap__ptr(h, o->addr + o->usable - 1),
			   "object 0x%llx + %llu runs past the arena end",
			   (unsigned long long)o->addr, (unsigned long long)o->usable);
	return p;
}

static void fill_obj(struct aa_heap *h, const struct obj *o)
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
static bool verify_obj(struct aa_heap *h, const struct obj *o, bool fatal, __u64 *bad_off)
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

static void check_placement(struct aa_heap *h, const struct obj *o)
{
	__u64 rel = o->addr - aa_heap__root(h)->arena_base;
	__u64 align = o->usable < AA_PAGE_SIZE ? o->usable : AA_PAGE_SIZE;

	cr_assert(o->addr % AA_MIN_SIZE == 0 && o->addr % align == 0,
		  "object 0x%llx (usable %llu) is not aligned to %llu",
		  (unsigned long long)o->addr, (unsigned long long)o->usable,
		  (unsigned long long)align);
	/* buddy blocks: naturally aligned in their chunk; runs: chunk-aligned */
	align = o->usable < AA_CHUNK_SIZE ? o->usable : AA_CHUNK_SIZE;
	cr_assert(rel % align == 0,
		  "object 0x%llx (usable %llu) at arena offset 0x%llx is not a "
		  "naturally aligned block", (unsigned long long)o->addr,
		  (unsigned long long)o->usable, (unsigned long long)rel);
	cr_assert(rel + o->usable <= aa_heap__arena_size(h),
		  "object 0x%llx + %llu runs past the arena end",
		  (unsigned long long)o->addr, (unsigned long long)o->usable);
}

static int extent_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* No two of the n objects (plus the op array) share a byte. */
static void check_no_overlap(const struct obj *live, unsigned int n, const struct obj *ops_obj,
			     struct extent *ext)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ext[i] = (struct extent){ live[i].addr, live[i].addr + live[i].usable };
	ext[n] = (struct extent){ ops_obj->addr, ops_obj->addr + ops_obj->usable };
	qsort(ext, n + 1, sizeof(*ext), extent_cmp);
	for (i = 0; i + 1 < n + 1; i++)
		cr_assert(ext[i].end <= ext[i + 1].start,
			  "live allocations overlap: [0x%llx, 0x%llx) and [0x%llx, 0x%llx)",
			  (unsigned long long)ext[i].start, (unsigned long long)ext[i].end,
			  (unsigned long long)ext[i + 1].start, (unsigned long long)ext[i + 1].end);
}

/* --- Model of the heap counters -------------------------------------------- */

struct model {
	__u64 bytes, peak, live, allocs, frees;
	__u64 large_chunks;	/* chunks held by runs (usable > 1 MiB) */
	__u64 chunks, grows, trims, nomem;
};

static void model_alloc(struct model *m, __u64 usable)
{
	m->bytes += usable;
	if (m->bytes > m->peak)
		m->peak = m->bytes;
	m->live++;
	m->allocs++;
	if (usable > AA_CHUNK_SIZE)
		m->large_chunks += usable >> AA_CHUNK_SHIFT;
}

static void model_free(struct model *m, __u64 usable)
{
	m->bytes -= usable;
	m->live--;
	m->frees++;
	if (usable > AA_CHUNK_SIZE)
		m->large_chunks -= usable >> AA_CHUNK_SHIFT;
}

static void check_stats(struct aa_heap *h, const struct model *m, const char *when)
{
	struct aa_stats st = t_stats(h);
	__u64 free_bytes = 0;
	unsigned int k;

#define EQ(field, want)								\
	cr_assert_eq(st.field, (want), "%s: stats." #field " = %llu, model says %llu", \
		     when, (unsigned long long)st.field, (unsigned long long)(want))
	EQ(bytes_in_use, m->bytes);
	EQ(peak_bytes_in_use, m->peak);
	EQ(live_allocs, m->live);
	EQ(nr_allocs, m->allocs);
	EQ(nr_frees, m->frees);
	EQ(nr_chunks, m->chunks);
	EQ(large_chunks, m->large_chunks);
	EQ(nr_grows, m->grows);
	EQ(nr_trims, m->trims);
	EQ(pages_mapped, m->chunks * (AA_CHUNK_PAGES + AA_META_PAGES));
	EQ(err[AA_ERR_NOMEM], m->nomem);
	for (k = 0; k < AA_NR_ERRORS; k++)
		if (k != AA_ERR_NOMEM)
			EQ(err[k], 0);
#undef EQ
	/* the byte invariant of aa_root, from userspace */
	for (k = 0; k < AA_NR_ORDERS; k++)
		free_bytes += st.free_blocks[k] << (k + AA_MIN_SHIFT);
	cr_assert_eq(free_bytes + st.bytes_in_use, st.nr_chunks * AA_CHUNK_SIZE,
		     "%s: free %llu + in use %llu bytes != %llu chunks", when,
		     (unsigned long long)free_bytes, (unsigned long long)st.bytes_in_use,
		     (unsigned long long)st.nr_chunks);
}

static __u64 env_seed(void)
{
	const char *s = getenv("AA_TEST_SEED");
	char *end;
	__u64 v;

	if (!s || !*s)
		return D_DEFAULT_SEED;
	errno = 0;
	v = strtoull(s, &end, 0);
	cr_assert(!errno && !*end, "AA_TEST_SEED='%s' is not a number", s);
	return v;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

