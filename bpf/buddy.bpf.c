// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * buddy.bpf.c - tier 4: the page heap, a buddy allocator of whole pages
 * carved from 1-MiB chunks, and the page map.
 *
 * Role:       hand out runs of pages: spans for the central free lists
 *             (central.bpf.c) and allocations above the largest size class
 *             (heap.bpf.c); take them back and coalesce. A run of n pages
 *             is a power-of-two block whose unused tail goes straight back
 *             as smaller blocks, so a run wastes nothing beyond its last
 *             page. Allocations of more than a chunk take whole free chunks
 *             plus a run at the start of the next one.
 * From below: chunks that grow.bpf.c maps (aa__buddy_add_chunk) and takes
 *             back when they are entirely free (aa__buddy_take_free_chunk);
 *             those are in buddy_chunks.bpf.c, the checker in check.bpf.c. No file of
 *             the heap calls a page kfunc: any program may use them.
 * To above:   static helpers only (everything here REQUIRES the heap lock):
 *             run_alloc_locked / run_free_locked, large_*_locked, the
 *             page-map accessors (for lookup.bpf.c too); buddy_reset()
 *             for lifecycle.bpf.c. The entry points are in heap.bpf.c.
 * Locking:    the heap lock (aa_lock() in lock.h, preemption disabled
 *             while held) guards the free lists, the page map, the span
 *             table, the slot table and the stats. Without it, only reads
 *             (lock-free readers: internal.h's model).
 *
 * Page map (aa_shared.h): every page of a chunk is exactly one of
 *   FREE_HEAD|k  first page of a free order-k block, on its chunk's
 *                free_head[k] (and the chunk's bit set in order_map[k]);
 *   FREE         any other page of a free block;
 *   SPAN|c|i     page i of a span of class c;
 *   RUN_HEAD|n   first page of an n-page run; RUN_TAIL its other pages.
 * A free block also carries a header in its first page (struct
 * aa_free_hdr: custody mark with its order, list links).
 *
 * Invariants (under the lock), in pages:
 *   stats.free_blocks[k] == sum over chunks of the length of free_head[k];
 *   bit s of order_map[k] set <=> chunk s's free_head[k] != AA_NIL;
 *   sum_k free_blocks[k] << k + span_pages + run_pages
 *     == (nr_chunks - large_chunks) * 256 - absent_pages
 *   (absent: the pages of partial chunks that are not the heap's)
 *
 * A 5-page run from an empty 16-page block (order 4):
 *
 *   [               16                ]   take order 4, split down to 8
 *   [    8 (run)     |     8 free     ]   push right half, order 3
 *   [ 5 run |1|  2 |     8 free     ]   tail of the 8: [5] order 0,
 *                                         [6,8) order 1, back as free blocks
 *
 * Coalesce runs the other way: while the buddy (page ^ (1 << k)) is a free
 * block of the same order, unlink it and merge into the lower address.
 */
#include "internal.h"
#include "buddy.h"

/* --- Page map and span table ---------------------------------------------- */

static __always_inline aa_meta_t *meta_of(__u32 slot)
{
	return (aa_meta_t *)aa_addr(slot_at(slot)->meta_off);
}

/* The page-map entry of the page holding arena offset off (the page map:
 * aa_shared.h). */
static __always_inline __u32 __arena *pm_at(__u32 off)
{
	return (__u32 __arena *)aa__root.pm + ((off >> AA_PAGE_SHIFT) & (AA_MAX_ARENA_PAGES - 1));
}

/* The page-map entries of slot s: page p's is chunk_pm(s)[p]. */
static __always_inline __u32 __arena *chunk_pm(__u32 s)
{
	return pm_at((s & (AA_MAX_SLOTS - 1)) << AA_CHUNK_SHIFT);
}

/* The span descriptor of the span whose first page is at arena offset off. */
static __always_inline aa_span_t *span_at(__u32 off)
{
	return &meta_of(off >> AA_CHUNK_SHIFT)->span[(off >> AA_PAGE_SHIFT) & (AA_CHUNK_PAGES - 1)];
}

static __always_inline __u64 pages_bytes(__u32 pages)
{
	return (__u64)pages << AA_PAGE_SHIFT;
}

/* Set the entry of page off to head and those of the next pages - 1
 * pages (same chunk) to tail. */
static __always_inline void pm_fill(__u32 off, __u32 pages, __u32 head, __u32 tail)
{
	__u32 __arena *pm = chunk_pm(off >> AA_CHUNK_SHIFT);
	__u32 p = (off >> AA_PAGE_SHIFT) & (AA_CHUNK_PAGES - 1);
	int i;

	aa_for(i, 0, pages)
		pm[(p + i) & (AA_CHUNK_PAGES - 1)] = i ? tail : head;
}

/* --- Which chunks have free blocks -----------------------------------------
 * Two-level bitmaps per order (aa__root.order_summary/order_map): finding the
 * lowest chunk with a free block of an order is two count-trailing-zeros.
 * REQUIRES: heap lock held.
 */

/* Index of the lowest set bit of x != 0: isolate it, then a de Bruijn
 * multiplication names it (BPF has no ctz instruction). */
static const __u8 aa_debruijn64[64] = {
	 0,  1, 48,  2, 57, 49, 28,  3, 61, 58, 50, 42, 38, 29, 17,  4,
	62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12,  5,
	63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
	46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19,  9, 13,  8,  7,  6,
};

static __always_inline __u32 aa_ctz64(__u64 x)
{
	return aa_debruijn64[((x & -x) * 0x03f79d71b4cb0a89ULL) >> 58];
}

/* The number of set bits of x, by shifts and adds only (see high_order()). */
static __always_inline __u32 aa_popcount32(__u32 x)
{
	x = x - ((x >> 1) & 0x55555555);
	x = (x & 0x33333333) + ((x >> 2) & 0x33333333);
	x = (x + (x >> 4)) & 0x0f0f0f0f;
	return (x * 0x01010101) >> 24;
}

/* x with every bit below its highest set bit set too (x < 2^16). */
static __always_inline __u32 smear16(__u32 x)
{
	x |= x >> 1;
	x |= x >> 2;
	x |= x >> 4;
	return x | x >> 8;
}

/* Smallest order with 1 << order >= pages (1 <= pages <= 256): the bits
 * of pages - 1, smeared, counted. No branch: a loop over the orders would
 * leave the verifier one constant order, and one path below, each. */
static __always_inline __u32 pages_to_order(__u32 pages)
{
	__u32 o = aa_popcount32(smear16(pages - 1));

	return o < AA_MAX_ORDER ? o : AA_MAX_ORDER;
}

static __always_inline void order_map_set(__u32 order, __u32 slot)
{
	__u32 w = (slot >> 6) & (AA_MAX_SLOTS / 64 - 1);

	aa__root.order_map[order][w] |= 1ULL << (slot & 63);
	aa__root.order_summary[order] |= 1ULL << w;
}

static __always_inline void order_map_clear(__u32 order, __u32 slot)
{
	__u32 w = (slot >> 6) & (AA_MAX_SLOTS / 64 - 1);
	__u64 m = aa__root.order_map[order][w] & ~(1ULL << (slot & 63));

	aa__root.order_map[order][w] = m;
	/* the summary word read here, where it is written: loaded earlier,
	 * its value and address stay on the stack across the caller's code,
	 * in slots that later loops fill with other types (run_free_locked()
	 * says why 6.12 then verifies those loops longer) */
	if (!m)
		aa__root.order_summary[order] = READ_ONCE_ARENA(aa__root.order_summary[order]) &
						~(1ULL << w);
}

/* The lowest chunk with a free block of this order; REQUIRES: one exists
 * (order_summary[order] != 0). */
static __always_inline __u32 order_map_first(__u32 order)
{
	__u32 w = aa_ctz64(aa__root.order_summary[order]);

	return (w << 6) + aa_ctz64(aa__root.order_map[order][w & (AA_MAX_SLOTS / 64 - 1)]);
}

/* --- Free lists ----------------------------------------------------------
 * One doubly linked list per chunk and order (aa_chunk_meta.free_head).
 * REQUIRES: heap lock held; order <= AA_MAX_ORDER; off is a block start.
 */
static __always_inline void free_push(__u32 order, __u32 off)
{
	aa_free_hdr_t *hdr = aa_addr(off);
	aa_meta_t *meta = meta_of(off >> AA_CHUNK_SHIFT);
	__u32 head = meta->free_head[order];

	hdr->mark = aa_custody((__u64)hdr, AA_TAG_BUDDY + order);
	hdr->next = head;
	hdr->prev = AA_NIL;
	if (head != AA_NIL)
		((aa_free_hdr_t *)aa_addr(head))->prev = off;
	else
		order_map_set(order, off >> AA_CHUNK_SHIFT);
	meta->free_head[order] = off;
	*pm_at(off) = AA_PM(AA_PM_FREE_HEAD, order);
	aa__root.stats.free_blocks[order]++;
}

static __always_inline void free_unlink(__u32 order, __u32 off)
{
	aa_free_hdr_t *hdr = aa_addr(off);
	aa_meta_t *meta = meta_of(off >> AA_CHUNK_SHIFT);
	__u32 next = hdr->next, prev = hdr->prev;

	if (prev != AA_NIL)
		((aa_free_hdr_t *)aa_addr(prev))->next = next;
	else
		meta->free_head[order] = next;
	if (next != AA_NIL)
		((aa_free_hdr_t *)aa_addr(next))->prev = prev;
	else if (prev == AA_NIL)
		order_map_clear(order, off >> AA_CHUNK_SHIFT);
	/* hdr->mark stays a custody mark: no free can claim this word */
	*pm_at(off) = AA_PM_FREE;
	aa__root.stats.free_blocks[order]--;
}

/* Is there a free block of exactly this order at arena offset off? */
static __always_inline bool is_free_block(__u32 off, __u32 order)
{
	aa_free_hdr_t *hdr = aa_addr(off);

	return *pm_at(off) == AA_PM(AA_PM_FREE_HEAD, order) &&
	       hdr->mark == aa_custody((__u64)hdr, AA_TAG_BUDDY + order);
}

/* --- Blocks (locked) -------------------------------------------------------- */

/* The smallest order >= order that has a free block somewhere
 * (order_summary), or AA_NR_ORDERS: exact under the heap lock, a look
 * without it. An iterator: the result is a range, not one constant (and
 * one path) per order. */
static __always_inline __u32 free_order_from(__u32 order)
{
	__u32 j = AA_NR_ORDERS;
	int k;

	aa_for(k, order, AA_NR_ORDERS) {
		if (READ_ONCE_ARENA(aa__root.order_summary[k])) {
			j = k;
			break;
		}
	}
	return j;
}

/* Take a free block of the given order: best fit, lowest address (the
 * smallest order with a free block, in the lowest chunk that has one), split
 * down. Low chunks fill first and high ones stay whole: for runs of
 * chunks, and for trim. Its pages' entries are FREE: the caller sets them.
 * Returns its arena offset or AA_NIL.
 * REQUIRES: heap lock held. */
static __always_inline __u32 block_alloc_locked(__u32 order)
{
	__u32 j = free_order_from(order), off;
	int k;

	if (j > AA_MAX_ORDER)
		return AA_NIL;
	off = meta_of(order_map_first(j))->free_head[j];
	free_unlink(j, off);
	/* split: the upper halves, one block of each order in [order, j),
	 * each on a list of its own (so pushed in any order); an iterator,
	 * not an unrolled loop, keeps the verifier's paths few (free_push()
	 * branches) */
	aa_for(k, order, j)
		free_push(k, off + (AA_PAGE_SIZE << k));
	return off;
}

/* The pages [pages, 1 << order) of the block at off go back as free blocks,
 * lowest first: one block per set bit of the running position, so every
 * piece is naturally aligned and none is the buddy of a free block.
 * REQUIRES: heap lock held; the block was just taken (entries FREE). */
static __always_inline void block_trim_locked(__u32 off, __u32 order, __u32 pages)
{
	__u64 pos = pages;	/* 64-bit: whole stack slots (run_free_locked()) */
	int k;

	/* an iterator, not an unrolled loop: 2^8 branch paths otherwise */
	aa_for(k, 0, order < AA_MAX_ORDER ? order : AA_MAX_ORDER) {
		if (!((pos >> k) & 1))
			continue;
		free_push(k, off + (pos << AA_PAGE_SHIFT));
		pos += 1U << k;
	}
}

/* --- Runs of pages in one chunk (locked) -----------------------------------
 * run_alloc_locked() gives pages 1..256 pages; their entries are FREE and
 * the caller sets them (a span, a run). run_free_locked() takes them back.
 */
static __u32 run_alloc_locked(__u32 pages)
{
	__u64 order = pages_to_order(pages);
	__u32 off;

	/* order's spill fills a whole stack slot, as the trim loop's later
	 * spills into the same slot do (run_free_locked(): Linux 6.12 does
	 * not prune a loop's states whose slots differ in width, dead or
	 * not) */
	barrier_var(order);

	if (pages == 0 || pages > AA_CHUNK_PAGES)
		return AA_NIL;
	off = block_alloc_locked(order);
	if (off != AA_NIL)
		block_trim_locked(off, order, pages);
	return off;
}

/* The order of the highest set bit of x (1 <= x <= 256): smear it down,
 * count the bits below it. No branch and no table: a table load with an
 * index the verifier knows makes that index precise, and a loop over the
 * pieces of a run then never converges. */
static __always_inline __u32 high_order(__u32 x)
{
	__u32 o = aa_popcount32(smear16(x) >> 1);

	return o < AA_MAX_ORDER ? o : AA_MAX_ORDER;
}

/* Give pages [off, off + pages) back: entries set to FREE, then one block
 * per set bit of pages, largest first (off is aligned to the power of two
 * above pages, so every piece is aligned), each coalesced with its free
 * buddies: while the buddy (page ^ (1 << k)) is a free block of order k,
 * unlink it and merge into the lower address.
 * REQUIRES: heap lock held; the pages are ours (a run or span at off).
 * Verifier: one flat loop with one free_unlink() and one free_push() site,
 * and two call sites in all (free_claimed_locked(), the release of empty
 * spans): every locked path that frees pages funnels into one of them.
 * pos and coff are 64-bit so that their spills fill whole stack slots:
 * Linux 6.12 compares a loop's states slot by slot, dead ones included,
 * and a slot that one path fills with 4 bytes and another with 8 keeps
 * the loop from converging. */
static __always_inline void run_free_locked(__u32 off, __u32 pages)
{
	__u32 chunk_off = off & ~(AA_CHUNK_SIZE - 1);
	__u32 left = pages, k = 0, buddy;
	__u64 pos = off - chunk_off, coff = 0;
	bool piece = false;
	int i;

	if (pages == 0 || pages > AA_CHUNK_PAGES)
		return;
	pm_fill(off, pages, AA_PM_FREE, AA_PM_FREE);
	/* at most 8 pieces, each merged at most 8 times */
	aa_for(i, 0, 2 * AA_NR_ORDERS * AA_NR_ORDERS) {
		if (!piece) {
			if (!left)
				break;
			/* AA_ZERO: a constant k (pages known on some path)
			 * would make each merge step a new state */
			k = high_order(left) + AA_ZERO;
			coff = pos;
			pos += AA_PAGE_SIZE << k;
			/* < 256 pages left: the mask says so to the verifier,
			 * whose ranges otherwise drift and never converge */
			left = (left - (1U << k)) & (AA_CHUNK_PAGES - 1);
			piece = true;
		}
		if (k < AA_MAX_ORDER) {
			buddy = chunk_off + (coff ^ (AA_PAGE_SIZE << k));
			if (is_free_block(buddy, k)) {
				free_unlink(k, buddy);
				coff &= ~(AA_PAGE_SIZE << k);
				k++;
				continue;
			}
		}
		free_push(k, chunk_off + coff);
		piece = false;
	}
	if (piece || left)
		aa_fail(AA_ERR_CORRUPT);
}

/* --- Allocations above the largest class (locked) --------------------------
 * Up to a chunk: a run (RUN_HEAD|pages, RUN_TAIL...). Beyond: whole free
 * chunks (slot LARGE_HEAD, LARGE_TAIL...) and, for the remainder, a run at
 * the start of the next chunk, all of whose entries are RUN_TAIL: only the
 * head slot names the allocation.
 */
static __always_inline void run_account(__u32 pages, __u32 in_chunk_pages)
{
	aa__root.stats.run_pages += in_chunk_pages;
	aa__root.large_bytes_in_use += pages_bytes(pages);
}

/* REQUIRES: heap lock held; 1 <= pages <= 256. Returns offset or AA_NIL
 * (no room, or an injected fault: nothing changed). */
static __always_inline __u32 page_run_alloc_locked(__u32 pages)
{
	__u32 off = aa_fault_span() ? AA_NIL : run_alloc_locked(pages);

	if (off == AA_NIL)
		return AA_NIL;
	*(__u64 __arena *)aa_addr(off) = 0;	/* was a mark maybe */
	aa_store_fence();	/* word 0 before the entry: see aa_claim() */
	pm_fill(off, pages, AA_PM(AA_PM_RUN_HEAD, pages), AA_PM(AA_PM_RUN_TAIL, 0));
	run_account(pages, pages);
	return off;
}

/* Account the free of the page run at off; the caller gives its pages back
 * (run_free_locked(off, pages)).
 * REQUIRES: heap lock held; pm entry of off is RUN_HEAD|pages. */
static __always_inline void page_run_free_locked(__u32 off, __u32 pages)
{
	aa__root.stats.run_pages -= pages;
	aa__root.large_bytes_in_use -= pages_bytes(pages);
}

static __always_inline bool chunk_is_free(__u32 slot)
{
	return slot_at(slot)->state == AA_SLOT_CHUNK &&
	       is_free_block(slot << AA_CHUNK_SHIFT, AA_MAX_ORDER);
}

/* The first slot of need entirely free chunks in a row, or -1. A scan of
 * up to every slot: done before the heap lock (a snapshot, which
 * large_alloc_locked() checks again under it) so that no hold lasts it. */
static __always_inline int large_find(__u32 need)
{
	__u32 nr_slots = aa__root.nr_slots, run = AA_ZERO;
	int s;

	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		/* reset to AA_ZERO, not 0: a constant run becomes precise at
		 * "run == need" and 6.12 then walks the loop per value */
		run = chunk_is_free(s) ? run + 1 : AA_ZERO;
		if (run == need)
			return s + 1 - need;
	}
	return -1;
}

/* Chunks of a large allocation of pages pages (> 256). */
static __always_inline __u32 large_chunks(__u64 pages)
{
	return (pages >> AA_MAX_ORDER) + ((pages & (AA_CHUNK_PAGES - 1)) != 0);
}

/* REQUIRES: heap lock held; pages > 256; first: what large_find() said
 * before the lock. Holds for need chunk checks when the run is still free;
 * else (the heap changed meanwhile) scans again. Returns offset or AA_NIL
 * (no room, or an injected fault: nothing changed). */
static __always_inline __u32 large_alloc_locked(__u64 pages, int first)
{
	__u32 full = pages >> AA_MAX_ORDER, rem = pages & (AA_CHUNK_PAGES - 1);
	__u32 need = large_chunks(pages), tail, run = AA_ZERO;
	int i;

	if (aa_fault_span())
		return AA_NIL;
	if (first >= 0 && first < AA_MAX_SLOTS)
		aa_for(i, first, first + need) {
			if (!chunk_is_free(i & (AA_MAX_SLOTS - 1)))
				break;
			run++;
		}
	if (run < need)
		first = large_find(need);
	if (first < 0 || first + need > AA_MAX_SLOTS)
		return AA_NIL;
	aa_for(i, first, first + full) {
		free_unlink(AA_MAX_ORDER, i << AA_CHUNK_SHIFT);
		slot_at(i)->state = AA_SLOT_LARGE_TAIL;
	}
	if (rem) {
		tail = (first + full) << AA_CHUNK_SHIFT;
		free_unlink(AA_MAX_ORDER, tail);
		block_trim_locked(tail, AA_MAX_ORDER, rem);
		pm_fill(tail, rem, AA_PM(AA_PM_RUN_TAIL, 0), AA_PM(AA_PM_RUN_TAIL, 0));
	}
	*(__u64 __arena *)aa_addr(first << AA_CHUNK_SHIFT) = 0;	/* was a mark */
	slot_at(first)->nr_chunks = full;
	slot_at(first)->large_pages = pages;
	aa_store_fence();	/* word 0 before the state: see aa_claim() */
	slot_at(first)->state = AA_SLOT_LARGE_HEAD;
	aa__root.stats.large_chunks += full;
	run_account(pages, rem);
	return first << AA_CHUNK_SHIFT;
}

/* Free the whole chunks of the large allocation at slot. Returns the pages
 * of its trailing run, at the start of the chunk after them (*tail), which
 * the caller gives back (run_free_locked(*tail, pages)); 0 for none.
 * REQUIRES: heap lock held; slot is a LARGE_HEAD. */
static __always_inline __u32 large_free_locked(__u32 slot, __u32 *tail)
{
	__u32 full = slot_at(slot)->nr_chunks, pages = slot_at(slot)->large_pages;
	__u32 rem = pages - (full << AA_MAX_ORDER);
	int i;

	aa_for(i, slot, slot + full) {
		slot_at(i)->state = AA_SLOT_CHUNK;
		free_push(AA_MAX_ORDER, i << AA_CHUNK_SHIFT);
	}
	*tail = (slot + full) << AA_CHUNK_SHIFT;
	slot_at(slot)->nr_chunks = 0;
	slot_at(slot)->large_pages = 0;
	aa__root.stats.large_chunks -= full;
	aa__root.stats.run_pages -= rem;
	aa__root.large_bytes_in_use -= pages_bytes(pages);
	return rem < AA_CHUNK_PAGES ? rem : 0;
}

/* --- Reset (lifecycle.bpf.c) ----------------------------------------------- */

/* An empty page heap: no chunk has a free block (the page heap's bitmaps;
 * per-chunk lists go with their chunk's metadata), and its gauges at 0
 * (its event counters are kept). REQUIRES: heap not published (init), or
 * the heap lock held by a teardown that unpublished it. */
static void buddy_reset(void)
{
	int i;

	aa_for(i, 0, AA_NR_ORDERS * (AA_MAX_SLOTS / 64))
		aa__root.order_map[i / (AA_MAX_SLOTS / 64)][i % (AA_MAX_SLOTS / 64)] = 0;
	aa_for(i, 0, AA_NR_ORDERS) {
		aa__root.order_summary[i] = 0;
		aa__root.stats.free_blocks[i] = 0;
	}
	aa__root.stats.nr_chunks = 0;
	aa__root.stats.large_chunks = 0;
	aa__root.stats.span_pages = 0;
	aa__root.stats.run_pages = 0;
	aa__root.stats.absent_pages = 0;
	aa__root.stats.pages_mapped = 0;
}

/* --- Checks (check.bpf.c's aa__heap_check()) --------------------------------
 * The numbers are the checker's codes (check.bpf.c lists them all).
 */

/* Chunk s's absent pages: as many page-map entries AA_PM_ABSENT as its
 * metadata counts (a partial chunk, grow.bpf.c's grow_partial()); adds
 * them to *absent. Returns 0 or 23.
 * REQUIRES: heap lock held, slot s a chunk. */
static int check_absent_locked(__u32 s, __u64 *absent)
{
	__u32 __arena *pm = chunk_pm(s);
	__u32 n = AA_ZERO;
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES)
		n += pm[p & (AA_CHUNK_PAGES - 1)] == AA_PM(AA_PM_ABSENT, 0);
	*absent += n;
	return n == meta_of(s)->absent ? 0 : 23;
}

/* Slot s, which holds no chunk (UNMAPPED, or a multi-chunk allocation's):
 * every page-map entry 0 (aa_shared.h; the lock-free lookups take any
 * other for what its page is). Returns 0 or 29.
 * REQUIRES: heap lock held. */
static int check_no_chunk_locked(__u32 s)
{
	__u32 __arena *pm = chunk_pm(s);
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES)
		if (pm[p & (AA_CHUNK_PAGES - 1)])
			return 29;
	return 0;
}

/* Chunk s's free lists; adds their lengths to cnt[order], its absent
 * pages to *absent.
 * REQUIRES: heap lock held. */
static int buddy_check_chunk_locked(__u32 s, __u64 *cnt, __u64 *absent)
{
	__u32 off, prev;
	aa_free_hdr_t *hdr;
	bool listed;
	int k;

	s &= AA_MAX_SLOTS - 1;
	listed = slot_at(s)->state == AA_SLOT_CHUNK;
	if (listed && check_absent_locked(s, absent))
		return 23;
	if (!listed && slot_at(s)->state != AA_SLOT_RELEASING && check_no_chunk_locked(s))
		return 29;
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
