// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_user_cache.c - userspace threads' caches (user/user_cache.c,
 * bpf/user_cache.bpf.c): aa_heap__malloc()/aa_heap__free() served from
 * the thread's own cache in the arena; frees across the two sides, both
 * ways, with double and foreign frees refused and counted on either;
 * thread exit, fork, teardown, debug mode; a process that dies with a
 * cache is reaped by the next drain; and BPF programs on every CPU never
 * wait for a userspace process that is stopped or killed in the middle
 * of its calls.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "test_user_cache.h"
#include "test_user_cache.skel.h"

#define MiB		(1ULL << 20)

static struct test_user_cache *skel;
static struct aa_heap *h;
static void *arena_start;	/* h's mapping of the arena */

static void open_heap_flags(__u32 flags)
{
	t_need_arena();
	skel = test_user_cache__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(128 * MiB)), 0);
	cr_assert_eq(test_user_cache__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 16 * MiB, .flags = flags);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	arena_start = aa_heap__ptr(h, aa_heap__root(h)->arena_base);
}

static void open_heap(void)
{
	open_heap_flags(0);
}

static void close_heap(void)
{
	aa_heap__destroy(h);
	test_user_cache__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(user_cache, .init = open_heap, .fini = close_heap, .timeout = 600);

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

/* The index of the user cache that thread tid of process pid owns, or -1. */
static int cache_of(int pid, int tid)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc;
	int i;

	for (i = 0; i < AA_MAX_USER_CACHES; i++) {
		if (!r->user.off[i])
			continue;
		cc = aa_heap__ptr(h, r->arena_base + r->user.off[i]);
		if ((int)cc->owner_pid == pid && (tid < 0 || (int)cc->owner_tid == tid))
			return i;
	}
	return -1;
}

/* Objects of class cls in user cache idx (0 for none). */
static __u32 cached_in(int idx, int cls)
{
	const struct aa_cpu_cache *cc = aa_heap__user_cache(h, idx);

	cr_assert_not_null(cc, "user cache %d: %s", idx, strerror(errno));
	return cc->cls[cls].count;
}

/* The pages the heap holds from the kernel: its chunks' and the CPU and
 * user caches' (the ledger of bpf/arena.bpf.c). */
static void assert_ledger(void)
{
	t_assert_ledger(aa_heap__root(h), "user caches");
}

Test(user_cache, a_thread_allocates_from_its_own_cache)
{
	struct aa_stats s0 = t_stats(h), s1;
	const struct aa_cpu_cache *cc;
	__u64 p[100];
	int i, j, idx, c = aa_size_class(64);

	for (i = 0; i < 100; i++) {
		p[i] = aa_heap__malloc(h, 64);
		cr_assert_neq(p[i], 0, "malloc %d: %s", i, strerror(errno));
		cr_assert_eq(p[i] & 15, 0);
		cr_assert_not_null(aa_heap__ptr(h, p[i]));
		cr_assert_eq((__u64)(unsigned long)aa_heap__ptr(h, p[i]), p[i],
			     "the address is this process's pointer too");
		memset(aa_heap__ptr(h, p[i]), i, 64);
		for (j = 0; j < i; j++)
			cr_assert_neq(p[i], p[j], "0x%llx handed out twice", (unsigned long long)p[i]);
	}
	idx = cache_of(getpid(), gettid_());
	cr_assert_geq(idx, 0, "this thread opened no cache");
	cc = aa_heap__user_cache(h, idx);
	cr_assert_not_null(cc);
	cr_assert_eq(cc->cpu, AA_USER_CACHE | idx);
	cr_assert_eq(cc->cls[c].stats.allocs, 100);
	cr_assert_geq(cc->cls[c].stats.refills, 1);
	cr_assert_geq(cc->cls[c].cap, 2);
	cr_assert_leq(cc->cls[c].stats.refills, 100 / (cc->cls[c].cap / 2) + 1,
		      "%llu refills for 100 allocations: a syscall per miss only, each moving "
		      "half the cache's capacity (%u)", (unsigned long long)cc->cls[c].stats.refills,
		      cc->cls[c].cap);
	for (i = 0; i < 100; i++)
		cr_assert_eq(aa_heap__free(h, p[i]), 0, "free %d", i);
	cc = aa_heap__user_cache(h, idx);
	cr_assert_eq(cc->cls[c].stats.frees, 100);
	s1 = t_stats(h);
	cr_assert_eq(s1.nr_allocs - s0.nr_allocs, 100, "the totals count the calls");
	cr_assert_eq(s1.nr_frees - s0.nr_frees, 100);
	cr_assert_eq(s1.live_allocs, s0.live_allocs);
	cr_assert_geq(s1.cached_objs, cached_in(idx, c));
	t_check(h);
	assert_ledger();
}

Test(user_cache, bpf_frees_what_userspace_allocated)
{
	__u64 d0 = t_stats(h).err[AA_ERR_DOUBLE_FREE];
	__u64 p = aa_heap__malloc(h, 200);

	cr_assert_neq(p, 0);
	cr_assert_eq(t_free(h, p), 0, "a BPF program frees a userspace allocation");
	cr_assert_eq(t_free(h, p), -EALREADY, "a second BPF free is refused");
	cr_assert_eq(aa_heap__free(h, p), -EALREADY, "so is a userspace one");
	cr_assert_eq(errno, EALREADY);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE] - d0, 2);
	t_check(h);
}

Test(user_cache, userspace_frees_what_bpf_allocated)
{
	__u64 d0 = t_stats(h).err[AA_ERR_DOUBLE_FREE];
	__u64 p = t_malloc(h, 200), q;
	int c = aa_size_class(200), idx;
	__u32 n;

	cr_assert_neq(p, 0);
	cr_assert_eq(aa_heap__free(h, p), 0, "userspace frees a BPF allocation");
	idx = cache_of(getpid(), gettid_());
	cr_assert_geq(idx, 0);
	n = cached_in(idx, c);
	cr_assert_geq(n, 1, "it went to this thread's cache");
	cr_assert_eq(aa_heap__free(h, p), -EALREADY, "a second userspace free is refused");
	cr_assert_eq(t_free(h, p), -EALREADY, "a BPF free of a cached object is refused");
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE] - d0, 2);
	cr_assert_eq(cached_in(idx, c), n, "the refused frees changed nothing");
	q = aa_heap__malloc(h, 200);
	cr_assert_eq(q, p, "the cache hands it out again (LIFO), once");
	cr_assert_eq(aa_heap__free(h, q), 0);
	t_check(h);
}

Test(user_cache, bad_frees_from_userspace_are_refused_and_counted)
{
	struct aa_stats s0 = t_stats(h), s1;
	__u64 p = aa_heap__malloc(h, 64);

	cr_assert_neq(p, 0);
	cr_assert_eq(aa_heap__free(h, p + 16), -ENOENT, "interior");
	cr_assert_eq(aa_heap__free(h, p + 4), -EINVAL, "misaligned");
	cr_assert_eq(aa_heap__free(h, 4096), -EFAULT, "not in the arena");
	cr_assert_eq(aa_heap__free(h, 0), 0, "free(NULL)");
	s1 = t_stats(h);
	cr_assert_eq(s1.err[AA_ERR_INTERIOR] - s0.err[AA_ERR_INTERIOR], 1);
	cr_assert_eq(s1.err[AA_ERR_MISALIGNED] - s0.err[AA_ERR_MISALIGNED], 1);
	cr_assert_eq(s1.err[AA_ERR_FOREIGN] - s0.err[AA_ERR_FOREIGN], 1);
	cr_assert_eq(aa_heap__free(h, p), 0, "the object itself is still live");
	t_check(h);
}

Test(user_cache, calloc_zeroes_and_refuses_bad_sizes)
{
	__u64 p = aa_heap__malloc(h, 96), q;
	__u64 e0 = t_stats(h).err[AA_ERR_SIZE];
	unsigned char *u;
	int i;

	memset(aa_heap__ptr(h, p), 0xab, 96);
	cr_assert_eq(aa_heap__free(h, p), 0);
	q = aa_heap__calloc(h, 3, 32);
	cr_assert_eq(q, p, "the same object again, from the thread's cache");
	u = aa_heap__ptr(h, q);
	for (i = 0; i < 96; i++)
		cr_assert_eq(u[i], 0, "byte %d not zeroed", i);
	cr_assert_eq(aa_heap__calloc(h, 1ULL << 40, 1ULL << 40), 0);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(aa_heap__calloc(h, 0, 8), 0);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(t_stats(h).err[AA_ERR_SIZE] - e0, 2, "counted as a BPF call's");
	cr_assert_eq(aa_heap__free(h, q), 0);
}

struct exiter {
	int tid, idx;
	__u64 objs;
};

static void *exiter_run(void *arg)
{
	struct exiter *x = arg;
	__u64 p[50];
	int i;

	x->tid = gettid_();
	for (i = 0; i < 50; i++)
		p[i] = aa_heap__malloc(h, 48);
	for (i = 0; i < 50; i++)
		if (p[i] && !aa_heap__free(h, p[i]))
			x->objs++;
	x->idx = cache_of(getpid(), x->tid);
	return NULL;
}

Test(user_cache, a_thread_exit_gives_its_cache_back)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc;
	struct exiter x = {};
	__u64 closes = r->user.closes, live = t_stats(h).live_allocs;
	pthread_t tid;
	int c;

	cr_assert_eq(pthread_create(&tid, NULL, exiter_run, &x), 0);
	pthread_join(tid, NULL);
	cr_assert_eq(x.objs, 50);
	cr_assert_geq(x.idx, 0, "the thread opened no cache");
	cc = aa_heap__user_cache(h, x.idx);
	cr_assert_not_null(cc);
	cr_assert_eq(cc->owner_pid, 0, "the cache has no owner after the thread's exit");
	for (c = 0; c < AA_NR_CLASSES; c++)
		cr_assert_eq(cc->cls[c].count, 0, "class %d kept objects", c);
	cr_assert_eq(r->user.closes - closes, 1);
	cr_assert_eq(t_stats(h).live_allocs, live);
	t_check(h);
}

static struct aa_heap *child_heap(void)
{
	return t_child_heap(h, bpf_map__fd(skel->maps.arena), arena_start);
}

/* A child that allocates 40 objects of 64 B, frees 20 (they stay in its
 * cache), says which cache it has and waits to be killed. */
static pid_t spawn_holder(int *idx)
{
	int fd[2], i, my;
	__u64 p[40];
	pid_t pid;

	cr_assert_eq(pipe(fd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct aa_heap *c = child_heap();

		for (i = 0; i < 40; i++)
			p[i] = aa_heap__malloc(c, 64);
		for (i = 0; i < 20; i++)
			aa_heap__free(c, p[i]);
		my = cache_of(getpid(), gettid_());
		if (write(fd[1], &my, sizeof(my)) != sizeof(my))
			_exit(1);
		for (;;)
			pause();
	}
	close(fd[1]);
	cr_assert_eq(read(fd[0], idx, sizeof(*idx)), sizeof(*idx), "the child died early");
	close(fd[0]);
	return pid;
}

Test(user_cache, a_process_that_died_is_reaped_by_drain)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc;
	struct aa_stats s0, s1;
	__u64 reaped = r->user.reaped;
	int idx, mine, status, c = aa_size_class(64);
	__u64 p = aa_heap__malloc(h, 64);	/* this thread's own cache */
	pid_t pid;

	cr_assert_neq(p, 0);
	mine = cache_of(getpid(), gettid_());
	pid = spawn_holder(&idx);
	cr_assert_geq(idx, 0, "the child opened no cache");
	cr_assert_neq(idx, mine, "a forked child has a cache of its own");
	cr_assert_geq(cached_in(idx, c), 20);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cc = aa_heap__user_cache(h, idx);
	cr_assert_eq(cc->owner_pid, pid, "nothing closed it yet");
	s0 = t_stats(h);
	cr_assert_geq(s0.cached_objs, 20, "stats count its objects as cached until then");
	cr_assert_geq(aa_heap__drain(h), 20);
	cc = aa_heap__user_cache(h, idx);
	cr_assert_eq(cc->owner_pid, 0, "the dead process's cache was reaped");
	cr_assert_eq(cc->cls[c].count, 0);
	cr_assert_eq(r->user.reaped - reaped, 1);
	s1 = t_stats(h);
	cr_assert_eq(s1.live_allocs, s0.live_allocs,
		     "what the dead process allocated and never freed stays live");
	cr_assert_eq(cache_of(getpid(), gettid_()), mine, "this process's cache is untouched");
	cr_assert_eq(aa_heap__free(h, p), 0);
	t_check(h);
}

Test(user_cache, teardown_and_init_make_threads_open_again)
{
	const struct aa_root *r = aa_heap__root(h);
	__u32 gen = r->user.gen;
	__u64 p = aa_heap__malloc(h, 64), q;

	cr_assert_neq(p, 0);
	cr_assert_geq(aa_heap__teardown(h), 0, "teardown: %s", strerror(errno));
	cr_assert_eq(aa_heap__malloc(h, 64), 0, "no heap between teardown and init");
	cr_assert_eq(errno, ENODEV);
	cr_assert_geq(aa_heap__init(h, 4 * MiB), 0);
	cr_assert_neq(r->user.gen, gen);
	q = aa_heap__malloc(h, 64);
	cr_assert_neq(q, 0, "malloc after init: %s", strerror(errno));
	cr_assert_geq(cache_of(getpid(), gettid_()), 0);
	cr_assert_eq(aa_heap__free(h, q), 0);
	t_check(h);
}

Test(user_cache, debug_mode_checks_userspace_frees)
{
	struct aa_debug_error e;
	__u64 total = 0, p;

	close_heap();	/* the suite's heap: this test's is in debug mode */
	open_heap_flags(AA_F_DEBUG);
	p = aa_heap__malloc(h, 24);
	cr_assert_neq(p, 0);
	((char *)aa_heap__ptr(h, p))[24] = 'x';	/* one byte past the object */
	cr_assert_eq(aa_heap__free(h, p), 0, "debug mode reports, the free goes on");
	cr_assert_eq(aa_heap__errors(h, &e, 1, &total), 1);
	cr_assert_eq(e.kind, AA_DBG_OVERFLOW, "found: %s", aa_debug_kind_str(e.kind));
	cr_assert_eq(aa_heap__root(h)->user.opens, 0, "debug mode: every call runs in BPF");
}

/* --- Userspace stopped or killed while BPF allocates everywhere ---------- */

struct churner {
	int cpu, err;
	volatile int *stop;
	__u64 runs, allocs, nulls, refused;
};

static void *churn_run(void *arg)
{
	struct churner *t = arg;
	struct uc_churn_args a;

	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));
	int fd = bpf_program__fd(skel->progs.uc_churn);

	t->err = t_pin_cpu(t->cpu);
	while (!t->err && !*t->stop) {
		memset(&a, 0, sizeof(a));
		a.rounds = 16;
		if (bpf_prog_test_run_opts(fd, &o))
			t->err = -errno;
		t->runs++;
		t->allocs += a.allocs;
		t->nulls += a.nulls;
		t->refused += a.refused;
	}
	return NULL;
}

/* A child that allocates and frees for ever: sizes 16 B .. 2 KiB, up to
 * 256 held, so its calls are hits, misses and overflows in turn; *ops
 * (shared memory) counts its calls. */
static pid_t spawn_churner(volatile __u64 *ops)
{
	__u64 held[256] = {};
	unsigned int seed = 1;
	struct aa_heap *c;
	pid_t pid = fork();
	int i;

	cr_assert_geq(pid, 0);
	if (pid)
		return pid;
	c = child_heap();
	for (;; ++*ops) {
		i = rand_r(&seed) & 255;
		if (held[i]) {
			if (aa_heap__free(c, held[i]))
				_exit(2);
			held[i] = 0;
		} else {
			held[i] = aa_heap__malloc(c, 16 + (rand_r(&seed) & 127) * 16);
		}
	}
}

static struct churner *run_churners(int n, volatile int *stop, pthread_t *tid)
{
	struct churner *t = calloc(n, sizeof(*t));
	int k;

	cr_assert_not_null(t);
	for (k = 0; k < n; k++) {
		t[k].cpu = k;
		t[k].stop = stop;
		cr_assert_eq(pthread_create(&tid[k], NULL, churn_run, &t[k]), 0);
	}
	return t;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Waits until the churner's count passes ops0: true if it did within
 * 10 s. A liveness check, not a speed one: a guest with more vCPUs than
 * host cores may not run a just-forked or just-continued child for tens
 * of milliseconds. */
static bool churner_moved(volatile __u64 *ops, __u64 ops0)
{
	int waited;

	for (waited = 0; *ops == ops0 && waited < 10000; waited += 10)
		sleep_ms(10);
	return *ops != ops0;
}

static __u64 churner_runs(const struct churner *t, int n)
{
	__u64 runs = 0;
	int k;

	for (k = 0; k < n; k++)
		runs += t[k].runs;
	return runs;
}

/* The same for the BPF churners' runs. */
static bool bpf_moved(const struct churner *t, int n, __u64 runs0)
{
	int waited;

	for (waited = 0; churner_runs(t, n) == runs0 && waited < 10000; waited += 10)
		sleep_ms(10);
	return churner_runs(t, n) != runs0;
}

Test(user_cache, bpf_never_waits_for_a_stopped_or_killed_process)
{
	int n = sysconf(_SC_NPROCESSORS_ONLN), k, i, status;
	__u64 runs0 = 0, runs1 = 0, allocs = 0, nulls = 0, refused = 0;
	volatile int stop = 0;
	volatile __u64 *ops;
	pthread_t tid[64];
	struct churner *t;
	__u64 ops0;
	pid_t pid;

	cr_assert_leq(n, 64);
	ops = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(ops, MAP_FAILED);
	pid = spawn_churner(ops);
	t = run_churners(n, &stop, tid);
	for (i = 0; i < 10; i++) {	/* stopped wherever it happens to be */
		ops0 = *ops;
		sleep_ms(50);
		cr_assert(churner_moved(ops, ops0), "the userspace process made no calls in 10 s");
		cr_assert_eq(kill(pid, SIGSTOP), 0);
		cr_assert_eq(waitpid(pid, &status, WUNTRACED), pid);
		cr_assert(WIFSTOPPED(status));
		ops0 = *ops;
		runs0 = churner_runs(t, n);
		sleep_ms(200);
		cr_assert(bpf_moved(t, n, runs0), "BPF made no progress in 10 s while the process was stopped");
		cr_assert_eq(*ops, ops0, "the process ran while stopped");
		cr_assert_eq(kill(pid, SIGCONT), 0);
	}
	sleep_ms(50);
	cr_assert_eq(kill(pid, SIGKILL), 0);	/* wherever it is */
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the churner exited by itself (status %d)", status);
	runs0 = churner_runs(t, n);
	sleep_ms(200);
	cr_assert(bpf_moved(t, n, runs0), "BPF made no progress in 10 s after the process was killed");
	stop = 1;
	for (k = 0; k < n; k++) {
		pthread_join(tid[k], NULL);
		cr_assert_eq(t[k].err, 0, "CPU %d: %s", k, strerror(-t[k].err));
		allocs += t[k].allocs;
		nulls += t[k].nulls;
		refused += t[k].refused;
	}
	runs1 = churner_runs(t, n);
	cr_log_info("%d CPUs: %llu BPF runs, %llu allocations, %llu NULL, %llu refused frees; "
		    "the userspace process: %llu calls", n, (unsigned long long)runs1,
		    (unsigned long long)allocs, (unsigned long long)nulls,
		    (unsigned long long)refused, (unsigned long long)*ops);
	free(t);
	munmap((void *)ops, 4096);
	cr_assert_eq(nulls, 0, "NULLs with 16 MiB free");
	cr_assert_eq(refused, 0);
	cr_assert_geq(aa_heap__drain(h), 0, "drain: %s", strerror(errno));
	cr_assert_eq(cache_of(pid, -1), -1, "the killed process's cache was reaped");
	t_check(h);
}

/* A cache whose count covers slots that hold no object of its own (the
 * two stores of a push in the wrong order and a kill between them; a
 * write through the mmap): a drain refuses and counts each, even one that
 * finds the heap lock held and parks what it empties, and never writes to
 * the memory a stale entry names. */
Test(user_cache, stale_pointers_in_a_cache_are_refused_and_counted)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 q[8], corrupt = t_stats(h).err[AA_ERR_CORRUPT];
	int i, j, idx, c = aa_size_class(64);
	struct aa_cpu_cache *cc;
	unsigned char *b;
	__u32 n;

	for (i = 0; i < 8; i++) {
		cr_assert_neq(q[i] = aa_heap__malloc(h, 64), 0);
		memset(aa_heap__ptr(h, q[i]), 0x40 + i, 64);
	}
	for (i = 0; i < 4; i++)
		cr_assert_eq(aa_heap__free(h, q[i]), 0);
	idx = cache_of(getpid(), gettid_());
	cr_assert_geq(idx, 0, "this thread opened no cache");
	cc = aa_heap__ptr(h, r->arena_base + r->user.off[idx]);
	n = cc->cls[c].count;
	cr_assert(n >= 4 && n + 2 <= AA_CPU_CACHE_MAX, "count %u", n);
	cc->cls[c].objs[n] = q[5];		/* a live object */
	cc->cls[c].objs[n + 1] = q[6] + 16;	/* inside one */
	cc->cls[c].count = n + 2;
	__atomic_store_n(&r->lock, 2, __ATOMIC_SEQ_CST);	/* held, as by CPU 1 */
	aa_heap__drain(h);	/* parks what it empties; -EBUSY: it cannot unpark */
	__atomic_store_n(&r->lock, 0, __ATOMIC_SEQ_CST);
	cr_assert_geq(aa_heap__drain(h), 0, "drain: %s", strerror(errno));
	cr_assert_eq(cc->cls[c].count, 0);
	for (i = 4; i < 8; i++) {
		b = aa_heap__ptr(h, q[i]);
		for (j = 0; j < 64; j++)
			cr_assert_eq(b[j], 0x40 + i, "live object %d: byte %d is 0x%x", i, j, b[j]);
	}
	cr_assert_eq(t_stats(h).err[AA_ERR_CORRUPT] - corrupt, 2, "%llu refused as corrupt",
		     (unsigned long long)(t_stats(h).err[AA_ERR_CORRUPT] - corrupt));
	for (i = 4; i < 8; i++)
		cr_assert_eq(aa_heap__free(h, q[i]), 0, "object %d: still live, still ours", i);
	t_check(h);
	assert_ledger();
}
