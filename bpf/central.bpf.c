// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * central.bpf.c - tier 3: spans and the central free list of each size
 * class (tcmalloc's CentralFreeList).
 *
 * Role:       hand out and take back objects of a class, in batches for
 *             the cache tiers or one at a time; a span is a run of pages
 *             (aa_classes[c].pages) carved into aa_classes[c].objs objects
 *             of one class.
 * From below: spans from the page heap (run_alloc_locked in buddy.bpf.c);
 *             an entirely free span goes back (run_free_locked), but the
 *             last listed span of a class stays until drain or trim
 *             (central_release_empty_locked), so a class that allocates
 *             and frees one object at a time does not carve a span per
 *             call.
 *             Fault injection (struct aa_fault, spans_every): every Nth
 *             request for a new span or page run fails as if the page heap
 *             were empty (span_new_locked(), page_run_alloc_locked(),
 *             large_alloc_locked()), before anything changes.
 * To above:   static helpers for heap.bpf.c, which takes the heap lock:
 *             central_pop_locked / central_push_locked; central_reset()
 *             for lifecycle.bpf.c.
 * Locking:    everything here REQUIRES the heap lock (the central lists
 *             share it with the page heap).
 *
 * Invariants (under the lock), per span s of class c:
 *   s.used + (length of s.free) == aa_classes[c].objs;
 *   s.listed == (s.free != AA_NIL) or s is the kept empty span, and the
 *     listed spans are exactly the list from central[c].head;
 *   every object on s.free has word 0 = the AA_TAG_SPAN mark, word 1 =
 *     next (and fresh), and in debug mode its last word is the poison;
 *     every object out of the span has another word 0 (the user's, or a
 *     FREED/CACHED mark in the cache tiers);
 *   the page-map entries of s's pages are SPAN|c|i, written after the
 *     marks (aa_claim() relies on that order).
 */
#include "internal.h"
#include "central.h"
#include "buddy.h"

static __always_inline struct aa_central __arena *central_of(__u32 cls)
{
	return &aa__root.central[aa_cls_idx(cls)];
}

static __always_inline void central_link(struct aa_central __arena *c, __u32 off, aa_span_t *sp)
{
	__u32 head = c->head;

	sp->next = head;
	sp->prev = AA_NIL;
	if (head != AA_NIL)
		span_at(head)->prev = off;
	c->head = off;
	sp->listed = 1;
}

static __always_inline void central_unlink(struct aa_central __arena *c, aa_span_t *sp)
{
	__u32 next = sp->next, prev = sp->prev;

	if (prev != AA_NIL)
		span_at(prev)->next = next;
	else
		c->head = next;
	if (next != AA_NIL)
		span_at(next)->prev = prev;
	sp->listed = 0;
}

/* Carve a new span of class cls and list it. Returns the arena offset of
 * its first page, or AA_NIL when the page heap has no room (or fault
 * injection said so: nothing changed but the fault counters).
 * REQUIRES: heap lock held; cls < AA_NR_CLASSES. */
static __always_inline __u32 span_new_locked(__u32 cls)
{
	const struct aa_class_info *ci = aa_class(cls);
	__u32 size = ci->size, objs = ci->objs, pages = ci->pages, off, o;
	struct aa_central __arena *c = central_of(cls);
	bool tail = aa__root.carve_tail != 0;
	aa_span_obj_t *obj;
	aa_span_t *sp;
	int i;

	off = aa_fault_span() ? AA_NIL : run_alloc_locked(pages);
	if (off == AA_NIL)
		return AA_NIL;
	/* free list in address order: refills hand out neighbours. At most
	 * AA_SPAN_OBJS_MAX objects (256; 1024 with 16-KiB pages), 3 stores each, and a fourth where
	 * the mode asks for a tail word (aa_root.carve_tail: debug mode's
	 * poison, which its claim and underflow checks read) */
	aa_for(i, 0, objs) {
		o = off + i * size;
		obj = aa_addr(o);
		obj->mark = aa_custody((__u64)obj, AA_TAG_SPAN);
		obj->next = i + 1 < objs ? o + size : AA_NIL;
		obj->fresh = AA_SPAN_FRESH;
		if (tail && size > sizeof(*obj))	/* 16 B: words 0 and 1 only */
			*(__u64 __arena *)aa_addr(o + size - 8) = aa__root.carve_tail;
	}
	sp = span_at(off);
	sp->free = off;
	sp->used = 0;
	sp->cls = cls;
	aa_store_fence();	/* marks before the entries: see aa_claim() */
	aa_for(i, 0, pages)
		*pm_at(off + (i << AA_PAGE_SHIFT)) = AA_PM_SPAN_ENTRY(cls, i);
	central_link(c, off, sp);
	aa__root.stats.span_pages += pages;
	c->spans++;
	c->span_allocs++;
	return off;
}

/* Take the entirely free span at off out of its class. Returns its pages,
 * which the caller gives back to the page heap (run_free_locked(off, ...)).
 * REQUIRES: heap lock held; sp->used == 0. */
static __always_inline __u32 span_release_locked(__u32 cls, aa_span_t *sp)
{
	struct aa_central __arena *c = central_of(cls);
	__u32 pages = aa_class(cls)->pages;

	if (sp->listed)
		central_unlink(c, sp);
	sp->free = AA_NIL;
	aa__root.stats.span_pages -= pages;
	c->spans--;
	c->span_frees++;
	return pages;
}

/* Take one object of class cls and set its word 0 to the CACHED mark &
 * mark_mask (~0: for a cache refill; 0: zero, for a user). Returns its
 * arena offset or AA_NIL (no memory; -EUCLEAN counted if the list was
 * inconsistent).
 * REQUIRES: heap lock held; cls < AA_NR_CLASSES. */
static __always_inline __u32 central_pop_locked(__u32 cls, __u64 mark_mask)
{
	struct aa_central __arena *c = central_of(cls);
	__u32 off = c->head, o;
	aa_span_obj_t *obj;
	aa_span_t *sp;

	if (off == AA_NIL)
		off = span_new_locked(cls);
	if (off == AA_NIL)
		return AA_NIL;
	sp = span_at(off);
	o = sp->free;
	if (o == AA_NIL) {		/* listed but full: cannot be */
		central_unlink(c, sp);
		aa_fail(AA_ERR_CORRUPT);
		return AA_NIL;
	}
	obj = aa_addr(o);
	sp->free = obj->next;
	sp->used++;
	if (sp->free == AA_NIL)
		central_unlink(c, sp);
	c->objs_out++;
	/* the only word a racing free may touch; a mark until here */
	obj->mark = aa_custody((__u64)obj, AA_TAG_CACHED) & mark_mask;
	return o;
}

/* Put the claimed object at arena offset o (word 0 a FREED or CACHED mark)
 * back into its span, whose first page is at span_off. An entirely free
 * span leaves its class unless it is the class's only listed span: then
 * returns its pages, which the caller gives back to the page heap
 * (run_free_locked(span_off, pages)); else 0.
 * REQUIRES: heap lock held; o is an object of class cls in that span. */
static __always_inline __u32 central_push_locked(__u32 o, __u32 cls, __u32 span_off)
{
	struct aa_central __arena *c = central_of(cls);
	aa_span_t *sp = span_at(span_off);
	aa_span_obj_t *obj = aa_addr(o);

	obj->next = sp->free;
	obj->mark = aa_custody((__u64)obj, AA_TAG_SPAN);
	sp->free = o;
	sp->used--;
	c->objs_out--;
	if (!sp->listed)
		central_link(c, span_off, sp);
	if (sp->used == 0 && (c->head != span_off || sp->next != AA_NIL))
		return span_release_locked(cls, sp);
	return 0;
}

/* Release the empty span of class cls that central_push_locked() kept (at
 * most one, but not necessarily at the head of its list). Returns how
 * many. REQUIRES: heap lock held. */
static __u32 central_release_empty_locked(__u32 cls)
{
	__u32 n = AA_ZERO, off, next;
	aa_span_t *sp;

	cls = aa_cls_idx(cls);
	off = aa__root.central[cls].head;
	aa_repeat(AA_MAX_LOOPS) {
		if (off == AA_NIL)
			break;
		sp = span_at(off);
		next = sp->next;
		if (!sp->used) {
			run_free_locked(off, span_release_locked(cls, sp));
			n++;
		}
		off = next;
	}
	return n;
}

/* --- Reset (lifecycle.bpf.c) ----------------------------------------------- */

/* Empty central lists, and the class table for tools that read the root.
 * REQUIRES: heap not published (init, or teardown after unpublishing). */
static void central_reset(void)
{
	int c;

	aa_for(c, 0, AA_NR_CLASSES) {
		aa__root.central[c].head = AA_NIL;
		aa__root.central[c].spans = 0;
		aa__root.central[c].objs_out = 0;
		aa__root.class_size[c] = aa_class(c)->size;
		aa__root.class_pages[c] = aa_class(c)->pages;
	}
}

/* --- Checks (check.bpf.c's aa__heap_check()) -------------------------------- */

/* Up to AA_CHECK_SPANS spans of class cls's central list, from *off (the
 * span after *prev); moves both on. REQUIRES: heap lock held. */
#define AA_CHECK_SPANS	1

static int central_check_spans_locked(__u32 cls, __u32 *off, __u32 *prev)
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
			if (o == AA_NIL || nfree > AA_SPAN_OBJS_MAX)
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
