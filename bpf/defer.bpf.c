// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * defer.bpf.c - deferred free: an object is reused only after every
 * program that could still see it has finished (like bpf_mem_free_rcu()).
 *
 * Role:       a deferred free (free_deferred_inline(), the body of
 *             api.bpf.c's aa_free_deferred_u64()) puts a live allocation
 *             in limbo; the agent's reclaim call (aa__run) frees it after an
 *             RCU grace period. Heaps initialised with AA_F_DEFER only.
 * From below: aa__heap_judge(), aa_heap_return_bulk() and, for the
 *             limbo's own 16-byte nodes, aa__heap_alloc_chain() and
 *             park_chain() (heap.bpf.c), else aa_cpu_cache_take()
 *             (cpu_cache.bpf.c); aa__arena_self_grow() where the heap
 *             grows itself. No page kfunc but through that; the heap lock
 *             only when the spare nodes run out.
 * To above:   free_deferred_inline() for api.bpf.c; the epoch and reclaim
 *             steps for entry.bpf.c's reclaim call, and the spare nodes'
 *             return for its drain call; defer_reset() for lifecycle.bpf.c.
 * Locking:    lock-free: limbo in internal.h's model. An object in limbo
 *             is still allocated for every tier, its bit set in its
 *             chunk's pending bitmap (one bit per 16-byte granule, metadata
 *             pages 2..3 of the chunk), its node on the stack
 *             aa__root.defer.limbo[e & 1], e the global epoch read after
 *             the bit was set.
 *
 * Epochs and the guarantee. The agent (aa_heap__reclaim()) runs a round:
 *   1. ADVANCE: e = epoch++ (atomic);
 *   2. waits for an RCU grace period (synchronize_rcu(), via a map-in-map
 *      update; membarrier(MEMBARRIER_CMD_GLOBAL) as a fallback);
 *   3. RECLAIM(e): frees every node of epoch <= e (older than e by the
 *      wrap-safe comparison), keeps later ones.
 * A deferred free that read epoch <= e read it before step 1 took effect,
 * and its caller had unlinked the object before that. So every reader
 * that could have found the object was running when step 1 happened, and
 * step 2 waited for it if it ran under RCU: non-sleepable programs (they
 * always do) and sleepable ones inside bpf_rcu_read_lock(). NOT covered:
 * sleepable programs outside bpf_rcu_read_lock() (RCU-tasks-trace is not
 * waited for) and userspace readers of the mmap, who must not hold
 * pointers to objects across their own unlink-then-defer.
 *
 * Bound, which needs no agent: limbo never holds more than twice
 * tun.defer_limit bytes. A deferred free reserves its object's bytes in
 * pending_bytes (an atomic add) before anything else; one that would take
 * it past the bound gives them back and is refused with -ENOMEM (counted
 * in defer.limit_refusals): its object stays allocated, as when no node
 * can be had, and the caller keeps it (frees it plainly if nothing can
 * still find it, or defers it again later). Reclaim needs an RCU grace
 * period, which no BPF program can wait for: an agent that is not
 * scheduled delays reclaim, never lets limbo eat the heap. Over
 * tun.defer_limit a deferred free raises need_refill (the agent reclaims,
 * and grows if that was not enough); an allocation that fails while limbo
 * holds objects counts defer.nomem_in_limbo.
 */
#include "internal.h"
#include "lock.h"
#include "defer.h"
#include "buddy.h"
#include "heap.h"
#include "debug.h"
#include "cpu_cache.h"
#include "self_grow.h"

#define AA_RECLAIM_MAX		(1U << 16)	/* nodes per reclaim call */
_Static_assert(sizeof(struct aa_defer_node) == AA_MIN_SIZE, "a limbo node is one 16-B object");
_Static_assert(__builtin_offsetof(struct aa_defer_node, next) == 0,
	       "aa__heap_alloc_chain() links through the first 32-bit word");

typedef struct aa_defer_node __arena aa_defer_node_t;

/* ptr's word in its chunk's pending bitmap, and its bit there. */
static __always_inline __u64 __arena *pending_word(__u64 ptr, __u64 *bit)
{
	__u32 off = ptr - aa__root.arena_base;
	__u64 g;
	__u64 __arena *bits = __aa_pending_map(off, (__u64)meta_of(off >> AA_CHUNK_SHIFT), &g);

	*bit = 1ULL << (g & 63);
	return &bits[g >> 6];
}

/* Set (set) or clear bit in *w; returns whether it was set before. A
 * cmpxchg loop: the x86 JIT has no fetch-or/and on arena memory. A full
 * barrier. */
static __always_inline bool pending_update(__u64 __arena *w, __u64 bit, bool set)
{
	__u64 old = 0;

	aa_repeat(AA_MAX_LOOPS) {
		old = *(volatile __u64 __arena *)w;
		if (__sync_val_compare_and_swap(w, old, set ? old | bit : old & ~bit) == old)
			break;
	}
	return old & bit;
}

/* Push the nodes first .. last (arena offset, address) on limbo[e & 1].
 * Lock-free, any context. */
static __always_inline void limbo_push(__u32 e, __u32 first, aa_defer_node_t *last)
{
	aa_stack_push(&aa__root.defer.limbo[e & 1], first, &last->next);
}

/* Limbo over tun.defer_limit: raise the refill signal (the agent reclaims,
 * and grows if that was not enough). */
static __always_inline void limbo_check_limit(__u64 pending)
{
	if (pending <= aa__root.tun.defer_limit || READ_ONCE_ARENA(aa__root.need_refill))
		return;
	if (AA_RAISE_REFILL(&aa__root.need_refill, &aa__root.refill_signals)) {
		__sync_fetch_and_add(&aa__root.defer.limit_signals, 1);
		refill_notify(AA_EV_LIMBO_LIMIT);
	}
}

/* Limbo holding pending bytes (> 0) is past its bound, twice
 * tun.defer_limit; without the product, which a huge tunable (a value in
 * the mmap) would wrap. */
static __always_inline bool limbo_over_bound(__u64 pending)
{
	return (pending - 1) >> 1 >= aa__root.tun.defer_limit;
}

/* --- The limbo's nodes ------------------------------------------------------
 * A node is the limbo's own memory, never a caller's allocation: taken
 * from the heap (class 0, AA_MIN_SIZE bytes) a batch at a time by
 * aa__heap_alloc_chain(), which counts it in the heap's view only, or,
 * where the heap lock is out of reach, one from this CPU's cache
 * (aa_cpu_cache_take(): the heap counted it when the cache got it); kept
 * spare between uses on defer.spare; given back to the heap by a drain
 * (aa__defer_drain_nodes()) or with everything by a teardown. Debug mode
 * does not see them: a debug-mode caller never gets a 16-byte object
 * (its tail makes every request bigger), so no checked object shares
 * their spans. Counted:
 *   defer.nodes == spare nodes + nodes on the limbo stacks + nodes a
 *                  deferral or the reclaimer holds between the two
 * defer.spare is the one stack with many poppers (any CPU): its head
 * carries a generation that each pop bumps, so a pop that read an old
 * top fails its cmpxchg even where that node came back on top since.
 */
#define AA_DEFER_NODE_CLS	0
#define AA_DEFER_NODE_BATCH	AA_HOLD_OBJS	/* nodes per refill */

static __always_inline __u64 spare_head(__u64 old, __u32 top, __u32 bump)
{
	return (((old >> 32) + bump) << 32) | top;
}

/* Push the chain first .. last (linked through next) on the spare stack.
 * Any context. */
static __always_inline void spare_push(__u32 first, aa_defer_node_t *last)
{
	__u64 old;

	aa_repeat(AA_MAX_LOOPS) {
		old = READ_ONCE_ARENA(aa__root.defer.spare);
		last->next = (__u32)old;
		if (__sync_val_compare_and_swap(&aa__root.defer.spare, old,
						spare_head(old, first, 0)) == old)
			break;
	}
}

/* Pop a spare node: its arena offset, or AA_NIL (none). Any context. A
 * node read here may be another popper's by now (its next a stale value):
 * the generation then fails the cmpxchg. */
static __always_inline __u32 spare_pop(void)
{
	__u32 top = AA_NIL, next;
	__u64 old;

	aa_repeat(AA_MAX_LOOPS) {
		old = READ_ONCE_ARENA(aa__root.defer.spare);
		top = old;
		if (top == AA_NIL)
			break;
		next = READ_ONCE_ARENA(((aa_defer_node_t *)aa_addr(top))->next);
		if (__sync_val_compare_and_swap(&aa__root.defer.spare, old,
						spare_head(old, next, 1)) == old)
			return top;
		top = AA_NIL;
	}
	return top;
}

/* A batch of nodes from the heap, on the spare stack but for the first
 * where keep (a deferral that found no spare one takes it). The first's
 * arena offset, or AA_NIL (the heap had none, or its lock was out of
 * reach). */
static __always_inline __u32 node_refill(bool keep)
{
	__u32 first = aa__heap_alloc_chain(AA_DEFER_NODE_CLS, AA_DEFER_NODE_BATCH);
	__u32 rest, n = AA_ZERO;
	aa_defer_node_t *last;
	int i;

	heap_settle();
	if (first == AA_NIL)
		return AA_NIL;
	rest = keep ? ((aa_defer_node_t *)aa_addr(first))->next : first;
	last = aa_addr(rest);
	aa_for(i, 0, AA_DEFER_NODE_BATCH) {	/* the chain's last node */
		if (rest == AA_NIL || last->next == AA_NIL)
			break;
		last = aa_addr(last->next);
		n++;
	}
	if (rest != AA_NIL) {
		spare_push(rest, last);
		n++;
	}
	__sync_fetch_and_add(&aa__root.defer.nodes, n + keep);
	return first;
}

/* Fewer than a batch of spare nodes (every node not under an object in
 * limbo is spare, but for those a deferral or the reclaimer holds for a
 * moment: an estimate, which is all a watermark needs). */
static __always_inline bool spare_low(void)
{
	return READ_ONCE_ARENA(aa__root.defer.nodes) -
	       READ_ONCE_ARENA(aa__root.defer.pending_objs) < AA_DEFER_NODE_BATCH;
}

/* A node for a deferral: a spare one, else a refill. Its arena offset, or
 * AA_NIL. A deferral on a task's stack also tops the spare nodes up to a
 * batch: an interrupt's deferral then finds one without the heap lock,
 * which it may not reach (a holder it interrupted, or one on another CPU
 * past its short wait). A frame of its own (internal.h, call frames): both
 * deferring public functions call it, and it is verified once. */
__u32 aa__defer_node_get(void)
{
	__u32 off = spare_pop();

	if (off == AA_NIL)
		return node_refill(true);
	if (aa_on_task_stack() && spare_low())
		node_refill(false);
	return off;
}

/* aa__defer_node_get(), else one from this CPU's cache, else, where the
 * heap grows itself, a chunk mapped and one more try. In the public
 * function's frame. */
static __always_inline __u32 node_get(void)
{
	__u32 off = aa__defer_node_get();
	__u64 p;

	/* the heap lock out of reach (an interrupt over its holder, or a
	 * holder on another CPU past the wait budget): this CPU's cache,
	 * which takes no lock */
	if (off == AA_NIL && (p = aa_cpu_cache_take(AA_DEFER_NODE_CLS))) {
		__sync_fetch_and_add(&aa__root.defer.nodes, 1);
		off = p - aa__root.arena_base;
	}
	if (off == AA_NIL && aa_self_grows() && aa__arena_self_grow(1) >= 0)
		off = aa__defer_node_get();
	return off;
}

/* Give every spare node back to the heap (a drain): popped one by one
 * (racing deferrals may take some meanwhile), parked as one chain, which
 * the drain's unpark rounds complete. Returns how many. Any CPU. */
int aa__defer_drain_nodes(void)
{
	__u32 first = AA_NIL, last = AA_NIL, off, n = AA_ZERO;
	aa_parked_t *b;

	aa_repeat(AA_MAX_LOOPS) {
		off = spare_pop();
		if (off == AA_NIL)
			break;
		b = aa_addr(off);
		b->mark = aa_custody((__u64)b, AA_TAG_FREED);	/* claimed */
		b->next = first;
		if (last == AA_NIL)
			last = off;
		first = off;
		n++;
	}
	if (n) {
		park_chain(first, last, n);
		__sync_fetch_and_sub(&aa__root.defer.nodes, n);
	}
	return n;
}

static __always_inline int free_deferred_inline(__u64 ptr)
{
	__u64 __arena *w;
	__u64 bit, pending;
	aa_defer_node_t *node;
	__u32 node_off;
	long bytes;
	__u32 e;

	if (!ptr)
		return 0;
	if (!(aa__root.flags & AA_F_DEFER) || !aa_heap_ready())
		return aa_heap_ready() ? -EOPNOTSUPP : aa_fail(AA_ERR_UNINIT);
	bytes = aa__heap_judge(ptr);	/* a live allocation's start, or counted */
	if (bytes < 0)
		return bytes;
	w = pending_word(ptr, &bit);
	if (pending_update(w, bit, true))
		return aa_fail(AA_ERR_DOUBLE_FREE);	/* deferred twice */
	/* after the bit (full barrier): a plain free that claimed it first */
	if (aa_is_custody(ptr, *(volatile __u64 __arena *)ptr)) {
		pending_update(w, bit, false);
		return aa_fail(AA_ERR_DOUBLE_FREE);
	}
	/* the bound: reserve the bytes first, so that racing frees cannot
	 * all pass it together */
	pending = __sync_add_and_fetch(&aa__root.defer.pending_bytes, bytes);
	if (limbo_over_bound(pending)) {
		__sync_fetch_and_sub(&aa__root.defer.pending_bytes, bytes);
		pending_update(w, bit, false);
		__sync_fetch_and_add(&aa__root.defer.limit_refusals, 1);
		limbo_check_limit(pending);	/* the agent may still be asleep */
		return -ENOMEM;
	}
	node_off = node_get();
	if (node_off == AA_NIL) {
		__sync_fetch_and_sub(&aa__root.defer.pending_bytes, bytes);
		pending_update(w, bit, false);
		__sync_fetch_and_add(&aa__root.defer.node_failures, 1);
		return -ENOMEM;
	}
	node = aa_addr(node_off);
	node->obj = ptr - aa__root.arena_base;
	node->ts = bpf_ktime_get_ns() >> AA_DEFER_TS_SHIFT;
	e = READ_ONCE_ARENA(aa__root.defer.epoch);	/* after the caller's unlink */
	node->epoch = e;
	if (__sync_fetch_and_add(&aa__root.defer.pending_objs, 1) == 0)
		refill_notify(AA_EV_LIMBO_START);	/* wake the agent */
	if (pending > aa__root.defer.peak_pending_bytes)
		aa__root.defer.peak_pending_bytes = pending;	/* racy max: a statistic */
	__sync_fetch_and_add(&aa__root.defer.deferred, 1);
	limbo_push(e, node_off, node);
	limbo_check_limit(pending);
	return 0;
}

/* --- Reclaim (aa__run's reclaim call) ------------------------------------ */

/* Start a round: returns the epoch it will reclaim (then: a grace period,
 * then aa_defer_reclaim() of it). */
__u32 aa__defer_advance(void)
{
	return __sync_fetch_and_add(&aa__root.defer.epoch, 1);
}

/* A reclaim run's state: only the reclaimer (it holds defer.reclaiming)
 * touches it. Objects it claimed go back to the heap a batch at a time
 * (AA_HOLD_OBJS a lock hold); nodes of later epochs wait on a chain
 * (keep .. keep_last) to be pushed back at the end of the run, and the
 * nodes of reclaimed objects on another (spare .. spare_last), pushed on
 * the spare stack then. In the
 * arena, not on the stack: the per-node work is a global function, whose
 * loop the verifier walks once (6.12 gave up on the inlined one: "The
 * sequence of 8193 jumps is too complex"). */
#define RECLAIM_BATCH	64

struct aa_reclaim_run {
	__u64 batch[RECLAIM_BATCH];	/* claimed objects for the heap */
	__u32 nb;		/* objects in batch */
	__u32 keep, keep_last;	/* chain of kept nodes (arena offsets, AA_NIL) */
	__u32 oldest;		/* oldest epoch on it */
	__u32 rest;		/* nodes taken from limbo, not yet seen (a run's
				 * budget ended): the next run starts there */
	__u32 spare, spare_last;	/* chain of freed nodes (AA_NIL) */
	__u32 pad;
	__u64 now, objects, bytes, kept;
};

_Static_assert(sizeof(struct aa_reclaim_run) <= AA_RECLAIM_STATE_MAX,
	       "AA_GLOBALS_PAGES counts it");

/* static: private to this file, and no skeleton shows it */
static struct aa_reclaim_run __arena aa_reclaim_run;

static __always_inline void batch_flush(void)
{
	__u32 nb = aa_reclaim_run.nb;

	if (nb && nb <= RECLAIM_BATCH)
		aa_heap_return_bulk((__u64)aa_reclaim_run.batch, nb);
	aa_reclaim_run.nb = 0;
}

/* Claim the object of a node whose grace period has passed (word 0 ->
 * FREED mark), clear its pending bit, queue it for the heap. */
static __always_inline void reclaim_object(__u64 ptr)
{
	__u64 v = *(volatile __u64 __arena *)ptr, bit;
	long bytes = aa__heap_usable_size(ptr);
	__u64 __arena *w;

	w = pending_word(ptr, &bit);
	if (!bytes || aa_is_custody(ptr, v) ||
	    __sync_val_compare_and_swap((__u64 __arena *)ptr, v, aa_custody(ptr, AA_TAG_FREED)) != v) {
		aa_fail(AA_ERR_CORRUPT);	/* limbo objects are live and ours */
		return;
	}
	pending_update(w, bit, false);
	if (aa__root.flags & AA_F_DEBUG)
		aa__debug_on_free(ptr);	/* checked and poisoned as any free */
	aa_reclaim_run.batch[aa_reclaim_run.nb & (RECLAIM_BATCH - 1)] = ptr;
	if (++aa_reclaim_run.nb >= RECLAIM_BATCH)
		batch_flush();
	aa_reclaim_run.objects++;
	aa_reclaim_run.bytes += bytes;
}

/* One node the reclaimer popped from limbo (arena offset off) in the
 * round of epoch e: its object freed and the node spare again, or,
 * deferred since the round began, the node kept.
 * REQUIRES: defer.reclaiming. */
int aa__defer_reclaim_node(__u32 off, __u32 e)
{
	aa_defer_node_t *node = aa_addr(off);
	__u64 lat;

	if ((int)(node->epoch - e) > 0) {
		node->next = aa_reclaim_run.keep;
		if (aa_reclaim_run.keep == AA_NIL) {
			aa_reclaim_run.keep_last = off;
			aa_reclaim_run.oldest = node->epoch;
		} else if ((int)(node->epoch - aa_reclaim_run.oldest) < 0) {
			aa_reclaim_run.oldest = node->epoch;
		}
		aa_reclaim_run.keep = off;
		aa_reclaim_run.kept++;
		return 0;
	}
	reclaim_object(aa__root.arena_base + node->obj);
	lat = (__u64)(__u32)((aa_reclaim_run.now >> AA_DEFER_TS_SHIFT) - node->ts) << AA_DEFER_TS_SHIFT;
	aa__root.defer.latency_last_ns = lat;
	if (lat > aa__root.defer.latency_max_ns)
		aa__root.defer.latency_max_ns = lat;
	aa__root.defer.latency_sum_ns += lat;
	node->next = aa_reclaim_run.spare;	/* the limbo's again: spare */
	if (aa_reclaim_run.spare == AA_NIL)
		aa_reclaim_run.spare_last = off;
	aa_reclaim_run.spare = off;
	return 1;
}

/* Reclaim epoch e's limbo: every node of an epoch not after e; later ones
 * (a round that started since) are kept. a->more: the loop budget ended
 * the run with nodes left: run it again. One reclaimer at a time
 * (-EBUSY otherwise). */
static int aa_defer_reclaim(struct aa_reclaim_args *a)
{
	__u32 e = a->epoch, head, next;
	bool done = false;

	if (__sync_val_compare_and_swap(&aa__root.defer.reclaiming, 0, 1))
		return -EBUSY;
	aa_reclaim_run.nb = 0;
	aa_reclaim_run.keep = AA_NIL;
	aa_reclaim_run.keep_last = AA_NIL;
	aa_reclaim_run.spare = AA_NIL;
	aa_reclaim_run.spare_last = AA_NIL;
	aa_reclaim_run.now = bpf_ktime_get_ns();
	aa_reclaim_run.objects = 0;
	aa_reclaim_run.bytes = 0;
	aa_reclaim_run.kept = 0;
	/* what the last run left, else the whole stack of epoch e */
	head = aa_reclaim_run.rest;
	aa_reclaim_run.rest = AA_NIL;
	if (head == AA_NIL || head == 0)
		head = __sync_lock_test_and_set(&aa__root.defer.limbo[e & 1], AA_NIL);
	aa_repeat(AA_RECLAIM_MAX) {
		if (head == AA_NIL) {
			done = true;
			break;
		}
		next = ((aa_defer_node_t *)aa_addr(head))->next;
		aa__defer_reclaim_node(head, e);	/* may free the node */
		head = next;
	}
	if (!done)
		aa_reclaim_run.rest = head;
	batch_flush();
	if (aa_reclaim_run.spare != AA_NIL)
		spare_push(aa_reclaim_run.spare, aa_addr(aa_reclaim_run.spare_last));
	if (aa_reclaim_run.keep != AA_NIL) {
		limbo_push(e, aa_reclaim_run.keep, aa_addr(aa_reclaim_run.keep_last));
		aa__root.defer.oldest_epoch = aa_reclaim_run.oldest;
	} else {
		aa__root.defer.oldest_epoch = READ_ONCE_ARENA(aa__root.defer.epoch);
	}
	/* once per run, not per object: these lines are the deferrers' */
	__sync_fetch_and_sub(&aa__root.defer.pending_objs, aa_reclaim_run.objects);
	__sync_fetch_and_sub(&aa__root.defer.pending_bytes, aa_reclaim_run.bytes);
	aa__root.defer.reclaimed += aa_reclaim_run.objects;
	a->objects = aa_reclaim_run.objects;
	a->bytes = aa_reclaim_run.bytes;
	a->kept = aa_reclaim_run.kept;
	a->more = !done;
	aa__root.defer.reclaim_epoch = e;
	if (done)
		__sync_fetch_and_add(&aa__root.defer.grace_periods, 1);
	aa_store_release(&aa__root.defer.reclaiming, 0);
	return 0;
}

/* --- Reset (lifecycle.bpf.c) ----------------------------------------------- */

/* Empty limbo and no spare node (a teardown dropped what they held), no
 * reclaim running.
 * REQUIRES: heap not published (init, or teardown after unpublishing). */
static __always_inline void defer_reset(void)
{
	aa__root.defer.limbo[0] = AA_NIL;
	aa__root.defer.limbo[1] = AA_NIL;
	aa__root.defer.spare = AA_NIL;
	aa__root.defer.nodes = 0;
	aa__root.defer.pending_objs = 0;
	aa__root.defer.pending_bytes = 0;
	aa__root.defer.reclaiming = 0;
	aa_reclaim_run.rest = AA_NIL;
}
