// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * buddy_chunks.bpf.c - tier 3, continued: chunks in and out of the buddy,
 * and the heap's validity checker.
 *
 * Role:       the buddy's side of arena.bpf.c's grow, trim and teardown
 *             (aa_buddy_add_chunk, aa_buddy_take_free_chunk,
 *             aa_buddy_release_slot), and aa_buddy_check() for aa_check.
 * From below: nothing; arena.bpf.c maps and frees the pages, with no lock.
 * Locking:    each function takes the heap lock itself (buddy.bpf.c's
 *             rules); the slot table changes only under it.
 * Compiled right after buddy.bpf.c (bpf/arena_alloc.bpf.c): it uses the
 * buddy's static helpers.
 */
#include "internal.h"

/* --- Chunk exchange with arena.bpf.c ------------------------------------- */

/* Register a freshly mapped, zeroed chunk at slot with its metadata.
 * Called by the sleepable grow path after the pages exist. */
int aa_buddy_add_chunk(__u32 slot, __u32 meta_off)
{
	int err;

	if (slot >= AA_MAX_SLOTS || slot >= aa_root.nr_slots)
		return -EINVAL;
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	if (!aa_heap_ready()) {		/* torn down meanwhile */
		aa_unlock();
		return -ENODEV;
	}
	if (aa_root.slots[slot].state != AA_SLOT_UNMAPPED) {
		aa_unlock();
		return -EEXIST;
	}
	aa_root.slots[slot].state = AA_SLOT_CHUNK;
	aa_root.slots[slot].meta_off = meta_off;
	free_push(AA_MAX_ORDER, slot << AA_CHUNK_SHIFT);
	aa_root.stats.nr_chunks++;
	aa_root.stats.nr_grows++;
	aa_root.stats.pages_mapped += AA_CHUNK_PAGES + AA_META_PAGES;
	if (aa_root.stats.pages_mapped > aa_root.stats.peak_pages_mapped)
		aa_root.stats.peak_pages_mapped = aa_root.stats.pages_mapped;
	aa_unlock();
	return 0;
}

/* Take one entirely free chunk out of the heap, skipping the first `keep`
 * free chunks (keep = 0: any). Marks the slot RELEASING: its meta_off stays
 * valid and no grower maps it until the caller, having returned the
 * pages, calls aa_buddy_release_slot(). Returns the slot, -ENOENT when
 * there is none, or -errno. */
int aa_buddy_take_free_chunk(__u32 keep)
{
	__u32 nr_slots = aa_root.nr_slots, seen = AA_ZERO;
	int s, err, ret = -ENOENT;

	err = aa_lock();
	if (err)
		return aa_errno(-err);
	bpf_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		if (!chunk_is_free(s))
			continue;
		if (seen++ < keep)
			continue;
		free_unlink(AA_MAX_ORDER, s << AA_CHUNK_SHIFT);
		aa_root.slots[s].state = AA_SLOT_RELEASING;
		aa_root.stats.nr_chunks--;
		aa_root.stats.nr_trims++;
		aa_root.stats.pages_mapped -= AA_CHUNK_PAGES + AA_META_PAGES;
		ret = s;
		break;
	}
	aa_unlock();
	return ret;
}

/* The pages of a RELEASING slot are back with the kernel: the slot may be
 * mapped again. Returns 0, or -EINVAL for a slot in another state. */
int aa_buddy_release_slot(__u32 slot)
{
	int err;

	if (slot >= AA_MAX_SLOTS)
		return -EINVAL;
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	err = aa_root.slots[slot].state == AA_SLOT_RELEASING ? 0 : -EINVAL;
	if (!err)
		aa_root.slots[slot].state = AA_SLOT_UNMAPPED;
	aa_unlock();
	return err;
}

/* --- Validity checker ------------------------------------------------------
 * Walks every free list: each block must be inside a chunk, carry the mark
 * of its list's order, have its free bit set and a consistent prev link;
 * the list lengths must equal stats.free_blocks[] and the byte invariant in
 * the file comment must hold. Returns 0 or a distinct positive code.
 */
int aa_buddy_check(void)
{
	__u64 free_bytes = 0, buddy_bytes, cnt;
	__u32 k, off, prev, slot;
	aa_free_hdr_t *hdr;
	int ret = 0;

	if (!aa_heap_ready())
		return 1;
	if (aa_lock())
		return 2;
	for (k = 0; k <= AA_MAX_ORDER; k++) {
		cnt = AA_ZERO;
		prev = AA_NIL;
		off = aa_root.free_head[k];
		bpf_repeat(AA_MAX_LOOPS) {
			if (off == AA_NIL)
				break;
			slot = off >> AA_CHUNK_SHIFT;
			if (slot >= AA_MAX_SLOTS || aa_root.slots[slot].state != AA_SLOT_CHUNK) {
				ret = 3;
				goto out;
			}
			hdr = aa_addr(off);
			if (hdr->mark != aa_custody((__u64)hdr, AA_TAG_BUDDY + k)) {
				ret = 4;
				goto out;
			}
			if (hdr->prev != prev) {
				ret = 5;
				goto out;
			}
			if (!bit_test(meta_of(slot), free_bit(off & (AA_CHUNK_SIZE - 1)))) {
				ret = 6;
				goto out;
			}
			if (off & ((AA_MIN_SIZE << k) - 1)) {
				ret = 7;
				goto out;
			}
			cnt++;
			prev = off;
			off = hdr->next;
		}
		if (off != AA_NIL) {	/* longer than the loop bound */
			ret = 8;
			goto out;
		}
		if (cnt != aa_root.stats.free_blocks[k]) {
			ret = 9;
			goto out;
		}
		free_bytes += cnt * order_bytes(k);
	}
	buddy_bytes = (aa_root.stats.nr_chunks - aa_root.stats.large_chunks) << AA_CHUNK_SHIFT;
	if (free_bytes + aa_root.stats.bytes_in_use - aa_root.large_bytes_in_use != buddy_bytes)
		ret = 10;
out:
	aa_unlock();
	return ret;
}
