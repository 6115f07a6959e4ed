// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * buddy_chunks.bpf.c - tier 4, continued: chunks in and out of the page
 * heap, and the heap's validity checker.
 *
 * Role:       the page heap's side of arena.bpf.c's grow, trim and teardown
 *             (aa_buddy_add_chunk, aa_buddy_take_free_chunk,
 *             aa_buddy_release_slot), and aa_buddy_check() for aa_check.
 * From below: nothing; arena.bpf.c maps and frees the pages, with no lock.
 * Locking:    each function takes the heap lock itself (buddy.bpf.c's
 *             rules); the slot table changes only under it.
 * Compiled after buddy.bpf.c and central.bpf.c (bpf/arena_alloc.bpf.c): it
 * uses their static helpers.
 */
#include "internal.h"

/* --- Test-only delays ---------------------------------------------------------
 * Fault injection for the race tests (test_concurrency.c, test_fault.c set
 * them through their skeletons): 0 (no delay) unless a test sets one; only
 * sleepable grow, trim and teardown read them.
 *   aa_fault_trim_delay_ns:    return_chunk() (arena.bpf.c) spins this long
 *                              between a chunk's pages and its metadata pages,
 *                              the window in which a grower could map the slot;
 *   aa_fault_publish_delay_ns: aa_buddy_add_chunk() spins this long, heap lock
 *                              held, after the chunk's metadata is set up and
 *                              before the slot word publishes it.
 */
__u64 aa_fault_trim_delay_ns;
__u64 aa_fault_publish_delay_ns;

static void fault_delay(__u64 ns)
{
	__u64 t0 = bpf_ktime_get_ns();

	aa_repeat(AA_MAX_LOOPS)
		if (bpf_ktime_get_ns() - t0 >= ns)
			break;
}

/* --- Chunk exchange with arena.bpf.c ------------------------------------- */

/* Register a freshly mapped, zeroed chunk at slot with its metadata.
 * Called by the sleepable grow path after the pages exist; unpublished:
 * by init's first grow, before it publishes the heap. */
int aa_buddy_add_chunk(__u32 slot, __u32 meta_off, __u32 unpublished)
{
	__u32 k;
	int err;

	if (slot >= AA_MAX_SLOTS || slot >= aa_root.nr_slots)
		return -EINVAL;
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	if (!unpublished && !aa_heap_ready()) {		/* torn down meanwhile */
		aa_unlock();
		return -ENODEV;
	}
	if (aa_root.slots[slot].state != AA_SLOT_UNMAPPED) {
		aa_unlock();
		return -EEXIST;
	}
	/* fresh metadata pages are zero: every page-map entry FREE */
	for (k = 0; k < AA_NR_ORDERS; k++)
		((aa_meta_t *)aa_addr(meta_off))->free_head[k] = AA_NIL;
	if (aa_fault_publish_delay_ns)
		fault_delay(aa_fault_publish_delay_ns);
	/* one store: lock-free readers see UNMAPPED or this chunk (AA_SLOT_WORD) */
	__aa_barrier();
	*(volatile __u64 __arena *)&aa_root.slots[slot] = AA_SLOT_WORD(AA_SLOT_CHUNK, meta_off);
	free_push(AA_MAX_ORDER, slot << AA_CHUNK_SHIFT);
	aa_root.stats.nr_chunks++;
	aa_root.stats.nr_grows++;
	aa_root.stats.pages_mapped += AA_CHUNK_PAGES + aa_meta_pages();
	if (aa_root.stats.pages_mapped > aa_root.stats.peak_pages_mapped)
		aa_root.stats.peak_pages_mapped = aa_root.stats.pages_mapped;
	aa_unlock();
	return 0;
}

/* The slot of the entirely free chunk that comes after `keep` others, or
 * -ENOENT. A scan of up to every slot: done before the heap lock (a
 * snapshot, checked again under it), as large_find(). */
static int free_chunk_find(__u32 keep)
{
	__u32 nr_slots = aa_root.nr_slots, seen = AA_ZERO;
	int s;

	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		if (chunk_is_free(s) && seen++ == keep)
			return s;
	}
	return -ENOENT;
}

/* Take one entirely free chunk out of the heap, skipping the first `keep`
 * free chunks (keep = 0: any). Marks the slot RELEASING: its meta_off stays
 * valid and no grower maps it until the caller, having returned the
 * pages, calls aa_buddy_release_slot(). Returns the slot, -ENOENT when
 * there is none, or -errno. Holds the lock for one chunk, unless the heap
 * changed since the scan (then it scans again, under the lock). */
int aa_buddy_take_free_chunk(__u32 keep)
{
	int s = free_chunk_find(keep), err;

	if (s < 0)
		return s;
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	if (!chunk_is_free(s & (AA_MAX_SLOTS - 1)))
		s = free_chunk_find(keep);
	if (s >= 0) {
		s &= AA_MAX_SLOTS - 1;
		free_unlink(AA_MAX_ORDER, s << AA_CHUNK_SHIFT);
		aa_root.slots[s].state = AA_SLOT_RELEASING;
		aa_root.stats.nr_chunks--;
		aa_root.stats.nr_trims++;
		aa_root.stats.pages_mapped -= AA_CHUNK_PAGES + aa_meta_pages();
	}
	aa_unlock();
	return s;
}

/* The pages of a RELEASING slot are back with the kernel: the slot may be
 * mapped again. Returns 0, or -EINVAL for a slot in another state.
 * Lock-free (one cmpxchg, a full barrier after the pages went back): a
 * RELEASING slot is its releaser's alone. Holders of the heap lock only
 * read that state (growers skip the slot, teardown refuses), and a
 * grower's UNMAPPED -> CHUNK under the lock needs UNMAPPED first; so
 * nothing can change it meanwhile, and the release cannot fail for want
 * of the lock (it used to take it: after 50 ms without it the slot stayed
 * RELEASING for good, never mapped again, every teardown -EBUSY). */
int aa_buddy_release_slot(__u32 slot)
{
	if (slot >= AA_MAX_SLOTS)
		return -EINVAL;
	if (__sync_val_compare_and_swap(&aa_root.slots[slot].state, AA_SLOT_RELEASING,
					AA_SLOT_UNMAPPED) != AA_SLOT_RELEASING)
		return -EINVAL;
	return 0;
}

/* --- Validity checker ------------------------------------------------------
 * Walks every chunk's free lists: each block must be inside its chunk,
 * carry the mark of its list's order, have its page-map entry say so, a
 * consistent prev link and natural alignment; the chunk's bits in the order
 * maps must say whether its lists are empty; the list lengths must add up
 * to stats.free_blocks[]. Then every central list: each span's first entry
 * must name its class, its free objects must carry span marks and number
 * objs - used. Finally the page invariant of buddy.bpf.c must hold.
 * One chunk or one class per hold of the heap lock (a waiter in IRQ
 * context waits for one at most); the totals are compared only if no one
 * else held the lock in between (lock_gen), which is so at rest.
 * Returns 0 or a distinct positive code.
 */

/* Chunk s's free lists; adds their lengths to cnt[order].
 * REQUIRES: heap lock held. */
static int check_chunk_locked(__u32 s, __u64 *cnt)
{
	__u32 off, prev;
	aa_free_hdr_t *hdr;
	bool listed;
	int k;

	s &= AA_MAX_SLOTS - 1;
	listed = aa_root.slots[s].state == AA_SLOT_CHUNK;
	aa_for(k, 0, AA_NR_ORDERS) {
		off = listed ? meta_of(s)->free_head[k] : AA_NIL;
		if (((aa_root.order_map[k][(s >> 6) & 63] >> (s & 63)) & 1) != (off != AA_NIL))
			return 18;
		if (!!(aa_root.order_summary[k] & (1ULL << ((s >> 6) & 63))) !=
		    !!aa_root.order_map[k][(s >> 6) & 63])
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
		    aa_root.slots[*off >> AA_CHUNK_SHIFT].state != AA_SLOT_CHUNK)
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

/* Hold the heap lock for the next round of aa_buddy_check(). *gen: the
 * lock_gen of the first hold; *holds: holds so far. Returns 0 holding it. */
static __always_inline int check_lock(__u32 *gen, __u32 *holds)
{
	aa_lock_yield();
	if (aa_lock())
		return 2;
	if (!(*holds)++)
		*gen = aa_root.lock_gen;
	return 0;
}

int aa_buddy_check(void)
{
	__u64 cnt[AA_NR_ORDERS] = {}, free_pages = 0, heap_pages;
	__u32 nr = aa_root.nr_slots, pages = 0, gen = 0, holds = AA_ZERO, off, prev, mine = 0;
	bool started;
	int s, cls, k, ret = 0;

	if (!aa_heap_ready())
		return 1;
	aa_for(s, 0, nr < AA_MAX_SLOTS ? nr : AA_MAX_SLOTS) {
		if (check_lock(&gen, &holds))
			return 2;
		ret = check_chunk_locked(s, cnt);
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
				off = aa_root.central[cls].head;
				pages += aa_root.central[cls].spans * aa_class(cls)->pages;
			} else if (aa_root.lock_gen != mine) {
				off = AA_NIL;	/* held by another since: the list moved, */
			}			/* and the totals go unchecked */
			ret = check_spans_locked(cls, &off, &prev);
			mine = aa_root.lock_gen + 1;
			aa_unlock();
			if (ret)
				return ret;
			if (off == AA_NIL)
				break;
		}
	}
	if (aa_lock())
		return 2;
	if (aa_root.lock_gen == gen + holds) {	/* nobody else held it */
		for (k = 0; k < AA_NR_ORDERS; k++) {
			if (cnt[k] != aa_root.stats.free_blocks[k])
				ret = 9;
			free_pages += aa_root.stats.free_blocks[k] << k;
		}
		if (!ret && pages != aa_root.stats.span_pages)
			ret = 17;
		heap_pages = (aa_root.stats.nr_chunks - aa_root.stats.large_chunks) * AA_CHUNK_PAGES;
		if (!ret && free_pages + aa_root.stats.span_pages + aa_root.stats.run_pages != heap_pages)
			ret = 10;
	}
	aa_unlock();
	return ret;
}
