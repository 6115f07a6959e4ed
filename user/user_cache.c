// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user_cache.c - tier 1 in userspace: aa_heap__malloc(), aa_heap__calloc()
 * and aa_heap__free() serve from a cache each thread owns in the arena
 * (aa_shared.h, "User caches"), with the hit path of include/aa_hit.h run
 * over this process's mmap: the same claim, pop, push and custody marks
 * as a BPF program's on its CPU's cache, so userspace and BPF free each
 * other's objects, and a double or foreign free is refused on either side.
 * Misses and overflows run the aa__user syscall program
 * (bpf/user_cache.bpf.c), which moves a batch.
 *
 * Lifetime: a thread's first call opens its cache (pthread key per heap
 * handle); its exit closes it (the key's destructor), as does
 * aa_heap__destroy() for every thread's cache of the handle. A process
 * that dies with open caches leaves them owned by a pid that is gone:
 * aa_heap__reap() closes them (aa_heap__drain() and the refill agent
 * call it). A forked child
 * opens caches of its own (the parent's stay the parent's). A heap that
 * was torn down and initialised again (aa_root.user.gen changed) makes
 * every thread open again.
 *
 * The fast path needs a heap with CPU caches and without debug mode (a
 * debug heap checks every free in BPF): otherwise, and for sizes above
 * AA_MAX_CLASS_SIZE, every call runs aa__call as before.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"
#include "aa_hit.h"

/* A thread's cache of one heap: in the thread's h->uc_key slot and in
 * h->uc_list (under uc_lock, for aa_heap__destroy()). */
struct aa_uc {
	struct aa_heap *h;
	struct aa_cpu_cache *cc;	/* NULL: none could be opened (this gen) */
	__u32 idx, gen;
	struct aa__owner owner;		/* the thread, as the cache records it */
	unsigned long forks;		/* `forks` when opened */
	struct aa_uc *next;
};

/* Forks seen by this process: a record from before a fork belongs to the
 * parent's thread, and is never used or closed here. */
static unsigned long forks;
/* Every handle's uc_list and setup (opening a cache is rare). */
static pthread_mutex_t uc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	forks++;
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

/* The process's start time, field 22 of /proc/<pid>/stat (after the
 * command, which may hold spaces and parentheses: from the last ')'). */
static __u64 proc_start(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;
	size_t n;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	/* fields 3 .. 22 follow ") " */
	for (i = 3; p && i <= 22; i++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p, " %llu", &start);
	return start;
}

static __u64 pidns_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

int aa__owner_self(struct aa__owner *o)
{
	o->pid = getpid();
	o->tid = syscall(SYS_gettid);
	o->start = proc_start(o->pid);
	o->pidns = pidns_ino("/proc/self/ns/pid");
	return o->start && o->pidns ? 0 : -ENOENT;
}

int aa__owner_dead(const struct aa__owner *o)
{
	__u64 start;

	if (o->pidns != pidns_ino("/proc/self/ns/pid"))
		return 0;	/* another pid namespace: cannot tell */
	if (kill(o->pid, 0) && errno == ESRCH)
		return 1;
	start = proc_start(o->pid);
	return start && start != o->start;	/* 0: read failed or the same */
}

static int run_user(struct aa_heap *h, struct aa_user_args *a)
{
	int err = aa__run_prog(h, AA_PROG_USER, a, sizeof(*a));

	return err ? (err < 0 ? err : -EINVAL) : 0;
}

/* Close uc's cache (its objects to the heap). 0, or -errno. */
static int uc_close(struct aa_uc *uc, __u32 op)
{
	struct aa_user_args a = {
		.op = op, .idx = uc->idx, .owner_pid = uc->owner.pid,
		.owner_tid = uc->owner.tid, .owner_start = uc->owner.start,
		.owner_pidns = uc->owner.pidns,
	};
	int err;

	/* no cache, the parent's, or one that the next init disowns (a heap
	 * torn down holds every cache until then) */
	if (!uc->cc || uc->forks != forks ||
	    __atomic_load_n(&uc->h->root->magic, __ATOMIC_ACQUIRE) != AA_ROOT_MAGIC ||
	    uc->gen != __atomic_load_n(&uc->h->root->user.gen, __ATOMIC_ACQUIRE))
		return 0;
	err = run_user(uc->h, &a);
	return err ? err : (a.ret < 0 ? (int)a.ret : 0);
}

static void uc_unlink(struct aa_heap *h, struct aa_uc *uc)
{
	struct aa_uc **pp;

	pthread_mutex_lock(&uc_lock);
	for (pp = &h->uc_list; *pp; pp = &(*pp)->next)
		if (*pp == uc) {
			*pp = uc->next;
			break;
		}
	pthread_mutex_unlock(&uc_lock);
}

/* The key's destructor: the thread exits. */
static void uc_thread_exit(void *v)
{
	struct aa_uc *uc = v;
	int err = uc_close(uc, AA_USER_CLOSE);

	if (err && err != -ENODEV)
		pr_warn("closing the cache of thread %u: %s\n", uc->owner.tid, strerror(-err));
	uc_unlink(uc->h, uc);
	free(uc);
}

/* Open a cache for this thread (replacing old, a record of another gen or
 * of the parent process). NULL: use aa__call (no cache for this thread in
 * this gen, or user caches off for this heap). */
static struct aa_uc *uc_open(struct aa_heap *h, struct aa_uc *old)
{
	struct aa_user_args a = { .op = AA_USER_OPEN };
	__u32 gen = __atomic_load_n(&h->root->user.gen, __ATOMIC_ACQUIRE);
	struct aa_uc *uc;
	int err;

	if (old && old->forks == forks && old->gen == gen)
		return NULL;	/* already tried in this gen */
	if (old && old->forks == forks) {	/* an earlier gen: init disowned it */
		uc_unlink(h, old);
		free(old);
	}	/* else the parent's: left in the list, which destroy frees */
	if (old)
		pthread_setspecific(h->uc_key, NULL);
	uc = calloc(1, sizeof(*uc));
	if (!uc)
		return NULL;
	uc->h = h;
	uc->gen = gen;
	uc->forks = forks;
	if (aa__owner_self(&uc->owner) == 0) {
		a.owner_pid = uc->owner.pid;
		a.owner_tid = uc->owner.tid;
		a.owner_start = uc->owner.start;
		a.owner_pidns = uc->owner.pidns;
		err = run_user(h, &a);
		if (!err && a.ret == 0 && a.gen == gen &&
		    (uc->cc = aa_heap__ptr(h, a.cache)) &&
		    a.cache + sizeof(*uc->cc) <= h->arena_base + h->arena_size) {
			uc->idx = a.idx;
			aa__heap_fast_refresh(h);
		} else if (!err && a.ret == -EOPNOTSUPP) {
			__atomic_store_n(&h->uc_off_gen, gen + 1, __ATOMIC_RELAXED);
		} else if (!err && a.ret != -ENODEV) {
			pr_warn("no cache for thread %u (aa_heap__malloc() takes the slow path): %s\n",
				uc->owner.tid, strerror(a.ret < 0 ? (int)-a.ret : EINVAL));
		}
	}
	pthread_mutex_lock(&uc_lock);
	uc->next = h->uc_list;
	h->uc_list = uc;
	pthread_mutex_unlock(&uc_lock);
	pthread_setspecific(h->uc_key, uc);
	return uc->cc ? uc : NULL;
}

/* First use of h's user caches: on (1) when its object has aa__user and
 * a root, else off (-1). */
static int uc_setup(struct aa_heap *h)
{
	int st;

	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&uc_lock);
	st = h->uc_state;
	if (!st) {
		st = -1;
		if (h->prog[AA_PROG_USER] >= 0 && h->root &&
		    !pthread_key_create(&h->uc_key, uc_thread_exit)) {
			aa__heap_fast_refresh(h);
			st = 1;
		}
		__atomic_store_n(&h->uc_state, st, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&uc_lock);
	return st;
}

/* This thread's cache of h, opened on first use, or NULL (aa__call). */
static struct aa_uc *thread_cache(struct aa_heap *h)
{
	const struct aa_root *r = h->root;
	int st = __atomic_load_n(&h->uc_state, __ATOMIC_ACQUIRE);
	struct aa_uc *uc;

	if (st <= 0 && (st < 0 || uc_setup(h) < 0))
		return NULL;
	uc = pthread_getspecific(h->uc_key);
	if (uc && uc->cc && uc->forks == forks &&
	    uc->gen == __atomic_load_n(&r->user.gen, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&r->magic, __ATOMIC_RELAXED) == AA_ROOT_MAGIC)
		return uc;
	if (!r->magic || __atomic_load_n(&h->uc_off_gen, __ATOMIC_RELAXED) == r->user.gen + 1)
		return NULL;
	return uc_open(h, uc);
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

/* A miss: refill class c through aa__user. */
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
		c = aa_size_class(size);
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
	__u32 *pm = NULL, e = 0;
	struct aa_uc *uc;
	int c, err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!addr)
		return 0;
	uc = thread_cache(h);
	if (!uc)
		return call_free(h, addr);
	c = __aa_class_of(&h->fast, addr, &pm, &e);
	if (c < 0 || __aa_claim_object(&h->fast, addr, pm, e))
		return call_free(h, addr);	/* judged and counted there */
	if (__aa_hit_free(uc->cc, addr, c))
		return 0;
	/* full (or drained under us): aa__user spills a batch and takes it */
	a.idx = uc->idx;
	a.cls = c;
	a.ptr = addr;
	err = run_user(h, &a);
	return aa_err(err ? err : (int)a.ret);
}

/* --- Setup, teardown, reaping ------------------------------------------- */

/* Close every cache this process's threads opened through h. */
void aa__heap_close_user(struct aa_heap *h)
{
	struct aa_uc *uc, *next;
	int err;

	pthread_mutex_lock(&uc_lock);
	if (h->uc_state > 0) {
		pthread_key_delete(h->uc_key);	/* no destructor runs after this */
		for (uc = h->uc_list; uc; uc = next) {
			next = uc->next;
			err = uc_close(uc, AA_USER_CLOSE);
			if (err && err != -ENODEV && err != -ESRCH)
				pr_warn("closing the cache of thread %u: %s\n", uc->owner.tid,
					strerror(-err));
			free(uc);
		}
		h->uc_list = NULL;
	}
	h->uc_state = -1;
	pthread_mutex_unlock(&uc_lock);
}

/* The copy of the heap's hot fields that the hit path reads (aa_fast's,
 * from the root: the .data.aa_fast map is not mapped here). */
void aa__heap_fast_refresh(struct aa_heap *h)
{
	const struct aa_root *r = h->root;

	h->fast.root = (__u64)(unsigned long)r - (__u64)(unsigned long)h->arena + h->arena_base;
	h->fast.arena_base = h->arena_base;
	h->fast.key = r->cache_key;
	h->fast.zero = 0;
	h->fast.defer = r->flags & AA_F_DEFER;
	__atomic_store_n(&h->fast.arena_size, r->arena_size, __ATOMIC_RELEASE);
}

AA_API int aa_heap__reap(struct aa_heap *h)
{
	struct aa_user_args a;
	const struct aa_cpu_cache *cc;
	struct aa__owner o;
	int i, n = 0, err;
	__u32 off;

	AA_CHECK_HEAP(h, -EINVAL);
	if (h->prog[AA_PROG_USER] < 0 || !h->root)
		return 0;
	for (i = 0; i < AA_MAX_USER_CACHES; i++) {
		off = __atomic_load_n(&h->root->user.off[i], __ATOMIC_RELAXED);
		if (!off || off > h->arena_size - sizeof(*cc))
			continue;
		if (aa__heap_read_owner(h, off, &o) || !o.pid || !aa__owner_dead(&o))
			continue;
		memset(&a, 0, sizeof(a));
		a.op = AA_USER_REAP;
		a.idx = i;
		a.owner_pid = o.pid;
		a.owner_tid = o.tid;
		a.owner_start = o.start;
		a.owner_pidns = o.pidns;
		err = run_user(h, &a);
		if (!err && a.ret >= 0)
			n++;
	}
	return n;
}
