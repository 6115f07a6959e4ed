// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user_cache.bpf.c - tier 1 for userspace threads: the slow paths of the
 * caches that userspace threads own (aa_shared.h, "User caches").
 *
 * Role:       a userspace thread allocates and frees through its own
 *             struct aa_cpu_cache in the arena, over its mmap, with the
 *             hit path of aa_hit.h (user/user_cache.c); what the hit
 *             cannot do runs here, in aa__run's user calls
 *             (entry.bpf.c): open a cache for the thread, refill it on a
 *             miss, spill it on an overflow, close it (its objects back to
 *             the heap), and reap the caches of a process that died or
 *             exec()ed (the kernel tells, "Owners" below).
 * From below: the CPU caches' slow paths on this cache
 *             (cache_alloc_slow(), cache_free_slow(), cache_empty() of
 *             cpu_cache.bpf.c: transfer caches, then the heap); pages for
 *             a new cache from arena.bpf.c (pages_get()).
 * To above:   aa__run's user calls; aa__user_cache_drain() for the drain call;
 *             the caches' pages, resets and teardown claims for
 *             lifecycle.bpf.c (user_caches_*(); the rest through
 *             cpu_cache.bpf.c's caches_*() over aa__root.user.off[]).
 * Locking:    the CPU cache claim (internal.h's model): the owning thread
 *             claims its cache as AA_CC_OWNER from userspace for each hit;
 *             these paths claim it as the owner would, drain and close as
 *             AA_CC_DRAIN (reap too, taking a dead owner's AA_CC_OWNER
 *             claim over). A thread never holds a lock that a BPF program
 *             waits for: a program never touches a user cache, and a
 *             user cache's claim only keeps out its own thread, drain,
 *             close and teardown, which give up (-EBUSY) rather than wait.
 *
 * Everything read from a user cache is arena memory any process that maps
 * it can write: indexes are bounded, and a freed object is checked (its
 * class, its FREED mark) before a tier takes it.
 */
#include "internal.h"
#include "user_cache.h"
#include "arena.h"
#include "cpu_cache.h"

/* User cache idx, or NULL (out of range, not registered). */
static __always_inline struct aa_cpu_cache __arena *user_cache(__u32 idx)
{
	__u32 off;

	if (idx >= AA_MAX_USER_CACHES)
		return NULL;
	off = aa__root.user.off[idx];
	return off ? aa_addr(off) : NULL;
}

/* --- Caches' pages and resets (lifecycle.bpf.c) ---------------------------- */

/* No owner for user cache cc: the owner fields cleared, owner_pid last
 * (an OPEN may take it once it reads 0). REQUIRES: cc claimed. */
static __always_inline void user_cache_disown(struct aa_cpu_cache __arena *cc)
{
	cc->owner_tid = 0;
	cc->owner_start = 0;
	cc->owner_exec = 0;
	__aa_store_release(&cc->owner_pid, 0);
}

/* The user caches a teardown kept (it left them claimed) and those
 * registered since by an OPEN that then failed (unclaimed, no one's):
 * emptied, disowned and released; gen tells their former owners to open
 * again, and OPENs work again. A cache someone else holds a claim of
 * cannot be reset: by the protocol there is none; one is left to its
 * holder, out of the table (counted as corrupt).
 * REQUIRES: heap not published (init). */
static void user_caches_reset(void)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	int i;

	__sync_fetch_and_add(&aa__root.user.gen, 1);
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		off = aa__root.user.off[i];
		if (!off)
			continue;
		if (!teardown_claim(off)) {
			aa__root.user.off[i] = 0;
			aa_fail(AA_ERR_CORRUPT);
			continue;
		}
		cc = aa_addr(off);
		reset_cache(cc);
		user_cache_disown(cc);
		teardown_release(off);
	}
	WRITE_ONCE_ARENA(aa__root.user.closing, 0);
}

/* A new user cache for process pid (its owner from the start: no OPEN can
 * take it before its owner fields are set), registered at the first free
 * index. Returns the index, -ENOMEM (no pages) or -ENOSPC (all
 * AA_MAX_USER_CACHES registered). Sleepable only (aa__run's user calls). */
int aa__user_cache_new(__u32 pid)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	int i;

	if (!pid)
		return -EINVAL;
	cc = pages_get(NULL, AA_CPU_CACHE_PAGES);
	if (!cc)
		return -ENOMEM;
	reset_cache(cc);	/* fresh pages: busy == AA_CC_FREE */
	cc->owner_pid = pid;
	off = (__u64)cc - aa__root.arena_base;
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		cc->cpu = AA_USER_CACHE | i;
		if (__sync_val_compare_and_swap(&aa__root.user.off[i], 0, off) == 0)
			return i;
	}
	pages_put(cc, AA_CPU_CACHE_PAGES);
	return -ENOSPC;
}

/* Give back the teardown's claims of every user cache, and let OPENs and
 * teardowns in again. */
static __always_inline void user_caches_release_all(void)
{
	caches_release_all(aa__root.user.off);
	WRITE_ONCE_ARENA(aa__root.user.closing, 0);
}

/* Set user.closing, then claim every user cache for teardown: one
 * teardown at a time, and a cache registered meanwhile is claimed here or
 * its OPEN fails (aa_shared.h, "User caches"). true with all claimed and
 * closing set; false with none claimed and closing as it was (a user
 * thread is inside one, or another teardown runs). */
static __always_inline bool user_caches_claim_all(void)
{
	if (__sync_lock_test_and_set(&aa__root.user.closing, 1))
		return false;
	if (caches_claim_all(aa__root.user.off))
		return true;
	WRITE_ONCE_ARENA(aa__root.user.closing, 0);
	return false;
}

/* A miss of user cache idx: refill class cls, one object for a request of
 * size bytes (<= the class's size). Returns it (word 0 cleared), 0 or
 * AA_DRY (the caller falls back to aa_malloc_u64()); 0 in a heap that is
 * not published, as every entry. */
__u64 aa__user_cache_alloc(__u32 idx, __u32 cls, __u64 size)
{
	struct aa_cpu_cache __arena *cc = user_cache(idx);

	if (!cc || !aa_heap_ready() || cls >= AA_NR_CLASSES || size - 1 >= aa_class(cls)->size)
		return 0;
	return cache_alloc_slow(cc, cls, size);
}

/* An overflow of user cache idx: take ptr, an object of class cls that
 * the thread claimed (word 0 = the FREED mark), spilling a batch first if
 * the class is full. Returns 0 (taken), -EUCLEAN (the heap found it
 * inconsistent), -ENOENT (no such cache), -ENODEV (the heap is not
 * published) or -EINVAL (counted as corrupt: ptr is not a claimed object
 * of class cls; nothing taken). */
int aa__user_cache_free(__u32 idx, __u64 ptr, __u32 cls)
{
	struct aa_cpu_cache __arena *cc = user_cache(idx);
	struct aa_seen s = {};

	if (!cc)
		return -ENOENT;
	if (!aa_heap_ready())
		return -ENODEV;
	if (__aa_class_of(&aa_fast, ptr, &s) != (int)cls ||
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

/* --- Owners ---------------------------------------------------------------
 * aa__run's user call runs in the calling thread, so the kernel records a cache's
 * owner itself (user_open()): owner_pid and owner_tid, its ids in the
 * initial pid namespace (whatever namespace it runs in), and owner_start
 * and owner_exec, what tells this process from a later one with the same
 * pid (its start time) and from the image it exec()s (its exec count).
 * Both are read from the thread group leader, the task that the process's
 * pid names: a thread that execs takes the leader's place and its start
 * time over, and bumps self_exec_id. A process owns its caches while a
 * lookup of owner_pid finds a task with both the same (a zombie does too,
 * until its parent reaps it); a reap never depends on /proc or on the
 * reaper's pid namespace.
 */

/* Process pid's identity: true with *start and *exec, or false (no such
 * process). */
static __always_inline bool owner_identity(__u32 pid, __u64 *start, __u64 *exec)
{
	struct task_struct *t = bpf_task_from_pid___aa((s32)pid);

	if (!t)
		return false;
	*start = t->start_time;
	*exec = t->self_exec_id;
	bpf_task_release___aa(t);
	return true;
}

/* AA_USER_OPEN: a cache for the calling thread, one without owner if
 * there is one, else new pages. 0 with a->idx, a->cache, a->gen and the
 * owner's ids, or -ENODEV (no heap), -EOPNOTSUPP (caches off, or debug
 * mode: userspace then calls the heap through aa__run), -ESRCH, -ENOMEM,
 * -ENOSPC. A frame of its own, as user_reap(): inlined, their locals
 * would sit in aa__run's frame, under the stack of every call it makes. */
static __noinline int user_open(struct aa_user_args *a)
{
	struct aa_cpu_cache __arena *cc;
	__u64 id = bpf_get_current_pid_tgid(), start = 0, exec = 0;
	__u32 pid = id >> 32;
	int i, idx = -1;

	if (!aa_heap_ready())
		return -ENODEV;
	if (aa_fast.mode & AA_FAST_OFF)	/* no fast path in this mode */
		return -EOPNOTSUPP;
	if (!pid || !owner_identity(pid, &start, &exec) || !start)
		return -ESRCH;
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		cc = user_cache(i);
		if (cc && cc->owner_pid == 0 &&
		    __sync_val_compare_and_swap(&cc->owner_pid, 0, pid) == 0) {
			idx = i;
			break;
		}
	}
	if (idx < 0)
		idx = aa__user_cache_new(pid);
	if (idx < 0)
		return idx;
	cc = user_cache(idx);
	if (!cc)
		return -ENOENT;
	/* after the cmpxchg that took or registered cc: a teardown that
	 * started before it may not have claimed cc (aa_shared.h, "User
	 * caches"); then it is given back and the OPEN fails */
	if (READ_ONCE_ARENA(aa__root.user.closing) || !aa_heap_ready()) {
		__aa_store_release(&cc->owner_pid, 0);
		return -ENODEV;
	}
	cc->owner_tid = (__u32)id;
	cc->owner_exec = exec;
	aa_store_fence();	/* a reaper that sees owner_start sees the rest */
	WRITE_ONCE_ARENA(cc->owner_start, start);
	a->idx = idx;
	a->cache = (__u64)cc;
	a->gen = aa__root.user.gen;
	a->owner_pid = pid;
	a->owner_tid = (__u32)id;
	__sync_fetch_and_add(&aa__root.user.opens, 1);
	return 0;
}

/* Empty cc, which the caller claimed as AA_CC_DRAIN, and give it back:
 * no owner, released. Returns the number of objects. */
static __always_inline int user_give_back(struct aa_cpu_cache __arena *cc)
{
	int n = cache_empty(cc);

	user_cache_disown(cc);	/* an OPEN may take it now */
	__aa_cache_release(cc);
	__sync_fetch_and_add(&aa__root.user.closes, 1);
	return n;
}

/* AA_USER_CLOSE: the calling process gives cache a->idx of its thread
 * a->owner_tid back. Returns the number of objects, or -ENODEV, -ENOENT,
 * -ESRCH (another owner), -EBUSY (claimed: the thread is inside a call,
 * or a drain is). */
static int user_close(struct aa_user_args *a)
{
	struct aa_cpu_cache __arena *cc = user_cache(a->idx);
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 start = 0, exec = 0;

	if (!aa_heap_ready())
		return -ENODEV;	/* a teardown holds it: the next init disowns it */
	if (!cc)
		return -ENOENT;
	if (!owner_identity(pid, &start, &exec) || cc->owner_pid != pid ||
	    cc->owner_tid != a->owner_tid || cc->owner_start != start || cc->owner_exec != exec)
		return -ESRCH;
	if (!__aa_cache_claim(cc, AA_CC_DRAIN))
		return -EBUSY;
	return user_give_back(cc);
}

/*
 * Cache idx, if its owner is gone: claimed (an AA_CC_OWNER claim is taken
 * over: internal.h's model says why the cache is whole), emptied and
 * given back. Returns 1 (reaped), 0 (no owner, a live one, or one an OPEN
 * is still recording) or -EBUSY.
 *
 * Under the claim (a full barrier) an owner changes only by an OPEN of a
 * cache without owner, which records owner_start last: if the fields
 * still name the process judged gone, it was the owner all along; if not
 * (another reaper gave the cache back and a new owner took it between
 * the judgement and the claim), nothing was touched, and a claim taken
 * over is handed back as it was (or, if its holder released it since,
 * left to whoever holds it now).
 */
static __always_inline int user_reap_one(__u32 idx)
{
	struct aa_cpu_cache __arena *cc = user_cache(idx);
	__u64 start, exec, s = 0, e = 0;
	bool took = false;
	__u32 pid;

	if (!cc)
		return 0;
	pid = READ_ONCE_ARENA(cc->owner_pid);
	start = READ_ONCE_ARENA(cc->owner_start);
	exec = READ_ONCE_ARENA(cc->owner_exec);
	if (!pid || !start || (owner_identity(pid, &s, &e) && s == start && e == exec))
		return 0;
	if (!__aa_cache_claim(cc, AA_CC_DRAIN)) {
		if (__sync_val_compare_and_swap(&cc->busy, AA_CC_OWNER, AA_CC_DRAIN) != AA_CC_OWNER)
			return -EBUSY;
		took = true;
	}
	/* owner_start by a cmpxchg that changes nothing: ordered after
	 * owner_pid and before owner_exec (user_open() writes it last) */
	if (READ_ONCE_ARENA(cc->owner_pid) != pid ||
	    __sync_val_compare_and_swap(&cc->owner_start, 0, 0) != start ||
	    READ_ONCE_ARENA(cc->owner_exec) != exec) {
		if (took)
			__sync_val_compare_and_swap(&cc->busy, AA_CC_DRAIN, AA_CC_OWNER);
		else
			__aa_cache_release(cc);
		return 0;
	}
	user_give_back(cc);
	__sync_fetch_and_add(&aa__root.user.reaped, 1);
	return 1;
}

/* AA_USER_REAP: cache a->idx, or every cache (AA_USER_ALL), whose owner
 * is gone. Returns the number reaped, or -ENODEV, -ENOENT. A frame of its
 * own (user_open()). */
static __noinline int user_reap(struct aa_user_args *a)
{
	__u32 from = a->idx, to = a->idx + 1;
	int i, n = 0;

	if (!aa_heap_ready())
		return -ENODEV;	/* a teardown holds every cache */
	if (a->idx == AA_USER_ALL) {
		from = 0;
		to = AA_MAX_USER_CACHES;
	} else if (a->idx >= AA_MAX_USER_CACHES) {
		return -ENOENT;
	}
	aa_for(i, from, to)
		if (user_reap_one(i) > 0)
			n++;
	return n;
}
