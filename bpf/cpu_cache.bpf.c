// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu_cache.bpf.c - tier 1: per-CPU object caches (the fast path).
 *
 * Role:       serve allocations of up to 8 KiB (the size classes of
 *             include/aa_size_classes.h) and take their frees without a lock: each
 *             CPU pops and pushes a LIFO array per class in its own arena
 *             pages.
 * From below: batches from the transfer cache (tier 2) on underflow, or
 *             straight from the central free list (aa_heap_alloc_bulk,
 *             marked cached) when that is empty; batches go back the same
 *             way on overflow (aa_heap_return_bulk, which parks what it
 *             cannot free).
 * To above:   aa_cpu_cache_alloc(cls) / aa_cpu_cache_free(ptr), inlined
 *             fast paths with global slow paths (*_slow); aa__cpu_cache_drain
 *             of any CPU's cache; the caches' pages, resets and teardown
 *             claims for lifecycle.bpf.c (cpu_caches_init(), and caches_*()
 *             over a table of caches: the CPUs' or the users'), and the
 *             slow paths on any cache for user_cache.bpf.c.
 * Locking:    no lock: the CPU cache claim (internal.h's model). A caller
 *             that finds the cache claimed uses the class's reserve on
 *             this CPU (hard IRQ and NMI only; no claim: internal.h's
 *             model, "Reserves"), the transfer cache or the heap instead;
 *             a claim holder in hard IRQ or NMI whose refill failed uses
 *             the transfer cache's reserve.
 *             Objects in a cache carry a custody mark in word 0 (FREED
 *             from a free, CACHED from a refill), cleared when one leaves
 *             for a user.
 *
 * Accounting:
 *   stats.heap_bytes == user bytes in use + bytes in CPU and transfer
 *   caches and their reserves + parked bytes (+ page runs)
 *
 * The reserve of a class on a CPU (struct aa_cpu_class: reserve) holds at
 * most aa_reserve_slots() objects: 4 of up to 256 bytes, at most 1 KiB,
 * or one larger object. Frees that find the cache claimed put objects
 * into it; once an allocation in hard IRQ or NMI found the cache claimed
 * (reserve_want), the claim holder's slow paths keep it full from the
 * cache too (reserve_fill()).
 */
#include "internal.h"
#include "cpu_cache.h"
#include "arena.h"
#include "lookup.h"
#include "heap.h"
#include "transfer_cache.h"

/* --- Helpers --------------------------------------------------------------- */

/* The hit path's helpers are aa_hit.h's: the inline API and the
 * library run the same code under the same claim protocol. */
#define cache_claim(cc, who)	__aa_cache_claim((cc), (who))
#define cache_release(cc)	__aa_cache_release(cc)

/* This CPU's cache, or NULL (none). aa_fast's copy is the inline API's,
 * empty where the front door keeps inline callers out (struct aa_fast:
 * its mode); the root's table is the tier's own. */
static __always_inline struct aa_cpu_cache __arena *this_cpu_cache(void)
{
	struct aa_cpu_cache __arena *cc = __aa_this_cache();
	__u32 cpu, off;

	if (cc)
		return cc;
	cpu = bpf_get_smp_processor_id();
	if (cpu >= AA_MAX_CPUS || cpu >= aa__root.nr_cpus)
		return NULL;
	off = aa__root.cpu_cache_off[cpu];
	return off ? aa_addr(off) : NULL;
}

/*
 * Caps, batches and counts live in the arena, which any process that maps
 * it can write: each is bounded here, where the slow paths use it as a
 * bound or an index. A nonsense value costs speed, never a write outside
 * the class's objs[].
 */

/* cap of class c: <= AA_CPU_CACHE_MAX (init sets it so, but see above). */
static __always_inline __u32 cache_cap(struct aa_cpu_cache __arena *cc, __u32 c)
{
	__u32 cap = cc->cls[aa_cls_idx(c)].cap;

	return cap > AA_CPU_CACHE_MAX ? AA_CPU_CACHE_MAX : cap;
}

/* Objects to move per refill or spill of class c of cache cc: tun.batch,
 * or for a user cache half its capacity (its slow path is a syscall, a
 * CPU cache's a call: the fewer the better), in [1, AA_CPU_CACHE_MAX / 2],
 * so that a refill into an empty class fits. */
static __always_inline __u32 cache_batch(struct aa_cpu_cache __arena *cc, __u32 c)
{
	__u32 batch = aa__root.tun.batch[aa_cls_idx(c)];

	if (cc->cpu & AA_USER_CACHE)
		batch = cache_cap(cc, c) / 2;
	if (batch == 0)
		return 1;
	return batch > AA_CPU_CACHE_MAX / 2 ? AA_CPU_CACHE_MAX / 2 : batch;
}

/* count of class c: <= AA_CPU_CACHE_MAX (slots past it are not ours). */
static __always_inline __u32 cache_count(struct aa_cpu_cache __arena *cc, __u32 c)
{
	__u32 n = cc->cls[aa_cls_idx(c)].count;

	return n > AA_CPU_CACHE_MAX ? AA_CPU_CACHE_MAX : n;
}

/* Fill the class from below: a batch from the transfer cache, else from the
 * central free list (marked cached under the heap lock), which stocks the
 * transfer cache's reserve first (transfer_cache_stock()). Returns how
 * many objects arrived, or why none did (-AA_ERR_NOMEM: the heap is
 * empty; -AA_ERR_BUSY, -AA_ERR_NESTED: its lock), not counted.
 * REQUIRES: cc claimed and cc->cls[cls].count == 0. */
static __always_inline int cache_refill(struct aa_cpu_cache __arena *cc, __u32 cls)
{
	__u32 c = aa_cls_idx(cls);
	__u32 batch = cache_batch(cc, c);
	__u64 dst = (__u64)&cc->cls[c].objs[0];
	int got;

	got = aa__transfer_cache_remove_batch(c, dst, batch);
	if (got <= 0) {
		got = aa_heap_alloc_bulk(dst, batch, c, 1);
		if (got > 0)
			got = transfer_cache_stock(c, dst, got, 1);
	}
	if (got > 0)
		cc->cls[c].stats.refills++;
	return got;
}

/* Make room: move the newest batch (top of the LIFO) out, to the
 * transfer cache's reserve where it has room (transfer_cache_stock()),
 * the rest to the transfer cache, else to the heap (which always takes
 * it: it parks what it cannot free). The top, not the bottom: nothing
 * slides down, so a spill costs one batch copy (the bottom would cost
 * moving every object left behind, on every spill). Returns the new count.
 * REQUIRES: cc claimed; n <= AA_CPU_CACHE_MAX (cache_count()). */
static __always_inline __u32 cache_spill(struct aa_cpu_cache __arena *cc, __u32 cls, __u32 n)
{
	__u32 c = aa_cls_idx(cls);
	__u32 batch = cache_batch(cc, c), left;
	__u64 src;
	int moved;

	if (batch > n)
		batch = n;
	left = transfer_cache_stock(c, (__u64)&cc->cls[c].objs[0], n, n - batch);
	batch -= n - left;
	n = left;
	if (!batch) {
		cc->cls[c].stats.spills++;
		return n;
	}
	src = (__u64)&cc->cls[c].objs[(n - batch) & (AA_CPU_CACHE_MAX - 1)];
	moved = aa__transfer_cache_insert_batch(c, src, batch);
	if (moved <= 0) {
		moved = aa_heap_return_bulk(src, batch);
		if (moved <= 0)
			return n;	/* bad arguments only: keep them */
	}
	cc->cls[c].stats.spills++;
	return n - batch;
}

/* --- The reserve of a class on this CPU ------------------------------------ */

/* Class c's reserve in cache cc (NULL: none, or a user cache's), for a
 * caller past the LIFO that found cc claimed: an allocation that cannot
 * wait for a lock (want: the claim holder keeps it full from now on), or
 * a free (which stocks it before anyone wanted it). */
static __always_inline struct aa_cpu_class __arena *reserve_of(struct aa_cpu_cache __arena *cc,
								__u32 c, bool want)
{
	struct aa_cpu_class __arena *k;

	if (!cc || (cc->cpu & AA_USER_CACHE))
		return NULL;
	k = &cc->cls[aa_cls_idx(c)];
	if (want && !READ_ONCE_ARENA(k->reserve_want))
		WRITE_ONCE_ARENA(k->reserve_want, 1);
	return k;
}

/* Move objects from the top of class c's LIFO into its empty reserve slots,
 * once the reserve is wanted, leaving the LIFO one object at least (a
 * refill's caller pops next). Returns the LIFO's count.
 * REQUIRES: cc claimed. */
static __always_inline __u32 reserve_fill(struct aa_cpu_cache __arena *cc, __u32 c)
{
	struct aa_cpu_class __arena *k = reserve_of(cc, c, false);
	__u32 n = cache_count(cc, c), left;

	if (!k || !READ_ONCE_ARENA(k->reserve_want))
		return n;
	left = aa__reserve_stock((__u64)&k->reserve, c, (__u64)&k->objs[0], n, 1);
	if (left != n)
		k->count = left;
	return left;
}

/* --- Alloc / free: slow paths (global functions, verified once) ----------
 * Taken when the fast path below could not finish: the cache is empty or
 * full, claimed by someone else, or missing. They redo the operation.
 */

/* One object of class cls from the transfer cache: its reserve first
 * (reserves: a caller that may not wait), then its stack under its own
 * lock. Word 0 cleared. Counted as the transfer cache's (tc_allocs) for a
 * nested caller; a claim holder's cache counts its own allocations.
 * Returns its address or 0. */
static __always_inline __u64 tc_take(__u32 cls, bool reserves, bool nested)
{
	__u64 p = aa__transfer_cache_pop(cls, reserves);

	if (p) {
		if (nested)
			aa_count(tc_allocs);
		*(__u64 __arena *)p = 0;	/* no longer carries a mark */
	}
	return p;
}

/* One object of class cls past cache cc's LIFO (cc: this CPU's, a user
 * cache, or NULL), with no wait for it. A caller that cannot wait for a
 * lock (not on a task's stack: hard IRQ, NMI) takes from the reserves:
 * the class's on this CPU first where it found cc claimed (nested:
 * reserve_of()), then the transfer cache's; then, any caller, the
 * transfer cache's stack under its own lock, so that an IRQ over a
 * heap-lock holder still gets memory there. A task takes the transfer
 * cache's reserve last, once the heap failed it (cache_alloc_slow()), and
 * leaves a CPU's reserve to nested interrupts, whose frees go back into
 * it: their takes and puts balance, so it stays stocked for them while a
 * claim holder whose refill failed (its frees go to the LIFO) lives on the
 * transfer cache's. Word 0 cleared. Returns its address or 0. */
static __always_inline __u64 spare_alloc(struct aa_cpu_cache __arena *cc, __u32 cls, bool nested)
{
	bool irq = !aa_on_task_stack();
	struct aa_cpu_class __arena *k = irq && nested ? reserve_of(cc, cls, true) : NULL;
	__u64 p = k ? aa__reserve_take((__u64)&k->reserve, aa_reserve_n(cls)) : 0;

	if (!p)
		return tc_take(cls, irq, nested);
	__sync_fetch_and_add(&k->reserve_allocs, 1);
	*(__u64 __arena *)p = 0;	/* no longer carries a mark */
	return p;
}

/* Put ptr (claimed, class cls) past cache cc's LIFO, with no wait: into
 * the class's reserve on this CPU, else into the transfer cache. False
 * when neither took it: still the caller's. */
static __always_inline bool spare_free(struct aa_cpu_cache __arena *cc, __u32 cls, __u64 ptr)
{
	struct aa_cpu_class __arena *k = reserve_of(cc, cls, false);

	if (k && aa__reserve_put((__u64)&k->reserve, aa_reserve_n(cls), ptr)) {
		__sync_fetch_and_add(&k->reserve_frees, 1);
		return true;
	}
	return aa__transfer_cache_push(cls, ptr);
}

/* Allocate one object of class cls for a request of size bytes through
 * cache cc (this CPU's, a user cache, or NULL: none). Returns its address,
 * 0 (the failure counted once, here), or AA_DRY (the heap is empty, where
 * aa_self_grows()). */
static __always_inline __u64 cache_alloc_slow(struct aa_cpu_cache __arena *cc, __u32 cls,
					      __u64 size)
{
	__u32 c = aa_cls_idx(cls);
	int err = -AA_ERR_NOMEM;
	bool nested;
	__u64 p = 0;
	long got;

	if (cls >= AA_NR_CLASSES)
		return 0;
	nested = !cc || !cache_claim(cc, AA_CC_OWNER);
	if (!nested) {
		if (cc->cls[c].count == 0) {
			cc->cls[c].stats.misses++;
			got = cache_refill(cc, c);
			if (got < 0)
				err = got;
			cc->cls[c].count = got > 0 ? got : 0;
		}
		reserve_fill(cc, c);
		p = __aa_cache_pop(cc, c, size);
		if (p) {
			cache_release(cc);
			*(__u64 __arena *)p = 0;	/* no longer carries a mark */
			return p;
		}
	} else if (!cc) {
		aa_count(no_cache);
	} else {
		__sync_fetch_and_add(&cc->cls[c].stats.nested, 1);
	}
	/* past the LIFO: claimed by someone else, or no batch (the transfer
	 * cache had less, the heap lock was out of reach, nested or busy past
	 * the budget, or the heap is empty): the reserves (an interrupt's)
	 * and the transfer cache, the heap (nested), then a task's last
	 * resort, the transfer cache's reserve, unless the heap may grow */
	p = spare_alloc(cc, c, nested);
	if (!p && nested) {
		got = heap_take(c);
		if (got > 0)
			return got;
		err = got;
	}
	if (!p && !(err == -AA_ERR_NOMEM && aa_self_grows()) && aa_on_task_stack())
		p = tc_take(c, true, nested);
	if (nested)
		return p ? p : alloc_failed(err);
	if (p) {
		cc->cls[c].stats.allocs++;
		cc->cls[c].stats.req_bytes += size;
	} else {
		p = alloc_failed(err);
		if (!p)
			cc->cls[c].stats.failures++;
	}
	cache_release(cc);
	return p;
}

__u64 aa_cpu_cache_alloc_slow(__u32 cls, __u64 size)
{
	return cache_alloc_slow(this_cpu_cache(), cls, size);
}

/* Put ptr, an object of class cls that the caller claimed (word 0 = FREED
 * mark), into cache cc (this CPU's, a user cache, or NULL: none), or give
 * it to the heap. Returns 0 (the object is always taken), or -EUCLEAN if
 * the heap found it inconsistent. */
static __always_inline int cache_free_slow(struct aa_cpu_cache __arena *cc, __u64 ptr,
					   __u32 cls)
{
	__u32 c = aa_cls_idx(cls), n, left;
	bool ok;

	if (!cc || !cache_claim(cc, AA_CC_OWNER)) {
		if (!cc)
			aa_count(no_cache);
		else
			__sync_fetch_and_add(&cc->cls[c].stats.nested, 1);
		if (spare_free(cc, c, ptr))
			return 0;
		return heap_return(ptr);
	}
	n = reserve_fill(cc, c);
	if (n >= cache_cap(cc, c)) {
		left = cache_spill(cc, c, n);
		if (left != n)
			cc->cls[c].count = left;
	}
	ok = __aa_cache_push(cc, c, ptr);
	cache_release(cc);
	return ok ? 0 : heap_return(ptr);	/* could not spill: the heap takes it */
}

int aa_cpu_cache_free_slow(__u64 ptr, __u32 cls)
{
	return cache_free_slow(this_cpu_cache(), ptr, cls);
}

/* --- Alloc / free: fast paths (inlined into aa_malloc_u64/aa_free_u64) ----
 * The inline API's hit path (__aa_hit_alloc() and __aa_hit_free() of
 * aa_hit.h) with the library's own fallbacks: a hit costs no
 * call beyond the public function itself, and one cmpxchg for the claim.
 */

/* Allocate one object of class cls (< AA_NR_CLASSES) for a request of
 * size bytes: an address, 0, or AA_DRY (the front door grows). */
static __always_inline __u64 aa_cpu_cache_alloc(__u32 cls, __u64 size)
{
	struct aa_cpu_cache __arena *cc = this_cpu_cache();
	__u64 p = cc ? __aa_hit_alloc(cc, cls, size) : 0;

	return p ? p : aa_cpu_cache_alloc_slow(cls, size);
}

/* An object of class cls from this CPU's cache for a tier above that
 * keeps it as its own memory (the limbo's nodes, defer.bpf.c), not as an
 * allocation: no counter of the cache counts it (cached_objs loses it,
 * the taker counts it). Its address, or 0 (no cache, claimed, or empty).
 * Any context: the claim is all it takes, no lock. */
static __always_inline __u64 aa_cpu_cache_take(__u32 cls)
{
	struct aa_cpu_cache __arena *cc = this_cpu_cache();
	__u64 p = 0;

	if (!cc || !__aa_cache_claim(cc, AA_CC_OWNER))
		return 0;
	__aa_class_take(&cc->cls[aa_cls_idx(cls)], &p);
	__aa_cache_release(cc);
	return p;
}

/*
 * Free ptr. A live span object is claimed (__aa_claim) and goes to this
 * CPU's cache; anything else (a page run, a bad pointer) is the heap's to
 * judge. Returns 0 or -errno (counted) with the heap unchanged.
 */
static __always_inline int aa_cpu_cache_free(__u64 ptr)
{
	struct aa_seen s = {};
	int c = __aa_class_of(&aa_fast, ptr, &s);
	struct aa_cpu_cache __arena *cc;

	if (c < 0)
		return aa__heap_free(ptr);
	if (__aa_claim_object(&aa_fast, ptr, &s, aa_fast.defer))
		return aa_fail(AA_ERR_DOUBLE_FREE);
	cc = this_cpu_cache();
	if (cc && __aa_hit_free(cc, ptr, c))
		return 0;
	return aa_cpu_cache_free_slow(ptr, c);
}

/* --- Custody on the way out ------------------------------------------------
 * A user cache is arena memory that its thread writes over the mmap, and
 * the thread can die at any instruction: its slots are checked before a
 * tier takes them. A hit writes objs[n] before count (aa_hit.h), so a
 * cache is whole wherever its thread died, and a slot below count that
 * holds no object of the cache's (a write through the mmap, a stale
 * pointer) is an error: the park path of aa_heap_return_bulk() and the
 * transfer caches would take it without a look, and write its next word.
 */

/* Check the objects arr[0 .. n) of a cache's class cls: each must be an
 * object of class cls carrying a transit mark (FREED from a free, CACHED
 * from a refill). One that does not is counted as corrupt and its slot
 * zeroed (the heap's rounds skip zero slots): it stays out of every
 * tier, never freed. Returns how many passed. Global: verified once.
 * REQUIRES: the cache claimed; n <= AA_CPU_CACHE_MAX. */
int aa__cpu_cache_vet(__u64 arr, __u32 n, __u32 cls)
{
	__u64 __arena *objs = (__u64 __arena *)arr;
	int i, kept = AA_ZERO;

	if (n > AA_CPU_CACHE_MAX)
		return 0;
	aa_for(i, 0, n) {
		if (lookup_transit(objs[i & (AA_CPU_CACHE_MAX - 1)], cls)) {
			kept++;
			continue;
		}
		objs[i & (AA_CPU_CACHE_MAX - 1)] = 0;
		aa_fail(AA_ERR_CORRUPT);
	}
	return kept;
}

/* --- Drain ------------------------------------------------------------------ */

/* Return class c's objs[0 .. n) of cc, which the caller claimed, to the
 * heap, and set its count to 0; a slot that holds no object of the
 * cache's is counted and left out (aa__cpu_cache_vet()). Returns the
 * number of objects returned. */
static __always_inline int class_empty(struct aa_cpu_cache __arena *cc, __u32 c, __u32 n)
{
	int moved;

	if (!n || n > AA_CPU_CACHE_MAX)
		return 0;
	if (aa__cpu_cache_vet((__u64)&cc->cls[c].objs[0], n, c) <= 0) {
		cc->cls[c].count = 0;
		return 0;
	}
	moved = aa_heap_return_bulk((__u64)&cc->cls[c].objs[0], n);
	if (moved <= 0)
		return 0;
	cc->cls[c].count = 0;
	return moved;
}

/* Move what class c's reserve holds into its empty LIFO (objs[0 ..)).
 * Returns how many objects. REQUIRES: cc claimed, count 0. */
static __always_inline __u32 reserve_unload(struct aa_cpu_cache __arena *cc, __u32 c)
{
	struct aa_cpu_class __arena *k = &cc->cls[c];
	__u32 n = AA_ZERO;
	int i;

	aa_for(i, 0, AA_RESERVE_SLOTS) {
		k->objs[n & (AA_CPU_CACHE_MAX - 1)] = aa__reserve_take((__u64)&k->reserve,
								       AA_RESERVE_SLOTS);
		if (!k->objs[n & (AA_CPU_CACHE_MAX - 1)])
			break;
		n++;
	}
	return n;
}

/* Return every object of cc, which the caller claimed, to the heap, its
 * reserves' too. Returns the number of objects returned. */
static __always_inline int cache_empty(struct aa_cpu_cache __arena *cc)
{
	int c, total = AA_ZERO;

	aa_for(c, 0, AA_NR_CLASSES) {
		total += class_empty(cc, c, cc->cls[c].count);
		if (!cc->cls[c].count)
			total += class_empty(cc, c, reserve_unload(cc, c));
	}
	return total;
}

/* Return every object of CPU cpu's cache to the heap, from any CPU.
 * Returns the number of objects, 0 for a CPU without a cache, or -EBUSY
 * when the cache is claimed by someone else (its owner is inside an
 * allocator call: try again). */
int aa__cpu_cache_drain(__u32 cpu)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	int n;

	if (cpu >= AA_MAX_CPUS || cpu >= aa__root.nr_cpus)
		return 0;
	off = aa__root.cpu_cache_off[cpu];
	if (!off)
		return 0;
	cc = aa_addr(off);
	if (!cache_claim(cc, AA_CC_DRAIN))
		return -EBUSY;
	n = cache_empty(cc);
	cache_release(cc);
	return n;
}

/* The CPUs' reserves against their invariant (lookup_check_reserve()), for
 * the checker (check.bpf.c). Returns 0, or 28. */
static __always_inline int cpu_caches_check(void)
{
	struct aa_cpu_cache __arena *cc;
	__u32 n = aa__root.nr_cpus, off;
	int cpu, c, ret;

	aa_for(cpu, 0, n < AA_MAX_CPUS ? n : AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu & (AA_MAX_CPUS - 1)];
		if (!off)
			continue;
		cc = aa_addr(off);
		aa_for(c, 0, AA_NR_CLASSES) {
			ret = lookup_check_reserve(&cc->cls[c].reserve, c);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* --- Caches' pages and resets (lifecycle.bpf.c) ---------------------------- */

/* Empty cc (a cache kept from before a teardown, or fresh), its reserves
 * too (unwanted again), and set its caps from the tunables.
 * REQUIRES: heap not published, or cc claimed. */
static __always_inline void reset_cache(struct aa_cpu_cache __arena *cc)
{
	__u32 cap;
	int c;

	aa_for(c, 0, AA_NR_CLASSES) {
		cap = aa__root.tun.cpu_cache_cap[c];
		cc->cls[c].count = 0;
		cc->cls[c].cap = cap < AA_CPU_CACHE_MAX ? cap : AA_CPU_CACHE_MAX;
		cc->cls[c].reserve_want = 0;
		aa_reserve_clear(&cc->cls[c].reserve);
	}
}

/*
 * Give CPUs 0 .. n-1 a cache (n = 0: none) and take them from the others.
 * -ENOMEM: a cache page was refused (the caller gives every cache back,
 * lifecycle.bpf.c's free_caches()).
 * A cache kept from before a teardown is emptied and released (teardown
 * left it claimed); its event counters are kept.
 * REQUIRES: heap not published (init).
 */
static int cpu_caches_init(__u32 n)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	bool drop;
	int cpu;

	drop = close_readers();	/* else the caches of CPUs >= n are kept */
	aa_for(cpu, 0, AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu];
		if (cpu >= n) {
			if (off && drop) {
				aa__root.cpu_cache_off[cpu] = 0;
				pages_put(aa_addr(off), AA_CPU_CACHE_PAGES);
			}
			continue;
		}
		if (!off) {
			cc = pages_get(NULL, AA_CPU_CACHE_PAGES);
			if (!cc) {
				if (drop)
					open_readers();
				return -ENOMEM;
			}
			cc->cpu = cpu;	/* fresh pages: busy == AA_CC_FREE, counts 0 */
			aa__root.cpu_cache_off[cpu] = (__u64)cc - aa__root.arena_base;
		} else {
			cc = aa_addr(off);
		}
		reset_cache(cc);
		teardown_release(off);	/* kept from before a teardown: its claim */
	}
	if (drop)
		open_readers();
	aa__root.nr_cpus = n;
	return 0;
}

/* --- Teardown claims -------------------------------------------------------
 * A teardown claims every cache as AA_CC_TEARDOWN and keeps the claims until
 * init (or gives them back when it fails); only a claim so taken is ever
 * given back by a teardown or an init, with a cmpxchg from AA_CC_TEARDOWN,
 * so neither releases a claim that a thread or a drain holds. How a cache
 * registered during a teardown is kept out: aa_shared.h, "User caches".
 */

/* Claim the cache at arena offset off for a teardown (the only one:
 * user.closing), unless a teardown holds it already (a CPU cache init
 * kept unpublished). True when it does now (or off is 0: no cache). */
static __always_inline bool teardown_claim(__u32 off)
{
	__u32 v;

	if (!off)
		return true;
	v = __sync_val_compare_and_swap(&((struct aa_cpu_cache __arena *)aa_addr(off))->busy,
					AA_CC_FREE, AA_CC_TEARDOWN);
	return v == AA_CC_FREE || v == AA_CC_TEARDOWN;
}

/* Give back the teardown's claim of the cache at off (0: none); any other
 * claim stays. */
static __always_inline void teardown_release(__u32 off)
{
	if (off)
		__sync_val_compare_and_swap(&((struct aa_cpu_cache __arena *)aa_addr(off))->busy,
					    AA_CC_TEARDOWN, AA_CC_FREE);
}

/* --- Tables of caches ------------------------------------------------------
 * The CPU caches (aa__root.cpu_cache_off[]) and the user caches
 * (aa__root.user.off[], user_cache.bpf.c) are each named by a table of
 * AA_CACHE_TABLE arena offsets (0: none): lifecycle.bpf.c runs these over
 * both.
 */
#define AA_CACHE_TABLE		AA_MAX_CPUS
_Static_assert(AA_MAX_USER_CACHES == AA_CACHE_TABLE, "one length of cache table");

/* Every cache of tab back to the kernel (a failed init), none left in it.
 * REQUIRES: heap not published, the reader pin closed (close_readers()). */
static __always_inline void caches_put(__u32 __arena *tab)
{
	__u32 off;
	int i;

	aa_for(i, 0, AA_CACHE_TABLE) {
		off = tab[i & (AA_CACHE_TABLE - 1)];
		if (!off)
			continue;
		tab[i & (AA_CACHE_TABLE - 1)] = 0;
		pages_put(aa_addr(off), AA_CPU_CACHE_PAGES);
	}
}

/* Every cache of tab empty, reserves too (a teardown: their objects went
 * with their chunks). REQUIRES: every cache claimed by the teardown. */
static __always_inline void caches_empty(__u32 __arena *tab)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	int i, c;

	aa_for(i, 0, AA_CACHE_TABLE) {
		off = tab[i & (AA_CACHE_TABLE - 1)];
		if (!off)
			continue;
		cc = aa_addr(off);
		aa_for(c, 0, AA_NR_CLASSES) {
			cc->cls[c].count = 0;
			aa_reserve_clear(&cc->cls[c].reserve);
		}
	}
}

/* Give back the teardown's claims of every cache of tab. */
static __always_inline void caches_release_all(__u32 __arena *tab)
{
	int i;

	aa_for(i, 0, AA_CACHE_TABLE)
		teardown_release(tab[i & (AA_CACHE_TABLE - 1)]);
}

/* Claim every cache of tab for teardown: true; false with none claimed (a
 * program or a user thread is inside one). */
static __always_inline bool caches_claim_all(__u32 __arena *tab)
{
	int i;

	aa_for(i, 0, AA_CACHE_TABLE)
		if (!teardown_claim(tab[i & (AA_CACHE_TABLE - 1)]))
			goto busy;
	return true;
busy:
	caches_release_all(tab);
	return false;
}
