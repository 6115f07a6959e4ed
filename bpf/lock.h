/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lock.h - the test-and-set locks of the BPF library: the heap lock and
 * each transfer cache's. The rules they keep (preemption, nesting,
 * waiting, bounded holds, order) are in the concurrency model at the top
 * of internal.h. Included by the files that take a lock.
 */
#ifndef __AA_LOCK_H
#define __AA_LOCK_H

#include "internal.h"

/*
 * Test-and-set locks in arena words: 0 free, else the holder's CPU + 1.
 * The heap lock (aa__root.lock) protects the central lists and spans, the
 * page heap's free lists and order maps, the page map, the chunk
 * metadata, the slot table and aa__root.stats (but the atomic counters);
 * each transfer cache has its own. The rules (preemption, nesting, waiting, bounded
 * holds, order): the model at the top of internal.h. Callers count a
 * failure in err[] only if their operation fails.
 */
#define AA_HOLD_OBJS		16
#define AA_WAIT_IRQ_NS		5000ULL		/* 5 us */
#define AA_WAIT_TASK_NS		50000000ULL	/* 50 ms */
#define AA_WAIT_CHECK		16		/* spins between clock reads */

/* The slow half of aa_lock_acquire(): preemption is disabled; re-enabled
 * on failure. A static function (a leaf frame: internal.h, call frames),
 * callable with preemption off. */
static int aa_lock_wait(__u32 __arena *lock, __u32 me, __u64 budget)
{
	__u64 start = bpf_ktime_get_ns();
	__u32 v, spins = AA_ZERO;

	__sync_fetch_and_add(&aa__root.lock_waiters, 1);
	aa_repeat(AA_MAX_LOOPS) {
		v = *(volatile __u32 __arena *)lock;
		if (v == 0 && __sync_val_compare_and_swap(lock, 0, me) == 0) {
			__sync_fetch_and_sub(&aa__root.lock_waiters, 1);
			aa_count(lock_waits);
			return 0;
		}
		if (++spins % AA_WAIT_CHECK == 0 && bpf_ktime_get_ns() - start > budget)
			break;
	}
	__sync_fetch_and_sub(&aa__root.lock_waiters, 1);
	bpf_preempt_enable___aa();
	return -AA_ERR_BUSY;
}

/* Between two holds of one operation (the rounds of a bulk call): while
 * another CPU waits for a lock, wait until one got it, at most
 * AA_WAIT_IRQ_NS. A test-and-set lock goes to whoever tries first, and
 * that is the holder that just let go unless it waits. */
static __always_inline void aa_lock_yield(void)
{
	__u64 start;

	if (!READ_ONCE_ARENA(aa__root.lock_waiters))
		return;
	start = bpf_ktime_get_ns();
	aa_repeat(AA_MAX_LOOPS)
		if (!READ_ONCE_ARENA(aa__root.lock_waiters) ||
		    bpf_ktime_get_ns() - start > AA_WAIT_IRQ_NS)
			break;
}

/* Take lock, waiting at most `budget` ns for another CPU (0: the context's
 * budget). Returns 0 holding it with preemption disabled, or
 * -AA_ERR_NESTED / -AA_ERR_BUSY (not counted) with preemption as before. */
static __always_inline int aa_lock_acquire(__u32 __arena *lock, __u64 budget)
{
	__u32 me = bpf_get_smp_processor_id() + 1, v;

	bpf_preempt_disable___aa();
	v = __sync_val_compare_and_swap(lock, 0, me);
	if (v == 0)
		return 0;
	if (v == me) {		/* we interrupted the holder: it cannot go on */
		bpf_preempt_enable___aa();
		return -AA_ERR_NESTED;
	}
	if (!budget)
		budget = aa_on_task_stack() ? AA_WAIT_TASK_NS : AA_WAIT_IRQ_NS;
	return aa_lock_wait(lock, me, budget);
}

static __always_inline void aa_lock_release(__u32 __arena *lock)
{
	aa_store_release(lock, 0);
	bpf_preempt_enable___aa();
}

static __always_inline int aa_lock(void)
{
	return aa_lock_acquire(&aa__root.lock, 0);
}

/* Release the heap lock; lock_gen counts the holds, so that work done in
 * rounds (aa__heap_check()) can tell whether anyone held it in between. */
static __always_inline void aa_unlock(void)
{
	aa__root.lock_gen++;
	aa_lock_release(&aa__root.lock);
}

#endif /* __AA_LOCK_H */
