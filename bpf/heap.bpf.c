// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap.bpf.c - the heap below the caches: the entry points of the central
 * free lists (tier 3) and the page heap (tier 4), under the heap lock; the
 * heap-wide accounting, the low watermark and its refill ring; and parked
 * frees, the lock-free way into the heap of a free that cannot wait for
 * the lock. What a pointer is, and its claim: lookup.bpf.c.
 *
 * Role:       aa__heap_alloc/free/usable_size and the bulk forms serve
 *             everything the CPU caches do not (caches off, claimed caches,
 *             allocations above the largest class); aa_heap_alloc_bulk
 *             (cached) and aa__heap_return[_bulk] move batches for the cache
 *             tiers. A return never fails: without the lock the blocks are
 *             parked (aa__root.parked) and the next lock holder completes
 *             them.
 * From below: central.bpf.c and buddy.bpf.c (static, locked helpers: they
 *             count their own structures; what leaves or enters the heap
 *             is counted here); lookup.bpf.c (what a pointer is, claims).
 * To above:   alloc.bpf.c's routes, the cache tiers' refills, spills and
 *             fallbacks (cpu_cache.bpf.c, user_cache.bpf.c), debug.bpf.c's
 *             and defer.bpf.c's returns; heap_reset() for lifecycle.bpf.c.
 * Locking:    each entry point takes the heap lock itself. Word 0 of
 *             blocks is written with the custody protocol (internal.h's
 *             model, aa_claim() of lookup.bpf.c).
 */
#include "internal.h"
#include "lock.h"
#include "lookup.h"
#include "heap.h"
#include "buddy.h"
#include "central.h"
#include "self_grow.h"

/* --- Heap-wide accounting, the watermark, the refill ring -----------------
 * What the heap hands out, counted by the entry points below as they take
 * blocks from the central lists and the page heap (REQUIRES: heap lock):
 *   stats.heap_bytes == sum of the bytes of every block out of the
 *     central lists and the page heap (users', cached, parked, in limbo).
 */

/* The low-watermark event ring: one struct aa_refill_event per raise of
 * need_refill, for a loader that sleeps in epoll (aa_heap__wait_refill(),
 * `arena-alloc refill-agent`) instead of reading the flag on a timer.
 * Written only by refill_notify(), after the heap lock is dropped; the
 * flag stays the truth: a lost event (ring full: nobody reads it) is
 * counted in stats.refill_events_lost and the flag is still up. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} aa_refill_rb SEC(".maps");

/* Raise the low-watermark signal (the loader grows the heap and clears it)
 * when an allocation failed or free memory dropped below
 * tun.low_watermark. Returns true when this call raised it: the caller
 * then calls refill_notify() once it has dropped the lock.
 * REQUIRES: heap lock. */
static __always_inline bool check_watermark(bool failed)
{
	return (failed || aa_below_watermark(aa__root.stats.nr_chunks, aa__root.stats.absent_pages,
					     aa__root.stats.heap_bytes, aa__root.tun.low_watermark)) &&
	       AA_RAISE_REFILL(&aa__root.need_refill, &aa__root.refill_signals);
}

/* Tell a sleeping loader that need_refill was raised (or that limbo
 * needs a reclaim: reason). Any context, heap lock NOT held (helper calls;
 * rare: once per raise). A leaf (internal.h, call frames); the event is
 * written in the ring itself, not copied from the stack. */
static __noinline void refill_notify(__u32 reason)
{
	struct aa_refill_event *ev = bpf_ringbuf_reserve(&aa_refill_rb, sizeof(*ev), 0);

	if (!ev) {
		aa_count(refill_events_lost);
		return;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	ev->bytes_in_use = aa__root.stats.heap_bytes;
	ev->bytes_mapped = aa__root.stats.nr_chunks << AA_CHUNK_SHIFT;
	ev->cpu = bpf_get_smp_processor_id();
	ev->reason = reason;
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline void account_alloc(__u64 bytes)
{
	struct aa_heap_stats __arena *st = &aa__root.stats;

	st->heap_bytes += bytes;
	if (st->heap_bytes > st->heap_peak_bytes)
		st->heap_peak_bytes = st->heap_bytes;
	st->heap_live++;
	st->heap_allocs++;
}

static __always_inline void account_free(__u64 bytes)
{
	struct aa_heap_stats __arena *st = &aa__root.stats;

	st->heap_bytes -= bytes;
	st->heap_live--;
	st->heap_frees++;
}

/* --- Freeing claimed blocks ------------------------------------------------ */

/* Free a block that a free claimed (or a cache tier holds): word 0 must be a
 * custody mark. Returns 0 or -AA_ERR_*. REQUIRES: heap lock held.
 * Verifier: a static function, not inlined: a loop that calls it
 * (unpark_locked(), aa__heap_return_round()) reaches its head again with
 * the caller's registers only, and converges in a few passes; inlined, the
 * loop body was walked ten times over (internal.h, call frames). */
static int free_claimed_locked(__u64 ptr)
{
	__u32 off = 0, pmw = 0, run_off, pages;
	int kind = lookup_inline(ptr, &off, &pmw);
	__u64 w, bytes;

	if (kind < 0)
		return -AA_ERR_CORRUPT;
	/* Verifier: lookup() returns one of 47 constants; each would verify
	 * the paths below again. An imprecise kind verifies them once. */
	kind += AA_ZERO;
	w = *(__u64 __arena *)ptr;
	if (!aa_is_transit(ptr, w))
		return -AA_ERR_CORRUPT;
	/* every kind ends in at most one run of pages for the page heap:
	 * one run_free_locked() site, verified once here, not per kind */
	if (kind == AA_KIND_LARGE) {
		bytes = pages_bytes(slot_at(off >> AA_CHUNK_SHIFT)->large_pages);
		pages = large_free_locked(off >> AA_CHUNK_SHIFT, &run_off);
	} else if (kind == AA_KIND_RUN) {
		run_off = off;
		pages = AA_PM_LOW(pmw);
		bytes = pages_bytes(pages);
		page_run_free_locked(off, pages);
	} else {
		run_off = span_start(off, pmw);
		bytes = aa_class(kind)->size;
		pages = central_push_locked(off, kind, run_off);
	}
	account_free(bytes);
	if (pages)
		run_free_locked(run_off, pages);
	return 0;
}

/* --- Parked frees (the model: internal.h) ------------------------------------ */

/*
 * The counters bound the list at every instant (aa_shared.h, struct
 * aa_heap_stats): blocks are counted in frees_parked before the push that makes
 * them visible and in frees_unparked after the pop that takes them, so
 *   frees_unparked <= frees_parked, and
 *   blocks on the list <= frees_parked - frees_unparked
 * (less only while a push is under way); every block on the list carries a
 * transit mark (FREED, or CACHED from a transfer cache's drain).
 * heap_check_locked() checks both. The list is the heap's only while it
 * is published: before the first init aa__root.parked is 0, not AA_NIL,
 * and teardown drops the list with every page.
 */

/* Push the chain first .. last (arena offsets, linked through
 * aa_parked.next; n blocks) on the parked list. Lock-free, any context. */
static __always_inline void park_chain(__u32 first, __u32 last, __u32 n)
{
	aa_parked_t *tail = aa_addr(last);

	__sync_fetch_and_add(&aa__root.stats.frees_parked, n);	/* before: see above */
	aa_stack_push(&aa__root.parked, first, &tail->next);
}

/* Complete up to max parked frees. The heap lock holder is the only one who
 * pops, so the head it read cannot be popped and pushed again meanwhile
 * (no ABA); a failed cmpxchg means a push came in: read again.
 * REQUIRES: heap lock held, heap published (aa__heap_unpark() checks it
 * under the lock). Inlined into aa__heap_unpark(), its only caller. */
static __always_inline __u32 unpark_locked(__u32 max)
{
	__u32 head, next, done = AA_ZERO;
	aa_parked_t *p;

	aa_repeat(AA_MAX_LOOPS) {
		if (done >= max)
			break;
		head = READ_ONCE_ARENA(aa__root.parked);
		if (head == AA_NIL)
			break;
		p = aa_addr(head);
		next = p->next;
		if (__sync_val_compare_and_swap(&aa__root.parked, head, next) != head)
			continue;
		if (free_claimed_locked((__u64)p))
			aa_fail(AA_ERR_CORRUPT);
		done++;
	}
	aa__root.stats.frees_unparked += done;
	return done;
}

/* After a call of the heap's operations below, whatever it returned: if
 * frees are parked, complete a batch (aa__heap_unpark(): one more lock
 * round trip, only while something is parked; it completes nothing in a
 * heap that is not published, whose head may read 0 before the first
 * init: a round trip for each allocation refused before init). Called by
 * their inline wrappers, in their callers' frames (internal.h, call
 * frames), so that unpark_locked() is verified once, in
 * aa__heap_unpark(). Verifier: the head only, no readiness test here: one
 * more live value costs aa_malloc_bulk_u64() a stack slot, and callers
 * four frames deep past the 512-byte stack. */
static __always_inline void heap_settle(void)
{
	if (READ_ONCE_ARENA(aa__root.parked) != AA_NIL)
		aa__heap_unpark();
}

/* The parked list against the rules above: 0, or a checker code (check.bpf.c
 * numbers them). Walks at most AA_CHECK_PARKED blocks (a bounded hold);
 * frees_parked is read after each block, so that a push counted after the
 * walk began is not taken for an uncounted block.
 * REQUIRES: heap lock held, heap published. */
#define AA_CHECK_PARKED	256

static int heap_check_locked(void)
{
	__u64 unparked = aa__root.stats.frees_unparked, seen = AA_ZERO, w;
	__u32 off = READ_ONCE_ARENA(aa__root.parked);
	aa_parked_t *p;

	if (unparked > READ_ONCE_ARENA(aa__root.stats.frees_parked))
		return 20;	/* a block completed that was never parked */
	aa_repeat(AA_CHECK_PARKED) {
		if (off == AA_NIL)
			break;
		if (off >= aa__root.arena_size || (off & (AA_MIN_ALIGN - 1)))
			return 21;
		p = aa_addr(off);
		w = p->mark;
		if (!aa_is_transit((__u64)p, w))
			return 21;	/* a parked block that is not in transit */
		if (++seen > READ_ONCE_ARENA(aa__root.stats.frees_parked) - unparked)
			return 22;	/* more blocks than parked: parked twice, or a cycle */
		off = p->next;
	}
	return 0;
}

/* --- Global entry points --------------------------------------------------
 * Each takes the heap lock itself; sizes are checked by the caller
 * (alloc.bpf.c) but re-checked here where a bad value could corrupt state.
 * Lock failures: an allocation fails (counted: BUSY or NESTED), a free is
 * parked (counted in lock_misses and frees_parked).
 * aa__heap_alloc(), aa__heap_return(), their rounds and aa__heap_unpark()
 * are frame 3 of internal.h's call frames: everything below them inline
 * but the leaves; callers use their inline wrappers, which settle the
 * parked frees.
 */

/* Count an allocation that failed for want of memory (err[NOMEM]; and
 * defer.nomem_in_limbo while limbo holds objects that could have served). */
static __always_inline void alloc_nomem(void)
{
	aa_fail(AA_ERR_NOMEM);
	if (READ_ONCE_ARENA(aa__root.defer.pending_objs))
		__sync_fetch_and_add(&aa__root.defer.nomem_in_limbo, 1);
}

/* An allocation that found no block, for reason err (a negative enum
 * aa_error: NOMEM, no memory; BUSY or NESTED, the heap lock; UNINIT),
 * counted once its caller has nowhere else to look: AA_DRY where the heap
 * is empty and grows itself (not counted: the front door grows it and
 * tries again), else 0 with the failure counted. */
static __always_inline __u64 alloc_failed(int err)
{
	if (err != -AA_ERR_NOMEM) {
		aa_fail(-err);
		return 0;
	}
	if (aa_self_grows())	/* pruned at load before Linux 7.0 */
		return AA_DRY;
	alloc_nomem();
	return 0;
}

/* One lock hold of aa__heap_alloc(): the offset of a block of size bytes
 * (of class cls, or a page run when cls < 0), AA_NIL when the heap had
 * none, or the lock's error (negative, not counted). */
static __always_inline long alloc_once(__u64 size, int cls)
{
	__u64 pages = (size + AA_PAGE_SIZE - 1) >> AA_PAGE_SHIFT;
	int err, first = -1;
	bool raised;
	__u32 off;

	if (cls < 0 && size > AA_CHUNK_SIZE)	/* whole chunks: found before the lock */
		first = large_find(large_chunks(pages));
	err = aa_lock();
	if (err)
		return err;
	if (cls >= 0)
		off = central_pop_locked(cls, 0);
	else if (size <= AA_CHUNK_SIZE)
		off = page_run_alloc_locked(pages);
	else
		off = large_alloc_locked(pages, first);
	if (off != AA_NIL)
		account_alloc(cls >= 0 ? aa_class(cls)->size : pages_bytes(pages));
	raised = check_watermark(off == AA_NIL);
	aa_unlock();
	if (raised)
		refill_notify(off == AA_NIL ? AA_EV_NOMEM : AA_EV_LOW_WATERMARK);
	return off;
}

/* One lock hold's block (alloc_once()) as a user address, or why there
 * was none: -AA_ERR_NOMEM, or the lock's -AA_ERR_BUSY / -AA_ERR_NESTED;
 * not counted. */
static __always_inline long alloc_try(__u64 size, int cls)
{
	long off = alloc_once(size, cls);

	if (off < 0)
		return off;
	if (off == AA_NIL)
		return -AA_ERR_NOMEM;
	aa_count(direct_allocs);	/* a caller's call: no cache counted it */
	return aa__root.arena_base + off;
}

/* Allocate size bytes: an object of class cls (size at most its size), or
 * a page run (cls < 0: page-aligned), as the front door decided
 * (aa_aligned_class(), alloc.bpf.c). Returns a user address, or why there
 * was none (a negative enum aa_error), not counted: its callers count it
 * with alloc_failed() once they give up (heap_alloc() at once; the cache
 * tier's heap_take() after the reserves). */
long aa__heap_alloc(__u64 size, int cls)
{
	if (!aa_heap_ready())
		return -AA_ERR_UNINIT;
	if (!aa_size_ok(size) || cls >= AA_NR_CLASSES ||
	    (cls >= 0 && size > aa_class(cls)->size))
		return -AA_ERR_SIZE;
	return alloc_try(size, cls < 0 ? -1 : cls);
}

/* aa__heap_alloc(), then the parked frees: an address, 0 (the failure
 * counted), or AA_DRY where aa_self_grows() and the heap had no block
 * (not counted: the front door grows the heap and tries again). */
static __always_inline __u64 heap_alloc(__u64 size, int cls)
{
	long p = aa__heap_alloc(size, cls);

	heap_settle();
	return p > 0 ? p : alloc_failed(p);
}

/* One object of class cls for the cache tier, which may yet find one
 * elsewhere: aa__heap_alloc(), then the parked frees; the failure's
 * reason, not counted. */
static __always_inline long heap_take(__u32 cls)
{
	long p = aa__heap_alloc(aa_class(cls)->size, cls);

	heap_settle();
	return p;
}

/* Give a claimed block (word 0 = a custody mark) back to the heap: freed
 * now, or parked when the lock is not available. Returns 0, or -EUCLEAN
 * (counted) if the block was not what its claimer said. */
int aa__heap_return(__u64 ptr)
{
	__u32 off = ptr - aa__root.arena_base;
	int err;

	if (aa_lock()) {
		aa_count(lock_misses);
		park_chain(off, off, 1);
		aa_count(direct_frees);	/* a caller's free: no cache counted it */
		return 0;
	}
	err = free_claimed_locked(ptr);
	aa_unlock();
	if (err)
		return aa_fail(-err);
	aa_count(direct_frees);
	return 0;
}

/* aa__heap_return(), then the parked frees. */
static __always_inline int heap_return(__u64 ptr)
{
	int err = aa__heap_return(ptr);

	heap_settle();
	return err;
}

/* One lock hold of aa_heap_return_bulk(): the claimed blocks arr[from ..
 * end), at most AA_HOLD_OBJS; all parked if the lock is out of reach.
 * Global: verified once, its loop apart from the caller's. Returns how
 * many blocks there were. */
int aa__heap_return_round(__u64 arr, __u32 from, __u32 end)
{
	__u64 __arena *in = (__u64 __arena *)arr;
	__u32 done = AA_ZERO, off, first = AA_NIL, last = AA_NIL;
	int i;
	__u64 e;

	if (end > from + AA_HOLD_OBJS)
		end = from + AA_HOLD_OBJS;
	aa_lock_yield();
	if (aa_lock()) {	/* one chain of the round's blocks, parked at once */
		aa_count(lock_misses);
		aa_for(i, from, end) {
			e = in[i];
			if (!e)
				continue;
			off = e - aa__root.arena_base;
			if (last == AA_NIL)
				first = off;
			else
				((aa_parked_t *)aa_addr(last))->next = off;
			last = off;
			done++;
		}
		if (done)
			park_chain(first, last, done);
		return done;
	}
	aa_for(i, from, end) {
		e = in[i];
		if (!e)
			continue;
		if (free_claimed_locked(e))
			aa_fail(AA_ERR_CORRUPT);
		done++;
	}
	aa_unlock();
	return done;
}

/* aa__heap_return() for the claimed blocks arr[0 .. n) (arena array of
 * user addresses; zero entries are skipped), AA_HOLD_OBJS per lock hold.
 * Returns how many were returned, or -errno. Inline: the rounds are the
 * global functions, verified once. */
static __always_inline int aa_heap_return_bulk(__u64 arr, __u32 n)
{
	__u32 done = AA_ZERO;
	int r;

	if (n > AA_BULK_MAX)
		return -E2BIG;
	aa_for(r, 0, (n + AA_HOLD_OBJS - 1) / AA_HOLD_OBJS)
		done += aa__heap_return_round(arr, r * AA_HOLD_OBJS, n);
	heap_settle();
	return done;
}

/* Usable bytes of an allocation of kind `kind` (lookup()) at off. */
static __always_inline __u64 kind_bytes(int kind, __u32 off, __u32 pmw)
{
	if (kind == AA_KIND_LARGE)
		return pages_bytes(slot_at(off >> AA_CHUNK_SHIFT)->large_pages);
	if (kind == AA_KIND_RUN)
		return pages_bytes(AA_PM_LOW(pmw));
	return aa_class(kind)->size;
}

/* lookup(), and for anything that is not a live allocation a second look
 * under the lock: the snapshot may have caught a free mid-way (a racing
 * double free); the locked answer names the real cause. */
static __always_inline int judge(__u64 ptr, __u32 *off, __u32 *pmw)
{
	int kind = lookup(ptr, off, pmw);

	if (kind < 0 && kind != -AA_ERR_FOREIGN && kind != -AA_ERR_MISALIGNED && !aa_lock()) {
		kind = lookup(ptr, off, pmw);
		aa_unlock();
	}
	return kind;
}

/* Look ptr up and claim it for a free (aa_claim(), with tail): the kind
 * claimed (a class, AA_KIND_RUN or AA_KIND_LARGE; the caller owns the
 * block now) or -errno, counted, with nothing changed. */
static __always_inline int claim_kind(__u64 ptr, __u64 tail)
{
	__u32 off = 0, pmw = 0;
	int kind, err;

	if (!aa_heap_ready())
		return aa_fail(AA_ERR_UNINIT);
	kind = judge(ptr, &off, &pmw);
	if (kind < 0)
		return aa_fail(-kind);
	err = aa_claim(ptr, off, kind, pmw, tail);
	return err < 0 ? aa_fail(-err) : kind;
}

int aa__heap_claim(__u64 ptr)
{
	int kind = claim_kind(ptr, 0);

	return kind < 0 ? kind : 0;
}

/* aa__heap_claim() that says what it claimed, for a caller whose objects
 * a tier holds with tail as their last word (tail_says_free(); debug
 * mode): the kind (>= 0) or -errno, counted. */
long aa__heap_claim_kind(__u64 ptr, __u64 tail)
{
	return claim_kind(ptr, tail);
}

/* Usable bytes of ptr's allocation if ptr starts a live one (> 0), else
 * -errno, counted as aa__heap_claim() counts it. Claims nothing: the check
 * of a deferred free. Lock-free (but judge()'s second look). */
long aa__heap_judge(__u64 ptr)
{
	__u32 off = 0, pmw = 0;
	int kind;

	if (!aa_heap_ready())
		return aa_fail(AA_ERR_UNINIT);
	kind = judge(ptr, &off, &pmw);
	if (kind >= 0 && aa_is_custody(ptr, *(volatile __u64 __arena *)ptr))
		kind = -AA_ERR_DOUBLE_FREE;	/* freed, or in a cache */
	if (kind < 0)
		return aa_fail(-kind);
	return kind_bytes(kind, off, pmw);
}

/* Free ptr, any allocation (the path of everything the CPU caches do not
 * take): claim it, return it. 0 or -errno (counted) with the heap
 * unchanged. */
int aa__heap_free(__u64 ptr)
{
	int kind = claim_kind(ptr, 0);

	return kind < 0 ? kind : heap_return(ptr);
}

/* Usable bytes of the live allocation at ptr, 0 for anything else (a freed
 * or cached block included). Lock-free: exact for a live allocation. */
__u64 aa__heap_usable_size(__u64 ptr)
{
	__u32 off = 0, pmw = 0;
	int kind;

	if (!aa_heap_ready())
		return 0;
	kind = lookup(ptr, &off, &pmw);
	if (kind < 0 || aa_is_custody(ptr, *(__u64 __arena *)ptr))
		return 0;
	return kind_bytes(kind, off, pmw);
}

/* One lock hold's allocations, the body of both rounds below: objects of
 * class cls popped from its central list into arr[from .. end) (user
 * addresses; cached: marked for a CPU cache, else word 0 zeroed) or,
 * given a chain, linked through their first 32-bit word in front of
 * *chain (arena offsets). Returns how many, or -AA_ERR_BUSY /
 * -AA_ERR_NESTED (not counted). */
static __always_inline int alloc_hold(__u64 arr, __u32 from, __u32 end, __u32 cls, __u32 cached,
				      __u32 *chain)
{
	__u64 __arena *out = (__u64 __arena *)arr;
	__u64 mask = cached ? ~0ULL : 0;
	__u32 off, got = AA_ZERO;
	bool dry = false, raised;
	int i, err;

	err = aa_lock();
	if (err)
		return err;
	aa_for(i, from, end) {
		off = central_pop_locked(cls, mask);
		dry = off == AA_NIL;
		if (dry)
			break;
		account_alloc(aa_class(cls)->size);
		if (chain) {
			*(__u32 __arena *)aa_addr(off) = *chain;
			*chain = off;
		} else {
			out[i] = aa__root.arena_base + off;
		}
		got++;
	}
	raised = check_watermark(dry);
	aa_unlock();
	if (raised)
		refill_notify(dry ? AA_EV_NOMEM : AA_EV_LOW_WATERMARK);
	return got;
}

/* One lock hold of aa_heap_alloc_bulk(): objects into arr[from .. end),
 * at most AA_HOLD_OBJS. Global: verified once, its loop apart from the
 * caller's. Returns how many it got, or -AA_ERR_BUSY / -AA_ERR_NESTED
 * (not counted). */
int aa__heap_alloc_round(__u64 arr, __u32 from, __u32 end, __u32 cls, __u32 cached)
{
	if (end > from + AA_HOLD_OBJS)
		end = from + AA_HOLD_OBJS;
	aa_lock_yield();
	return alloc_hold(arr, from, end, cls, cached, NULL);
}

/* Up to n (<= AA_HOLD_OBJS) objects of class cls in one lock hold, for a
 * tier above that keeps them as its own memory (the limbo's nodes):
 * counted in the heap's view only, as no caller's call. Linked through
 * their first 32-bit word (arena offsets, the last AA_NIL). Returns the
 * first's offset, or AA_NIL: none (heap empty, or the lock out of
 * reach; the caller counts its failure). Then, as after any heap
 * operation, the caller completes parked frees (heap_settle()). */
__u32 aa__heap_alloc_chain(__u32 cls, __u32 n)
{
	__u32 first = AA_NIL;

	if (!aa_heap_ready() || cls >= AA_NR_CLASSES)
		return AA_NIL;
	alloc_hold(0, 0, n < AA_HOLD_OBJS ? n : AA_HOLD_OBJS, cls, 0, &first);
	return first;
}

/* Allocate n objects of class cls into arr[0 .. n) (arena array of user
 * addresses), AA_HOLD_OBJS per lock hold. Where aa_self_grows(), a user's
 * call whose round comes back short maps a chunk and the rounds go on,
 * until a self-grow maps none. Returns how many it got (err[NOMEM] counts
 * a call that came back short, err[BUSY] or err[NESTED] one that the lock
 * cut short), or -errno (counted) when it got none.
 * cached: a CPU cache's refill, its objects marked for it (AA_TAG_CACHED)
 * instead of word 0 zeroed, and no self-grow; a part of a batch serves the
 * allocation that asked for it, and one that got none returns why
 * (-AA_ERR_NOMEM, -AA_ERR_BUSY, -AA_ERR_NESTED), not counted: the cache
 * counts the allocation's failure once it looked everywhere
 * (alloc_failed()). Inline, as aa_heap_return_bulk(). */
static __always_inline int aa_heap_alloc_bulk(__u64 arr, __u32 n, __u32 cls, __u32 cached)
{
	__u32 got = AA_ZERO, end;
	int r, k = 0;

	if (!aa_heap_ready())
		return cached ? -AA_ERR_UNINIT : aa_fail(AA_ERR_UNINIT);
	if (cls >= AA_NR_CLASSES)
		return cached ? -AA_ERR_SIZE : aa_fail(AA_ERR_SIZE);
	if (n > AA_BULK_MAX)
		return -E2BIG;
	/* a round per AA_HOLD_OBJS objects, and one more per self-grow */
	aa_for(r, 0, 2 * ((n + AA_HOLD_OBJS - 1) / AA_HOLD_OBJS)) {
		end = got + AA_HOLD_OBJS < n ? got + AA_HOLD_OBJS : n;
		k = aa__heap_alloc_round(arr, got, end, cls, cached);
		if (k < 0)
			break;
		got += k;
		if (got >= n)
			break;
		if (got < end && (cached || !aa_self_grows() || aa__arena_self_grow(1) <= 0))
			break;
	}
	heap_settle();
	if (cached)
		return got ? got : k < 0 ? k : -AA_ERR_NOMEM;
	if (got)	/* a caller's bulk call; refills are not */
		__sync_fetch_and_add(&aa__root.stats.direct_allocs, got);
	if (k < 0) {	/* the lock, in some round: what the others got */
		aa_fail(-k);
		return got ? got : aa_errno(-k);
	}
	if (got < n)
		alloc_nomem();
	return got;
}

/* Complete a batch of parked frees. Returns how many (0: none left, or the
 * heap is not published), or -errno if the lock could not be taken. */
int aa__heap_unpark(void)
{
	int err = aa_lock();
	__u32 n;

	if (err)
		return aa_errno(-err);
	n = aa_heap_ready() ? unpark_locked(AA_HOLD_OBJS) : 0;
	aa_unlock();
	return n;
}

/* Give the empty spans the central lists kept back to the page heap (drain
 * and trim: so that entirely free chunks are seen as such). Returns how
 * many, or -errno if the lock could not be taken. */
int aa__heap_release_empty(void)
{
	__u32 n = AA_ZERO;
	int cls, err;

	aa_for(cls, 0, AA_NR_CLASSES) {	/* one class per hold */
		aa_lock_yield();
		err = aa_lock();
		if (err)
			return aa_errno(-err);
		n += central_release_empty_locked(cls);
		aa_unlock();
	}
	return n;
}

/* --- Reset (lifecycle.bpf.c) ----------------------------------------------- */

/* No parked free, nothing in use, no refill signal. The parked frees go
 * with every other block: completed, for the counters (frees_unparked <=
 * frees_parked).
 * REQUIRES: heap not published (init), or the heap lock held by a
 * teardown that unpublished it. */
static __always_inline void heap_reset(void)
{
	aa__root.parked = AA_NIL;
	aa__root.need_refill = 0;
	aa__root.stats.frees_unparked = READ_ONCE_ARENA(aa__root.stats.frees_parked);
	aa__root.stats.heap_bytes = 0;
	aa__root.stats.heap_live = 0;
	aa__root.large_bytes_in_use = 0;
}
