// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user_cache.c - tier 1 in userspace: aa_heap__malloc(), aa_heap__calloc()
 * and aa_heap__free() serve from a cache each thread owns in the arena
 * (aa_shared.h, "User caches"), with the hit path of include/aa_hit.h run
 * over this process's mmap: the same claim, pop, push and custody marks
 * as a BPF program's on its CPU's cache, so userspace and BPF free each
 * other's objects, and a double or foreign free is refused on either side.
 * Misses and overflows run aa__run's user calls
 * (bpf/user_cache.bpf.c), which moves a batch.
 *
 * Lifetime: a thread's first call opens its cache (pthread key per heap
 * handle); its exit closes it (the key's destructor), as does
 * aa_heap__destroy() for every thread's cache of the handle. The kernel
 * records the owner (bpf/user_cache.bpf.c, "Owners"): a process that
 * dies, or exec()s, with open caches leaves them to aa_heap__reap()
 * (aa_heap__drain() and the refill agent call it), which any process
 * runs, in any pid namespace. A forked child opens caches of its own (the
 * parent's stay the parent's). A heap that was torn down and initialised
 * again (aa_root.user.gen changed) makes every thread open again.
 *
 * The fast path needs a heap with CPU caches and without debug mode (a
 * debug heap checks every free in BPF): otherwise, and for sizes above
 * AA_MAX_CLASS_SIZE, every call runs aa__run as before.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "internal.h"
#include "aa_hit.h"

/*
 * A thread's cache of one heap: in the thread's h->uc_key slot and on
 * uc_all. Who closes and frees it: exactly one of the thread's exit
 * (uc_thread_exit()), aa_heap__destroy() (aa__heap_close_user()) and, for
 * a thread that exited while a drain held the cache, aa_heap__reap(); each
 * takes it off uc_all under uc_lock and closes it there, so a destroy that
 * runs while a thread exits waits for that thread's close, or finds the
 * record gone (pthread_key_delete() does not wait for a destructor that
 * already started: the destructor looks for its record before touching it).
 */
struct aa_uc {
	struct aa_heap *h;
	struct aa_cpu_cache *cc;	/* NULL: none could be opened (this gen) */
	__u32 idx, gen;
	__u32 tid;			/* the owner thread, as the cache records it */
	pthread_t thread;		/* the thread that opened it */
	bool exited;			/* its thread exited, the cache still owned */
	unsigned long forks;		/* `forks` when opened */
	struct aa_uc *next;		/* on uc_all */
};

/* Forks seen by this process: a record from before a fork belongs to the
 * parent's thread, and is never used or closed here. */
static unsigned long forks;
/* uc_all, every handle's uc_state and setup, and every close: opening a
 * cache is rare, closing one rarer. */
static pthread_mutex_t uc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct aa_uc *uc_all;	/* every handle's records */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
void (*aa__uc_open_hook)(struct aa_heap *h);
/* Handles whose user caches were set up, ever: each one's uc_serial. */
static __u64 uc_serials;
/* This thread's record of the handle it used last, found without
 * pthread_getspecific(): serial names the handle (never reused, so a
 * record of a destroyed handle is never taken for a new one at the same
 * address), uc is what its uc_key slot holds, and changes with it.
 * initial-exec: one load from the thread pointer, no __tls_get_addr()
 * call (as allocators do; the library is not meant to be dlopen()ed late
 * into a process that has no static TLS left). */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	__u64 serial;
	struct aa_uc *uc;
} uc_last;

/* uc into this thread's uc_key slot of h, and uc_last. */
static void uc_set_thread(struct aa_heap *h, struct aa_uc *uc)
{
	pthread_setspecific(h->uc_key, uc);
	uc_last.serial = h->uc_serial;
	uc_last.uc = uc;
}

/* A fork waits for a close in progress: the child gets uc_lock free. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&uc_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&uc_lock);
}

static void atfork_child(void)
{
	forks++;
	pthread_mutex_unlock(&uc_lock);
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static int run_user(struct aa_heap *h, struct aa_user_args *a)
{
	int err = aa__run_call(h, AA_CALL_USER, a, sizeof(*a));

	return err ? (err < 0 ? err : -EINVAL) : 0;
}

/* CLOSE cache idx of thread tid: its objects to the heap. 0, or -errno. */
static int close_cache(struct aa_heap *h, __u32 idx, __u32 tid)
{
	struct aa_user_args a = { .op = AA_USER_CLOSE, .idx = idx, .owner_tid = tid };
	int err = run_user(h, &a);

	return err ? err : (a.ret < 0 ? (int)a.ret : 0);
}

/* A drain holds a cache's claim while it empties it: a close that finds
 * it claimed tries again, 1 ms apart, for at most this long (a drainer
 * descheduled for longer leaves the cache to aa_heap__reap()). */
#define AA_UC_CLOSE_TRIES	100

/* Close uc's cache. 0, or -errno: -EBUSY only after AA_UC_CLOSE_TRIES.
 * REQUIRES: uc_lock held (a destroy waits for the close). */
static int uc_close(struct aa_uc *uc)
{
	const struct aa_root *r = uc->h->root;
	struct timespec ms = { 0, 1000000 };
	int err, tries;

	for (tries = 1;; tries++) {
		/* no cache, the parent's, or one that the next init disowns
		 * (a heap torn down holds every cache until then) */
		if (!uc->cc || uc->forks != forks ||
		    __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != AA_ROOT_MAGIC ||
		    uc->gen != __atomic_load_n(&r->user.gen, __ATOMIC_ACQUIRE))
			return 0;
		err = close_cache(uc->h, uc->idx, uc->tid);
		if (err != -EBUSY || tries == AA_UC_CLOSE_TRIES)
			return err;
		nanosleep(&ms, NULL);
	}
}

/* The link to uc on uc_all, or NULL (not there). Compares addresses only:
 * uc may be freed memory. REQUIRES: uc_lock held. */
static struct aa_uc **uc_find(const struct aa_uc *uc)
{
	struct aa_uc **pp;

	for (pp = &uc_all; *pp; pp = &(*pp)->next)
		if (*pp == uc)
			return pp;
	return NULL;
}

/* Close *pp's cache and free it, unless the cache stays owned (a drain
 * held it past the tries): then it stays on the list, for
 * aa_heap__reap() (keep) or as a leak said (!keep). 1 when freed.
 * REQUIRES: uc_lock held. */
static int uc_retire(struct aa_uc **pp, bool keep)
{
	struct aa_uc *uc = *pp;
	int err = uc_close(uc);

	if (err == -EBUSY && keep) {
		uc->exited = true;
		return 0;
	}
	if (err && err != -ENODEV && err != -ESRCH)
		pr_warn("closing the cache of thread %u: %s%s\n", uc->tid, strerror(-err),
			err == -EBUSY ? " (it stays owned while this process lives)" : "");
	*pp = uc->next;
	free(uc);
	return 1;
}

/* The key's destructor: the thread exits. */
static void uc_thread_exit(void *v)
{
	struct aa_uc **pp;

	pthread_mutex_lock(&uc_lock);
	pp = uc_find(v);
	/* else aa_heap__destroy() took it; and an address freed there and
	 * reused is another thread's record */
	if (pp && pthread_equal((*pp)->thread, pthread_self()))
		uc_retire(pp, true);
	pthread_mutex_unlock(&uc_lock);
}

/* Open a cache for this thread (replacing old, a record of another gen or
 * of the parent process). NULL: use aa__run (no cache for this thread in
 * this gen, or user caches off for this heap). Out of line: the hit path
 * that calls it on a miss keeps no frame for it. */
static __attribute__((noinline, cold)) struct aa_uc *uc_open(struct aa_heap *h,
								struct aa_uc *old)
{
	struct aa_user_args a = { .op = AA_USER_OPEN };
	__u32 gen = __atomic_load_n(&h->root->user.gen, __ATOMIC_ACQUIRE);
	struct aa_uc *uc, **pp;
	int err;

	if (old && old->forks == forks && old->gen == gen)
		return NULL;	/* already tried in this gen */
	if (old) {
		uc_set_thread(h, NULL);
		pthread_mutex_lock(&uc_lock);
		/* of an earlier gen: init disowned its cache; else the
		 * parent's: left on the list, which destroy frees */
		if (old->forks == forks && (pp = uc_find(old))) {
			*pp = old->next;
			free(old);
		}
		pthread_mutex_unlock(&uc_lock);
	}
	uc = calloc(1, sizeof(*uc));
	if (!uc)
		return NULL;
	uc->h = h;
	uc->gen = gen;
	uc->forks = forks;
	uc->thread = pthread_self();
	if (aa__uc_open_hook)
		aa__uc_open_hook(h);
	err = run_user(h, &a);
	if (!err && a.ret == 0) {
		/* the cache is ours from here on: of a.gen, which an init
		 * between the read of gen and the run made newer */
		uc->gen = a.gen;
		uc->idx = a.idx;
		uc->tid = a.owner_tid;
		uc->cc = aa_heap__ptr(h, a.cache);
		if (uc->cc && a.cache + sizeof(*uc->cc) <= h->arena_base + h->arena_size) {
			aa__heap_fast_refresh(h);
		} else {
			pr_warn("the user call opened a cache outside the arena (0x%llx)\n",
				(unsigned long long)a.cache);
			uc->cc = NULL;
			close_cache(h, a.idx, a.owner_tid);
		}
	} else if (!err && a.ret == -EOPNOTSUPP) {
		__atomic_store_n(&h->uc_off_gen, gen + 1, __ATOMIC_RELAXED);
	} else if (err || a.ret != -ENODEV) {
		pr_warn("no cache for this thread (aa_heap__malloc() takes the slow path): %s\n",
			strerror(err ? -err : a.ret < 0 ? (int)-a.ret : EINVAL));
	}
	pthread_mutex_lock(&uc_lock);
	uc->next = uc_all;
	uc_all = uc;
	pthread_mutex_unlock(&uc_lock);
	uc_set_thread(h, uc);
	return uc->cc ? uc : NULL;
}

/* First use of h's user caches: on (1) when its object has aa__run and
 * a root, else off (-1). */
static int uc_setup(struct aa_heap *h)
{
	int st;

	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&uc_lock);
	st = h->uc_state;
	if (!st) {
		st = -1;
		if (h->prog[AA_PROG_RUN] >= 0 && h->root &&
		    !pthread_key_create(&h->uc_key, uc_thread_exit)) {
			aa__heap_fast_refresh(h);
			h->uc_serial = ++uc_serials;	/* under uc_lock */
			st = 1;
		}
		__atomic_store_n(&h->uc_state, st, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&uc_lock);
	return st;
}

/* uc is h's cache for this thread as it stands: open, of this process
 * and of this gen of a published heap. */
static inline bool uc_current(const struct aa_heap *h, const struct aa_uc *uc)
{
	const struct aa_root *r = h->root;

	return uc && uc->cc && uc->forks == forks &&
	       uc->gen == __atomic_load_n(&r->user.gen, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&r->magic, __ATOMIC_RELAXED) == AA_ROOT_MAGIC;
}

/* thread_cache()'s other cases: h's caches not set up yet, another
 * handle's record in uc_last, a cache of an earlier gen or of the parent
 * process, or none. */
static __attribute__((noinline)) struct aa_uc *thread_cache_slow(struct aa_heap *h)
{
	const struct aa_root *r = h->root;
	int st = __atomic_load_n(&h->uc_state, __ATOMIC_ACQUIRE);
	struct aa_uc *uc;

	if (st <= 0 && (st < 0 || uc_setup(h) < 0))
		return NULL;
	uc = uc_last.serial == h->uc_serial ? uc_last.uc : pthread_getspecific(h->uc_key);
	uc_last.serial = h->uc_serial;
	uc_last.uc = uc;
	if (uc_current(h, uc))
		return uc;
	if (!r->magic || __atomic_load_n(&h->uc_off_gen, __ATOMIC_RELAXED) == r->user.gen + 1)
		return NULL;
	return uc_open(h, uc);
}

/* This thread's cache of h, opened on first use, or NULL (aa__run). The
 * hit path's case inline: the handle this thread used last (uc_last; a
 * serial is set only once h's caches are) and its cache current. */
static inline struct aa_uc *thread_cache(struct aa_heap *h)
{
	struct aa_uc *uc = uc_last.uc;	/* one load: the acquire below orders */

	if (uc_last.serial == h->uc_serial && uc_current(h, uc))
		return uc;
	return thread_cache_slow(h);
}

/* --- The calls --------------------------------------------------------- */

static __u64 call_malloc(struct aa_heap *h, __u64 size)
{
	struct aa_op_args a = { .op = AA_OP_MALLOC, .size = size };

	if (aa_heap__call(h, &a))
		return 0;
	if (!a.ptr)
		errno = a.ret < 0 ? -a.ret : ENOMEM;
	return a.ptr;
}

static int call_free(struct aa_heap *h, __u64 addr)
{
	struct aa_op_args a = { .op = AA_OP_FREE, .ptr = addr };
	int err = aa_heap__call(h, &a);

	return err ? err : aa_err((int)a.ret);
}

/* A miss: refill class c through aa__run's user call. */
static __u64 uc_alloc_slow(struct aa_heap *h, struct aa_uc *uc, __u32 c, __u64 size)
{
	struct aa_user_args a = { .op = AA_USER_ALLOC, .idx = uc->idx, .cls = c, .size = size };
	int err = run_user(h, &a);

	if (err)
		return aa_err(err), 0;
	if (!a.ptr)
		errno = a.ret < 0 ? -a.ret : ENOMEM;
	return a.ptr;
}

AA_API __u64 aa_heap__malloc(struct aa_heap *h, __u64 size)
{
	struct aa_uc *uc;
	__u64 p;
	int c;

	AA_CHECK_HEAP(h, 0);
	if (size - 1 < AA_MAX_CLASS_SIZE && (uc = thread_cache(h))) {
		c = __aa_size_class(size);	/* size checked */
		p = __aa_hit_alloc(uc->cc, c, size);
		return p ? p : uc_alloc_slow(h, uc, c, size);
	}
	return call_malloc(h, size);
}

AA_API __u64 aa_heap__calloc(struct aa_heap *h, __u64 n, __u64 size)
{
	struct aa_op_args a = { .op = AA_OP_CALLOC, .arg = n, .size = size };
	__u64 p;

	AA_CHECK_HEAP(h, 0);
	if (n && size && n <= AA_MAX_CLASS_SIZE / size) {
		p = aa_heap__malloc(h, n * size);
		if (p)
			memset(aa_heap__ptr(h, p), 0, n * size);
		return p;
	}
	/* larger, or a bad size: BPF zeroes it, or refuses and counts */
	if (aa_heap__call(h, &a))
		return 0;
	if (!a.ptr)
		errno = a.ret < 0 ? -a.ret : ENOMEM;
	return a.ptr;
}

AA_API int aa_heap__free(struct aa_heap *h, __u64 addr)
{
	struct aa_user_args a = { .op = AA_USER_FREE };
	struct aa_seen s = { 0 };
	struct aa_uc *uc;
	int c, err;
	__u64 v = 0;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!addr)
		return 0;
	uc = thread_cache(h);
	if (!uc)
		return call_free(h, addr);
	c = __aa_class_of(&h->fast, addr, &s);
	if (c < 0 || !__aa_claim_word(addr, h->fast.key, &v) ||
	    __aa_claim(&h->fast, addr, h->fast.key, v, __aa_seen_pm(&s), __aa_seen_e(&s),
		       h->fast.defer))
		return call_free(h, addr);	/* judged and counted there */
	if (__aa_hit_free(uc->cc, addr, c))
		return 0;
	/* full (or drained under us): aa__run's user call spills a batch and takes it */
	a.idx = uc->idx;
	a.cls = c;
	a.ptr = addr;
	err = run_user(h, &a);
	if (!err && (a.ret == 0 || a.ret == -EUCLEAN))
		return aa_err((int)a.ret);	/* taken */
	/* not taken (the run failed, or found no cache): the block is still
	 * ours, claimed; word 0 back as it was (the claim undone), and the
	 * free goes through aa__run, which claims it again */
	__sync_val_compare_and_swap((__aa_word64 *)(unsigned long)addr,
				    h->fast.key ^ addr ^ AA_TAG_FREED, v);
	return call_free(h, addr);
}

/* --- Setup, teardown, reaping ------------------------------------------- */

/* Close every cache this process's threads opened through h. */
void aa__heap_close_user(struct aa_heap *h)
{
	struct aa_uc **pp;

	pthread_mutex_lock(&uc_lock);
	if (h->uc_state > 0) {
		pthread_key_delete(h->uc_key);	/* no destructor starts after this */
		for (pp = &uc_all; *pp;)
			if ((*pp)->h != h || !uc_retire(pp, false))
				pp = &(*pp)->next;
	}
	h->uc_state = -1;
	pthread_mutex_unlock(&uc_lock);
}

/* Close the caches of h's threads that exited while a drain held them.
 * Returns how many were closed. */
static int uc_close_exited(struct aa_heap *h)
{
	struct aa_uc **pp;
	int n = 0;

	pthread_mutex_lock(&uc_lock);
	for (pp = &uc_all; *pp;)
		if ((*pp)->h == h && (*pp)->exited && uc_retire(pp, true))
			n++;
		else
			pp = &(*pp)->next;
	pthread_mutex_unlock(&uc_lock);
	return n;
}

/* The copy of the heap's hot fields that the hit path reads (aa_fast's,
 * from the root: the .data.aa_fast map is not mapped here). */
void aa__heap_fast_refresh(struct aa_heap *h)
{
	const struct aa_root *r = h->root;

	__aa_fast_fill(&h->fast, r,
		       (__u64)(unsigned long)r - (__u64)(unsigned long)h->arena + h->arena_base);
	__atomic_store_n(&h->fast.arena_size, r->arena_size, __ATOMIC_RELEASE);
}

AA_API int aa_heap__reap(struct aa_heap *h)
{
	struct aa_user_args a = { .op = AA_USER_REAP, .idx = AA_USER_ALL };
	int n, err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (h->prog[AA_PROG_RUN] < 0 || !h->root)
		return 0;
	n = uc_close_exited(h);
	err = run_user(h, &a);
	if (err)
		return aa_err(err);
	return n + (a.ret > 0 ? (int)a.ret : 0);
}
