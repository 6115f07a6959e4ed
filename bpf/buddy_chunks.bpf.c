// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * buddy_chunks.bpf.c - tier 4, continued: chunks in and out of the page
 * heap.
 *
 * Role:       the page heap's side of arena.bpf.c's grow, trim and teardown
 *             (aa__buddy_add_chunk, aa__buddy_take_free_chunk,
 *             aa__buddy_release_slot).
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
 *   aa__fault_trim_delay_ns:    return_chunk() (arena.bpf.c) spins this long
 *                              between a chunk's pages and its metadata pages,
 *                              the window in which a grower could map the slot;
 *   aa__fault_publish_delay_ns: aa__buddy_add_chunk() spins this long, heap lock
 *                              held, after the chunk's metadata is set up and
 *                              before the slot word publishes it.
 */
__u64 aa__fault_trim_delay_ns;
__u64 aa__fault_publish_delay_ns;

static __always_inline void fault_delay(__u64 ns)
{
	__u64 t0 = bpf_ktime_get_ns();

	aa_repeat(AA_MAX_LOOPS)
		if (bpf_ktime_get_ns() - t0 >= ns)
			break;
}

/* --- Chunk exchange with arena.bpf.c ------------------------------------- */

/* Register a freshly mapped, zeroed chunk at slot with its metadata.
 * Called by grow after the pages exist; unpublished: by init's first
 * grow, before it publishes the heap. Frame 3 of internal.h's call
 * frames: it calls only aa_lock_wait().
 * Returns 0, or -errno with nothing changed (-EEXIST: the slot is taken). */
int aa__buddy_add_chunk(__u32 slot, __u32 meta_off, __u32 unpublished)
{
	__u32 k;
	int err;

	if (slot >= AA_MAX_SLOTS || slot >= aa__root.nr_slots)
		return -EINVAL;
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	if (!unpublished && !aa_heap_ready()) {		/* torn down meanwhile */
		aa_unlock();
		return -ENODEV;
	}
	if (aa__root.slots[slot].state != AA_SLOT_UNMAPPED) {
		aa_unlock();
		return -EEXIST;
	}
	/* fresh metadata pages are zero: every page-map entry FREE */
	for (k = 0; k < AA_NR_ORDERS; k++)
		((aa_meta_t *)aa_addr(meta_off))->free_head[k] = AA_NIL;
	if (aa__fault_publish_delay_ns)
		fault_delay(aa__fault_publish_delay_ns);
	/* one store: lock-free readers see UNMAPPED or this chunk (AA_SLOT_WORD) */
	__aa_barrier();
	*(volatile __u64 __arena *)&aa__root.slots[slot] = AA_SLOT_WORD(AA_SLOT_CHUNK, meta_off);
	free_push(AA_MAX_ORDER, slot << AA_CHUNK_SHIFT);
	aa__root.stats.nr_chunks++;
	aa__root.stats.nr_grows++;
	aa__root.stats.pages_mapped += AA_CHUNK_PAGES + aa_meta_pages();
	if (aa__root.stats.pages_mapped > aa__root.stats.peak_pages_mapped)
		aa__root.stats.peak_pages_mapped = aa__root.stats.pages_mapped;
	aa_unlock();
	return 0;
}

/* The slot of the entirely free chunk that comes after `keep` others, or
 * -ENOENT: the set bit of order_map[AA_MAX_ORDER] after `keep` others (a
 * chunk's order-AA_MAX_ORDER list holds a block exactly when the chunk is
 * entirely free, buddy.bpf.c). At most 64 words and 63 bits.
 * REQUIRES: heap lock held. */
static int free_chunk_find_locked(__u32 keep)
{
	__u32 n;
	__u64 w;
	int i, b;

	aa_for(i, 0, AA_MAX_SLOTS / 64) {
		w = aa__root.order_map[AA_MAX_ORDER][i];
		n = aa_popcount32(w) + aa_popcount32(w >> 32);
		if (keep >= n) {
			keep -= n;
			continue;
		}
		aa_for(b, 0, keep)	/* keep < n <= 64 */
			w &= w - 1;
		return (i << 6) + aa_ctz64(w);
	}
	return -ENOENT;
}

/* Take one entirely free chunk out of the heap, skipping the first `keep`
 * free chunks (keep = 0: any). Marks the slot RELEASING: its meta_off stays
 * valid and no grower maps it until the caller, having returned the
 * pages, calls aa__buddy_release_slot(). Returns the slot, -ENOENT when
 * there is none, or -errno. */
int aa__buddy_take_free_chunk(__u32 keep)
{
	int s, err;

	err = aa_lock();
	if (err)
		return aa_errno(-err);
	s = free_chunk_find_locked(keep);
	if (s >= 0) {
		s &= AA_MAX_SLOTS - 1;
		free_unlink(AA_MAX_ORDER, s << AA_CHUNK_SHIFT);
		aa__root.slots[s].state = AA_SLOT_RELEASING;
		aa__root.stats.nr_chunks--;
		aa__root.stats.nr_trims++;
		aa__root.stats.pages_mapped -= AA_CHUNK_PAGES + aa_meta_pages();
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
int aa__buddy_release_slot(__u32 slot)
{
	if (slot >= AA_MAX_SLOTS)
		return -EINVAL;
	if (__sync_val_compare_and_swap(&aa__root.slots[slot].state, AA_SLOT_RELEASING,
					AA_SLOT_UNMAPPED) != AA_SLOT_RELEASING)
		return -EINVAL;
	return 0;
}
