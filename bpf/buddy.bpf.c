// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * buddy.bpf.c - tier 3: power-of-two blocks carved from 1-MiB chunks.
 *
 * Role:       serve every request up to one chunk as a block of 16 << k
 *             bytes (order k = 0..16), and larger ones as runs of whole free
 *             chunks; split on alloc, coalesce on free.
 * From below: chunks that arena.bpf.c maps (aa_buddy_add_chunk) and takes
 *             back when they are entirely free (aa_buddy_take_free_chunk);
 *             those and the validity checker are in buddy_chunks.bpf.c.
 *             Neither file calls a page kfunc: any program may use them.
 * To above:   aa_buddy_alloc/usable_size/free and the bulk forms; for the
 *             cache tiers, refills marked as cached (aa_buddy_alloc_bulk
 *             with AA_TAG_CACHED) and aa_buddy_return[_bulk] of blocks a
 *             free already claimed. A return never fails: without the
 *             lock the blocks are parked (aa_root.parked) and the next
 *             lock holder completes them.
 * Locking:    the heap lock (aa_lock() in internal.h, preemption disabled
 *             while held) guards the free lists, the chunk metadata, the
 *             slot table and the stats. Without it, only reads: a live
 *             block's own alloc bit and slot state change only when that
 *             block is freed, which its claimer alone can do, so the
 *             unlocked lookups below are exact for live blocks and a
 *             harmless snapshot for anything else. Word 0 of blocks is
 *             written with the custody protocol (internal.h, aa_claim()).
 *
 * Metadata of a chunk (24 KiB, outside the chunk), one bitmap of 3 * 65536
 * bits indexed by the block's offset in the chunk (coff):
 *   free bit   coff >> 4                        : a free block starts here
 *   alloc bit  65536 + 2^17 - 2^(17-k) + (coff >> (4 + k))
 *                                               : an order-k allocation
 *                                                 starts here
 * A free block carries its own header (struct aa_free_hdr: custody mark
 * with its order, list links), trusted only where its free bit is set.
 *
 * Invariants (under the lock):
 *   every byte of a chunk is in exactly one block, free or allocated;
 *   free bit set  <=>  block is on free_head[hdr.order];
 *   stats.free_blocks[k] == length of free_head[k];
 *   sum_k free_blocks[k] * (16 << k) + bytes_in_use - large_bytes_in_use
 *     == (nr_chunks - large_chunks) * 1 MiB
 *
 * Split, order-2 request from an empty 256-B block (order 4):
 *
 *   [               256               ]   take order 4 from free_head[4]
 *   [      128      |      128 free   ]   push right half on free_head[3]
 *   [  64   |64 free|      128 free   ]   push right half on free_head[2]
 *   [32|32f |64 free|      128 free   ]   push on free_head[1], return left
 *
 * Coalesce runs the other way: while the buddy (coff ^ (16 << k)) is a free
 * block of the same order, unlink it and merge into the lower address.
 */
#include "internal.h"

/* Header written into every free block (16 bytes: fits the smallest). */
struct aa_free_hdr {
	__u64 mark;	/* aa_custody(addr, AA_TAG_BUDDY + order) */
	__u32 next;	/* arena offset of next free block of this order, AA_NIL */
	__u32 prev;
};

/* A parked block: claimed (word 0 = FREED mark), waiting for the lock. */
struct aa_parked {
	__u64 mark;
	__u32 next;	/* arena offset of the next parked block, AA_NIL */
	__u32 pad;
};

#define AA_ALLOC_BIT_BASE	AA_BLOCKS_PER_CHUNK
#define AA_UNPARK_BATCH		32	/* parked frees completed per lock hold */

typedef struct aa_free_hdr __arena aa_free_hdr_t;
typedef struct aa_parked __arena aa_parked_t;
typedef __u64 __arena aa_bitmap_t;

/* --- Metadata bitmaps --------------------------------------------------- */

static __always_inline aa_bitmap_t *meta_of(__u32 slot)
{
	return (aa_bitmap_t *)aa_addr(aa_root.slots[slot].meta_off);
}

static __always_inline bool bit_test(aa_bitmap_t *map, __u32 bit)
{
	return (map[bit >> 6] >> (bit & 63)) & 1;
}

static __always_inline void bit_set(aa_bitmap_t *map, __u32 bit)
{
	map[bit >> 6] |= 1ULL << (bit & 63);
}

static __always_inline void bit_clear(aa_bitmap_t *map, __u32 bit)
{
	map[bit >> 6] &= ~(1ULL << (bit & 63));
}

static __always_inline __u32 free_bit(__u32 coff)
{
	return coff >> AA_MIN_SHIFT;
}

static __always_inline __u32 alloc_bit(__u32 order, __u32 coff)
{
	return AA_ALLOC_BIT_BASE + (1U << (AA_MAX_ORDER + 1)) -
	       (1U << (AA_MAX_ORDER + 1 - order)) + (coff >> (AA_MIN_SHIFT + order));
}

static __always_inline __u64 order_bytes(__u32 order)
{
	return (__u64)AA_MIN_SIZE << order;
}

/* --- Free lists ----------------------------------------------------------
 * REQUIRES: heap lock held; order <= AA_MAX_ORDER; off is a block start.
 */
static __always_inline void free_push(__u32 order, __u32 off)
{
	aa_free_hdr_t *hdr = aa_addr(off);
	__u32 head = aa_root.free_head[order];

	hdr->mark = aa_custody((__u64)hdr, AA_TAG_BUDDY + order);
	hdr->next = head;
	hdr->prev = AA_NIL;
	if (head != AA_NIL)
		((aa_free_hdr_t *)aa_addr(head))->prev = off;
	aa_root.free_head[order] = off;
	bit_set(meta_of(off >> AA_CHUNK_SHIFT), free_bit(off & (AA_CHUNK_SIZE - 1)));
	aa_root.stats.free_blocks[order]++;
}

static __always_inline void free_unlink(__u32 order, __u32 off)
{
	aa_free_hdr_t *hdr = aa_addr(off);
	__u32 next = hdr->next, prev = hdr->prev;

	if (prev != AA_NIL)
		((aa_free_hdr_t *)aa_addr(prev))->next = next;
	else
		aa_root.free_head[order] = next;
	if (next != AA_NIL)
		((aa_free_hdr_t *)aa_addr(next))->prev = prev;
	/* hdr->mark stays a custody mark: no free can claim this word */
	bit_clear(meta_of(off >> AA_CHUNK_SHIFT), free_bit(off & (AA_CHUNK_SIZE - 1)));
	aa_root.stats.free_blocks[order]--;
}

/* Is there a free block of exactly this order at chunk offset coff? */
static __always_inline bool is_free_block(aa_bitmap_t *meta, __u32 chunk_off,
					  __u32 coff, __u32 order)
{
	aa_free_hdr_t *hdr;

	if (!bit_test(meta, free_bit(coff)))
		return false;
	hdr = aa_addr(chunk_off + coff);
	return hdr->mark == aa_custody((__u64)hdr, AA_TAG_BUDDY + order);
}

/* --- Stats -------------------------------------------------------------- */

/* Raise the low-watermark signal (the loader grows the heap and clears it)
 * when an allocation failed or free memory dropped below
 * tun.low_watermark. REQUIRES: heap lock. */
static __always_inline void check_watermark(bool failed)
{
	__u64 mapped = aa_root.stats.nr_chunks << AA_CHUNK_SHIFT;
	__u64 used = aa_root.stats.bytes_in_use;

	if ((failed || mapped - used < aa_root.tun.low_watermark) && !aa_root.need_refill) {
		aa_root.need_refill = 1;
		aa_root.refill_signals++;
	}
}

static __always_inline void account_alloc(__u64 bytes)
{
	struct aa_stats __arena *st = &aa_root.stats;

	st->bytes_in_use += bytes;
	if (st->bytes_in_use > st->peak_bytes_in_use)
		st->peak_bytes_in_use = st->bytes_in_use;
	st->live_allocs++;
	st->nr_allocs++;
}

static __always_inline void account_free(__u64 bytes)
{
	struct aa_stats __arena *st = &aa_root.stats;

	st->bytes_in_use -= bytes;
	st->live_allocs--;
	st->nr_frees++;
}

/* --- Block alloc / free (locked) ---------------------------------------- */

/* Take a block of the given order: the smallest free block of at least that
 * order, split down, and set its word 0 to the custody mark AA_TAG_CACHED
 * & mark_mask: ~0 for a CPU cache refill, 0 for a user (zero). Returns its
 * arena offset or AA_NIL.
 * REQUIRES: heap lock held. */
static __u32 block_alloc_locked(__u32 order, __u64 mark_mask)
{
	__u32 j = AA_NR_ORDERS, k, off;

	/* constant bounds: the verifier unrolls both order loops */
	for (k = 0; k <= AA_MAX_ORDER; k++) {
		if (k >= order && aa_root.free_head[k] != AA_NIL) {
			j = k;
			break;
		}
	}
	if (j > AA_MAX_ORDER)
		return AA_NIL;
	off = aa_root.free_head[j];
	free_unlink(j, off);
	for (k = AA_MAX_ORDER; k > 0; k--) {
		if (k > j)
			continue;
		if (k <= order)
			break;
		free_push(k - 1, off + (AA_MIN_SIZE << (k - 1)));
	}
	/* A claim validates the alloc bit, then word 0 (aa_claim()): the
	 * marks written above must be visible before the bit. */
	aa_store_fence();
	bit_set(meta_of(off >> AA_CHUNK_SHIFT), alloc_bit(order, off & (AA_CHUNK_SIZE - 1)));
	/* a mask, not a branch: halves the states the verifier walks */
	*(__u64 __arena *)aa_addr(off) = aa_custody((__u64)aa_addr(off), AA_TAG_CACHED) & mark_mask;
	account_alloc(order_bytes(order));
	return off;
}

/*
 * Find what the chunk-relative offset coff is: returns the order k (>= 0) of
 * the allocation starting exactly there, or a negative AA_ERR_* code, with
 * nothing changed. Walks k upwards: the first block start that covers coff
 * (an order-k alloc bit at coff rounded down to 16 << k, or any free bit)
 * is the block containing it.
 * REQUIRES: slot is an AA_SLOT_CHUNK; heap lock held, or the answer is a
 * snapshot (exact for a live allocation at coff: see the file comment).
 */
static int classify(aa_bitmap_t *meta, __u32 coff)
{
	__u32 k, start;

	for (k = 0; k <= AA_MAX_ORDER; k++) {
		start = coff & ~((AA_MIN_SIZE << k) - 1);
		if (bit_test(meta, alloc_bit(k, start)))
			return start == coff ? (int)k : -AA_ERR_INTERIOR;
		if (bit_test(meta, free_bit(start)))
			return -AA_ERR_DOUBLE_FREE;
	}
	return -AA_ERR_CORRUPT;
}

/* Free the order-k allocation at arena offset off and coalesce.
 * REQUIRES: heap lock held; classify_locked() said order k at off. */
static void block_free_locked(__u32 off, __u32 order)
{
	__u32 chunk_off = off & ~(AA_CHUNK_SIZE - 1);
	__u32 coff = off - chunk_off;
	aa_bitmap_t *meta = meta_of(off >> AA_CHUNK_SHIFT);
	__u32 buddy, k, merged = order;

	bit_clear(meta, alloc_bit(order, coff));
	account_free(order_bytes(order));
	for (k = 0; k < AA_MAX_ORDER; k++) {	/* constant bounds: unrolled */
		if (k < order)
			continue;
		buddy = coff ^ (AA_MIN_SIZE << k);
		if (!is_free_block(meta, chunk_off, buddy, k))
			break;
		free_unlink(k, chunk_off + buddy);
		coff &= ~(AA_MIN_SIZE << k);
		merged = k + 1;
	}
	free_push(merged, chunk_off + coff);
}

/* --- Large allocations: runs of whole free chunks ------------------------ */

static bool chunk_is_free(__u32 slot)
{
	__u32 chunk_off = slot << AA_CHUNK_SHIFT;

	return aa_root.slots[slot].state == AA_SLOT_CHUNK &&
	       is_free_block(meta_of(slot), chunk_off, 0, AA_MAX_ORDER);
}

/* REQUIRES: heap lock held; size > AA_CHUNK_SIZE. Returns offset or AA_NIL. */
static __u32 large_alloc_locked(__u64 size)
{
	__u32 need = (size + AA_CHUNK_SIZE - 1) >> AA_CHUNK_SHIFT;
	__u32 nr_slots = aa_root.nr_slots, run = AA_ZERO, first = AA_ZERO;
	int s, i;

	bpf_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		/* reset to AA_ZERO, not 0: a constant run becomes precise at
		 * "run == need" and 6.12 then walks the loop per value */
		run = chunk_is_free(s) ? run + 1 : AA_ZERO;
		if (run == need) {
			first = s + 1 - need;
			break;
		}
	}
	if (run < need || first >= AA_MAX_SLOTS)
		return AA_NIL;
	bpf_for(i, first, first + need) {
		if (i >= AA_MAX_SLOTS)
			break;
		free_unlink(AA_MAX_ORDER, i << AA_CHUNK_SHIFT);
		aa_root.slots[i].state = AA_SLOT_LARGE_TAIL;
	}
	*(__u64 __arena *)aa_addr(first << AA_CHUNK_SHIFT) = 0;	/* was a mark */
	aa_root.slots[first].nr_chunks = need;
	aa_root.slots[first].large_pages = (size + AA_PAGE_SIZE - 1) >> AA_PAGE_SHIFT;
	aa_store_fence();	/* as in block_alloc_locked(): state last */
	aa_root.slots[first].state = AA_SLOT_LARGE_HEAD;
	aa_root.stats.large_chunks += need;
	aa_root.large_bytes_in_use += (__u64)need << AA_CHUNK_SHIFT;
	account_alloc((__u64)need << AA_CHUNK_SHIFT);
	return first << AA_CHUNK_SHIFT;
}

/* REQUIRES: heap lock held; slot is a LARGE_HEAD. */
static void large_free_locked(__u32 slot)
{
	__u32 n = aa_root.slots[slot].nr_chunks;
	int i;

	bpf_for(i, slot, slot + n) {
		if (i >= AA_MAX_SLOTS)
			break;
		aa_root.slots[i].state = AA_SLOT_CHUNK;
		free_push(AA_MAX_ORDER, i << AA_CHUNK_SHIFT);
	}
	aa_root.slots[slot].nr_chunks = 0;
	aa_root.slots[slot].large_pages = 0;
	aa_root.stats.large_chunks -= n;
	aa_root.large_bytes_in_use -= (__u64)n << AA_CHUNK_SHIFT;
	account_free((__u64)n << AA_CHUNK_SHIFT);
}

/* --- Pointer lookup ------------------------------------------------------ */

/* Where is ptr? Sets *off (its arena offset) and returns the state of its
 * slot, or -AA_ERR_FOREIGN / -AA_ERR_MISALIGNED. Without the heap lock the
 * state is a snapshot. */
static __always_inline int locate(__u64 ptr, __u32 *off)
{
	__u64 rel = ptr - aa_root.arena_base;

	if (ptr < aa_root.arena_base || rel >= aa_root.arena_size)
		return -AA_ERR_FOREIGN;
	if (rel & (AA_MIN_SIZE - 1))
		return -AA_ERR_MISALIGNED;
	if ((rel >> AA_CHUNK_SHIFT) >= AA_MAX_SLOTS)
		return -AA_ERR_FOREIGN;
	*off = rel;
	return aa_root.slots[rel >> AA_CHUNK_SHIFT].state;
}

/* What is ptr? Sets *off; returns the order (0..16) of the buddy allocation
 * at ptr, AA_NR_ORDERS for a large allocation, or -AA_ERR_*. Under the heap
 * lock, or a snapshot (exact for a live allocation). */
static int lookup(__u64 ptr, __u32 *off)
{
	int state = locate(ptr, off);
	__u32 slot = *off >> AA_CHUNK_SHIFT, coff = *off & (AA_CHUNK_SIZE - 1);

	if (state < 0)
		return state;
	if (state == AA_SLOT_LARGE_HEAD)
		return coff ? -AA_ERR_INTERIOR : AA_NR_ORDERS;
	if (state == AA_SLOT_LARGE_TAIL)
		return -AA_ERR_INTERIOR;
	if (state != AA_SLOT_CHUNK)
		return -AA_ERR_FOREIGN;
	return classify(meta_of(slot), coff);
}

/*
 * Size class of a live allocation, without the lock: the order c <
 * AA_NR_CLASSES of the block starting at ptr, or -1 (not an allocation of a
 * cached class: large, bad, or not ours; aa_buddy_free() judges those).
 */
static __always_inline int aa_buddy_class_of(__u64 ptr)
{
	__u32 off = 0, coff, k;
	aa_bitmap_t *meta;

	if (locate(ptr, &off) != AA_SLOT_CHUNK)
		return -1;
	meta = meta_of(off >> AA_CHUNK_SHIFT);
	coff = off & (AA_CHUNK_SIZE - 1);
	for (k = 0; k < AA_NR_CLASSES; k++) {	/* constant bounds: unrolled */
		if (coff & ((AA_MIN_SIZE << k) - 1))
			return -1;
		if (bit_test(meta, alloc_bit(k, coff)))
			return k;
	}
	return -1;
}

/* --- Claims ----------------------------------------------------------------
 *
 * aa_claim() makes a free the sole owner of a live block, lock-free:
 *
 *   v = word0                   user data, or a custody mark: -EALREADY
 *   cmpxchg(word0, v, FREED)    lost: another free won (or it is cached)
 *   alloc bit (or LARGE_HEAD)   still set, and then
 *   word0 == FREED              still ours: claimed
 *
 * Why the last two checks: a free that read v long ago may find v again
 * at the same address after the block was freed, merged and reused inside
 * a bigger block (user data equal to v). Its cmpxchg then succeeds on a
 * block that is not a live allocation at ptr. Such a position is not the
 * head of a free block (heads carry a BUDDY mark, never equal to v); for
 * it to become an allocation at ptr it must first become a head, whose
 * mark overwrites our FREED, and only then get its alloc bit (ordered by
 * aa_store_fence()). So "bit set, then word 0 still FREED" is a live
 * block that we own. Otherwise the stray write is undone and the free is
 * a double free (or a free of a pointer that was reused: a user bug no
 * allocator can tell from a valid free).
 */
static __always_inline bool still_allocated(__u32 off, int kind, __u64 *dep)
{
	__u32 slot = off >> AA_CHUNK_SHIFT, coff = off & (AA_CHUNK_SIZE - 1);
	__u32 bit;
	__u64 w;

	if (slot >= AA_MAX_SLOTS)
		return false;
	if (kind >= AA_NR_ORDERS) {
		*dep = READ_ONCE_ARENA(aa_root.slots[slot].state);
		return *dep == AA_SLOT_LARGE_HEAD && !coff;
	}
	bit = alloc_bit(kind, coff);
	w = ((volatile __u64 __arena *)meta_of(slot))[bit >> 6];
	*dep = w;
	return (w >> (bit & 63)) & 1;
}

/* Claim the allocation of kind `kind` (order, or AA_NR_ORDERS for a large
 * run) at ptr (arena offset off) for a free. Returns 0 with word 0 = the
 * FREED mark (the caller now owns the block), or -AA_ERR_DOUBLE_FREE with
 * nothing changed. Any context, no lock. */
static __always_inline int aa_claim(__u64 ptr, __u32 off, int kind)
{
	__u64 __arena *w = (__u64 __arena *)ptr;
	__u64 mine = aa_custody(ptr, AA_TAG_FREED), v, dep = 0;

	v = *(volatile __u64 __arena *)w;
	if (aa_is_custody(ptr, v))
		return -AA_ERR_DOUBLE_FREE;
	if (__sync_val_compare_and_swap(w, v, mine) != v)
		return -AA_ERR_DOUBLE_FREE;
	if (still_allocated(off, kind, &dep) && aa_load_after(w, dep) == mine)
		return 0;
	__sync_val_compare_and_swap(w, mine, v);	/* undo the stray write */
	return -AA_ERR_DOUBLE_FREE;
}

/* --- Freeing claimed blocks ------------------------------------------------ */

/* Free a block that a free claimed (or a cache tier holds): word 0 must be a
 * custody mark. Returns 0 or -AA_ERR_*. REQUIRES: heap lock held.
 * Inlined into unpark_locked() (so aa_buddy_unpark(), called by every locked
 * entry point, costs one call frame, not three: arena_alloc.bpf.h's frame
 * budget), called through free_claimed_locked() elsewhere. */
static __always_inline int free_claimed_locked_inline(__u64 ptr)
{
	__u32 off = 0;
	int kind = lookup(ptr, &off);
	__u64 w;

	if (kind < 0)
		return -AA_ERR_CORRUPT;
	/* Verifier: lookup() returns one of 17 constants; each would verify
	 * block_free_locked() again. An imprecise kind verifies it once. */
	kind += AA_ZERO;
	w = *(__u64 __arena *)ptr;
	if (w != aa_custody(ptr, AA_TAG_FREED) && w != aa_custody(ptr, AA_TAG_CACHED))
		return -AA_ERR_CORRUPT;
	if (kind == AA_NR_ORDERS)
		large_free_locked(off >> AA_CHUNK_SHIFT);
	else
		block_free_locked(off, kind);
	return 0;
}

static int free_claimed_locked(__u64 ptr)
{
	return free_claimed_locked_inline(ptr);
}

/* Push the chain first .. last (arena offsets, linked through
 * aa_parked.next; n blocks, counted in frees_parked) on the parked list. Lock-free, any context: the loop only repeats when another push or
 * a pop got in between. */
static void park_chain(__u32 first, __u32 last, __u32 n)
{
	aa_parked_t *tail = aa_addr(last);
	__u32 old;

	bpf_repeat(AA_MAX_LOOPS) {
		old = READ_ONCE_ARENA(aa_root.parked);
		tail->next = old;
		if (__sync_val_compare_and_swap(&aa_root.parked, old, first) == old)
			break;
	}
	__sync_fetch_and_add(&aa_root.stats.frees_parked, n);
}

/* Complete up to max parked frees. The heap lock holder is the only one who
 * pops, so the head it read cannot be popped and pushed again meanwhile
 * (no ABA); a failed cmpxchg means a push came in: read again.
 * REQUIRES: heap lock held. */
static __u32 unpark_locked(__u32 max)
{
	__u32 head, next, done = AA_ZERO;
	aa_parked_t *p;

	bpf_repeat(AA_MAX_LOOPS) {
		if (done >= max)
			break;
		head = READ_ONCE_ARENA(aa_root.parked);
		if (head == AA_NIL)
			break;
		p = aa_addr(head);
		next = p->next;
		if (__sync_val_compare_and_swap(&aa_root.parked, head, next) != head)
			continue;
		if (free_claimed_locked_inline((__u64)p))
			aa_fail(AA_ERR_CORRUPT);
		done++;
	}
	aa_root.stats.frees_unparked += done;
	return done;
}

/* After releasing the heap lock: if frees are parked, complete a batch.
 * Done outside the caller's section (one more lock round trip, only while
 * something is parked) so that unpark_locked() is verified once, in
 * aa_buddy_unpark(), not in every locked function. */
static __always_inline void unlock_and_unpark(void)
{
	aa_unlock();
	if (READ_ONCE_ARENA(aa_root.parked) != AA_NIL)
		aa_buddy_unpark();
}

/* --- Global entry points --------------------------------------------------
 * Each takes the heap lock itself; sizes are checked by the caller
 * (alloc.bpf.c) but re-checked here where a bad value could corrupt state.
 * Lock failures: an allocation fails (counted: BUSY or NESTED), a free is
 * parked (counted in lock_misses and frees_parked).
 */

/* Count a lock failure that made an allocation fail. */
static __always_inline void alloc_lock_failed(int err)
{
	aa_fail(err == -AA_ERR_NESTED ? AA_ERR_NESTED : AA_ERR_BUSY);
}

/* Allocate size bytes aligned to align (power of two <= page; 0 = none).
 * Returns a user address or 0; the failure is counted. */
__u64 aa_buddy_alloc(__u64 size, __u64 align)
{
	__u32 off;
	int err;

	if (!aa_heap_ready()) {
		aa_fail(AA_ERR_UNINIT);
		return 0;
	}
	if (size == 0 || size > AA_MAX_ALLOC || size > aa_root.arena_size) {
		aa_fail(AA_ERR_SIZE);
		return 0;
	}
	if (align > size)
		size = align;
	err = aa_lock();
	if (err) {
		alloc_lock_failed(err);
		return 0;
	}
	if (size > AA_CHUNK_SIZE)
		off = large_alloc_locked(size);
	else
		off = block_alloc_locked(aa_size_to_order(size), 0);
	check_watermark(off == AA_NIL);
	unlock_and_unpark();
	if (off == AA_NIL) {
		aa_fail(AA_ERR_NOMEM);
		return 0;
	}
	return aa_root.arena_base + off;
}

/* Give a claimed block (word 0 = a custody mark) back to the heap: freed
 * now, or parked when the lock is not available. Returns 0, or -EUCLEAN
 * (counted) if the block was not what its claimer said. */
int aa_buddy_return(__u64 ptr)
{
	__u32 off = ptr - aa_root.arena_base;
	int err;

	if (aa_lock()) {
		aa_count(lock_misses);
		park_chain(off, off, 1);
		return 0;
	}
	err = free_claimed_locked(ptr);
	unlock_and_unpark();
	return err ? aa_fail(-err) : 0;
}

/* aa_buddy_return() for the claimed blocks arr[0 .. n) (arena array of
 * user addresses; zero entries are skipped): one lock round trip, all
 * parked without the lock. Returns how many were returned, or -errno. */
int aa_buddy_return_bulk(__u64 arr, __u32 n)
{
	__u64 __arena *in = (__u64 __arena *)arr;
	__u32 done = AA_ZERO, off;
	__u64 e;
	int i;

	if (n > AA_BULK_MAX)
		return -E2BIG;
	if (aa_lock()) {
		aa_count(lock_misses);
		bpf_for(i, 0, n) {
			e = in[i];
			if (!e)
				continue;
			off = e - aa_root.arena_base;
			park_chain(off, off, 1);
			done++;
		}
		return done;
	}
	bpf_for(i, 0, n) {
		e = in[i];
		if (!e)
			continue;
		if (free_claimed_locked(e))
			aa_fail(AA_ERR_CORRUPT);
		done++;
	}
	unlock_and_unpark();
	return done;
}

/* Look ptr up and claim it for a free (aa_claim()). Returns 0 (the caller
 * owns the block now) or -errno, counted, with nothing changed. */
int aa_buddy_claim(__u64 ptr)
{
	__u32 off = 0;
	int kind;

	if (!aa_heap_ready())
		return aa_fail(AA_ERR_UNINIT);
	kind = lookup(ptr, &off);
	if (kind < 0 && kind != -AA_ERR_FOREIGN && kind != -AA_ERR_MISALIGNED &&
	    !aa_lock()) {
		/* not a live allocation: the snapshot may have caught a free
		 * mid-way (a racing double free); the locked answer names
		 * the real cause */
		kind = lookup(ptr, &off);
		aa_unlock();
	}
	if (kind >= 0)
		kind = aa_claim(ptr, off, kind);
	return kind < 0 ? aa_fail(-kind) : 0;
}

/* Free ptr, any allocation (the path of everything the CPU caches do not
 * take): claim it, return it. 0 or -errno (counted) with the heap
 * unchanged. */
int aa_buddy_free(__u64 ptr)
{
	int err = aa_buddy_claim(ptr);

	return err ? err : aa_buddy_return(ptr);
}

/* Usable bytes of the live allocation at ptr, 0 for anything else (a freed
 * or cached block included). Lock-free: exact for a live allocation. */
__u64 aa_buddy_usable_size(__u64 ptr)
{
	__u32 off = 0;
	int kind;

	if (!aa_heap_ready())
		return 0;
	kind = lookup(ptr, &off);
	if (kind < 0 || aa_is_custody(ptr, *(__u64 __arena *)ptr))
		return 0;
	if (kind == AA_NR_ORDERS)
		return (__u64)aa_root.slots[(off >> AA_CHUNK_SHIFT) & (AA_MAX_SLOTS - 1)].nr_chunks
		       << AA_CHUNK_SHIFT;
	return order_bytes(kind);
}

/* Allocate n blocks of size bytes into arr[0 .. n) (arena array of user
 * addresses), one lock round trip. cached: mark them for a CPU cache
 * (AA_TAG_CACHED) instead of zeroing word 0. Returns how many it got.
 * REQUIRES: size <= AA_CHUNK_SIZE (callers route larger sizes one by one). */
int aa_buddy_alloc_bulk(__u64 arr, __u32 n, __u64 size, __u32 cached)
{
	__u64 __arena *out = (__u64 __arena *)arr;
	__u32 order, off, got = AA_ZERO;
	int i, err;

	if (!aa_heap_ready())
		return aa_fail(AA_ERR_UNINIT);
	if (size == 0 || size > AA_CHUNK_SIZE)
		return aa_fail(AA_ERR_SIZE);
	if (n > AA_BULK_MAX)
		return -E2BIG;
	order = aa_size_to_order(size);
	err = aa_lock();
	if (err) {
		alloc_lock_failed(err);
		return aa_errno(-err);
	}
	bpf_for(i, 0, n) {
		off = block_alloc_locked(order, cached ? ~0ULL : 0);
		if (off == AA_NIL)
			break;
		out[i] = aa_root.arena_base + off;
		got++;
	}
	check_watermark(got < n);
	unlock_and_unpark();
	if (got < n)
		aa_fail(AA_ERR_NOMEM);
	return got;
}

/* Complete a batch of parked frees. Returns how many (0: none left), or
 * -errno if the lock could not be taken. */
int aa_buddy_unpark(void)
{
	int err = aa_lock();
	__u32 n;

	if (err)
		return aa_errno(-err);
	n = unpark_locked(AA_UNPARK_BATCH * 8);
	aa_unlock();
	return n;
}

/* Free arr[0 .. n) of user allocations (the caches-off path): each is
 * claimed and returned; a bad one stays in arr and is counted, freed ones
 * are set to 0. A lock round trip per object: the cache tiers are the fast
 * bulk path. Returns the number freed, or -EINVAL when there were bad
 * pointers and none was freed. */
int aa_buddy_free_bulk(__u64 arr, __u32 n)
{
	__u64 __arena *in = (__u64 __arena *)arr;
	__u32 freed = AA_ZERO, bad = AA_ZERO;
	int i;

	if (!aa_heap_ready())
		return aa_fail(AA_ERR_UNINIT);
	if (n > AA_BULK_MAX)
		return -E2BIG;
	bpf_for(i, 0, n) {
		__u64 p = in[i];

		if (!p)
			continue;
		if (aa_buddy_free(p)) {
			bad++;
			continue;
		}
		in[i] = 0;
		freed++;
	}
	if (bad && !freed)
		return -EINVAL;
	return freed;
}
