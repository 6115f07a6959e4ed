// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lookup.bpf.c - what a pointer is and who owns it, without the heap lock:
 * the lookup of a pointer through its page-map entry (and its slot, for
 * whole chunks), and the claim that makes a free the sole owner of a live
 * block.
 *
 * Role:       lookup() names a pointer's allocation (a class, a page run,
 *             whole chunks) or says why it is none; aa_claim() claims a
 *             live block for a free (internal.h's model, the claim; the
 *             lock-free core is __aa_claim() of aa_hit.h, which the inline
 *             free runs too); lookup_transit() and lookup_check_reserve()
 *             judge the objects a cache tier holds.
 * From below: the slots and page map of buddy.bpf.c (slot_at(), pm_at());
 *             the size classes.
 * To above:   heap.bpf.c (its frees and its judgement of a pointer),
 *             debug.bpf.c (reports), the cache tiers' checks.
 * Locking:    none of its own: a lookup without the heap lock is a
 *             snapshot, exact for a live allocation; a claim is one
 *             compare-and-swap of word 0 and a re-check.
 */
#include "internal.h"
#include "lookup.h"
#include "buddy.h"

/* --- Pointer lookup ------------------------------------------------------ */

/* Where is ptr? Sets *off (its arena offset) and returns the state of its
 * slot, or -AA_ERR_FOREIGN / -AA_ERR_MISALIGNED. Without the heap lock the
 * state is a snapshot. */
static __always_inline int locate(__u64 ptr, __u32 *off)
{
	__u64 rel = ptr - aa__root.arena_base;

	if (ptr < aa__root.arena_base || rel >= aa__root.arena_size)
		return -AA_ERR_FOREIGN;
	if (rel & (AA_MIN_ALIGN - 1))
		return -AA_ERR_MISALIGNED;
	if ((rel >> AA_CHUNK_SHIFT) >= AA_MAX_SLOTS)
		return -AA_ERR_FOREIGN;
	*off = rel;
	return slot_at(rel >> AA_CHUNK_SHIFT)->state;
}

/* The arena offset of the first page of the span whose page-map entry e
 * covers arena offset off. */
static __always_inline __u32 span_start(__u32 off, __u32 e)
{
	return (off & ~(AA_PAGE_SIZE - 1)) - (AA_PM_SPAN_INDEX(e) << AA_PAGE_SHIFT);
}

/* What is ptr? Sets *off and *pmw (its page-map entry); returns its class
 * (a span object), AA_KIND_RUN, AA_KIND_LARGE, or -AA_ERR_*. Under the
 * heap lock, or a snapshot (exact for a live allocation). Inlined into
 * free_claimed_locked() (a leaf), called as lookup() elsewhere. */
static __always_inline int lookup_inline(__u64 ptr, __u32 *off, __u32 *pmw)
{
	int state = locate(ptr, off);
	__u32 e;

	if (state < 0)
		return state;
	if (state == AA_SLOT_LARGE_HEAD)
		return (*off & (AA_CHUNK_SIZE - 1)) ? -AA_ERR_INTERIOR : AA_KIND_LARGE;
	if (state == AA_SLOT_LARGE_TAIL)
		return -AA_ERR_INTERIOR;
	if (state != AA_SLOT_CHUNK)
		return -AA_ERR_FOREIGN;
	e = *pm_at(*off);
	*pmw = e;
	switch (AA_PM_KIND(e)) {
	case AA_PM_SPAN:
		return __aa_span_object(*off, e);
	case AA_PM_RUN_HEAD:
		return (*off & (AA_PAGE_SIZE - 1)) ? -AA_ERR_INTERIOR : AA_KIND_RUN;
	case AA_PM_RUN_TAIL:
		return -AA_ERR_INTERIOR;
	case AA_PM_FREE:
	case AA_PM_FREE_HEAD:
		return -AA_ERR_DOUBLE_FREE;
	default:
		return -AA_ERR_CORRUPT;
	}
}

static int lookup(__u64 ptr, __u32 *off, __u32 *pmw)
{
	return lookup_inline(ptr, off, pmw);
}

/* Is p a free object of class cls that a cache tier holds: an object of
 * the class whose word 0 is a transit mark (FREED from a free, CACHED
 * from a refill)? A snapshot, no lock: exact while no one moves p. */
static __always_inline bool lookup_transit(__u64 p, __u32 cls)
{
	__u32 off = 0, pmw = 0;

	return lookup(p, &off, &pmw) == (int)cls && aa_is_transit(p, *(volatile __u64 __arena *)p);
}

/* Reserve r of class cls (internal.h's model, "Reserves") against its
 * invariant: every slot that holds this heap's word holds a free object of
 * class cls (lookup_transit()). Lock-free, while takers and putters
 * run: a slot whose word changed between the two reads of it is not
 * judged. Returns 0, or 28. */
static __always_inline int lookup_check_reserve(struct aa_reserve __arena *r, __u32 cls)
{
	__u64 key = aa__root.cache_key, w;
	int i;

	aa_for(i, 0, AA_RESERVE_SLOTS) {
		w = READ_ONCE_ARENA(r->slot[i & (AA_RESERVE_SLOTS - 1)]);
		if (!AA_RESERVE_OF(w, key) ||
		    lookup_transit(aa__root.arena_base + (__u32)w, cls))
			continue;
		if (READ_ONCE_ARENA(r->slot[i & (AA_RESERVE_SLOTS - 1)]) == w)
			return 28;
	}
	return 0;
}

/* --- Claims ----------------------------------------------------------------
 * aa_claim() makes a free the sole owner of a live block, lock-free: the
 * claim in internal.h's model, and __aa_claim() (aa_hit.h). What
 * says "still allocated": the page-map entry for
 * a span object or a run, the slot state for whole chunks.
 */

/* Does the object of class `kind` at ptr end with tail (not 0)? A caller
 * whose objects end with a word of their own while they are live and with
 * tail while a tier holds them (debug mode: a trailer, and its poison)
 * asks the claim to tell the two apart, as word 0 cannot where a write
 * after free replaced the FREED mark. */
static __always_inline bool tail_says_free(__u64 ptr, int kind, __u64 tail)
{
	return tail && kind < AA_NR_CLASSES &&
	       *(volatile __u64 __arena *)(ptr + aa_class(kind)->size - 8) == tail;
}

/* Claim the allocation of kind `kind` at ptr (arena offset off, page-map
 * entry pmw) for a free. Returns 0 with word 0 = the FREED mark (the caller
 * now owns the block), or -AA_ERR_DOUBLE_FREE with nothing changed. Any
 * context, no lock. With a tail (not 0), a claimed object that is free all
 * the same (tail_says_free()) is given back: its owner is the tier that
 * holds it, and this free a double free. Checked after the claim, when no
 * other free can write the tail under us; an allocation that popped it but
 * has not written its own last word yet gets its word 0 back by the undo. */
static __always_inline int aa_claim(__u64 ptr, __u32 off, int kind, __u32 pmw, __u64 tail)
{
	__u32 slot = off >> AA_CHUNK_SHIFT;
	__u32 __arena *check;
	__u64 v = 0;

	if (slot >= AA_MAX_SLOTS)
		return -AA_ERR_DOUBLE_FREE;
	if (kind == AA_KIND_LARGE) {
		if (off & (AA_CHUNK_SIZE - 1))
			return -AA_ERR_DOUBLE_FREE;
		check = &slot_at(slot)->state;
		pmw = AA_SLOT_LARGE_HEAD;
	} else {
		check = pm_at(off);
	}
	if (!__aa_claim_word(ptr, aa__root.cache_key, &v) ||
	    __aa_claim(&aa_fast, ptr, aa__root.cache_key, v, check, pmw, aa_fast.defer))
		return -AA_ERR_DOUBLE_FREE;
	if (tail_says_free(ptr, kind, tail)) {
		__sync_val_compare_and_swap((__u64 __arena *)ptr, aa_custody(ptr, AA_TAG_FREED), v);
		return -AA_ERR_DOUBLE_FREE;
	}
	return 0;
}
