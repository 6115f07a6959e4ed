// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user.c - build/aa_bench_user: what an allocation from userspace costs,
 * three ways side by side in one run, and frees across the two sides.
 *
 * Pairs (ns per malloc + free pair, amortized over the loop):
 *   user      aa_heap__malloc() + aa_heap__free(): the calling thread's
 *             cache in the arena (user/user_cache.c); a miss or an
 *             overflow runs aa__run's user calls
 *   syscall   aa_heap__call() with AA_OP_MALLOC, then AA_OP_FREE: one
 *             aa__run program run (bpf_prog_test_run) per call
 *   glibc     malloc() + free() of private memory
 * Patterns: loop (malloc, touch, free, --iters times: every user call a
 * hit) and batch (malloc 256, then free them in the same order, --iters
 * / 256 rounds: the thread cache runs empty and overflows, so its misses
 * and spills are in the figure; slow/1k counts them). Each at 64 B and 1
 * KiB, with 1 and 2 threads: each thread its own loop, pinned to its own
 * CPU (CPUs of this process's affinity, in order), started together at a
 * barrier after an untimed warm-up (which opens its user cache); a cell is
 * the mean of its threads' ns per pair. The syscall path runs
 * --syscall-iters pairs (it is about a thousand times slower). Every
 * object is written once (one byte) so that no call is optimised away.
 *
 * Cross-side frees (ns per object freed, batches of 256 objects, rounds
 * of: allocate a batch untimed, free it timed):
 *   BPF's -> user   AA_OP_MALLOC_BULK (one aa__run call fills an arena
 *                   array of 256 addresses), then 256 aa_heap__free()
 *   user's -> user  the same frees of 256 aa_heap__malloc() objects: the
 *                   reference
 *   user's -> BPF   256 aa_heap__malloc(), then one AA_OP_FREE_BULK run
 *                   over the arena array (the program run included)
 *   BPF's -> BPF    the same bulk free of AA_OP_MALLOC_BULK objects: the
 *                   reference
 * Each round also times one empty phase, the timer's own cost, which comes
 * off the round's timed phase. Next to each column, the slow paths its
 * frees took per 1000 (spills of the cache the frees go to: the thread's
 * user cache, or the CPU cache of the thread's CPU).
 *
 * Calibration: ns per op of a volatile add, a call and return, a locked
 * cmpxchg with a release store (a cache's claim) and a glibc 64-B pair,
 * which an emulator slows by different factors; --calibrate prints them
 * alone, without a heap, so that they can be had where arenas are refused.
 *
 * Counted (user_count.c): instructions and locked instructions per pair of
 * the user path and glibc, loop and batch, 64 B and 1 KiB, counted by
 * valgrind's callgrind, not timed, so that they carry over from an
 * emulator: the binary runs itself under callgrind (--count-child), which
 * counts each cell of pairs() on one thread, --count-pairs pairs, inside
 * the calls: outside the functions that the same loop with no calls
 * (PATH_NONE) runs.
 *
 * Passes: every cell is measured --passes times (the three paths of a
 * cell back to back in each pass, so a drift of a shared machine reaches
 * each alike); a cell's figure is the median over the passes. cpu: the
 * smallest share of its CPU a thread had (thread CPU time over wall time
 * of its timed loop) in the row.
 *
 * Usage: aa_bench_user [--iters N] [--syscall-iters N] [--rounds N]
 *                      [--calib-iters N] [--passes N] [--count-pairs N]
 *                      [--out FILE]
 *          measure on this kernel, then count (--count-pairs: rounded down
 *          to a multiple of 256; 0: no counting), print its tables, append
 *          its rows to FILE
 *        aa_bench_user --counts [--count-pairs N] [--out FILE]
 *          the counted table only (glibc only where arenas are refused)
 *        aa_bench_user --calibrate
 *          the calibration line only (no heap)
 *        aa_bench_user --table FILE
 *          print the rows of FILE (several kernels: make bench-user)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include "arena_alloc_internal.h"
#include "where.h"

#include "user.h"
#if AA_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#endif

#define MiB		(1ULL << 20)
#define MAX_THREADS	2
#define MAX_PASSES	15

enum side { SIDE_USER, SIDE_BPF };

static const __u64 sizes[] = { 64, 1024 };
#define NR_SIZES	(sizeof(sizes) / sizeof(sizes[0]))

/* Cross-side columns: who allocates, who frees (the frees are timed). */
static const struct { enum side alloc, free; } cross_cols[NR_CROSS] = {
	{ SIDE_BPF, SIDE_USER }, { SIDE_USER, SIDE_USER },
	{ SIDE_USER, SIDE_BPF }, { SIDE_BPF, SIDE_BPF },
};

static struct opts {
	__u64 iters, syscall_iters, rounds, calib_iters, count_pairs;
	int passes;
} opt = { .iters = 1000000, .syscall_iters = 16384, .rounds = 256, .calib_iters = 10000000,
	  .count_pairs = 40 * BATCH, .passes = 3 };

static struct aa_heap *heap;
static int cpus[MAX_THREADS], ncpus;

/* --- Timing and threads ------------------------------------------------- */

static double clock_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What one thread measures; kind of work: a path and pattern, or a
 * cross-side column. */
struct work {
	bool cross;
	enum path path;
	bool batch;
	int col;		/* cross: index into cross_cols */
	__u64 size;
};

struct thread {
	const struct work *w;
	pthread_barrier_t *bar;
	pthread_t tid;
	int cpu;		/* -1: not pinned */
	double ns_per_op, share, slow;
	__u64 errors;
	int err;		/* setup failed: -errno */
};

static int pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s) ? -errno : 0;
}

/* --- The pairs ---------------------------------------------------------- */

/* PATH_NONE's one object: every malloc of it returns this, no free. */
static char none_obj[8];

static __u64 one_malloc(enum path p, __u64 size)
{
	struct aa_op_args a = { .op = AA_OP_MALLOC, .size = size };

	switch (p) {
	case PATH_USER:
		return aa_heap__malloc(heap, size);
	case PATH_SYSCALL:
		return aa_heap__call(heap, &a) ? 0 : a.ptr;
	case PATH_NONE:
		return (__u64)(uintptr_t)none_obj;
	default:
		return (__u64)(uintptr_t)malloc(size);
	}
}

/* 0, or 1 for a failed free. */
static int one_free(enum path p, __u64 ptr)
{
	struct aa_op_args a = { .op = AA_OP_FREE, .ptr = ptr };

	switch (p) {
	case PATH_USER:
		return aa_heap__free(heap, ptr) != 0;
	case PATH_SYSCALL:
		return aa_heap__call(heap, &a) || a.ret;
	case PATH_NONE:
		return 0;
	default:
		free((void *)(uintptr_t)ptr);
		return 0;
	}
}

/* n pairs of path p at size, in a loop or in batches of BATCH; failed
 * calls counted in *errors. An arena address is this process's pointer
 * too (aa_heap__malloc()), so every path writes through it alike. */
static void pairs(enum path p, bool batch, __u64 size, __u64 n, __u64 *errors)
{
	__u64 ptr[BATCH], i, r;
	int k;

	if (!batch) {
		for (i = 0; i < n; i++) {
			ptr[0] = one_malloc(p, size);
			if (!ptr[0]) {
				(*errors)++;
				continue;
			}
			*(volatile char *)(uintptr_t)ptr[0] = (char)i;
			*errors += one_free(p, ptr[0]);
		}
		return;
	}
	for (r = 0; r < n / BATCH; r++) {
		for (k = 0; k < BATCH; k++) {
			ptr[k] = one_malloc(p, size);
			if (ptr[k])
				*(volatile char *)(uintptr_t)ptr[k] = (char)k;
			else
				(*errors)++;
		}
		for (k = 0; k < BATCH; k++)
			if (ptr[k])
				*errors += one_free(p, ptr[k]);
	}
}

/* --- Calibration: how the emulator slows kinds of instructions ---------- */

/* TCG does not slow every instruction alike, so a ratio of two userspace
 * code paths carries over from a guest only as far as their mix of plain
 * instructions, calls and locked instructions is alike. These probes
 * measure each kind (ns per op), here and, with --calibrate, anywhere. */
/* enum calib (CAL_*): user.h */

static __attribute__((noinline)) __u64 calib_callee(__u64 x)
{
	__asm__ volatile("");
	return x + 1;
}

/* n ops of probe k, untimed (the counted probe runs CAL_CMPXCHG alone). */
static void calib_loop(enum calib k, __u64 n)
{
	volatile __u64 word = 0;
	__u32 busy = 0, old;
	__u64 i, x = 0, errors = 0;

	switch (k) {
	case CAL_PLAIN:		/* a load, an add, a store */
		for (i = 0; i < n; i++)
			word = word + 1;
		break;
	case CAL_CALL:		/* a call and its return */
		for (i = 0; i < n; i++) {
			x = calib_callee(x);
			__asm__ volatile("" : : "r"(x));
		}
		break;
	case CAL_CMPXCHG:	/* a cache's claim and release (aa_hit.h) */
		for (i = 0; i < n; i++) {
			old = __sync_val_compare_and_swap(&busy, 0, 1);
			__asm__ volatile("" : : "r"(old));
			*(volatile __u32 *)&busy = 0;
		}
		break;
	default:
		pairs(PATH_GLIBC, false, 64, n, &errors);
		break;
	}
}

static double calib_one(enum calib k, __u64 n)
{
	double t = clock_ns(CLOCK_MONOTONIC);

	if (k == CAL_GLIBC)
		n /= 10;
	calib_loop(k, n);
	return (clock_ns(CLOCK_MONOTONIC) - t) / n;
}

/* The probes, each the median of --passes runs of --calib-iters ops, on
 * the first CPU of this process. */
static void calibrate(struct row *w)
{
	double v[MAX_PASSES];
	int k, pass;

	if (ncpus)
		pin_self(cpus[0]);
	for (k = 0; k < NR_CALIB; k++) {
		for (pass = 0; pass < opt.passes; pass++)
			v[pass] = calib_one(k, opt.calib_iters);
		w->ns[k] = median(v, opt.passes);
	}
}

/* The calling thread's user cache, or NULL (none: the user path ran
 * aa__run). Read over the mmap: only this thread writes its counters. */
static const struct aa_cpu_cache *own_user_cache(void)
{
	const struct aa_root *r = aa_heap__root(heap);
	const struct aa_cpu_cache *cc;
	int i, tid = (int)syscall(SYS_gettid);

	for (i = 0; i < AA_MAX_USER_CACHES; i++) {
		if (!r->user.off[i])
			continue;
		cc = aa_heap__ptr(heap, r->arena_base + r->user.off[i]);
		if (cc && (int)cc->owner_pid == getpid() && (int)cc->owner_tid == tid)
			return cc;
	}
	return NULL;
}

/* CPU cpu's cache, or NULL. Read over the mmap: only programs on that
 * CPU write its counters. */
static const struct aa_cpu_cache *cpu_cache(int cpu)
{
	const struct aa_root *r = aa_heap__root(heap);

	if (cpu < 0 || cpu >= (int)r->nr_cpus || !r->cpu_cache_off[cpu])
		return NULL;
	return aa_heap__ptr(heap, r->arena_base + r->cpu_cache_off[cpu]);
}

/* Misses + spills of class cls in cc: each one a slow path (in a user
 * cache, an aa__run user call). */
static __u64 slow_calls(const struct aa_cpu_cache *cc, int cls)
{
	return cc ? cc->cls[cls].stats.misses + cc->cls[cls].stats.spills : 0;
}

/* --- Cross-side frees --------------------------------------------------- */

/* Fill arr (an arena array of BATCH addresses) from side s: 0, or -1 when
 * a call failed. */
static int cross_alloc(enum side s, __u64 arr, __u64 size)
{
	__u64 *a = aa_heap__ptr(heap, arr);
	struct aa_op_args o = { .op = AA_OP_MALLOC_BULK, .n = BATCH, .size = size, .ptr = arr };
	int k;

	if (s == SIDE_BPF)
		return aa_heap__call(heap, &o) || o.ret != BATCH ? -1 : 0;
	for (k = 0; k < BATCH; k++)
		if (!(a[k] = aa_heap__malloc(heap, size)))
			return -1;
	return 0;
}

/* Free the BATCH objects of arr from side s: failed frees. */
static __u64 cross_free(enum side s, __u64 arr)
{
	__u64 *a = aa_heap__ptr(heap, arr), bad = 0;
	struct aa_op_args o = { .op = AA_OP_FREE_BULK, .n = BATCH, .ptr = arr };
	int k;

	if (s == SIDE_BPF)
		return aa_heap__call(heap, &o) || o.ret != BATCH ? BATCH : 0;
	for (k = 0; k < BATCH; k++)
		bad += aa_heap__free(heap, a[k]) != 0;
	return bad;
}

/* rounds rounds of column col: timed ns of the frees, the timer's cost
 * of each round taken off; the slow paths the frees took in cc (the cache
 * they go to) added to *slow. */
static double cross_rounds(int col, __u64 arr, __u64 size, __u64 rounds,
			   const struct aa_cpu_cache *cc, __u64 *slow, __u64 *errors)
{
	int cls = aa_size_class(size);
	double ns = 0, t0, t1, t2;
	__u64 r, s0;

	for (r = 0; r < rounds; r++) {
		if (cross_alloc(cross_cols[col].alloc, arr, size)) {
			(*errors)++;
			continue;
		}
		s0 = slow_calls(cc, cls);
		t0 = clock_ns(CLOCK_MONOTONIC);
		*errors += cross_free(cross_cols[col].free, arr);
		t1 = clock_ns(CLOCK_MONOTONIC);
		t2 = clock_ns(CLOCK_MONOTONIC);
		*slow += slow_calls(cc, cls) - s0;
		ns += (t1 - t0) - (t2 - t1);
	}
	return ns;
}

/* --- A measurement: 1 or 2 threads -------------------------------------- */

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	const struct work *w = t->w;
	__u64 n = w->path == PATH_SYSCALL ? opt.syscall_iters : opt.iters, arr = 0, s0 = 0, s1 = 0;
	const struct aa_cpu_cache *cc = NULL;
	int cls = aa_size_class(w->size);
	double cpu, wall, ns = 0;	/* cross: the frees' time; pairs: wall */

	if (t->cpu >= 0)
		t->err = pin_self(t->cpu);
	/* warm-up, untimed: opens this thread's user cache */
	if (!t->err && w->cross) {
		arr = aa_heap__malloc(heap, BATCH * sizeof(__u64));
		if (!arr)
			t->err = -errno;
		else
			cross_rounds(w->col, arr, w->size, 2, NULL, &s0, &t->errors);
		cc = cross_cols[w->col].free == SIDE_USER ? own_user_cache() : cpu_cache(t->cpu);
	} else if (!t->err) {
		pairs(w->path, w->batch, w->size, w->batch ? 2 * BATCH : n / 100 + 1, &t->errors);
		if (w->path == PATH_USER) {
			cc = own_user_cache();
			s0 = slow_calls(cc, cls);
		}
	}
	t->errors = 0;
	pthread_barrier_wait(t->bar);
	if (t->err)
		return NULL;
	cpu = -clock_ns(CLOCK_THREAD_CPUTIME_ID);
	wall = -clock_ns(CLOCK_MONOTONIC);
	if (w->cross) {
		ns = cross_rounds(w->col, arr, w->size, opt.rounds, cc, &s1, &t->errors);
		n = opt.rounds * BATCH;
	} else {
		pairs(w->path, w->batch, w->size, n, &t->errors);
		if (w->batch)
			n = n / BATCH * BATCH;
	}
	cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID);
	wall += clock_ns(CLOCK_MONOTONIC);
	t->ns_per_op = (w->cross ? ns : wall) / n;
	t->share = wall > 0 ? cpu / wall : NAN;
	if (w->cross)
		t->slow = cc ? 1000.0 * s1 / n : NAN;
	else
		t->slow = w->path == PATH_USER ? 1000.0 * (slow_calls(cc, cls) - s0) / n : NAN;
	if (w->path == PATH_USER && !w->cross && !cc)
		t->err = -ENOENT;	/* aa_heap__malloc() ran aa__run: no user cache */
	if (arr && aa_heap__free(heap, arr))
		t->errors++;
	return NULL;
}

/* Run w on nthreads threads; the mean of their ns per op into *ns, the
 * smallest CPU share into *share, the mean slow/1k into *slow. 0, or
 * -errno. */
static int measure(const struct work *w, int nthreads, double *ns, double *share, double *slow,
		   __u64 *errors)
{
	struct thread t[MAX_THREADS] = {};
	pthread_barrier_t bar;
	int i, err = 0;

	pthread_barrier_init(&bar, NULL, nthreads);
	for (i = 0; i < nthreads; i++) {
		t[i].w = w;
		t[i].bar = &bar;
		t[i].cpu = ncpus >= nthreads ? cpus[i] : -1;
		if (pthread_create(&t[i].tid, NULL, thread_main, &t[i])) {
			fprintf(stderr, "user: pthread_create failed\n");
			exit(1);	/* the others wait at the barrier */
		}
	}
	*ns = *slow = 0;
	*share = INFINITY;
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].err && !err)
			err = t[i].err;
		*ns += t[i].ns_per_op / nthreads;
		*slow += t[i].slow / nthreads;
		*errors += t[i].errors;
		if (t[i].share < *share)
			*share = t[i].share;
	}
	pthread_barrier_destroy(&bar);
	return err;
}

/* --- Counted cells: the child that user_count.c runs under callgrind ---- */

#if AA_HAVE_CALLGRIND
static const char *const path_names[] = {
	[PATH_USER] = "user", [PATH_SYSCALL] = "syscall", [PATH_GLIBC] = "glibc",
	[PATH_NONE] = "none",
};

/* Dump what callgrind collected since the last dump, as one cell. */
static void count_dump(const char *path, const char *pattern, __u64 size, __u64 n, __u64 slow,
		       __u64 errors)
{
	char tag[160];

	snprintf(tag, sizeof(tag), COUNT_TAG " path=%s pattern=%s size=%llu n=%llu slow=%llu "
		 "errors=%llu", path, pattern, (unsigned long long)size, (unsigned long long)n,
		 (unsigned long long)slow, (unsigned long long)errors);
	CALLGRIND_DUMP_STATS_AT(tag);
}

/* One cell: an uncounted warm-up (it opens the user cache), then n
 * pairs with callgrind collecting. 0, or -ENOENT: the user path found no
 * user cache. */
static int count_cell(enum path p, bool batch, __u64 size, __u64 n)
{
	const struct aa_cpu_cache *cc = NULL;
	int cls = aa_size_class(size);
	__u64 errors = 0, s0;

	pairs(p, batch, size, batch ? 2 * BATCH : n / 100 + 1, &errors);
	if (p == PATH_USER && !(cc = own_user_cache()))
		return -ENOENT;
	s0 = slow_calls(cc, cls);
	errors = 0;
	CALLGRIND_TOGGLE_COLLECT;
	pairs(p, batch, size, n, &errors);
	CALLGRIND_TOGGLE_COLLECT;
	count_dump(path_names[p], batch ? "batch" : "loop", size, n, slow_calls(cc, cls) - s0,
		   errors);
	return 0;
}

/* The child's one thread (a thread, as the timed cells run on: glibc's
 * malloc takes its multi-threaded paths): the probe, then per pattern and
 * size the loop with no calls, the user path (user) and glibc. */
static void *count_thread(void *arg)
{
	static const enum path paths[] = { PATH_NONE, PATH_USER, PATH_GLIBC };
	bool user = *(bool *)arg;
	__u64 n = opt.count_pairs;
	unsigned int s, i;
	int batch;

	CALLGRIND_START_INSTRUMENTATION;
	CALLGRIND_TOGGLE_COLLECT;
	calib_loop(CAL_CMPXCHG, n);
	CALLGRIND_TOGGLE_COLLECT;
	count_dump("probe", "-", 0, n, 0, 0);
	for (batch = 0; batch < 2; batch++)
		for (s = 0; s < NR_SIZES; s++)
			for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
				if ((paths[i] != PATH_USER || user) &&
				    count_cell(paths[i], batch, sizes[s], n)) {
					fprintf(stderr, "user: aa_heap__malloc() found no user "
						"cache: not the path counted here\n");
					return (void *)1;
				}
	return NULL;
}

/* --count-child: what = "user,glibc" or "glibc". The exit status. */
static int count_child(const char *what)
{
	AA_OPTS(aa_heap_opts, ho, .init_bytes = 16 * MiB);
	bool user = !strcmp(what, "user,glibc");
	pthread_t tid;
	void *ret = NULL;

	if (!user && strcmp(what, "glibc")) {
		fprintf(stderr, "user: --count-child user,glibc | glibc\n");
		return 2;
	}
	if (user && !(heap = aa_heap__open(&ho))) {
		fprintf(stderr, "user: aa_heap__open: %s\n", strerror(errno));
		return 1;
	}
	if (pthread_create(&tid, NULL, count_thread, &user)) {
		fprintf(stderr, "user: pthread_create failed\n");
		ret = (void *)1;
	} else {
		pthread_join(tid, &ret);
	}
	if (heap)
		aa_heap__destroy(heap);
	return ret ? 1 : 0;
}
#else
static int count_child(const char *what)
{
	(void)what;
	fprintf(stderr, "user: built without <valgrind/callgrind.h>: nothing to count\n");
	return 1;
}
#endif

/* --- The run ------------------------------------------------------------ */

static void row_init(struct row *w, const char *kind, const char *pattern, __u64 size,
		     int threads, const char *kernel)
{
	int i;

	memset(w, 0, sizeof(*w));
	snprintf(w->kind, sizeof(w->kind), "%s", kind);
	snprintf(w->pattern, sizeof(w->pattern), "%s", pattern);
	snprintf(w->kernel, sizeof(w->kernel), "%s", kernel);
	snprintf(w->where, sizeof(w->where), "%.255s", where_str());
	w->size = size;
	w->threads = threads;
	w->share = INFINITY;
	for (i = 0; i < 4; i++)
		w->slow[i] = NAN;
}

/* Fill r: --passes passes over its ncols columns (column c: w with path
 * or, cross, col c), then each column's median. 0, or -errno. */
static int measure_row(struct row *r, struct work w, int ncols)
{
	double v[NR_CROSS][MAX_PASSES], sv[NR_CROSS][MAX_PASSES], ns, share, sl;
	int pass, c, err;

	for (pass = 0; pass < opt.passes; pass++)
		for (c = 0; c < ncols; c++) {
			if (w.cross)
				w.col = c;
			else
				w.path = c;
			err = measure(&w, r->threads, &ns, &share, &sl, &r->errors);
			if (err)
				return err;
			v[c][pass] = ns;
			sv[c][pass] = sl;
			if (share < r->share)
				r->share = share;
		}
	for (c = 0; c < ncols; c++) {
		r->ns[c] = median(v[c], opt.passes);
		r->slow[c] = median(sv[c], opt.passes);
	}
	return 0;
}

/* Measure every row: the calibration, pairs (pattern x size x threads)
 * and cross (size x threads). rows must hold NR_ROWS, which leaves room
 * for the counted rows (pattern x size) after them. Returns rows filled,
 * or -errno. */
#define NR_COUNT_ROWS	(2 * NR_SIZES)
#define NR_ROWS		(1 + 3 * NR_SIZES * MAX_THREADS + NR_COUNT_ROWS)
static int measure_all(struct row *rows, const char *kernel, int max_threads)
{
	struct row warm;
	int n = 0, batch, th, err;
	unsigned int s;

	row_init(&rows[n], "calib", "-", 0, 1, kernel);
	calibrate(&rows[n++]);
	/* one untimed pass of the first cell, so that no measured cell is
	 * the process's first */
	row_init(&warm, "pairs", "loop", sizes[0], 1, kernel);
	err = measure_row(&warm, (struct work){ .size = sizes[0] }, NR_PATHS);
	if (err)
		return err;
	for (batch = 0; batch < 2; batch++)
		for (s = 0; s < NR_SIZES; s++)
			for (th = 1; th <= max_threads; th++) {
				row_init(&rows[n], "pairs", batch ? "batch" : "loop", sizes[s], th,
					 kernel);
				err = measure_row(&rows[n++], (struct work){ .batch = batch,
					.size = sizes[s] }, NR_PATHS);
				if (err)
					return err;
			}
	for (s = 0; s < NR_SIZES; s++)
		for (th = 1; th <= max_threads; th++) {
			row_init(&rows[n], "cross", "-", sizes[s], th, kernel);
			err = measure_row(&rows[n++], (struct work){ .cross = true, .size = sizes[s] },
					  NR_CROSS);
			if (err)
				return err;
		}
	return n;
}

/* --- main ---------------------------------------------------------------- */

static void find_cpus(void)
{
	cpu_set_t set;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (c = 0; c < CPU_SETSIZE && ncpus < MAX_THREADS; c++)
		if (CPU_ISSET(c, &set))
			cpus[ncpus++] = c;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "iters", required_argument, NULL, 'i' },
		{ "syscall-iters", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "passes", required_argument, NULL, 'p' },
		{ "calib-iters", required_argument, NULL, 'c' },
		{ "calibrate", no_argument, NULL, 'C' },
		{ "count-pairs", required_argument, NULL, 'n' },
		{ "counts", no_argument, NULL, 'N' },
		{ "count-child", required_argument, NULL, 'X' },
		{ "out", required_argument, NULL, 'o' },
		{ "table", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct row rows[NR_ROWS];
	AA_OPTS(aa_heap_opts, ho, .init_bytes = 16 * MiB);
	const char *out_path = NULL;
	char probe[AA_PROBE_LINE_SZ];
	struct utsname u;
	FILE *out = NULL;
	const char *child = NULL;
	bool calib_only = false, counts_only = false, user = true;
	char self[4096];
	ssize_t len;
	int c, n, k = 0, err = 0;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'i': opt.iters = strtoull(optarg, NULL, 0); break;
		case 's': opt.syscall_iters = strtoull(optarg, NULL, 0); break;
		case 'r': opt.rounds = strtoull(optarg, NULL, 0); break;
		case 'p': opt.passes = atoi(optarg); break;
		case 'c': opt.calib_iters = strtoull(optarg, NULL, 0); break;
		case 'C': calib_only = true; break;
		case 'n': opt.count_pairs = strtoull(optarg, NULL, 0) / BATCH * BATCH; break;
		case 'N': counts_only = true; break;
		case 'X': child = optarg; break;
		case 'o': out_path = optarg; break;
		case 't': return print_table(optarg);
		default:
			fprintf(stderr, "usage: aa_bench_user [--iters N] [--syscall-iters N] "
				"[--rounds N] [--calib-iters N] [--passes N] [--count-pairs N] "
				"[--out FILE] | --counts [--count-pairs N] [--out FILE] | "
				"--calibrate | --table FILE\n");
			return 2;
		}
	}
	if (opt.iters < BATCH || opt.syscall_iters < BATCH || !opt.rounds ||
	    opt.calib_iters < 10 || opt.passes < 1 || opt.passes > MAX_PASSES) {
		fprintf(stderr, "user: --iters and --syscall-iters must be >= %d, --rounds >= 1, "
			"--calib-iters >= 10, --passes in 1 .. %d\n", BATCH, MAX_PASSES);
		return 2;
	}
	if (child)	/* under callgrind: user_count.c reads its dumps */
		return count_child(child);
	if (counts_only && !opt.count_pairs) {
		fprintf(stderr, "user: --counts needs --count-pairs >= %d\n", BATCH);
		return 2;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0 || len == sizeof(self) - 1) {
		fprintf(stderr, "user: /proc/self/exe: %s\n", len < 0 ? strerror(errno) : "too long");
		return 1;
	}
	self[len] = 0;
	find_cpus();
	if (calib_only) {	/* no heap: runs where arenas are refused too */
		calibrate(&rows[0]);
		printf("where: %s\n", where_str());
		print_calib(&rows[0]);
		return 0;
	}
	if (aa_probe_arena(probe, sizeof(probe))) {
		if (!counts_only) {
			fprintf(stderr, "user: %s\n", probe);
			return 1;
		}
		printf("user path not counted: %s\n", probe);
		user = false;
	}
	uname(&u);
	if (counts_only) {	/* the counted rows alone: no heap here */
		n = count_cells(self, user, opt.count_pairs, u.release, rows, NR_COUNT_ROWS);
		err = n < 0 ? n : 0;
		if (out_path && n > 0 && !(out = fopen(out_path, "a")))
			fprintf(stderr, "user: %s: %s\n", out_path, strerror(err = errno));
		for (c = 0; out && c < n && !err; c++)
			err = write_row(out, &rows[c]);
		if (out)
			fclose(out);
		if (n > 0)
			print_rows(rows, n);
		return err ? 1 : 0;	/* n == 0: skipped, and said why */
	}
	heap = aa_heap__open(&ho);
	if (!heap) {
		fprintf(stderr, "user: aa_heap__open: %s\n", strerror(errno));
		return 1;
	}
	if (out_path && !(out = fopen(out_path, "a"))) {
		fprintf(stderr, "user: %s: %s\n", out_path, strerror(errno));
		aa_heap__destroy(heap);
		return 1;
	}
	printf("Userspace calls: aa_heap__malloc/free against the syscall path and glibc, "
	       "%llu pairs\n(syscall path %llu) per thread and cell, frees across the sides in "
	       "%llu rounds of %d,\n%d passes; threads pinned to CPUs", (unsigned long long)opt.iters,
	       (unsigned long long)opt.syscall_iters, (unsigned long long)opt.rounds, BATCH,
	       opt.passes);
	for (c = 0; c < ncpus; c++)
		printf("%s%d", c ? ", " : " ", cpus[c]);
	printf("\n\n");
	n = measure_all(rows, u.release, ncpus >= 2 ? 2 : 1);
	if (n < 0) {
		err = n;
		fprintf(stderr, "\nuser: %s\n", err == -ENOENT ? "aa_heap__malloc() found no user "
			"cache (aa__run missing?): not the path measured here" : strerror(-err));
		n = 0;
	}
	if (n && opt.count_pairs) {
		k = count_cells(self, true, opt.count_pairs, u.release, rows + n, NR_COUNT_ROWS);
		n += k > 0 ? k : 0;
	}
	for (c = 0; out && c < n && !err; c++)
		err = write_row(out, &rows[c]);
	if (out)
		fclose(out);
	if (n)
		print_rows(rows, n);
	aa_heap__destroy(heap);
	for (c = 0; c < n; c++)
		if (rows[c].errors)
			err = -EIO;
	return err || k < 0 || !n ? 1 : 0;	/* k < 0: the counting failed, and said how */
}
