// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * buddy_chunks.bpf.c - tier 4, continued: chunks in and out of the page
 * heap.
 *
 * Role:       the page heap's side of grow and of trim and teardown
 *             (aa__buddy_add_chunk, aa__buddy_add_partial,
 *             aa__buddy_fill_page, aa__buddy_take_free_chunk,
 *             aa__buddy_release_slot), and a chunk's pages back to the
 *             kernel (return_chunk()).
 * From below: buddy.bpf.c's blocks; arena.bpf.c's pages_put().
 * To above:   grow.bpf.c (grow), self_grow.bpf.c (a chunk a program
 *             mapped), lifecycle.bpf.c (trim; teardown: the slots).
 * Locking:    each function takes the heap lock itself (buddy.bpf.c's
 *             rules); the slot table changes only under it. Pages go back
 *             with no lock held.
 */
#include "internal.h"
#include "lock.h"
#include "buddy_chunks.h"
#include "arena.h"
#include "buddy.h"

/* --- Test-only delays ---------------------------------------------------------
 * Fault injection for the race tests (test_concurrency.c, test_fault.c set
 * them through their skeletons): 0 (no delay) unless a test sets one; only
 * sleepable grow, trim and teardown read them.
 *   aa__fault_trim_delay_ns:    return_chunk() spins this long
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

/* --- Chunk exchange with grow.bpf.c and lifecycle.bpf.c ------------------ */

/* One present page of a partial chunk into the page heap, merged with its
 * free buddies (run_free_locked()). A frame of its own (a leaf): the
 * loop that calls it converges in a few passes, where the merge loop
 * inlined into it was walked page by page.
 * REQUIRES: heap lock held; the slot published. */
static void page_add_locked(__u32 off)
{
	run_free_locked(off, 1);
}

/* Is page p absent in the grower's map of a chunk it has not published
 * (aa_chunk_meta.absent_map)? */
static __always_inline bool absent_in(aa_meta_t *meta, __u32 p)
{
	return (meta->absent_map[(p / 64) & (AA_ABSENT_WORDS - 1)] >> (p & 63)) & 1;
}

/* Push the present pages of a partial chunk at slot into the page heap,
 * where they merge into the largest blocks they form, and mark the
 * absent ones (set by the grower in meta's absent_map) AA_PM_ABSENT in
 * the page map. Returns the pages pushed.
 * REQUIRES: heap lock held; the slot published with meta. */
static __always_inline __u32 push_present_locked(__u32 slot, aa_meta_t *meta)
{
	__u32 __arena *pm = chunk_pm(slot);
	__u32 pushed = AA_ZERO;
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES) {
		if (absent_in(meta, p)) {
			pm[p & (AA_CHUNK_PAGES - 1)] = AA_PM(AA_PM_ABSENT, 0);
			continue;
		}
		page_add_locked((slot << AA_CHUNK_SHIFT) + (p << AA_PAGE_SHIFT));
		pushed++;
	}
	return pushed;
}

/* Register a freshly mapped chunk at slot with its metadata (zeroed but for
 * a partial chunk's absent_map and its count, meta->absent).
 * Called by grow after the pages exist; unpublished: by init's first grow,
 * before it publishes the heap. Frame 3 of internal.h's call frames: it
 * calls only aa_lock_wait(). partial: a constant, pruned in the whole
 * chunks' function.
 * Returns 0, or -errno with nothing changed (-EEXIST: the slot is taken). */
static __always_inline int add_chunk(__u32 slot, __u32 meta_off, __u32 unpublished, bool partial)
{
	aa_meta_t *meta = aa_addr(meta_off);
	__u32 k, absent = 0;
	int err;

	if (slot >= AA_MAX_SLOTS || slot >= aa__root.nr_slots)
		return -EINVAL;
	if (partial) {
		absent = meta->absent;
		if (absent == 0 || absent >= AA_CHUNK_PAGES)
			return -EINVAL;
	}
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	if (!unpublished && !aa_heap_ready()) {		/* torn down meanwhile */
		aa_unlock();
		return -ENODEV;
	}
	if (slot_at(slot)->state != AA_SLOT_UNMAPPED) {
		aa_unlock();
		return -EEXIST;
	}
	/* the slot's page-map entries are 0 (aa_shared.h): they are ours
	 * from here on, and a whole chunk's stay FREE */
	for (k = 0; k < AA_NR_ORDERS; k++)
		meta->free_head[k] = AA_NIL;
	if (aa__fault_publish_delay_ns)
		fault_delay(aa__fault_publish_delay_ns);
	/* one store: lock-free readers see UNMAPPED or this chunk (AA_SLOT_WORD) */
	__aa_barrier();
	*(volatile __u64 __arena *)slot_at(slot) = AA_SLOT_WORD(AA_SLOT_CHUNK, meta_off);
	if (partial) {
		/* pushed + absent = AA_CHUNK_PAGES unless the grower's count
		 * was wrong: the heap goes by its map */
		absent = AA_CHUNK_PAGES - push_present_locked(slot, meta);
		meta->absent = absent;
		aa__root.stats.absent_pages += absent;
	} else {
		free_push(AA_MAX_ORDER, slot << AA_CHUNK_SHIFT);	/* entries FREE */
	}
	aa__root.stats.nr_chunks++;
	aa__root.stats.nr_grows++;
	aa__root.stats.pages_mapped += AA_CHUNK_PAGES - absent + aa_meta_pages();
	if (aa__root.stats.pages_mapped > aa__root.stats.peak_pages_mapped)
		aa__root.stats.peak_pages_mapped = aa__root.stats.pages_mapped;
	aa_unlock();
	return 0;
}

/* A whole chunk: all AA_CHUNK_PAGES pages of the slot mapped. */
int aa__buddy_add_chunk(__u32 slot, __u32 meta_off, __u32 unpublished)
{
	return add_chunk(slot, meta_off, unpublished, false);
}

/* A partial chunk: the pages of the slot that meta's absent_map does not
 * name are mapped (sleepable grow only). */
int aa__buddy_add_partial(__u32 slot, __u32 meta_off, __u32 unpublished)
{
	return add_chunk(slot, meta_off, unpublished, true);
}

/* Page p of the partial chunk at slot, absent until its grower mapped it
 * just now (grow.bpf.c's fill_page()), into the page heap: no longer
 * absent, merged with its free buddies. Returns 0, or -errno with nothing
 * changed (-ENOENT: the slot holds no chunk now, a teardown or trim took
 * it, or the page is not absent there: the grower gives the page back).
 * Frame 3 of internal.h's call frames. */
int aa__buddy_fill_page(__u32 slot, __u32 p)
{
	aa_meta_t *meta;
	int err;

	if (slot >= AA_MAX_SLOTS || slot >= aa__root.nr_slots || p >= AA_CHUNK_PAGES)
		return -EINVAL;
	err = aa_lock();
	if (err)
		return aa_errno(-err);
	meta = meta_of(slot);
	if (!aa_heap_ready() || slot_at(slot)->state != AA_SLOT_CHUNK || !meta->absent ||
	    chunk_pm(slot)[p & (AA_CHUNK_PAGES - 1)] != AA_PM(AA_PM_ABSENT, 0)) {
		aa_unlock();
		return -ENOENT;
	}
	chunk_pm(slot)[p & (AA_CHUNK_PAGES - 1)] = 0;
	meta->absent--;
	aa__root.stats.absent_pages--;
	if (++aa__root.stats.pages_mapped > aa__root.stats.peak_pages_mapped)
		aa__root.stats.peak_pages_mapped = aa__root.stats.pages_mapped;
	page_add_locked((slot << AA_CHUNK_SHIFT) + (p << AA_PAGE_SHIFT));
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
		slot_at(s)->state = AA_SLOT_RELEASING;
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
	if (__sync_val_compare_and_swap(&slot_at(slot)->state, AA_SLOT_RELEASING,
					AA_SLOT_UNMAPPED) != AA_SLOT_RELEASING)
		return -EINVAL;
	return 0;
}

/* --- Chunks back to the kernel (trim, teardown) ---------------------------- */

/* Give back the pages of slot s that its page map does not mark absent,
 * one by one. */
static __always_inline void put_present(__u32 s)
{
	__u32 __arena *pm = chunk_pm(s);
	__u64 off = (__u64)(s & (AA_MAX_SLOTS - 1)) << AA_CHUNK_SHIFT;
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES)
		if (pm[p & (AA_CHUNK_PAGES - 1)] != AA_PM(AA_PM_ABSENT, 0))
			pages_put(aa_addr(off + ((__u64)p << AA_PAGE_SHIFT)), 1);
}

/* Return a RELEASING slot's chunk pages and metadata pages, zero its
 * page-map entries (aa_shared.h: a slot without a chunk has none), then
 * make the slot mappable again. meta_off and the entries are the
 * releaser's alone meanwhile: no grower takes a RELEASING slot, and the
 * heap holds nothing in it. */
static void return_chunk(__u32 slot)
{
	__u32 s = slot & (AA_MAX_SLOTS - 1);
	aa_meta_t *meta = aa_addr(slot_at(s)->meta_off);
	__u32 __arena *pm = chunk_pm(s);
	int p;

	grow_retry_clear();	/* a slot to grow into */
	if (meta->absent)	/* a partial chunk: only its pages */
		put_present(s);
	else
		pages_put(aa_addr(s << AA_CHUNK_SHIFT), AA_CHUNK_PAGES);
	if (aa__fault_trim_delay_ns)
		fault_delay(aa__fault_trim_delay_ns);
	pages_put(meta, aa_meta_pages());
	aa_for(p, 0, AA_CHUNK_PAGES)
		pm[p & (AA_CHUNK_PAGES - 1)] = 0;
	aa__buddy_release_slot(s);
}

/* A trim is returning a chunk (some slot is RELEASING). */
static __always_inline bool chunks_releasing(void)
{
	__u32 nr_slots = aa__root.nr_slots;
	int s;

	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS)
		if (slot_at(s)->state == AA_SLOT_RELEASING)
			return true;
	return false;
}

/* A teardown's: every mapped slot RELEASING, its chunks forgotten (the
 * pages go back by return_chunk(), no lock held). Returns how many.
 * REQUIRES: heap lock held, heap unpublished. */
static __always_inline int chunks_release_all_locked(void)
{
	struct aa_slot __arena *st;
	__u32 nr_slots = aa__root.nr_slots, n = AA_ZERO;
	int s;

	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		st = slot_at(s);
		if (st->state == AA_SLOT_UNMAPPED)
			continue;
		st->state = AA_SLOT_RELEASING;
		st->nr_chunks = 0;
		st->large_pages = 0;
		n++;
	}
	return n;
}
