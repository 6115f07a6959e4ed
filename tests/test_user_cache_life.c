// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_user_cache_life.c - the lifecycle of userspace threads' caches
 * (user/user_cache.c, bpf/user_cache.bpf.c) where it meets something
 * else: a close that finds a drain holding the cache, a free whose
 * aa__run user call fails after the object was claimed, an init between a
 * thread's look at the heap's generation and its open, and owners that
 * the pid alone does not tell apart: a process that exec()ed, a process
 * in another pid namespace; a teardown against a thread opening its
 * cache. (The ASan check tests/asan/uc_destroy.c
 * races thread exits with aa_heap__destroy().)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "test_user_cache.skel.h"

#define MiB		(1ULL << 20)

/* user/internal.h: called by a thread opening its cache between its read
 * of the heap's generation and its OPEN run */
extern void (*aa__uc_open_hook)(struct aa_heap *h);

static struct test_user_cache *skel;
static struct aa_heap *h;
static void *arena_start;	/* h's mapping of the arena */

static void open_heap(void)
{
	t_need_arena();
	skel = test_user_cache__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(128 * MiB)), 0);
	cr_assert_eq(test_user_cache__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 16 * MiB);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	arena_start = aa_heap__ptr(h, aa_heap__root(h)->arena_base);
}

static void close_heap(void)
{
	aa_heap__destroy(h);
	test_user_cache__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(user_cache_life, .init = open_heap, .fini = close_heap, .timeout = 600);

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The user caches that thread tid (-1: any) of process pid owns: how
 * many, and in *idx (if not NULL) the last one's index (-1: none). */
static int caches_of(int pid, int tid, int *idx)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc;
	int i, n = 0;

	if (idx)
		*idx = -1;
	for (i = 0; i < AA_MAX_USER_CACHES; i++) {
		if (!r->user.off[i])
			continue;
		cc = aa_heap__ptr(h, r->arena_base + r->user.off[i]);
		if ((int)cc->owner_pid == pid && (tid < 0 || (int)cc->owner_tid == tid)) {
			n++;
			if (idx)
				*idx = i;
		}
	}
	return n;
}

static int cache_of(int pid, int tid)
{
	int idx;

	caches_of(pid, tid, &idx);
	return idx;
}

/* User caches that a process other than this one owns. */
static int others_caches(void)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc;
	int i, n = 0;

	for (i = 0; i < AA_MAX_USER_CACHES; i++) {
		if (!r->user.off[i])
			continue;
		cc = aa_heap__ptr(h, r->arena_base + r->user.off[i]);
		n += cc->owner_pid && (int)cc->owner_pid != getpid();
	}
	return n;
}

/* --- A close that finds a drain holding the cache ------------------------- */

/* A thread that opens its cache, says which, then waits for `go` and exits
 * (its cache is closed by the key's destructor). */
struct closer {
	sem_t opened, go;
	int tid, idx;
};

static void *closer_run(void *arg)
{
	struct closer *x = arg;
	__u64 p = aa_heap__malloc(h, 64);

	if (p)
		aa_heap__free(h, p);
	x->tid = gettid_();
	x->idx = cache_of(getpid(), x->tid);
	sem_post(&x->opened);
	sem_wait(&x->go);
	return NULL;
}

/* Start a closer, and claim its cache as a drain would (through the mmap). */
static struct aa_cpu_cache *start_closer(struct closer *x, pthread_t *t)
{
	struct aa_cpu_cache *cc;

	sem_init(&x->opened, 0, 0);
	sem_init(&x->go, 0, 0);
	cr_assert_eq(pthread_create(t, NULL, closer_run, x), 0);
	sem_wait(&x->opened);
	cr_assert_geq(x->idx, 0, "the thread opened no cache");
	cc = t_user_cache_mmap(h, x->idx);
	cr_assert_eq(__sync_val_compare_and_swap(&cc->busy, AA_CC_FREE, AA_CC_DRAIN), AA_CC_FREE);
	return cc;
}

struct releaser {
	struct aa_cpu_cache *cc;
	int after_ms;
};

static void *release_later(void *arg)
{
	struct releaser *r = arg;

	sleep_ms(r->after_ms);
	__atomic_store_n(&r->cc->busy, AA_CC_FREE, __ATOMIC_RELEASE);
	return NULL;
}

Test(user_cache_life, a_close_waits_out_a_drain)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 closes = r->user.closes;
	struct closer x = {};
	struct releaser rel;
	pthread_t t, rt;

	rel.cc = start_closer(&x, &t);
	rel.after_ms = 20;	/* a drain that holds it for 20 ms */
	cr_assert_eq(pthread_create(&rt, NULL, release_later, &rel), 0);
	sem_post(&x.go);
	pthread_join(t, NULL);
	pthread_join(rt, NULL);
	cr_assert_eq(rel.cc->owner_pid, 0, "the thread's exit gave up on a busy cache");
	cr_assert_eq(r->user.closes - closes, 1);
	cr_assert_eq(cache_of(getpid(), x.tid), -1);
	t_check(h);
}

Test(user_cache_life, a_close_busy_too_long_is_left_to_reap)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 closes = r->user.closes;
	struct closer x = {};
	struct aa_cpu_cache *cc;
	pthread_t t;

	cc = start_closer(&x, &t);
	sem_post(&x.go);
	pthread_join(t, NULL);	/* its exit tried, bounded, and left */
	cr_assert_eq((int)cc->owner_pid, getpid(), "still owned: the drain holds it");
	__atomic_store_n(&cc->busy, AA_CC_FREE, __ATOMIC_RELEASE);
	cr_assert_geq(aa_heap__reap(h), 0);
	cr_assert_eq(cc->owner_pid, 0, "the exited thread's cache, closed by the next reap");
	cr_assert_eq(r->user.closes - closes, 1);
	t_check(h);
}

/* --- A failed user FREE call after the claim ---------------------------- */

Test(user_cache_life, a_failed_free_run_keeps_the_object)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 p = aa_heap__malloc(h, 64), live;
	struct aa_cpu_cache *cc;
	int idx, err;
	__u32 off;

	cr_assert_neq(p, 0);
	live = t_user_live(h);
	idx = cache_of(getpid(), gettid_());
	cr_assert_geq(idx, 0);
	cc = t_user_cache_mmap(h, idx);
	/* the hit cannot push (a drain holds the cache) and the aa__run user call
	 * finds no cache idx: it fails after the free claimed the object */
	cr_assert_eq(__sync_val_compare_and_swap(&cc->busy, AA_CC_FREE, AA_CC_DRAIN), AA_CC_FREE);
	off = r->user.off[idx];
	r->user.off[idx] = 0;
	err = aa_heap__free(h, p);
	r->user.off[idx] = off;
	__atomic_store_n(&cc->busy, AA_CC_FREE, __ATOMIC_RELEASE);
	cr_assert_eq(err, 0, "the free went another way: %s", strerror(-err));
	cr_assert_eq(t_user_live(h), live - 1, "the object was freed");
	cr_assert_eq(aa_heap__free(h, p), -EALREADY, "once");
	t_check(h);
}

/* --- An init between a thread's generation read and its open ------------- */

/* The hook: a teardown and an init, once (asserted in the test). */
static int hook_err = 1;

static void teardown_and_init(struct aa_heap *heap)
{
	aa__uc_open_hook = NULL;
	hook_err = aa_heap__teardown(heap);
	if (hook_err >= 0)
		hook_err = aa_heap__init(heap, 4 * MiB);
}

struct opener {
	int tid, caches;
	__u64 p, q;
};

static void *opener_run(void *arg)
{
	struct opener *o = arg;

	o->tid = gettid_();
	aa__uc_open_hook = teardown_and_init;
	o->p = aa_heap__malloc(h, 64);	/* opens across an init */
	o->q = aa_heap__malloc(h, 64);
	o->caches = caches_of(getpid(), o->tid, NULL);
	aa_heap__free(h, o->p);
	aa_heap__free(h, o->q);
	return NULL;
}

Test(user_cache_life, an_init_during_open_leaks_no_cache)
{
	const struct aa_root *r = aa_heap__root(h);
	struct opener o = {};
	__u32 gen = r->user.gen;
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, opener_run, &o), 0);
	pthread_join(t, NULL);
	cr_assert_geq(hook_err, 0, "the hook's teardown and init: %s", strerror(-hook_err));
	cr_assert_neq(r->user.gen, gen, "the hook ran an init");
	cr_assert_neq(o.p, 0);
	cr_assert_neq(o.q, 0);
	cr_assert_eq(o.caches, 1, "the thread owned %d caches", o.caches);
	cr_assert_eq(cache_of(getpid(), o.tid), -1, "its exit gave every cache back");
	t_check(h);
}

/* --- Owners the pid alone does not tell apart --------------------------- */

struct holder {
	sem_t ready;
};

/* Allocate on a thread of its own, keep some objects cached, and stay. */
static void *hold_run(void *arg)
{
	struct holder *x = arg;
	__u64 p[16];
	int i;

	for (i = 0; i < 16; i++)
		p[i] = aa_heap__malloc(h, 64);
	for (i = 0; i < 8; i++)
		aa_heap__free(h, p[i]);
	sem_post(&x->ready);
	for (;;)
		pause();
	return NULL;
}

Test(user_cache_life, an_exec_gives_up_the_old_image_caches)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 reaped = r->user.reaped;
	int fd[2], status;
	char line[8] = {};
	pid_t pid;

	cr_assert_eq(pipe(fd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		static struct holder x;
		pthread_t t;

		h = t_child_heap(h, bpf_map__fd(skel->maps.arena), arena_start);
		sem_init(&x.ready, 0, 0);
		if (pthread_create(&t, NULL, hold_run, &x))
			_exit(6);
		sem_wait(&x.ready);
		if (dup2(fd[1], 1) < 0)
			_exit(7);
		/* the new image says so once it runs, and stays */
		execl("/bin/sh", "sh", "-c", "echo ok; exec sleep 60", (char *)NULL);
		_exit(8);
	}
	close(fd[1]);
	cr_assert_eq(read(fd[0], line, 3), 3, "the child did not exec");
	cr_assert_str_eq(line, "ok\n");
	close(fd[0]);
	cr_assert_geq(cache_of(pid, -1), 0, "the old image's cache, still owned");
	cr_assert_geq(aa_heap__reap(h), 1);
	cr_assert_eq(cache_of(pid, -1), -1, "the old image's cache was reaped");
	cr_assert_eq(r->user.reaped - reaped, 1);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	t_check(h);
}

Test(user_cache_life, a_process_in_another_pid_namespace_is_reaped)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 reaped = r->user.reaped, p = aa_heap__malloc(h, 64);
	int status;
	pid_t pid;

	cr_assert_neq(p, 0, "this process's own cache");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pid_t in;

		if (unshare(CLONE_NEWPID))
			_exit(10);
		in = fork();	/* pid 1 of the new namespace */
		if (in == 0) {
			struct aa_heap *c = t_child_heap(h, bpf_map__fd(skel->maps.arena),
							 arena_start);
			__u64 q[16];
			int i;

			for (i = 0; i < 16; i++)
				q[i] = aa_heap__malloc(c, 64);
			for (i = 0; i < 8; i++)
				aa_heap__free(c, q[i]);
			_exit(getpid() == 1 && q[15] ? 0 : 11);	/* no close: it dies */
		}
		if (in < 0 || waitpid(in, &status, 0) != in)
			_exit(12);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 13);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (%d)", status);
	cr_assert_eq(others_caches(), 1, "the dead child's cache, still owned");
	cr_assert_geq(aa_heap__reap(h), 1);
	cr_assert_eq(others_caches(), 0, "the other namespace's dead process was reaped");
	cr_assert_eq(r->user.reaped - reaped, 1);
	cr_assert_geq(cache_of(getpid(), gettid_()), 0, "this process's cache is untouched");
	cr_assert_eq(aa_heap__free(h, p), 0);
	t_check(h);
}

/* --- A teardown against a thread opening its cache ------------------------
 * A teardown sets user.closing before it claims the caches: an OPEN that
 * finds it set gives back what it took, and init resets and releases only
 * what a teardown claimed (aa_shared.h, "User caches"). Both states are
 * written through the mmap, as the interleavings leave them. */

struct caller {
	int tid, caches;
	__u64 p;
};

static void *caller_run(void *arg)
{
	struct caller *c = arg;

	c->tid = gettid_();
	c->p = aa_heap__malloc(h, 64);
	c->caches = caches_of(getpid(), c->tid, NULL);
	if (c->p)
		aa_heap__free(h, c->p);
	return NULL;
}

Test(user_cache_life, an_open_during_a_teardown_takes_no_cache)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 opens = r->user.opens;
	struct caller c = {};
	pthread_t t;

	r->user.closing = 1;	/* a teardown claiming the caches */
	cr_assert_eq(pthread_create(&t, NULL, caller_run, &c), 0);
	pthread_join(t, NULL);
	r->user.closing = 0;
	cr_assert_neq(c.p, 0, "the allocation went through aa__run");
	cr_assert_eq(c.caches, 0, "the thread took a cache the teardown may not have claimed");
	cr_assert_eq(r->user.opens, opens, "an OPEN succeeded");
	cr_assert_eq(caches_of(getpid(), -1, NULL), 0, "a cache kept its owner");
	t_check(h);
}

Test(user_cache_life, init_releases_only_what_the_teardown_claimed)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	struct aa_cpu_cache *cc;
	struct closer x;
	__u64 corrupt;
	__u32 closing;
	pthread_t t;

	sem_init(&x.opened, 0, 0);
	sem_init(&x.go, 0, 0);
	cr_assert_eq(pthread_create(&t, NULL, closer_run, &x), 0);
	sem_wait(&x.opened);
	cr_assert_geq(x.idx, 0, "the thread opened no cache");
	cc = t_user_cache_mmap(h, x.idx);
	cr_assert_geq(aa_heap__teardown(h), 0, "teardown: %s", strerror(errno));
	cr_assert_eq(cc->busy, AA_CC_TEARDOWN, "the teardown claimed the cache");
	closing = r->user.closing;
	/* as a thread inside a hit would hold a cache the teardown missed */
	cc->busy = AA_CC_OWNER;
	corrupt = t_stats(h).err[AA_ERR_CORRUPT];
	cr_assert_geq(aa_heap__init(h, 4 * MiB), 0, "init: %s", strerror(errno));
	cr_assert_eq(cc->busy, AA_CC_OWNER, "init released a claim the teardown never took");
	cr_assert_eq(r->user.off[x.idx], 0, "a cache init could not reset is still listed");
	cr_assert_eq(t_stats(h).err[AA_ERR_CORRUPT], corrupt + 1, "not counted");
	cr_assert_eq(closing, 1, "no OPEN was kept out until init");
	cr_assert_eq(r->user.closing, 0, "OPENs work again");
	cc->busy = AA_CC_FREE;
	sem_post(&x.go);
	pthread_join(t, NULL);
	t_check(h);
}
