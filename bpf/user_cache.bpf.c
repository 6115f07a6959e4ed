// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user_cache.bpf.c - tier 1 for userspace threads: the slow paths of the
 * caches that userspace threads own (aa_shared.h, "User caches").
 *
 * Role:       a userspace thread allocates and frees through its own
 *             struct aa_cpu_cache in the arena, over its mmap, with the
 *             hit path of aa_hit.h (user/user_cache.c); what the hit
 *             cannot do runs here, in the aa__user syscall program
 *             (entry.bpf.c): open a cache for the thread, refill it on a
 *             miss, spill it on an overflow, close it (its objects back to
 *             the heap), and reap the cache of a process that died.
 * From below: the CPU caches' slow paths on this cache
 *             (cache_alloc_slow(), cache_free_slow(), cache_empty() of
 *             cpu_cache.bpf.c: transfer caches, then the heap); pages for
 *             a new cache from arena.bpf.c (aa__arena_user_cache_new()).
 * To above:   the aa__user program; aa__user_cache_drain() for aa__drain.
 * Locking:    the CPU cache claim (internal.h's model): the owning thread
 *             claims its cache as AA_CC_OWNER from userspace for each hit;
 *             these paths claim it as the owner would, drain and close as
 *             AA_CC_DRAIN. A thread never holds a lock that a BPF program
 *             waits for: a program never touches a user cache, and a
 *             user cache's claim only keeps out its own thread, drain,
 *             close and teardown, which give up (-EBUSY) rather than wait.
 *
 * Everything read from a user cache is arena memory any process that maps
 * it can write: indexes are bounded, and a freed object is checked (its
 * class, its FREED mark) before a tier takes it.
 */
#include "internal.h"

/* User cache idx, or NULL (out of range, not registered). */
static __always_inline struct aa_cpu_cache __arena *user_cache(__u32 idx)
{
	__u32 off;

	if (idx >= AA_MAX_USER_CACHES)
		return NULL;
	off = aa__root.user.off[idx];
	return off ? aa_addr(off) : NULL;
}

/* A miss of user cache idx: refill class cls, one object for a request of
 * size bytes (<= the class's size). Returns it (word 0 cleared), 0 or
 * AA_DRY (the caller falls back to aa_malloc_u64()). */
__u64 aa__user_cache_alloc(__u32 idx, __u32 cls, __u64 size)
{
	struct aa_cpu_cache __arena *cc = user_cache(idx);

	if (!cc || cls >= AA_NR_CLASSES || size - 1 >= aa_class(cls)->size)
		return 0;
	return cache_alloc_slow(cc, cls, size);
}

/* An overflow of user cache idx: take ptr, an object of class cls that
 * the thread claimed (word 0 = the FREED mark), spilling a batch first if
 * the class is full. Returns 0 (taken), -EUCLEAN (the heap found it
 * inconsistent), -ENOENT (no such cache) or -EINVAL (counted as corrupt:
 * ptr is not a claimed object of class cls; nothing taken). */
int aa__user_cache_free(__u32 idx, __u64 ptr, __u32 cls)
{
	struct aa_cpu_cache __arena *cc = user_cache(idx);
	__u32 __arena *pm = NULL;
	__u32 e = 0;

	if (!cc)
		return -ENOENT;
	if (__aa_class_of(&aa_fast, ptr, &pm, &e) != (int)cls ||
	    *(volatile __u64 __arena *)ptr != aa_custody(ptr, AA_TAG_FREED)) {
		aa_fail(AA_ERR_CORRUPT);
		return -EINVAL;
	}
	return cache_free_slow(cc, ptr, cls);
}

/* Empty user cache idx, from any CPU. Returns the number of objects, 0
 * for no cache, or -EBUSY (its thread is inside a call: try again). */
int aa__user_cache_drain(__u32 idx)
{
	struct aa_cpu_cache __arena *cc = user_cache(idx);
	int n;

	if (!cc)
		return 0;
	if (!__aa_cache_claim(cc, AA_CC_DRAIN))
		return -EBUSY;
	n = cache_empty(cc);
	__aa_cache_release(cc);
	return n;
}

/* AA_USER_OPEN: a cache for the thread a names, one without owner if
 * there is one, else new pages. 0 with a->idx, a->cache and a->gen, or
 * -ENODEV (no heap), -EOPNOTSUPP (caches off, or debug mode: userspace
 * then calls the heap through aa__call), -EINVAL, -ENOMEM, -ENOSPC. */
static int user_open(struct aa_user_args *a)
{
	struct aa_cpu_cache __arena *cc;
	__u32 pid = a->owner_pid;
	int i, idx = -1;

	if (!aa_heap_ready())
		return -ENODEV;
	if (aa__root.flags & (AA_F_NO_CACHES | AA_F_DEBUG))
		return -EOPNOTSUPP;
	if (!pid)
		return -EINVAL;
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		cc = user_cache(i);
		if (cc && cc->owner_pid == 0 &&
		    __sync_val_compare_and_swap(&cc->owner_pid, 0, pid) == 0) {
			idx = i;
			break;
		}
	}
	if (idx < 0)
		idx = aa__arena_user_cache_new(pid);
	if (idx < 0)
		return idx;
	cc = user_cache(idx);
	if (!cc)
		return -ENOENT;
	cc->owner_tid = a->owner_tid;
	cc->owner_start = a->owner_start;
	cc->owner_pidns = a->owner_pidns;
	a->idx = idx;
	a->cache = (__u64)cc;
	a->gen = aa__root.user.gen;
	__sync_fetch_and_add(&aa__root.user.opens, 1);
	return 0;
}

/* AA_USER_CLOSE, AA_USER_REAP: give cache a->idx back, if its owner is
 * the one a names: its objects to the heap, then no owner. A reap takes
 * over the claim of an owner that died inside a hit (internal.h's model
 * says why the cache is whole). Returns the number of objects, or -ENOENT,
 * -ESRCH (another owner), -EBUSY (claimed: the thread is inside a call,
 * or a drain is). */
static int user_close(struct aa_user_args *a, bool reap)
{
	struct aa_cpu_cache __arena *cc = user_cache(a->idx);
	int n;

	if (!cc)
		return -ENOENT;
	if (!a->owner_pid || cc->owner_pid != a->owner_pid || cc->owner_tid != a->owner_tid ||
	    cc->owner_start != a->owner_start || cc->owner_pidns != a->owner_pidns)
		return -ESRCH;
	if (!__aa_cache_claim(cc, AA_CC_DRAIN) &&
	    !(reap && __sync_val_compare_and_swap(&cc->busy, AA_CC_OWNER, AA_CC_DRAIN) ==
			      AA_CC_OWNER))
		return -EBUSY;
	n = cache_empty(cc);
	cc->owner_tid = 0;
	cc->owner_start = 0;
	cc->owner_pidns = 0;
	__aa_store_release(&cc->owner_pid, 0);	/* an OPEN may take it now */
	__aa_cache_release(cc);
	__sync_fetch_and_add(&aa__root.user.closes, 1);
	if (reap)
		__sync_fetch_and_add(&aa__root.user.reaped, 1);
	return n;
}
