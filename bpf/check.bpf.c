// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * check.bpf.c - the heap's validity checker (aa__check): the central lists
 * (tier 3) and the page heap (tier 4) against their invariants.
 *
 * Role:       aa__buddy_check() for the aa__check program (entry.bpf.c), and
 *             so for aa_heap__check() and `arena-alloc check`.
 * From below: reads only: the page map, free lists, order maps, spans and
 *             stats of central.bpf.c and buddy.bpf.c (their static helpers).
 * To above:   0 or the first failing check's code (the numbers in
 *             the comments below); it changes nothing.
 * Locking:    the heap lock, one chunk or one class per hold (internal.h's
 *             model); compiled after buddy.bpf.c and central.bpf.c
 *             (bpf/arena_alloc.bpf.c).
 */
#include "internal.h"
#include "check.h"
#include "buddy.h"
#include "heap.h"

/* --- Validity checker ------------------------------------------------------
 * Walks every chunk's free lists: each block must be inside its chunk,
 * carry the mark of its list's order, have its page-map entry say so, a
 * consistent prev link and natural alignment; the chunk's bits in the order
 * maps must say whether its lists are empty; the list lengths must add up
 * to stats.free_blocks[]; its absent pages to its count of them (23), and
 * all chunks' to stats.absent_pages (24). Then every central list: each
 * span's first entry must name its class, its free objects must carry
 * span marks and number objs - used. Finally the page invariant of
 * buddy.bpf.c must hold (10), the pages mapped must be the chunks' less
 * their absent ones (25: arena.bpf.c's ledger), and the parked list its
 * counters' bound (check_parked_locked(), heap.bpf.c). First of all the
 * root's tables must be whole (26).
 * One chunk or one class per hold of the heap lock (a waiter in IRQ
 * context waits for one at most); the totals are compared only if no one
 * else held the lock in between (lock_gen), which is so at rest.
 * Returns 0 or a distinct positive code.
 */

/* Chunk s's absent pages: as many page-map entries AA_PM_ABSENT as its
 * metadata counts (a partial chunk, grow.bpf.c's grow_partial()); adds
 * them to *absent. Returns 0 or 23.
 * REQUIRES: heap lock held, slot s a chunk. */
static int check_absent_locked(__u32 s, __u64 *absent)
{
	aa_meta_t *meta = meta_of(s);
	__u32 n = AA_ZERO;
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES)
		n += meta->pm[p & (AA_CHUNK_PAGES - 1)] == AA_PM(AA_PM_ABSENT, 0);
	*absent += n;
	return n == meta->absent ? 0 : 23;
}

/* Chunk s's free lists; adds their lengths to cnt[order], its absent
 * pages to *absent.
 * REQUIRES: heap lock held. */
static int check_chunk_locked(__u32 s, __u64 *cnt, __u64 *absent)
{
	__u32 off, prev;
	aa_free_hdr_t *hdr;
	bool listed;
	int k;

	s &= AA_MAX_SLOTS - 1;
	listed = slot_at(s)->state == AA_SLOT_CHUNK;
	if (listed && check_absent_locked(s, absent))
		return 23;
	aa_for(k, 0, AA_NR_ORDERS) {
		off = listed ? meta_of(s)->free_head[k] : AA_NIL;
		if (((aa__root.order_map[k][(s >> 6) & 63] >> (s & 63)) & 1) != (off != AA_NIL))
			return 18;
		if (!!(aa__root.order_summary[k] & (1ULL << ((s >> 6) & 63))) !=
		    !!aa__root.order_map[k][(s >> 6) & 63])
			return 19;
		prev = AA_NIL;
		aa_repeat(AA_MAX_LOOPS) {
			if (off == AA_NIL)
				break;
			if ((off >> AA_CHUNK_SHIFT) != s)
				return 3;
			hdr = aa_addr(off);
			if (hdr->mark != aa_custody((__u64)hdr, AA_TAG_BUDDY + k))
				return 4;
			if (hdr->prev != prev)
				return 5;
			if (*pm_at(off) != AA_PM(AA_PM_FREE_HEAD, k))
				return 6;
			if (off & ((AA_PAGE_SIZE << k) - 1))
				return 7;
			if (k < AA_NR_ORDERS)
				cnt[k]++;
			prev = off;
			off = hdr->next;
		}
		if (off != AA_NIL)	/* longer than the loop bound */
			return 8;
	}
	return 0;
}

/* Up to AA_CHECK_SPANS spans of class cls's central list, from *off (the
 * span after *prev); moves both on. REQUIRES: heap lock held. */
#define AA_CHECK_SPANS	1

static int check_spans_locked(__u32 cls, __u32 *off, __u32 *prev)
{
	__u32 o, nfree, n;
	aa_span_obj_t *obj;
	aa_span_t *sp;

	cls = aa_cls_idx(cls);
	aa_for(n, 0, AA_CHECK_SPANS) {
		if (*off == AA_NIL)
			break;
		if ((*off >> AA_CHUNK_SHIFT) >= AA_MAX_SLOTS ||
		    slot_at(*off >> AA_CHUNK_SHIFT)->state != AA_SLOT_CHUNK)
			return 11;
		if (*pm_at(*off) != AA_PM_SPAN_ENTRY(cls, 0))
			return 12;
		sp = span_at(*off);
		if (sp->cls != cls || !sp->listed || sp->prev != *prev)
			return 13;
		nfree = AA_ZERO;
		o = sp->free;
		aa_repeat(AA_MAX_LOOPS) {
			if (o == AA_NIL || nfree > AA_CHUNK_PAGES)
				break;
			obj = aa_addr(o);
			if (obj->mark != aa_custody((__u64)obj, AA_TAG_SPAN))
				return 14;
			nfree++;
			o = obj->next;
		}
		if (nfree + sp->used != aa_class(cls)->objs)
			return 15;
		*prev = *off;
		*off = sp->next;
	}
	return 0;
}

/* The root's tables (arena.bpf.c): a slot table on a page of the arena;
 * the transfer caches wherever the heap has CPU caches; table_pages their
 * pages (the page ledger). Returns 0 or 26. They are installed before the
 * heap is first published, and never change after. */
static __always_inline int check_tables(void)
{
	__u64 rel = aa__root.slots - aa__root.arena_base;
	__u32 pages;

	if (!aa__root.slots || (rel & (AA_PAGE_SIZE - 1)) || rel >= aa__root.arena_size)
		return 26;
	if ((!(aa__root.flags & AA_F_NO_CACHES) && !aa__root.tc_off) ||
	    (aa__root.tc_off && aa__root.tc_classes != AA_NR_CLASSES))
		return 26;
	pages = AA_SLOT_TABLE_PAGES(aa__root.nr_slots) + (aa__root.tc_off ? AA_TC_TABLE_PAGES : 0);
	return pages == aa__root.table_pages ? 0 : 26;
}

/* Hold the heap lock for the next round of aa__buddy_check(). *gen: the
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

int aa__buddy_check(void)
{
	__u64 cnt[AA_NR_ORDERS] = {}, free_pages = 0, heap_pages, absent = 0;
	__u32 nr = aa__root.nr_slots, pages = 0, gen = 0, holds = AA_ZERO, off, prev, mine = 0;
	bool started;
	int s, cls, k, ret = 0;

	if (!aa_heap_ready())
		return 1;
	ret = check_tables();
	if (ret)
		return ret;
	aa_for(s, 0, nr < AA_MAX_SLOTS ? nr : AA_MAX_SLOTS) {
		if (check_lock(&gen, &holds))
			return 2;
		ret = check_chunk_locked(s, cnt, &absent);
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
			ret = check_spans_locked(cls, &off, &prev);
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
		ret = check_parked_locked();
	aa_unlock();
	return ret;
}
