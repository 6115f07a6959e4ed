// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu_cache.bpf.c - tier 1: per-CPU object caches (the fast path).
 *
 * Role:       serve allocations of up to 2 KiB (size classes 16 << c) and
 *             take their frees without a lock or an atomic: each CPU pops
 *             and pushes a LIFO array per class in its own arena pages.
 * From below: batches from the transfer cache (tier 2) on underflow, or
 *             straight from the buddy (aa_buddy_alloc_bulk) when that is
 *             empty; batches go back the same way on overflow.
 * To above:   aa_cpu_cache_alloc(cls) / aa_cpu_cache_free(ptr), inlined
 *             fast paths with global slow paths (*_slow).
 * Locking:    none. Invariant (struct aa_cpu_cache in aa_shared.h): only
 *             programs running on the owning CPU touch a cache, and only
 *             between busy = 1 and busy = 0. A program that finds busy set
 *             has interrupted (IRQ/NMI) or preempted the owner on this CPU:
 *             it does not touch the cache and falls back to the buddy,
 *             whose lock refuses same-CPU nesting at once (-EDEADLK), so
 *             nothing spins and nothing is corrupted. Counted in
 *             stats[c].nested.
 *
 * Double free: a cached object's first word holds cache_key ^ address
 * (like glibc's tcache key); a free that finds it there is refused. An
 * object leaving a cache gets that word cleared.
 *
 * Accounting: cached objects are "in use" for the buddy, so
 *   buddy bytes_in_use == user bytes in use + bytes in CPU and transfer
 *   caches (+ large runs)
 */
#include "internal.h"

/* --- Helpers --------------------------------------------------------------- */

static __always_inline struct aa_cpu_cache __arena *this_cpu_cache(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 off;

	if (cpu >= AA_MAX_CPUS)
		return NULL;
	off = aa_root.cpu_cache_off[cpu];
	return off ? (struct aa_cpu_cache __arena *)aa_addr(off) : NULL;
}

static __always_inline void cache_enter(struct aa_cpu_cache __arena *cc)
{
	cc->busy = 1;
	aa_barrier();	/* an interrupt on this CPU sees busy before any change */
}

static __always_inline void cache_exit(struct aa_cpu_cache __arena *cc)
{
	aa_barrier();
	cc->busy = 0;
}

/* Fill the class from below: a batch from the transfer cache, else from the
 * buddy. Returns how many objects arrived (0: heap empty or busy).
 * REQUIRES: cc owned (busy) by this CPU and cc->count[cls] == 0. */
static __always_inline int cache_refill(struct aa_cpu_cache __arena *cc, __u32 cls)
{
	__u32 batch = aa_root.tun.batch[cls & (AA_NR_CLASSES - 1)];
	__u64 dst = (__u64)&cc->objs[cls & (AA_NR_CLASSES - 1)][0];
	__u64 key = aa_root.cache_key, p;
	int got, i;

	got = aa_transfer_cache_remove_batch(cls, dst, batch);
	if (got <= 0) {
		got = aa_buddy_alloc_bulk(dst, batch, AA_MIN_SIZE << cls);
		/* fresh from the buddy: mark them cached (double-free key) */
		bpf_for(i, 0, got) {
			p = cc->objs[cls & (AA_NR_CLASSES - 1)][i & (AA_CPU_CACHE_MAX - 1)];
			*(__u64 __arena *)p = key ^ p;
		}
	}
	if (got > 0)
		cc->stats[cls & (AA_NR_CLASSES - 1)].refills++;
	return got > 0 ? got : 0;
}

/* Make room: move the oldest batch (bottom of the LIFO) out, to the
 * transfer cache, else to the buddy. Returns the new count.
 * REQUIRES: cc owned (busy) by this CPU. */
static __always_inline __u32 cache_spill(struct aa_cpu_cache __arena *cc, __u32 cls, __u32 n)
{
	__u32 c = cls & (AA_NR_CLASSES - 1);
	__u32 batch = aa_root.tun.batch[c];
	__u64 src = (__u64)&cc->objs[c][0];
	int moved, i;

	if (batch > n)
		batch = n;
	moved = aa_transfer_cache_insert_batch(cls, src, batch);
	if (moved <= 0) {
		moved = aa_buddy_free_bulk(src, batch);
		if (moved <= 0)
			return n;	/* buddy busy: keep them, caller goes to buddy */
	}
	/* slide the rest down over the moved batch */
	bpf_for(i, batch, n)
		cc->objs[c][(i - batch) & (AA_CPU_CACHE_MAX - 1)] = cc->objs[c][i & (AA_CPU_CACHE_MAX - 1)];
	cc->stats[c].spills++;
	return n - batch;
}

/* --- Alloc / free: slow paths (global functions, verified once) ----------
 * Taken when the fast path below could not finish: the cache is empty or
 * full, busy (nested), or missing. They redo the whole operation.
 */

/* Allocate one object of class cls. Returns its address or 0. */
__u64 aa_cpu_cache_alloc_slow(__u32 cls)
{
	struct aa_cpu_cache __arena *cc = this_cpu_cache();
	__u32 c = cls & (AA_NR_CLASSES - 1), n;
	__u64 p = 0;

	if (cls >= AA_NR_CLASSES)
		return 0;
	if (!cc)
		return aa_buddy_alloc(AA_MIN_SIZE << cls, 0);
	if (cc->busy) {
		__sync_fetch_and_add(&cc->stats[c].nested, 1);
		return aa_buddy_alloc(AA_MIN_SIZE << cls, 0);
	}
	cache_enter(cc);
	n = cc->count[c];
	if (n == 0) {
		cc->stats[c].misses++;
		n = cache_refill(cc, c);
	} else {
		cc->stats[c].hits++;
	}
	if (n > 0 && n <= AA_CPU_CACHE_MAX) {
		p = cc->objs[c][(n - 1) & (AA_CPU_CACHE_MAX - 1)];
		cc->count[c] = n - 1;
		cc->stats[c].allocs++;
	} else {
		cc->stats[c].failures++;
	}
	cache_exit(cc);
	if (p)
		*(__u64 __arena *)p = 0;	/* no longer carries the cache key */
	return p;
}

/* Free ptr, an object of class cls that is not cached (key checked).
 * Returns 0 or -errno with the heap unchanged. */
int aa_cpu_cache_free_slow(__u64 ptr, __u32 cls)
{
	struct aa_cpu_cache __arena *cc = this_cpu_cache();
	__u32 c = cls & (AA_NR_CLASSES - 1), n, cap;

	if (!cc)
		return aa_buddy_free(ptr);
	if (cc->busy) {
		__sync_fetch_and_add(&cc->stats[c].nested, 1);
		return aa_buddy_free(ptr);
	}
	cache_enter(cc);
	n = cc->count[c];
	cap = aa_root.tun.cpu_cache_cap[c];
	if (cap > AA_CPU_CACHE_MAX)
		cap = AA_CPU_CACHE_MAX;
	if (n >= cap)
		n = cache_spill(cc, c, n);
	if (n < cap) {
		*(__u64 __arena *)ptr = aa_root.cache_key ^ ptr;
		cc->objs[c][n & (AA_CPU_CACHE_MAX - 1)] = ptr;
		cc->count[c] = n + 1;
		cc->stats[c].frees++;
		cache_exit(cc);
		return 0;
	}
	cache_exit(cc);
	return aa_buddy_free(ptr);	/* could not spill: buddy takes it */
}

/* --- Alloc / free: fast paths (inlined into aa_malloc_u64/aa_free_u64) ----
 * A hit costs no call beyond the public function itself (a BPF-to-BPF
 * call is ~7 ns here: docs/BENCHMARKS.md). busy is set before count is
 * read: a program that ran in between (it saw busy == 0) has finished.
 */

/* Allocate one object of class cls (< AA_NR_CLASSES). */
static __always_inline __u64 aa_cpu_cache_alloc(__u32 cls)
{
	struct aa_cpu_cache __arena *cc = this_cpu_cache();
	__u32 c = cls & (AA_NR_CLASSES - 1), n;
	__u64 p;

	if (!cc || cc->busy)
		return aa_cpu_cache_alloc_slow(cls);
	cache_enter(cc);
	n = cc->count[c];
	if (n == 0 || n > AA_CPU_CACHE_MAX) {
		cache_exit(cc);
		return aa_cpu_cache_alloc_slow(cls);
	}
	p = cc->objs[c][(n - 1) & (AA_CPU_CACHE_MAX - 1)];
	cc->count[c] = n - 1;
	cc->stats[c].hits++;
	cc->stats[c].allocs++;
	cache_exit(cc);
	*(__u64 __arena *)p = 0;	/* no longer carries the cache key */
	return p;
}

/*
 * Free ptr. Objects of a cached class go to this CPU's cache; anything
 * else (large, bad pointer) is the buddy's to judge. Returns 0 or -errno
 * with the heap unchanged.
 */
static __always_inline int aa_cpu_cache_free(__u64 ptr)
{
	struct aa_cpu_cache __arena *cc;
	int cls = aa_buddy_class_of(ptr);
	__u32 c, n;

	if (cls < 0)
		return aa_buddy_free(ptr);
	if (*(__u64 __arena *)ptr == (aa_root.cache_key ^ ptr))
		return aa_fail(AA_ERR_DOUBLE_FREE);
	c = cls & (AA_NR_CLASSES - 1);
	cc = this_cpu_cache();
	if (!cc || cc->busy)
		return aa_cpu_cache_free_slow(ptr, c);
	cache_enter(cc);
	n = cc->count[c];
	if (n >= aa_root.tun.cpu_cache_cap[c] || n >= AA_CPU_CACHE_MAX) {
		cache_exit(cc);
		return aa_cpu_cache_free_slow(ptr, c);
	}
	*(__u64 __arena *)ptr = aa_root.cache_key ^ ptr;
	cc->objs[c][n & (AA_CPU_CACHE_MAX - 1)] = ptr;
	cc->count[c] = n + 1;
	cc->stats[c].frees++;
	cache_exit(cc);
	return 0;
}

/* Return every object of this CPU's cache to the buddy.
 * Returns the number of objects, or -EBUSY when the cache is in use (the
 * caller interrupted its owner: try again). */
int aa_cpu_cache_drain(void)
{
	struct aa_cpu_cache __arena *cc = this_cpu_cache();
	__u32 c, n;
	int total = AA_ZERO, freed;

	if (!cc)
		return 0;
	if (cc->busy)
		return -EBUSY;
	cache_enter(cc);
	for (c = 0; c < AA_NR_CLASSES; c++) {
		n = cc->count[c];
		if (!n)
			continue;
		freed = aa_buddy_free_bulk((__u64)&cc->objs[c][0], n);
		if (freed < 0)
			continue;	/* buddy busy: they stay cached */
		cc->count[c] = 0;
		total += freed;
	}
	cache_exit(cc);
	return total;
}
