// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * self_grow.bpf.c - tier 5 for any program: an allocation that found the
 * page heap empty maps chunks itself (aa__arena_self_grow()), and one
 * that may map pages maps what its request lacks first (self_grow_for()).
 *
 * Role:       where aa_self_grows() (Linux >= 7.0 lets every program map
 *             arena pages; pruned at load before), map the chunk, or the
 *             run of chunks, that an allocation lacks, from the calling
 *             program, whatever its context.
 * From below: pages through arena.bpf.c's pages_get() / pages_put() (its
 *             page ledger and fault injection), chunks into the page heap
 *             by aa__buddy_add_chunk(), growth in steps
 *             (aa__arena_grow_some(), grow.bpf.c).
 * To above:   aa__arena_self_grow(), for the front door's
 *             grow_and_retry() (alloc.bpf.c; frame 2 of internal.h's call
 *             frames) and the heap's bulk rounds (heap.bpf.c);
 *             self_grow_for() for the aa_*_grow_u64() of api.bpf.c.
 * Locking:    no lock held across a page kfunc; the slot scan is a
 *             lock-free snapshot that the mapping checks again (the kernel
 *             refuses taken pages, aa__buddy_add_chunk() a slot that is
 *             not UNMAPPED).
 */
#include "internal.h"
#include "self_grow.h"
#include "arena.h"
#include "buddy.h"
#include "buddy_chunks.h"
#include "grow.h"

/* --- Self-growth ------------------------------------------------------------
 * An allocation that found the page heap empty maps what it lacks, from
 * the calling program, whatever its context (aa_self_grows()): a run of
 * `need` slots in a row (1 for an object or a run up to a chunk), each
 * unmapped or an entirely free chunk, the first such run
 * (aa__arena_run_find()), whose unmapped slots it maps (run_map()). So it
 * never maps a slot that the allocation cannot use, and a call that fails
 * leaves nothing mapped that an earlier one would not have: a repeated
 * failure maps nothing again.
 *
 *   slots   0    1   2   3   4   5   6   7   8   9
 *          root  H   .   .   H   F   .   .   .   .     H held, F free, . unmapped
 *   need 3: the hole 2-3 is two long; 4-6 is the run: slots 5 and 6 mapped
 *
 * The chunks' pages are mapped first, every one of the run, then their
 * metadata pages (which the kernel places at the lowest free address, that
 * is, in no slot of the run). A slot whose pages the kernel refuses holds
 * something else (metadata, caches, a user's pages) or was taken by
 * another grower: what this run got goes back and the search goes on
 * after that slot, AA_SELF_GROW_TRIES runs at most.
 */
#define AA_SELF_GROW_TRIES	8
_Static_assert(!(AA_SELF_GROW_MAX & (AA_SELF_GROW_MAX - 1)), "run_map() masks with it");

/* The first run of need slots from slot `from` on, each unmapped or an
 * entirely free chunk: its first slot | its unmapped slots << 16, or -1.
 * A lock-free snapshot: the mapping checks each slot again (the kernel
 * refuses taken pages, aa__buddy_add_chunk() a slot that is not
 * UNMAPPED).
 * Verifier: a global function (frame 3, a leaf), whose variables start
 * from AA_ZERO: constants made the slot numbers precise and the loop was
 * walked slot by slot ("The sequence of 8193 jumps is too complex"). */
int aa__arena_run_find(__u32 need, __u32 from)
{
	__u32 nr_slots = aa__root.nr_slots, run = AA_ZERO, cnt = AA_ZERO, state;
	int s;

	aa_for(s, from, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		state = READ_ONCE_ARENA(slot_at(s)->state);
		if (state != AA_SLOT_UNMAPPED && !chunk_is_free(s)) {
			run = AA_ZERO;
			cnt = AA_ZERO;
			continue;
		}
		run++;
		cnt += state == AA_SLOT_UNMAPPED;
		if (run >= need)
			return ((s + 1 - need) & (AA_MAX_SLOTS - 1)) | cnt << 16;
	}
	return -1;
}

/* Map the unmapped slots of the run of need slots at first (at most
 * AA_SELF_GROW_MAX of them) into the heap. Returns the chunks added (0:
 * the run was already free), or -EBUSY with *next set past the slot the
 * kernel refused (nothing of this run mapped), or -errno for a chunk that
 * its metadata or the page heap refused (the chunks added before it
 * stay, free in the heap; the others go back). */
static __always_inline int run_map(__u32 first, __u32 need, __u32 *next)
{
	__u16 slot[AA_SELF_GROW_MAX];
	void __arena *meta;
	__u32 n = AA_ZERO, added = AA_ZERO, s;
	int i, err = 0;

	aa_for(i, first, first + need) {	/* 1. the chunks' pages */
		s = i & (AA_MAX_SLOTS - 1);
		if (READ_ONCE_ARENA(slot_at(s)->state) != AA_SLOT_UNMAPPED)
			continue;
		if (n >= AA_SELF_GROW_MAX) {
			err = -E2BIG;
			break;
		}
		if (!pages_get(aa_addr(s << AA_CHUNK_SHIFT), AA_CHUNK_PAGES)) {
			*next = s + 1;
			err = -EBUSY;
			break;
		}
		slot[n++ & (AA_SELF_GROW_MAX - 1)] = s;
	}
	aa_for(i, 0, n < AA_SELF_GROW_MAX ? n : AA_SELF_GROW_MAX) {	/* 2. into the heap */
		s = slot[i & (AA_SELF_GROW_MAX - 1)] & (AA_MAX_SLOTS - 1);
		if (!err) {
			meta = pages_get(NULL, aa_meta_pages());
			err = meta ? 0 : -ENOMEM;
			if (meta) {
				err = aa__buddy_add_chunk(s, (__u64)meta - aa__root.arena_base, 0);
				if (err)
					pages_put(meta, aa_meta_pages());
			}
			if (!err) {
				added++;
				continue;
			}
		}
		pages_put(aa_addr(s << AA_CHUNK_SHIFT), AA_CHUNK_PAGES);
	}
	return err ? err : added;
}

/* Map the unmapped slots of the first run of need slots (aa__arena_run_find()),
 * searching on after a slot that is taken. Returns the chunks added (0: a run
 * is free already), or -errno: no run with at most AA_SELF_GROW_MAX unmapped
 * slots (-ENOMEM), or the last try's error. */
static __always_inline int self_grow_run(__u32 need)
{
	__u32 from = AA_ZERO;
	int i, found, ret = -ENOMEM;

	aa_for(i, 0, AA_SELF_GROW_TRIES) {
		found = aa__arena_run_find(need, from);
		if (found < 0 || (found >> 16) > AA_SELF_GROW_MAX)
			return -ENOMEM;
		ret = run_map(found & (AA_MAX_SLOTS - 1), need, &from);
		if (ret != -EBUSY)
			break;
	}
	return ret;
}

/* An allocation found the page heap empty: map what `chunks` chunks in a
 * row need (self_grow_run()) from the calling program, whatever its
 * context, with grow's rules (slots, page ledger, fault injection) and no
 * lock held across a kfunc. Returns the chunks added (> 0; 0 for a run
 * that was free already), or -errno: no run of slots to map, or the
 * kernel had no page, or a run of one slot failed so less than
 * AA_GROW_RETRY_NS ago (counted in stats.self_grow_fails).
 * Called by public functions only (frame 2 of internal.h's call frames).
 * REQUIRES: aa_self_grows(); heap published. */
int aa__arena_self_grow(__u32 chunks)
{
	__u64 t0 = bpf_ktime_get_ns();
	int ret = -ENOMEM;

	if (!aa_self_grows() || !aa_heap_ready())
		return -EOPNOTSUPP;
	/* a slot is what any need lacked when one slot was not to be had */
	if (grow_may_try(t0)) {
		ret = self_grow_run(chunks < 1 ? 1 : chunks < AA_MAX_SLOTS ? chunks : AA_MAX_SLOTS);
		if (ret < 0 && chunks <= 1)
			grow_missed(t0);
	}
	if (ret > 0)
		__sync_fetch_and_add(&aa__root.stats.self_grows, ret);
	else if (ret < 0)
		__sync_fetch_and_add(&aa__root.stats.self_grow_fails, 1);
	__sync_fetch_and_add(&aa__root.stats.self_grow_ns, bpf_ktime_get_ns() - t0);
	return ret;
}

/* --- Growth before an allocation -------------------------------------------
 * aa_malloc_grow_u64() and aa_calloc_grow_u64() (api.bpf.c) serve
 * programs that may call the page kfuncs, as the kernel selftests'
 * bpf_alloc() and libarena's arena_malloc() do (the compat front ends,
 * include/compat/bpf_arena_alloc.h and bpf/compat/libarena_aa.bpf.c):
 * sleepable ones, and on Linux >= 7.0 every one. Where the heap has no
 * block for the request (heap_short()), they map what one needs first
 * (self_grow_for(); aa__arena_grow_some(): pages a small arena's other
 * users did not take, or a chunk): the loader's refill agent's work, done
 * by the caller. An arena that had nothing to give is asked
 * again AA_GROW_RETRY_NS later at the earliest (arena.bpf.c's retry
 * time); such a miss counts in stats.self_grow_fails, and the
 * allocation fails only if the heap has nothing either (err[NOMEM]).
 * Calls on Linux < 7.0 verify in sleepable programs only ("program must
 * be sleepable to call sleepable kfunc").
 */
#define AA_GROW_STEP_PAGES	4

/* The heap has no block for an allocation of bytes bytes, as far as a
 * lock-free look tells: its class's central list is empty (CPU caches
 * are not looked at) and the page heap has no free block of its span's
 * order or above. Then *order is that order. */
static __always_inline bool heap_short(__u64 bytes, __u32 *order)
{
	__u32 pages = (bytes + AA_PAGE_SIZE - 1) >> AA_PAGE_SHIFT;
	int cls;

	if (bytes - 1 < AA_MAX_CLASS_SIZE) {
		cls = __aa_size_class(bytes);
		if (READ_ONCE_ARENA(aa__root.central[aa_cls_idx(cls)].head) != AA_NIL)
			return false;
		pages = aa_class(cls)->pages;
	}
	*order = pages_to_order(pages);
	return free_order_from(*order) > AA_MAX_ORDER;
}

/* Map what an allocation of bytes bytes needs, if the heap is short of
 * it and the arena may have it: twice its block's pages (a block aligned
 * to its size lies in any run of that many fresh pages), at least
 * AA_GROW_STEP_PAGES. */
static __always_inline void self_grow_for(__u64 bytes)
{
	__u32 order = 0, want;
	__u64 t0;

	if (!heap_short(bytes, &order))
		return;
	t0 = bpf_ktime_get_ns();
	if (!grow_may_try(t0))
		return;
	want = order < AA_MAX_ORDER ? 2U << order : AA_CHUNK_PAGES;
	if (aa__arena_grow_some(want > AA_GROW_STEP_PAGES ? want : AA_GROW_STEP_PAGES) <= 0) {
		grow_missed(t0);
		__sync_fetch_and_add(&aa__root.stats.self_grow_fails, 1);
	}
	__sync_fetch_and_add(&aa__root.stats.self_grow_ns, bpf_ktime_get_ns() - t0);
}
