// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * check.bpf.c - the heap's validity checker (aa__run's check call): the central lists
 * (tier 3) and the page heap (tier 4) against their invariants.
 *
 * Role:       aa__heap_check() for aa__run's check call (entry.bpf.c), and
 *             so for aa_heap__check() and `arena-alloc check`: each tier's
 *             own check in tier order (arena_check_tables(),
 *             buddy_check_chunk_locked(), central_check_spans_locked(),
 *             heap_check_locked(); the caches' reserves, lock-free:
 *             transfer_cache_check(), cpu_caches_check()), then the
 *             equations between their counters.
 * From below: reads only, through those checks and the root's stats.
 * To above:   0 or the first failing check's code (the numbers in
 *             the comments below); it changes nothing.
 * Locking:    the heap lock, one chunk or one class per hold (internal.h's
 *             model).
 */
#include "internal.h"
#include "lock.h"
#include "check.h"
#include "arena.h"
#include "buddy.h"
#include "central.h"
#include "heap.h"
#include "transfer_cache.h"
#include "cpu_cache.h"

/* --- Validity checker ------------------------------------------------------
 * Walks every chunk's free lists: each block must be inside its chunk,
 * carry the mark of its list's order, have its page-map entry say so, a
 * consistent prev link and natural alignment; the chunk's bits in the order
 * maps must say whether its lists are empty; the list lengths must add up
 * to stats.free_blocks[], and the orders the page size has none of must
 * stay empty (19); its absent pages to its count of them (23), and all
 * chunks' to stats.absent_pages (24); a slot without a chunk must have no
 * page-map entry but 0 (29: the lock-free lookups go by them). Then every
 * central list: each span's first entry must name its class, its free
 * objects must carry span marks and number objs - used. Finally the page
 * invariant of buddy.bpf.c must hold (10), the pages mapped must be the
 * chunks' less their absent ones (25: arena.bpf.c's ledger), and the
 * parked list its counters' bound (heap_check_locked()), and the modes its
 * flags name must be the ones the fast paths and the tiers follow, and
 * their page map the root's (27). First of all the root's tables must be
 * whole (26), and then every reserve of the transfer and CPU caches must
 * hold free objects of its class only (28).
 * One chunk or one class per hold of the heap lock (a waiter in IRQ
 * context waits for one at most); the totals are compared only if no one
 * else held the lock in between (lock_gen), which is so at rest.
 * Returns 0 or a distinct positive code.
 */

/* The modes of the root's flags, as the fast paths and the tiers follow
 * them: aa_fast's mode and defer word (published with the heap), the
 * inline free's bound (the arena size, 0 where the heap defers frees or
 * no fast path runs), and the carve tail (debug mode's poison, else
 * none), which lifecycle.bpf.c's init sets through the tiers' resets
 * after the flags; and the page map the fast paths read, the one after
 * the root's slot table. Returns 0 or 27. */
static __always_inline int check_modes(void)
{
	__u32 f = aa__root.flags;

	if (aa_fast.pm != aa__root.pm || aa_fast.slots != aa__root.slots)
		return 27;
	if (aa_fast.mode != (f & AA_FAST_MODES) || aa_fast.defer != (f & AA_F_DEFER) ||
	    aa_fast.free_size != (f & (AA_F_DEFER | AA_FAST_OFF) ? 0 : aa_fast.arena_size))
		return 27;
	return aa__root.carve_tail == (f & AA_F_DEBUG ? AA_DEBUG_POISON : 0) ? 0 : 27;
}

/* Hold the heap lock for the next round of aa__heap_check(). *gen: the
 * lock_gen of the first hold; *holds: holds so far. Returns 0 holding it. */
static __always_inline int check_lock(__u32 *gen, __u32 *holds)
{
	aa_lock_yield();
	if (aa_lock())
		return 2;
	if (!(*holds)++)
		*gen = aa__root.lock_gen;
	return 0;
}

int aa__heap_check(void)
{
	__u64 cnt[AA_NR_ORDERS] = {}, free_pages = 0, heap_pages, absent = 0;
	__u32 nr = aa__root.nr_slots, pages = 0, gen = 0, holds = AA_ZERO, off, prev, mine = 0;
	bool started;
	int s, cls, k, ret = 0;

	if (!aa_heap_ready())
		return 1;
	ret = arena_check_tables();
	if (!ret)
		ret = transfer_cache_check();
	if (!ret)
		ret = cpu_caches_check();
	if (ret)
		return ret;
	aa_for(s, 0, nr < AA_MAX_SLOTS ? nr : AA_MAX_SLOTS) {
		if (check_lock(&gen, &holds))
			return 2;
		ret = buddy_check_chunk_locked(s, cnt, &absent);
		aa_unlock();
		if (ret)
			return ret;
	}
	aa_for(cls, 0, AA_NR_CLASSES) {
		started = false;
		off = prev = AA_NIL;
		aa_repeat(AA_MAX_LOOPS) {
			if (check_lock(&gen, &holds))
				return 2;
			if (!started) {
				started = true;
				off = aa__root.central[cls].head;
				pages += aa__root.central[cls].spans * aa_class(cls)->pages;
			} else if (aa__root.lock_gen != mine) {
				off = AA_NIL;	/* held by another since: the list moved, */
			}			/* and the totals go unchecked */
			ret = central_check_spans_locked(cls, &off, &prev);
			mine = aa__root.lock_gen + 1;
			aa_unlock();
			if (ret)
				return ret;
			if (off == AA_NIL)
				break;
		}
	}
	if (aa_lock())
		return 2;
	if (aa__root.lock_gen == gen + holds) {	/* nobody else held it */
		for (k = 0; k < AA_NR_ORDERS; k++) {
			if (cnt[k] != aa__root.stats.free_blocks[k])
				ret = 9;
			free_pages += aa__root.stats.free_blocks[k] << k;
		}
		/* the layout's orders past this page size's (16 KiB: 7, 8) */
		for (k = AA_NR_ORDERS; k < AA_LAYOUT_ORDERS; k++)
			if (aa__root.stats.free_blocks[k] || aa__root.order_summary[k])
				ret = 19;
		if (!ret && pages != aa__root.stats.span_pages)
			ret = 17;
		if (!ret && absent != aa__root.stats.absent_pages)
			ret = 24;
		heap_pages = (aa__root.stats.nr_chunks - aa__root.stats.large_chunks) * AA_CHUNK_PAGES -
			     aa__root.stats.absent_pages;
		if (!ret && free_pages + aa__root.stats.span_pages + aa__root.stats.run_pages != heap_pages)
			ret = 10;
		if (!ret && aa__root.stats.pages_mapped !=
			    aa__root.stats.nr_chunks * (AA_CHUNK_PAGES + aa_meta_pages()) -
			    aa__root.stats.absent_pages)
			ret = 25;
	}
	if (!ret && aa_heap_ready())
		ret = heap_check_locked();
	if (!ret)
		ret = check_modes();	/* last: no loop after it (verifier) */
	aa_unlock();
	return ret;
}
