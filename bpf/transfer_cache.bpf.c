// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * transfer_cache.bpf.c - tier 2: per-size-class stacks shared by all CPUs.
 *
 * Role:       move whole batches between CPU caches, so that a CPU that
 *             frees what another allocated (cross-CPU frees) feeds the
 *             other's refills without touching the heap lock.
 * From below: nothing: when empty, the CPU cache refills from the central
 *             free list itself; when full, it spills to the heap.
 * To above:   aa__transfer_cache_remove_batch / _insert_batch: all of a
 *             batch or nothing (try operations: 0 means "go below");
 *             aa__transfer_cache_pop / _push: one object, for callers whose
 *             CPU cache is claimed by someone else or whose refill failed,
 *             the class's reserve first (no lock: internal.h's model,
 *             "Reserves"; taken only by callers that cannot wait for a
 *             lock), which CPU caches' spills and refills from the heap
 *             stock (transfer_cache_stock());
 *             transfer_cache_reset() and _quiesce_locked() for
 *             lifecycle.bpf.c.
 * Locking:    tc->lock per class (the lock rules: internal.h's model).
 *             Always tried with the short IRQ budget: a miss costs a trip
 *             to the heap, never a wait. Holding it, no other lock is
 *             taken, so the heap-lock-then-transfer-lock order is never
 *             reversed. The reserve takes no lock.
 *
 * Invariant: tc->objs[0 .. count) and the objects in tc->reserve are free
 * objects of the class, each carrying a custody mark; count <=
 * tun.transfer_cap[cls] <= AA_TRANSFER_MAX.
 */
#include "internal.h"
#include "lock.h"
#include "transfer_cache.h"
#include "lookup.h"
#include "heap.h"

/* Class cls's transfer cache (aa_root.tc_off: init maps the table with
 * the CPU caches; only their holders reach it). */
static __always_inline struct aa_transfer_cache __arena *tc_of(__u32 cls)
{
	return (struct aa_transfer_cache __arena *)aa_addr(aa__root.tc_off) + aa_cls_idx(cls);
}

/* transfer_cap of class cls, which lives in the arena (anyone who maps it
 * can write it): <= AA_TRANSFER_MAX, the size of objs[]. */
static __always_inline __u32 tc_cap(__u32 cls)
{
	__u32 cap = aa__root.tun.transfer_cap[aa_cls_idx(cls)];

	return cap > AA_TRANSFER_MAX ? AA_TRANSFER_MAX : cap;
}

/* Try the class lock (short budget: a miss is a trip below, never a long
 * wait). Returns true with it held; a miss is counted. */
static __always_inline bool tc_lock(struct aa_transfer_cache __arena *tc)
{
	if (!aa_lock_acquire(&tc->lock, AA_WAIT_IRQ_NS))
		return true;
	__sync_fetch_and_add(&tc->lock_fails, 1);
	return false;
}

/* tc_lock() for the single-object calls, which callers reach without a
 * CPU cache claim, so with nothing that keeps a teardown out: true with the
 * lock held only while the heap is published (checked under the lock:
 * teardown empties each class under its lock, init empties them all
 * before it publishes). */
static __always_inline bool tc_lock_ready(struct aa_transfer_cache __arena *tc)
{
	if (!tc_lock(tc))
		return false;
	if (aa_heap_ready())
		return true;
	aa_lock_release(&tc->lock);
	return false;
}

/* Copy n object addresses between arena arrays. */
static __always_inline void copy_objs(__u64 __arena *dst, __u64 __arena *src, __u32 n)
{
	int i;

	aa_for(i, 0, n)
		dst[i] = src[i];
}

/* Fill the reserve's empty slots from the top of a CPU cache's objects
 * arr[0 .. n), leaving keep (no lock: the reserve takes none): its spills,
 * and its refills that got their batch from the heap (the transfer cache
 * had less), so a heap's first refills of a class already stock its
 * reserve for the interrupts that come next. Returns what is left in arr.
 * REQUIRES: the CPU cache claimed; n <= AA_CPU_CACHE_MAX. */
static __always_inline __u32 transfer_cache_stock(__u32 cls, __u64 arr, __u32 n, __u32 keep)
{
	if (cls >= AA_NR_CLASSES || !aa__root.tc_off || n > AA_CPU_CACHE_MAX)
		return n;
	return aa__reserve_stock((__u64)&tc_of(cls)->reserve, cls, arr, n, keep);
}

/* Take exactly n objects into dst[0 .. n). Returns n, or 0 when the
 * transfer cache has fewer than n or is locked (counted). */
int aa__transfer_cache_remove_batch(__u32 cls, __u64 dst, __u32 n)
{
	struct aa_transfer_cache __arena *tc = tc_of(cls);
	__u32 count;

	if (cls >= AA_NR_CLASSES || n == 0 || n > AA_CPU_CACHE_MAX)
		return 0;
	if (!tc_lock(tc))
		return 0;
	count = tc->count;
	if (count < n || count > AA_TRANSFER_MAX) {
		tc->remove_misses++;
		aa_lock_release(&tc->lock);
		return 0;
	}
	copy_objs((__u64 __arena *)dst, &tc->objs[(count - n) & (AA_TRANSFER_MAX - 1)], n);
	tc->count = count - n;
	tc->batches_out++;
	aa_lock_release(&tc->lock);
	return n;
}

/* Put src[0 .. n) in. Returns n, or 0 when full or locked. */
int aa__transfer_cache_insert_batch(__u32 cls, __u64 src, __u32 n)
{
	struct aa_transfer_cache __arena *tc = tc_of(cls);
	__u32 count, cap;

	if (cls >= AA_NR_CLASSES || n == 0 || n > AA_CPU_CACHE_MAX)
		return 0;
	cap = tc_cap(cls);
	if (!tc_lock(tc))
		return 0;
	count = tc->count;	/* in the arena too: count + n may wrap */
	if (count > cap || n > cap - count) {
		tc->insert_misses++;
		aa_lock_release(&tc->lock);
		return 0;
	}
	copy_objs(&tc->objs[count & (AA_TRANSFER_MAX - 1)], (__u64 __arena *)src, n);
	tc->count = count + n;
	tc->batches_in++;
	aa_lock_release(&tc->lock);
	return n;
}

/*
 * Single objects, for callers that cannot use their CPU cache (claimed by a
 * preempted or interrupted owner on this CPU, no cache for this CPU, or a
 * refill that failed): the reserve, which takes no lock, then the stack
 * under its own lock, so an IRQ over a heap-lock holder still gets memory.
 */

/* Take an object: with reserve (a caller that cannot wait for a lock),
 * the reserve's first; else the newest. Returns it (custody-marked), or 0
 * when none was there, the stack is locked, or the heap is not
 * published. Not counted: the caller's tier counts the allocation. */
__u64 aa__transfer_cache_pop(__u32 cls, bool reserve)
{
	struct aa_transfer_cache __arena *tc = tc_of(cls);
	__u32 count;
	__u64 p;

	if (cls >= AA_NR_CLASSES || !aa__root.tc_off)
		return 0;
	p = reserve ? aa__reserve_take((__u64)&tc->reserve, aa_reserve_n(cls)) : 0;
	if (p)
		return p;
	if (!tc_lock_ready(tc))
		return 0;
	count = tc->count;
	if (count == 0 || count > AA_TRANSFER_MAX) {
		aa_lock_release(&tc->lock);
		return 0;
	}
	p = tc->objs[(count - 1) & (AA_TRANSFER_MAX - 1)];
	tc->count = count - 1;
	aa_lock_release(&tc->lock);
	return p;
}

/* Put ptr (claimed: custody-marked) in: into the reserve where it has
 * room, else on the stack. Returns 1, or 0 when full, locked, the heap is
 * not published, or ptr does not carry this heap's FREED mark (a free that
 * claimed it in a heap torn down since: the key changes on every init). */
int aa__transfer_cache_push(__u32 cls, __u64 ptr)
{
	struct aa_transfer_cache __arena *tc = tc_of(cls);
	__u32 count, cap;

	if (cls >= AA_NR_CLASSES || !aa__root.tc_off)
		return 0;
	if (aa_heap_ready() && aa__reserve_put((__u64)&tc->reserve, aa_reserve_n(cls), ptr)) {
		aa_count(tc_frees);
		return 1;
	}
	cap = tc_cap(cls);
	if (!tc_lock_ready(tc))
		return 0;
	count = tc->count;
	if (count >= cap || *(__u64 __arena *)ptr != aa_custody(ptr, AA_TAG_FREED)) {
		aa_lock_release(&tc->lock);
		return 0;
	}
	tc->objs[count & (AA_TRANSFER_MAX - 1)] = ptr;
	tc->count = count + 1;
	aa_lock_release(&tc->lock);
	aa_count(tc_frees);	/* a caller's free, no cache counted it */
	return 1;
}

/* Empty every class, its reserve too, onto the parked list (lock-free,
 * no call under the lock); the caller completes them under the heap lock
 * (the drain call in entry.bpf.c). Returns the number of objects, or -EBUSY if
 * a lock could not be taken (those objects stay). */
int aa__transfer_cache_drain(void)
{
	struct aa_transfer_cache __arena *tc;
	int total = AA_ZERO, err = 0, i, c;
	__u32 n, off, prev;
	__u64 p;

	aa_for(c, 0, aa__root.tc_off ? AA_NR_CLASSES : 0) {	/* none without CPU caches */
		tc = tc_of(c);
		if (aa_lock_acquire(&tc->lock, 0)) {
			err = -EBUSY;
			continue;
		}
		n = tc->count;
		if (n && n <= AA_TRANSFER_MAX) {
			prev = AA_NIL;
			aa_for(i, 0, n) {
				off = tc->objs[i & (AA_TRANSFER_MAX - 1)] - aa__root.arena_base;
				if (prev != AA_NIL)
					((aa_parked_t *)aa_addr(prev))->next = off;
				prev = off;
			}
			park_chain(tc->objs[0] - aa__root.arena_base, prev, n);
			tc->count = 0;
			total += n;
		}
		aa_lock_release(&tc->lock);
		aa_for(i, 0, AA_RESERVE_SLOTS) {
			p = aa__reserve_take((__u64)&tc->reserve, AA_RESERVE_SLOTS);
			if (!p)
				break;
			off = p - aa__root.arena_base;
			park_chain(off, off, 1);
			total++;
		}
	}
	return err ? err : total;
}

/* The reserves against their invariant (lookup_check_reserve()), for the
 * checker (check.bpf.c). Returns 0, or 28. */
static __always_inline int transfer_cache_check(void)
{
	int c, ret;

	aa_for(c, 0, aa__root.tc_off ? AA_NR_CLASSES : 0) {
		ret = lookup_check_reserve(&tc_of(c)->reserve, c);
		if (ret)
			return ret;
	}
	return 0;
}

/* --- Reset (lifecycle.bpf.c) ----------------------------------------------- */

/* Empty transfer caches (a teardown emptied them already; fresh pages are
 * empty). No lock: the heap is not published, and the callers that reach
 * them without a CPU cache claim touch nothing under their lock unless it
 * is (tc_lock_ready()); an object that a free pushed while a teardown ran
 * belongs to no heap now.
 * REQUIRES: heap not published (init). */
static void transfer_cache_reset(void)
{
	int c;

	aa_for(c, 0, aa__root.tc_off ? AA_NR_CLASSES : 0) {
		tc_of(c)->count = 0;
		aa_reserve_clear(&tc_of(c)->reserve);
	}
}

/* A teardown's, before it resets the tiers: every transfer cache's lock
 * taken and given back (heap lock first: the allowed order), so that no
 * holder is inside one. 0, or -EBUSY when a lock stayed held past the
 * wait budget (a holder's vCPU descheduled): the teardown is refused,
 * nothing changed. REQUIRES: heap lock held. */
static __always_inline int transfer_cache_quiesce_locked(void)
{
	struct aa_transfer_cache __arena *tc;
	int c;

	aa_for(c, 0, aa__root.tc_off ? AA_NR_CLASSES : 0) {
		tc = tc_of(c);
		if (aa_lock_acquire(&tc->lock, 0))
			return -EBUSY;
		aa_lock_release(&tc->lock);
	}
	return 0;
}
