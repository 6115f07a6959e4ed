// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench.c - build/aa_bench: arena-alloc's benchmarks, all in one run.
 *
 *   1. allocator latency (malloc-free, malloc-xfree), caches off ("before")
 *      and on ("after"), with the speedup;
 *   2. the same harness with the kernel's allocator (bpf_obj_new/drop);
 *   3. the floor: a per-CPU LIFO of preallocated arena objects;
 *   4. htab-mem style: a hash table in the arena with arena-alloc elements
 *      against BPF_MAP_TYPE_HASH, preallocated and BPF_F_NO_PREALLOC;
 *   5. the speed targets of issue 5, met or missed, with the ratio.
 *
 * Producers are threads pinned to CPUs 0 .. P-1, each running a
 * SEC("syscall") program (bench/bpf/bench.bpf.c) again and again; the
 * programs time whole phases with bpf_ktime_get_ns() and return sums.
 * Every round also times one empty phase: the timer's own cost, measured
 * in the same run, comes off each phase (--raw keeps it). A latency cell
 * (implementation x variant x allocs x producers) is measured in --passes
 * slices of a warm-up and cell_ms / passes of runs; within a pass the
 * implementations of one (variant, allocs, producers) run back to back, so
 * a shared machine's slow drifts hit every column alike. A cell's latency
 * is the median over its runs of the run's mean ns per operation (the
 * JSON also has the mean). Two copies of the object are loaded: one heap
 * with per-CPU caches ("after"), one with AA_F_NO_CACHES ("before").
 *
 * Usage: aa_bench [--size N] [--json] [--json-out FILE] [--cell-ms N]
 *                 [--passes N] [--htab-ms N] [--ref-allocs N]
 *                 [--producers N] [--only latency|htab] [--quick] [--raw]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"
#include "bench.h"
#include "bench.skel.h"

#define MiB		(1ULL << 20)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* --- Options ------------------------------------------------------------- */

static const unsigned int allocs_rows[] = { 1, 4, 16, 64, 256 };
#define NR_ROWS		ARRAY_SIZE(allocs_rows)
#define OPS_PER_RUN	1024	/* allocations per program run (rounds * allocs) */

static struct {
	__u64 size;
	bool json;		/* JSON on stdout instead of the tables */
	const char *json_out;	/* and/or into this file */
	int max_producers;
	int cell_ms, warm_ms;	/* latency cells */
	int htab_ms, htab_warm_ms;
	unsigned int ref_allocs;
	int passes;		/* latency cells are measured in this many slices */
	bool raw;		/* do not subtract the timer's cost */
	bool no_latency, no_htab;	/* --only */
	double min_share;	/* P > 1: redo a slice where a producer had its
				 * CPU less than this share of the time ... */
	int attempts;		/* ... up to this many times in all */
} opt = {
	.min_share = 0.9,
	.attempts = 3,
	.size = 64,
	.cell_ms = 600,
	.warm_ms = 30,
	.passes = 3,
	.htab_ms = 1500,
	.htab_warm_ms = 200,
	.ref_allocs = 64,
};

static FILE *out;		/* the tables: stdout, or stderr with --json */

static void progress(const char *fmt, ...)
{
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "\r\033[K");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "aa_bench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(double ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000),
			       .tv_nsec = (long)(fmod(ms, 1000) * 1e6) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of v[0 .. n), NaNs (runs without that phase) left out. Sorts v. */
static double median(double *v, size_t n)
{
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	n = m;
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- CPUs and the loaded objects ---------------------------------------- */

static int cpus[BENCH_MAX_WORKERS], nproc;

static void find_cpus(void)
{
	cpu_set_t set;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity: %s", strerror(errno));
	for (c = 0; c < CPU_SETSIZE && nproc < BENCH_MAX_WORKERS; c++)
		if (CPU_ISSET(c, &set))
			cpus[nproc++] = c;
	if (opt.max_producers > 0 && opt.max_producers < nproc)
		nproc = opt.max_producers;
}

static int pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

struct inst {
	const char *name;
	struct bench *skel;
	struct aa_heap *h;
};

static struct inst inst_on = { .name = "caches on" }, inst_off = { .name = "caches off" };

static void inst_open(struct inst *in, __u32 flags)
{
	double t = now_s();

	in->skel = bench__open();
	if (!in->skel)
		die("open the BPF object: %s", strerror(errno));
	if (bench__load(in->skel))
		die("load the BPF object (%s): %s", in->name, strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 64 * MiB, .flags = flags);
	in->h = aa_heap__attach(in->skel->obj, &o);
	if (!in->h)
		die("aa_heap__attach (%s): %s", in->name, strerror(errno));
	if ((aa_heap__root(in->h)->flags & AA_F_NO_CACHES) != (flags & AA_F_NO_CACHES))
		die("the %s heap came up with caches %s (ARENA_ALLOC_NO_CACHES set?)", in->name,
		    flags ? "on" : "off");
	progress("loaded %s in %.1f s", in->name, now_s() - t);
}

static int run_prog(struct bpf_program *p, void *ctx, size_t sz)
{
	/* syscall programs: the kernel copies ctx back into ctx_in */
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = sz);
	int err = bpf_prog_test_run_opts(bpf_program__fd(p), &o);

	if (err)
		return -errno;
	return (int)o.retval;
}

/* --- Producers ------------------------------------------------------------ */

enum job_kind { JOB_LAT, JOB_HTAB };
enum job_phase { PH_WARM, PH_MEASURE, PH_STOP };

struct sample {
	double alloc, free;	/* ns per op (lat); alloc: ops per second (htab) */
	double timer;		/* ns the timer adds to a phase, this run (lat) */
	__u64 t0, t1;		/* the run's start and end (CLOCK_MONOTONIC) */
};

struct worker {
	pthread_t tid;
	int id, cpu;
	struct job *job;
	struct sample *s;
	size_t n, cap;
	__u64 alloc_ns, free_ns, alloc_ops, free_ops, alloc_phases, free_phases;
	__u64 timer_ns, cross, own, errors, ops, ok, nomem, ns, runs, bad_cpu;
	double cpu_ns, wall_ns;	/* this thread's CPU time, and wall time, while
				 * measuring */
	int err;
};

struct job {
	enum job_kind kind;
	int nworkers;
	struct inst *in;
	struct bench_lat_args lat;	/* template: worker/nworkers filled in */
	struct bench_htab_args htab;
	pthread_barrier_t bar;
	volatile int phase;
	struct worker w[BENCH_MAX_WORKERS];
};

static void add_sample(struct worker *w, double a, double f, double t, __u64 t0, __u64 t1)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 1024;
		w->s = realloc(w->s, w->cap * sizeof(*w->s));
		if (!w->s)
			die("out of memory");
	}
	w->s[w->n].alloc = a;
	w->s[w->n].free = f;
	w->s[w->n].timer = t;
	w->s[w->n].t0 = t0;
	w->s[w->n].t1 = t1;
	w->n++;
}

static int lat_once(struct worker *w, bool keep)
{
	struct job *j = w->job;
	struct bench_lat_args a = j->lat;
	double al, fr, ovh;
	int err;

	a.worker = w->id;
	a.nworkers = j->nworkers;
	err = run_prog(j->in->skel->progs.bench_lat, &a, sizeof(a));
	if (err)
		return err;
	if (a.cpu != (__u32)w->cpu)
		w->bad_cpu++;
	if (!keep)
		return 0;
	w->alloc_ns += a.alloc_ns;
	w->free_ns += a.free_ns;
	w->alloc_ops += a.alloc_ops;
	w->free_ops += a.free_ops;
	w->alloc_phases += a.alloc_phases;
	w->free_phases += a.free_phases;
	w->cross += a.cross;
	w->own += a.own;
	w->errors += a.errors;
	w->runs++;
	/* the timer's cost, measured in this very run (one empty phase per
	 * round), comes off every timed phase */
	ovh = a.alloc_phases ? (double)a.timer_ns / a.alloc_phases : 0;
	w->timer_ns += a.timer_ns;
	al = a.alloc_ops ? (a.alloc_ns - (opt.raw ? 0 : ovh) * a.alloc_phases) / a.alloc_ops : NAN;
	fr = a.free_ops ? (a.free_ns - (opt.raw ? 0 : ovh) * a.free_phases) / a.free_ops : NAN;
	add_sample(w, al, fr, ovh, a.t_start, a.t_end);
	return 0;
}

static int htab_once(struct worker *w, bool keep)
{
	struct job *j = w->job;
	struct bench_htab_args a = j->htab;
	int err;

	a.worker = w->id;
	a.nworkers = j->nworkers;
	err = run_prog(j->in->skel->progs.bench_htab, &a, sizeof(a));
	if (err)
		return err;
	if (a.cpu != (__u32)w->cpu)
		w->bad_cpu++;
	if (!keep)
		return 0;
	w->ops += a.ops;
	w->ok += a.ok;
	w->nomem += a.nomem;
	w->ns += a.ns;
	w->runs++;
	/* add_del_on_diff_cpu: a run that found no batch to take did nothing */
	add_sample(w, a.ns && a.ops ? a.ops * 1e9 / a.ns : NAN, NAN, NAN, a.t_start, a.t_end);
	return 0;
}

static double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;
	int err = pin_self(w->cpu) ? -errno : 0;
	bool measuring = false;

	pthread_barrier_wait(&j->bar);
	while (!err && j->phase != PH_STOP) {
		bool keep = j->phase == PH_MEASURE;

		if (keep && !measuring) {
			measuring = true;
			w->cpu_ns = -clock_ns(CLOCK_THREAD_CPUTIME_ID);
			w->wall_ns = -clock_ns(CLOCK_MONOTONIC);
		}
		err = j->kind == JOB_LAT ? lat_once(w, keep) : htab_once(w, keep);
	}
	if (measuring) {
		w->cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID);
		w->wall_ns += clock_ns(CLOCK_MONOTONIC);
	}
	w->err = err;
	return NULL;
}

/* Called by the main thread every few ms while a job runs. */
typedef void (*poll_fn)(void *data, bool measuring);

static void job_run(struct job *j, int warm_ms, int meas_ms, poll_fn poll, void *data)
{
	double t_end;
	int i;

	pthread_barrier_init(&j->bar, NULL, j->nworkers + 1);
	j->phase = PH_WARM;
	for (i = 0; i < j->nworkers; i++) {
		struct worker *w = &j->w[i];

		memset(w, 0, sizeof(*w));
		w->id = i;
		w->cpu = cpus[i];
		w->job = j;
		if (pthread_create(&w->tid, NULL, worker_main, w))
			die("pthread_create: %s", strerror(errno));
	}
	pthread_barrier_wait(&j->bar);
	for (i = 0; i < 2; i++) {
		t_end = now_s() + (i ? meas_ms : warm_ms) / 1000.0;
		while (now_s() < t_end) {
			if (poll)
				poll(data, i == 1);
			sleep_ms(poll ? 10 : (t_end - now_s()) * 1000 + 0.1);
		}
		j->phase = i ? PH_STOP : PH_MEASURE;
	}
	for (i = 0; i < j->nworkers; i++) {
		pthread_join(j->w[i].tid, NULL);
		if (j->w[i].err)
			die("program run on CPU %d failed: %s", j->w[i].cpu, strerror(-j->w[i].err));
	}
	pthread_barrier_destroy(&j->bar);
}

/*
 * Did each producer have its CPU? On a shared machine other processes
 * take CPUs away, and "2 producers" then partly means one at a time. Adds
 * the workers' thread CPU time and wall time over the measured runs to
 * *cpu and *wall, and returns the smallest worker's cpu / wall.
 */
static double job_cpu(const struct job *j, double *cpu, double *wall)
{
	double min = NAN, c, w;
	int i;

	for (i = 0; i < j->nworkers; i++) {
		c = j->w[i].cpu_ns;
		w = j->w[i].wall_ns;
		*cpu += c;
		*wall += w;
		if (w > 0 && (isnan(min) || c / w < min))
			min = c / w;
	}
	return min;
}

static void job_free(struct job *j)
{
	for (int i = 0; i < j->nworkers; i++)
		free(j->w[i].s);
}

/* --- 1-3: latency ----------------------------------------------------------- */

enum lat_col { COL_BEFORE, COL_AFTER, COL_KOBJ, COL_FLOOR, COL_FLOOR_INLINE, NR_COLS };
static const char *const col_name[NR_COLS] = {
	"before", "after", "kobj", "floor", "floor-inline",
};
static const char *const impl_name[] = {
	"timer", "arena-alloc", "bpf_obj_new", "floor", "floor-inline",
};
static const char *const var_name[2] = { "malloc-free", "malloc-xfree" };

/* A latency cell: samples pooled over the passes, medians at the end. */
struct cell {
	bool valid;
	double alloc, free;		/* medians over runs, ns per op */
	double alloc_mean, free_mean;	/* sum / sum */
	double timer;			/* median timer cost per phase */
	__u64 runs, alloc_ops, free_ops, errors, cross, own;
	__u64 heap_err[AA_NR_ERRORS];	/* arena-alloc: aa_stats.err deltas */
	double alloc_sum, free_sum;
	double cpu_ns, wall_ns;		/* job_cpu(), summed over passes */
	double share;			/* cpu_ns / wall_ns */
	double min_share;		/* job_cpu() of this slice (lat_slice) */
	double *va, *vf, *vt;		/* per-run samples */
	size_t na, nf, nt, cap;
};

static struct cell lat[2][NR_COLS][NR_ROWS][BENCH_MAX_WORKERS + 1];
static double timer_ovh[BENCH_MAX_WORKERS + 1];
static int kobj_class;
static __u64 kobj_bytes;
static bool floor_ok;

static void lat_reset(struct inst *in, int impl, int nworkers)
{
	struct bench_reset_args r = { .impl = impl, .nworkers = nworkers, .kobj_class = kobj_class };
	int err = run_prog(in->skel->progs.bench_lat_reset, &r, sizeof(r));

	if (err || r.errors)
		die("bench_lat_reset: %s, %llu errors", strerror(-err), (unsigned long long)r.errors);
}

static void cell_push(struct cell *c, const struct sample *s)
{
	if (c->na == c->cap || c->nf == c->cap || c->nt == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 4096;
		c->va = realloc(c->va, c->cap * sizeof(double));
		c->vf = realloc(c->vf, c->cap * sizeof(double));
		c->vt = realloc(c->vt, c->cap * sizeof(double));
		if (!c->va || !c->vf || !c->vt)
			die("out of memory");
	}
	if (!isnan(s->alloc))
		c->va[c->na++] = s->alloc;
	if (!isnan(s->free))	/* xfree runs may have no free phase */
		c->vf[c->nf++] = s->free;
	c->vt[c->nt++] = s->timer;
}

/* One pass of a cell: reset, warm up, measure cell_ms / passes, append. */
static void lat_cell_run(struct inst *in, int impl, int variant, unsigned int allocs, int P,
			 struct cell *c, int ms)
{
	static struct job j;
	struct aa_stats st0, st1;
	__u64 errors = c->errors;
	size_t k;
	int i;

	memset(&j, 0, sizeof(j));
	lat_reset(in, impl, P);
	if (impl == BENCH_IMPL_FLOOR || impl == BENCH_IMPL_FLOOR_INLINE) {
		struct bench_floor_args f = { .nworkers = BENCH_MAX_WORKERS };

		if (run_prog(in->skel->progs.bench_floor_reset, &f, sizeof(f)))
			die("bench_floor_reset failed");
	}
	if (impl == BENCH_IMPL_AA && aa_heap__drain(in->h) < 0)
		die("aa_heap__drain: %s", strerror(errno));
	j.kind = JOB_LAT;
	j.nworkers = P;
	j.in = in;
	j.lat.impl = impl;
	j.lat.variant = variant;
	j.lat.allocs = allocs;
	j.lat.rounds = allocs >= OPS_PER_RUN ? 1 : OPS_PER_RUN / allocs;
	j.lat.size = opt.size;
	j.lat.kobj_class = kobj_class;
	aa_heap__stats(in->h, &st0);
	job_run(&j, opt.warm_ms, ms, NULL, NULL);
	aa_heap__stats(in->h, &st1);
	lat_reset(in, impl, P);
	if (impl == BENCH_IMPL_AA)
		for (i = 0; i < AA_NR_ERRORS; i++)
			c->heap_err[i] += st1.err[i] - st0.err[i];

	for (i = 0; i < P; i++) {
		struct worker *w = &j.w[i];
		double ovh = w->alloc_phases && !opt.raw ? (double)w->timer_ns / w->alloc_phases : 0;

		if (w->bad_cpu)
			die("a worker pinned to CPU %d ran elsewhere", w->cpu);
		for (k = 0; k < w->n; k++)
			cell_push(c, &w->s[k]);
		c->runs += w->runs;
		c->alloc_ops += w->alloc_ops;
		c->free_ops += w->free_ops;
		c->errors += w->errors;
		c->cross += w->cross;
		c->own += w->own;
		c->alloc_sum += w->alloc_ns - ovh * w->alloc_phases;
		c->free_sum += w->free_ns - ovh * w->free_phases;
	}
	c->min_share = job_cpu(&j, &c->cpu_ns, &c->wall_ns);
	job_free(&j);
	if (c->errors > errors) {
		fprintf(stderr, "aa_bench: warning: %s (%s), %s, allocs=%u, P=%d: %llu failed "
			"operations", impl_name[impl], in->name, var_name[variant], allocs, P,
			(unsigned long long)(c->errors - errors));
		for (i = 0; impl == BENCH_IMPL_AA && i < AA_NR_ERRORS; i++)
			if (st1.err[i] != st0.err[i])
				fprintf(stderr, ", %s: %llu", aa_error_str(i),
					(unsigned long long)(st1.err[i] - st0.err[i]));
		fputc('\n', stderr);
	}
}

/* Add pass results src to dst, and free src's samples. */
static void cell_merge(struct cell *dst, struct cell *src)
{
	size_t k;
	int i;

	for (k = 0; k < src->nt; k++) {
		struct sample s = {
			.alloc = k < src->na ? src->va[k] : NAN,
			.free = k < src->nf ? src->vf[k] : NAN,
			.timer = src->vt[k],
		};

		cell_push(dst, &s);
	}
	dst->runs += src->runs;
	dst->alloc_ops += src->alloc_ops;
	dst->free_ops += src->free_ops;
	dst->errors += src->errors;
	dst->cross += src->cross;
	dst->own += src->own;
	dst->alloc_sum += src->alloc_sum;
	dst->free_sum += src->free_sum;
	dst->cpu_ns += src->cpu_ns;
	dst->wall_ns += src->wall_ns;
	for (i = 0; i < AA_NR_ERRORS; i++)
		dst->heap_err[i] += src->heap_err[i];
	free(src->va);
	free(src->vf);
	free(src->vt);
	memset(src, 0, sizeof(*src));
}

static void cell_finish(struct cell *c)
{
	c->alloc = median(c->va, c->na);
	c->free = median(c->vf, c->nf);
	c->timer = median(c->vt, c->nt);
	c->alloc_mean = c->alloc_ops ? c->alloc_sum / c->alloc_ops : NAN;
	c->free_mean = c->free_ops ? c->free_sum / c->free_ops : NAN;
	c->share = c->wall_ns ? c->cpu_ns / c->wall_ns : NAN;
	c->valid = true;
}

struct lat_col_def {
	int impl;
	struct inst *in;
};

static int slices, slices_redone;	/* multi-producer slices, and redone ones */

/*
 * One slice of every column of (variant, allocs row, producers), back to
 * back. With P > 1 every producer must have had its CPU: when other
 * processes took one away (job_cpu() below opt.min_share), the slice is
 * measured again, at most opt.attempts times in all.
 */
static void lat_slice(const struct lat_col_def *cols, int v, int r, int P, int ms)
{
	struct cell tmp[NR_COLS];
	double min;
	int attempt, c;

	for (attempt = 1;; attempt++) {
		memset(tmp, 0, sizeof(tmp));
		min = 1;
		for (c = 0; c < NR_COLS; c++) {
			if ((c == COL_FLOOR || c == COL_FLOOR_INLINE) && !floor_ok)
				continue;
			lat_cell_run(cols[c].in, cols[c].impl, v, allocs_rows[r], P, &tmp[c], ms);
			if (tmp[c].min_share < min)
				min = tmp[c].min_share;
		}
		if (P == 1 || min >= opt.min_share || attempt >= opt.attempts)
			break;
		for (c = 0; c < NR_COLS; c++) {
			free(tmp[c].va);
			free(tmp[c].vf);
			free(tmp[c].vt);
		}
		slices_redone++;
		sleep_ms(50);
	}
	slices += P > 1;
	for (c = 0; c < NR_COLS; c++)
		cell_merge(&lat[v][c][r][P], &tmp[c]);
}

/*
 * Every cell is measured in `passes` slices, and within a pass the
 * implementations of one (variant, allocs, producers) run back to back:
 * slow drifts of a shared machine then hit all columns alike.
 */
static void run_latency(void)
{
	static const struct lat_col_def cols[NR_COLS] = {
		[COL_BEFORE] = { BENCH_IMPL_AA, &inst_off },
		[COL_AFTER] = { BENCH_IMPL_AA, &inst_on },
		[COL_KOBJ] = { BENCH_IMPL_KOBJ, &inst_on },
		[COL_FLOOR] = { BENCH_IMPL_FLOOR, &inst_off },
		[COL_FLOOR_INLINE] = { BENCH_IMPL_FLOOR_INLINE, &inst_off },
	};
	int pass, v, c, r, P, done = 0, total = opt.passes * 2 * NR_ROWS * nproc;
	int ms = (opt.cell_ms + opt.passes - 1) / opt.passes;
	double *vt;
	size_t nt;

	for (pass = 0; pass < opt.passes; pass++)
		for (v = 0; v < 2; v++)
			for (r = 0; r < (int)NR_ROWS; r++)
				for (P = 1; P <= nproc; P++) {
					progress("latency %d/%d: pass %d, %s, allocs=%u, %d producer%s",
						 ++done, total, pass + 1, var_name[v], allocs_rows[r], P,
						 P > 1 ? "s" : "");
					lat_slice(cols, v, r, P, ms);
				}
	for (v = 0; v < 2; v++)
		for (c = 0; c < NR_COLS; c++)
			for (r = 0; r < (int)NR_ROWS; r++)
				for (P = 1; P <= nproc; P++)
					if (lat[v][c][r][P].runs)
						cell_finish(&lat[v][c][r][P]);
	/* the timer's cost per phase, over every run at P producers */
	for (P = 1; P <= nproc; P++) {
		nt = 0;
		for (v = 0; v < 2; v++)
			for (c = 0; c < NR_COLS; c++)
				for (r = 0; r < (int)NR_ROWS; r++)
					nt += lat[v][c][r][P].nt;
		vt = calloc(nt + 1, sizeof(*vt));
		if (!vt)
			die("out of memory");
		nt = 0;
		for (v = 0; v < 2; v++)
			for (c = 0; c < NR_COLS; c++)
				for (r = 0; r < (int)NR_ROWS; r++) {
					struct cell *x = &lat[v][c][r][P];

					if (x->nt)
						memcpy(vt + nt, x->vt, x->nt * sizeof(*vt));
					nt += x->nt;
				}
		timer_ovh[P] = median(vt, nt);
		free(vt);
	}
}

/* --- 4: htab-mem -------------------------------------------------------------- */

static const char *const htab_impl_name[BENCH_NR_HTAB_IMPLS] = {
	"arena-alloc", "htab prealloc", "htab no-prealloc",
};
static const char *const htab_case_name[BENCH_NR_HTAB_CASES] = {
	"overwrite", "batch_add_batch_del", "add_del_on_diff_cpu",
};

struct hcell {
	bool valid;
	double ops_per_prod;	/* median over runs of the run's ops/s */
	double mem_avg, mem_peak;	/* bytes */
	double used_avg;	/* arena-alloc: bytes_in_use (live + cached) */
	__u64 ops, ok, nomem, runs, grows;
	double mem_sum, used_sum;
	__u64 mem_samples;
	double cpu_ns, wall_ns, share, min_share;	/* as in struct cell */
	double *v;		/* per-run ops/s, pooled over the passes */
	size_t n, cap;
};

static struct hcell htab[BENCH_NR_HTAB_CASES][BENCH_NR_HTAB_IMPLS][BENCH_MAX_WORKERS + 1];

/* memlock of a map as the kernel reports it (fdinfo, as bpftool shows) */
static __u64 map_memlock(int fd)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

struct mem_poll {
	struct inst *in;
	int impl, map_fd;
	double sum, peak, used_sum;	/* used: arena-alloc's bytes_in_use */
	__u64 samples, grows;
};

static __u64 htab_mem_now(struct mem_poll *m)
{
	if (m->impl == BENCH_HTAB_ARENA)
		return aa_heap__root(m->in->h)->stats.pages_mapped * 4096ULL;
	return map_memlock(m->map_fd);
}

static void htab_poll(void *data, bool measuring)
{
	struct mem_poll *m = data;
	double v;

	/* answer the heap's low-watermark signal, as a loader would */
	if (m->impl == BENCH_HTAB_ARENA && aa_heap__root(m->in->h)->need_refill) {
		if (aa_heap__refill(m->in->h, MiB) > 0)
			m->grows++;
	}
	if (!measuring)
		return;
	v = htab_mem_now(m);
	m->sum += v;
	m->samples++;
	if (m->impl == BENCH_HTAB_ARENA)
		m->used_sum += aa_heap__root(m->in->h)->stats.bytes_in_use;
	if (v > m->peak)
		m->peak = v;
}

static void htab_setup(struct inst *in, int impl, bool destroy)
{
	struct bench_htab_setup_args a = { .impl = impl, .destroy = destroy };
	int tries;

	for (tries = 0; tries < 16; tries++) {
		if (run_prog(in->skel->progs.bench_htab_setup, &a, sizeof(a)))
			die("bench_htab_setup failed");
		if (a.err != -ENOMEM)
			break;
		if (aa_heap__grow(in->h, MiB) <= 0)
			die("cannot grow the heap for the hash table");
	}
	if (a.err)
		die("bench_htab_setup: %s", strerror(-a.err));
}

/* One pass of a cell: set the table up, warm up, measure, tear down. */
static void htab_cell_run(struct inst *in, int impl, int uc, int P, struct hcell *c, int ms)
{
	static struct job j;
	struct mem_poll m = { .in = in, .impl = impl };
	size_t k;
	int i;

	memset(&j, 0, sizeof(j));
	if (impl == BENCH_HTAB_ARENA) {
		/* start from an empty heap: what it maps is what the table needs */
		if (aa_heap__drain(in->h) < 0 || aa_heap__trim(in->h, 0) < 0)
			die("drain/trim: %s", strerror(errno));
	}
	m.map_fd = impl == BENCH_HTAB_PREALLOC ? bpf_map__fd(in->skel->maps.bench_htab_prealloc)
					       : bpf_map__fd(in->skel->maps.bench_htab_no_prealloc);
	htab_setup(in, impl, false);
	j.kind = JOB_HTAB;
	j.nworkers = P;
	j.in = in;
	j.htab.impl = impl;
	j.htab.use_case = uc;
	job_run(&j, opt.htab_warm_ms, ms, htab_poll, &m);
	htab_setup(in, impl, true);

	for (i = 0; i < P; i++) {
		struct worker *w = &j.w[i];

		if (w->bad_cpu)
			die("a worker pinned to CPU %d ran elsewhere", w->cpu);
		for (k = 0; k < w->n; k++) {
			if (c->n == c->cap) {
				c->cap = c->cap ? 2 * c->cap : 1024;
				c->v = realloc(c->v, c->cap * sizeof(*c->v));
				if (!c->v)
					die("out of memory");
			}
			c->v[c->n++] = w->s[k].alloc;
		}
		c->ops += w->ops;
		c->ok += w->ok;
		c->nomem += w->nomem;
		c->runs += w->runs;
	}
	c->min_share = job_cpu(&j, &c->cpu_ns, &c->wall_ns);
	c->mem_sum += m.sum;
	c->used_sum += m.used_sum;
	c->mem_samples += m.samples;
	if (m.peak > c->mem_peak)
		c->mem_peak = m.peak;
	c->grows += m.grows;
	job_free(&j);
}

static void hcell_merge(struct hcell *dst, struct hcell *src)
{
	size_t k;

	for (k = 0; k < src->n; k++) {
		if (dst->n == dst->cap) {
			dst->cap = dst->cap ? 2 * dst->cap : 1024;
			dst->v = realloc(dst->v, dst->cap * sizeof(*dst->v));
			if (!dst->v)
				die("out of memory");
		}
		dst->v[dst->n++] = src->v[k];
	}
	dst->ops += src->ops;
	dst->ok += src->ok;
	dst->nomem += src->nomem;
	dst->runs += src->runs;
	dst->grows += src->grows;
	dst->mem_sum += src->mem_sum;
	dst->used_sum += src->used_sum;
	dst->mem_samples += src->mem_samples;
	if (src->mem_peak > dst->mem_peak)
		dst->mem_peak = src->mem_peak;
	dst->cpu_ns += src->cpu_ns;
	dst->wall_ns += src->wall_ns;
	free(src->v);
	memset(src, 0, sizeof(*src));
}

/* Passes as for latency: the three tables of one (use case, producers)
 * run back to back, each cell is measured in opt.passes slices, and a
 * multi-producer slice where a producer lost its CPU is redone. */
static void run_htab(void)
{
	int pass, uc, impl, P, attempt, done = 0, total = opt.passes * BENCH_NR_HTAB_CASES * nproc;
	int ms = (opt.htab_ms + opt.passes - 1) / opt.passes;
	struct hcell tmp[BENCH_NR_HTAB_IMPLS];
	double min;

	for (pass = 0; pass < opt.passes; pass++)
		for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
			for (P = 1; P <= nproc; P++) {
				progress("htab %d/%d: pass %d, %s, %d producer%s", ++done, total,
					 pass + 1, htab_case_name[uc], P, P > 1 ? "s" : "");
				/* pairs of producers: an adder and a deleter */
				if (uc == BENCH_HTAB_ADD_DEL_DIFF_CPU && (P & 1))
					continue;
				for (attempt = 1;; attempt++) {
					memset(tmp, 0, sizeof(tmp));
					min = 1;
					for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++) {
						htab_cell_run(&inst_on, impl, uc, P, &tmp[impl], ms);
						if (tmp[impl].min_share < min)
							min = tmp[impl].min_share;
					}
					if (P == 1 || min >= opt.min_share || attempt >= opt.attempts)
						break;
					for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
						free(tmp[impl].v);
					slices_redone++;
				}
				slices += P > 1;
				for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
					hcell_merge(&htab[uc][impl][P], &tmp[impl]);
			}
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
			for (P = 1; P <= nproc; P++) {
				struct hcell *c = &htab[uc][impl][P];

				if (!c->runs)
					continue;
				c->ops_per_prod = median(c->v, c->n);
				c->mem_avg = c->mem_samples ? c->mem_sum / c->mem_samples : NAN;
				c->used_avg = c->mem_samples && impl == BENCH_HTAB_ARENA ?
					      c->used_sum / c->mem_samples : NAN;
				c->share = c->wall_ns ? c->cpu_ns / c->wall_ns : NAN;
				c->valid = true;
			}
}

/* --- Tables ---------------------------------------------------------------------- */

static int row_of(unsigned int allocs)
{
	for (int r = 0; r < (int)NR_ROWS; r++)
		if (allocs_rows[r] == allocs)
			return r;
	return -1;
}

static void rule(int width)
{
	while (width-- > 0)
		fputc('-', out);
	fputc('\n', out);
}

static void print_header(const char *left, int colw, const char *cols)
{
	int P;

	fprintf(out, "%-8s", left);
	for (P = 1; P <= nproc; P++)
		fprintf(out, " | %*s%d producer%s%*s", (colw - 11) / 2, "", P, P > 1 ? "s" : " ",
			colw - 11 - (colw - 11) / 2, "");
	fprintf(out, "\n%-8s", "allocs");
	for (P = 1; P <= nproc; P++)
		fprintf(out, " | %s", cols);
	fputc('\n', out);
	rule(8 + nproc * (colw + 3));
}

static double pair(const struct cell *c)
{
	return c->alloc + c->free;
}

/* How much of their CPU the producers got (job_cpu()), over a variant's
 * cells at P producers: median and minimum. */
static void share_stats(int v, int P, double *med, double *min)
{
	double x[NR_COLS * NR_ROWS];
	int c, r, n = 0;

	*min = NAN;
	for (c = 0; c < NR_COLS; c++)
		for (r = 0; r < (int)NR_ROWS; r++) {
			double t = lat[v][c][r][P].share;

			if (!lat[v][c][r][P].valid || isnan(t))
				continue;
			x[n++] = t;
			if (isnan(*min) || t < *min)
				*min = t;
		}
	*med = median(x, n);
}

static void print_share(int v)
{
	double med, min;
	int P;

	for (P = 1; P <= nproc; P++) {
		share_stats(v, P, &med, &min);
		fprintf(out, "%s%d producer%s: each had its CPU %.0f%% of the time (median, min %.0f%%)",
			P > 1 ? "; " : "CPU share, ", P, P > 1 ? "s" : "", 100 * med, 100 * min);
	}
	fputc('\n', out);
}

static void print_before_after(int v)
{
	static const char *const what[2] = { "alloc", "free" };
	const char *cols = " before   after  speedup";
	int k, r, P, colw = strlen(cols);

	fprintf(out, "\n1.%d Allocator latency, %s, %llu B: ns per op (before = caches off, "
		"after = caches on)\n", v + 1, var_name[v], (unsigned long long)opt.size);
	for (k = 0; k < 2; k++) {
		fprintf(out, "\n%s\n", k ? "free latency" : "alloc latency");
		print_header(what[k], colw, cols);
		for (r = 0; r < (int)NR_ROWS; r++) {
			fprintf(out, "%8u", allocs_rows[r]);
			for (P = 1; P <= nproc; P++) {
				struct cell *b = &lat[v][COL_BEFORE][r][P], *a = &lat[v][COL_AFTER][r][P];
				double x = k ? b->free : b->alloc, y = k ? a->free : a->alloc;

				fprintf(out, " | %7.1f %7.1f %7.2fx", x, y, x / y);
			}
			fputc('\n', out);
		}
	}
	if (v == BENCH_VAR_XFREE) {
		fprintf(out, "\ncross-CPU frees (after, allocs=%u):", opt.ref_allocs);
		for (P = 1; P <= nproc; P++) {
			struct cell *a = &lat[v][COL_AFTER][row_of(opt.ref_allocs)][P];

			fprintf(out, "%s %d producer%s %.0f%%", P > 1 ? "," : "", P, P > 1 ? "s" : "",
				a->free_ops ? 100.0 * a->cross / a->free_ops : 0.0);
		}
		fputc('\n', out);
	}
	print_share(v);
}

static void print_row_head(int r, int P)
{
	if (P == 1)
		fprintf(out, "%6u %3d", allocs_rows[r], P);
	else
		fprintf(out, "%6s %3d", "", P);
}

/* Table 2: rows allocs x producers, one block of columns per variant. */
static void print_kobj(void)
{
	int r, P, v;

	fprintf(out, "\n2. The kernel's allocator: bpf_obj_new / bpf_obj_drop of %llu-B objects "
		"(same harness), ns per op;\n   kernel/after = kernel pair / arena-alloc pair "
		"(caches on)\n\n", (unsigned long long)kobj_bytes);
	fprintf(out, "%-10s", "");
	for (v = 0; v < 2; v++)
		fprintf(out, " | %-36s", var_name[v]);
	fprintf(out, "\n%6s %3s", "allocs", "P");
	for (v = 0; v < 2; v++)
		fprintf(out, " | %8s %8s %7s %11s", "obj_new", "obj_drop", "pair", "kernel/after");
	fputc('\n', out);
	rule(10 + 2 * 39);
	for (r = 0; r < (int)NR_ROWS; r++)
		for (P = 1; P <= nproc; P++) {
			print_row_head(r, P);
			for (v = 0; v < 2; v++) {
				struct cell *k = &lat[v][COL_KOBJ][r][P], *a = &lat[v][COL_AFTER][r][P];

				fprintf(out, " | %8.1f %8.1f %7.1f %11.2fx", k->alloc, k->free, pair(k),
					pair(k) / pair(a));
			}
			fputc('\n', out);
		}
	if (kobj_bytes != opt.size)
		fprintf(out, "(%llu B: the smallest bpf_obj_new size here >= %llu B)\n",
			(unsigned long long)kobj_bytes, (unsigned long long)opt.size);
}

/* Table 3: one block per variant, rows allocs x producers. */
static void print_floor(void)
{
	int r, P, v;

	if (!floor_ok) {
		fprintf(out, "\n3. The floor: skipped (worker CPU ids are not 0 .. P-1)\n");
		return;
	}
	fprintf(out, "\n3. The floor: a per-CPU LIFO of preallocated arena objects, no allocator "
		"logic (same harness),\n   ns per op. call: one global-function call per op, "
		"like any library API; inline: no call\n   (the limit). after/call: arena-alloc "
		"(caches on) over the call floor.\n");
	for (v = 0; v < 2; v++) {
		fprintf(out, "\n%s\n%6s %3s | %15s | %15s | %15s | %15s\n", var_name[v], "", "",
			"floor, call", "floor, inline", "after", "after/call");
		fprintf(out, "%6s %3s | %7s %7s | %7s %7s | %7s %7s | %7s %7s\n", "allocs", "P",
			"alloc", "free", "alloc", "free", "alloc", "free", "alloc", "free");
		rule(10 + 4 * 18);
		for (r = 0; r < (int)NR_ROWS; r++)
			for (P = 1; P <= nproc; P++) {
				struct cell *f = &lat[v][COL_FLOOR][r][P];
				struct cell *i = &lat[v][COL_FLOOR_INLINE][r][P];
				struct cell *a = &lat[v][COL_AFTER][r][P];

				print_row_head(r, P);
				fprintf(out, " | %7.1f %7.1f | %7.1f %7.1f | %7.1f %7.1f | %6.2fx %6.2fx\n",
					f->alloc, f->free, i->alloc, i->free, a->alloc, a->free,
					a->alloc / f->alloc, a->free / f->free);
			}
	}
}

static void print_latency(void)
{
	int v, P;

	fprintf(out, "Timer cost per timed phase (subtracted%s):", opt.raw ? ": no, --raw" : "");
	for (P = 1; P <= nproc; P++)
		fprintf(out, " %.1f ns at %d producer%s%s", timer_ovh[P], P, P > 1 ? "s" : "",
			P < nproc ? "," : "\n");
	for (v = 0; v < 2; v++)
		print_before_after(v);
	print_kobj();
	print_floor();
}

static void print_htab(void)
{
	int uc, impl, P;

	fprintf(out, "\n4. htab-mem style: %d keys (u32), %d-B values; ops/s per producer "
		"(median of runs), memory\n   average and peak: arena-alloc: arena pages the heap "
		"maps (1-MiB chunks + metadata; in use:\n   what the allocator hands out, cached "
		"objects included); kernel maps: memlock (fdinfo).\n   cpu: the least share of its "
		"CPU a producer got (other processes take the rest)\n\n", BENCH_HTAB_ENTRIES,
		BENCH_HTAB_VALUE);
	fprintf(out, "%-20s %-17s %2s %14s %8s %8s %8s %6s %8s\n", "use case", "table", "P",
		"ops/s/producer", "avg MiB", "peak MiB", "in use", "ok %", "cpu");
	rule(99);
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++) {
		for (P = 1; P <= nproc; P++)
			for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++) {
				struct hcell *c = &htab[uc][impl][P];
				char used[16] = "-", tog[16] = "-";

				if (!c->valid)
					continue;
				if (!isnan(c->used_avg))
					snprintf(used, sizeof(used), "%.2f", c->used_avg / MiB);
				if (!isnan(c->share))
					snprintf(tog, sizeof(tog), "%.0f%%", 100 * c->share);
				fprintf(out, "%-20s %-17s %2d %13.2fM %8.2f %8.2f %8s %5.1f%% %8s\n",
					htab_case_name[uc], htab_impl_name[impl], P,
					c->ops_per_prod / 1e6, c->mem_avg / MiB, c->mem_peak / MiB, used,
					c->ops ? 100.0 * c->ok / c->ops : 0, tog);
			}
		if (uc == BENCH_HTAB_ADD_DEL_DIFF_CPU && nproc < 2)
			fprintf(out, "%-20s (needs 2 producers)\n", htab_case_name[uc]);
	}
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (P = 1; P <= nproc; P++) {
			struct hcell *c = &htab[uc][BENCH_HTAB_ARENA][P];

			if (c->valid && c->nomem)
				fprintf(out, "note: %s P=%d: %llu arena updates found no memory "
					"(heap grown %llu times while running)\n",
					htab_case_name[uc], P, (unsigned long long)c->nomem,
					(unsigned long long)c->grows);
		}
}

/* --- 5: targets ------------------------------------------------------------------ */

struct target {
	const char *name;
	const char *how;
	double ratio, limit;
	bool at_least;		/* met when ratio >= limit (else <=) */
	bool valid;
	char rows[160];		/* the same ratio at every allocs row, for context */
	char note[160];
};

static struct target targets[6];
static int nr_targets;

typedef double (*ratio_fn)(int r, int P);

static double t_pair_vs_kobj(int r, int P)
{
	return pair(&lat[0][COL_AFTER][r][P]) / pair(&lat[0][COL_KOBJ][r][P]);
}

static double t_alloc_vs_floor(int r, int P)
{
	return lat[0][COL_AFTER][r][P].alloc / lat[0][COL_FLOOR][r][P].alloc;
}

static double t_free_vs_floor(int r, int P)
{
	return lat[0][COL_AFTER][r][P].free / lat[0][COL_FLOOR][r][P].free;
}

static double t_scaling(int r, int P)
{
	return pair(&lat[0][COL_AFTER][r][2]) / pair(&lat[0][COL_AFTER][r][1]);
}

static double t_xfree(int r, int P)
{
	return pair(&lat[1][COL_AFTER][r][2]) / pair(&lat[0][COL_AFTER][r][2]);
}

static double t_speedup(int r, int P)
{
	return pair(&lat[0][COL_BEFORE][r][1]) / pair(&lat[0][COL_AFTER][r][1]);
}

/* The worst ratio over producers 1..nproc (or the one P the target names). */
static void add_target(const char *name, const char *how, ratio_fn fn, double limit,
		       bool at_least, bool all_p, bool valid)
{
	struct target *t = &targets[nr_targets++];
	int ref = row_of(opt.ref_allocs), r, P, len = 0;

	t->name = name;
	t->how = how;
	t->limit = limit;
	t->at_least = at_least;
	t->valid = valid && ref >= 0;
	if (!t->valid)
		return;
	for (r = 0; r < (int)NR_ROWS; r++) {
		double worst = NAN;

		for (P = all_p ? 1 : nproc; P <= nproc; P++) {
			double x = fn(r, P);

			if (isnan(worst) || (at_least ? x < worst : x > worst))
				worst = x;
		}
		if (r == ref)
			t->ratio = worst;
		len += snprintf(t->rows + len, sizeof(t->rows) - len, "%s%u:%.2f", r ? " " : "",
				allocs_rows[r], worst);
	}
}

static void eval_targets(void)
{
	bool two = nproc >= 2;

	add_target("alloc+free pair <= 1/3 of bpf_obj_new+bpf_obj_drop",
		   "after pair / kernel pair, malloc-free, worst over producers",
		   t_pair_vs_kobj, 1.0 / 3, false, true, true);
	add_target("fast-path alloc <= 2x the floor",
		   "after alloc / floor (one call) alloc, malloc-free, worst over producers",
		   t_alloc_vs_floor, 2, false, true, floor_ok);
	add_target("fast-path free <= 2x the floor",
		   "after free / floor (one call) free, malloc-free, worst over producers",
		   t_free_vs_floor, 2, false, true, floor_ok);
	if (floor_ok) {
		int ref = row_of(opt.ref_allocs);
		struct cell *a = &lat[0][COL_AFTER][ref][1], *i = &lat[0][COL_FLOOR_INLINE][ref][1];
		struct cell *f = &lat[0][COL_FLOOR][ref][1];

		snprintf(targets[1].note, sizeof(targets[1].note),
			 "at P=1: after %.1f ns, floor %.1f ns (one call), %.1f ns inlined: a call "
			 "level costs ~%.1f ns here", a->alloc, f->alloc, i->alloc, f->alloc - i->alloc);
		snprintf(targets[2].note, sizeof(targets[2].note),
			 "at P=1: after %.1f ns, floor %.1f ns (one call), %.1f ns inlined", a->free,
			 f->free, i->free);
	}
	add_target("per-op latency at 2 producers <= 1.2x at 1 producer",
		   "after pair, P=2 / P=1, malloc-free", t_scaling, 1.2, false, false, two);
	add_target("xfree <= 1.5x free at 2 producers",
		   "after pair, malloc-xfree / malloc-free, P=2", t_xfree, 1.5, false, false, two);
	add_target("cached vs caches-off >= 4x at 1 producer",
		   "before pair / after pair, malloc-free, P=1", t_speedup, 4, true, false, true);
}

static void print_targets(void)
{
	int i, met = 0, valid = 0;

	fprintf(out, "\n5. Targets (issue 5; %llu B, reference row allocs=%u, ratios of medians)\n\n",
		(unsigned long long)opt.size, opt.ref_allocs);
	for (i = 0; i < nr_targets; i++) {
		struct target *t = &targets[i];
		bool ok = t->at_least ? t->ratio >= t->limit : t->ratio <= t->limit;

		if (!t->valid) {
			fprintf(out, "  [n/a   ] %s (needs 2 CPUs / the floor)\n", t->name);
			continue;
		}
		valid++;
		met += ok;
		fprintf(out, "  [%-6s] %-52s ratio %.3f (limit %s %.3g)\n", ok ? "met" : "MISSED",
			t->name, t->ratio, t->at_least ? ">=" : "<=", t->limit);
		fprintf(out, "           %s; by allocs row: %s\n", t->how, t->rows);
		if (t->note[0])
			fprintf(out, "           %s\n", t->note);
	}
	fprintf(out, "\n%d of %d targets met\n", met, valid);
	if (nproc >= 2) {
		double med, min;

		share_stats(BENCH_VAR_FREE, 2, &med, &min);
		fprintf(out, "(2-producer targets: each producer had its CPU %.0f%% of the time, "
			"median over the malloc-free cells,\n min %.0f%%%s)\n", 100 * med, 100 * min,
			med < opt.min_share ? ": other processes took CPUs, and the 2 producers "
			"partly ran one at a\n time: these numbers understate contention" : "");
	}
}

/* --- JSON --------------------------------------------------------------------------- */

static void json_num(FILE *f, const char *k, double v, bool comma)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\"%s\":null%s", k, comma ? "," : "");
	else
		fprintf(f, "\"%s\":%.3f%s", k, v, comma ? "," : "");
}

static void write_json(FILE *f, double runtime)
{
	struct utsname u;
	int v, c, r, P, uc, impl, i, k;
	bool first = true;

	uname(&u);
	fprintf(f, "{\n\"machine\":{\"kernel\":\"%s\",\"arch\":\"%s\",\"cpus\":%d},\n", u.release,
		u.machine, nproc);
	fprintf(f, "\"options\":{\"size\":%llu,\"kobj_bytes\":%llu,\"cell_ms\":%d,\"ref_allocs\":%u,"
		"\"raw\":%s},\n", (unsigned long long)opt.size, (unsigned long long)kobj_bytes,
		opt.cell_ms, opt.ref_allocs, opt.raw ? "true" : "false");
	fprintf(f, "\"timer_ns\":[");
	for (P = 1; P <= nproc; P++)
		fprintf(f, "%.3f%s", timer_ovh[P], P < nproc ? "," : "");
	fprintf(f, "],\n\"latency\":[\n");
	for (v = 0; v < 2; v++)
		for (c = 0; c < NR_COLS; c++)
			for (r = 0; r < (int)NR_ROWS; r++)
				for (P = 1; P <= nproc; P++) {
					struct cell *x = &lat[v][c][r][P];

					if (!x->valid)
						continue;
					fprintf(f, "%s{\"variant\":\"%s\",\"impl\":\"%s\",\"allocs\":%u,"
						"\"producers\":%d,", first ? "" : ",\n", var_name[v],
						col_name[c], allocs_rows[r], P);
					json_num(f, "alloc_ns", x->alloc, true);
					json_num(f, "free_ns", x->free, true);
					json_num(f, "alloc_mean_ns", x->alloc_mean, true);
					json_num(f, "free_mean_ns", x->free_mean, true);
					json_num(f, "timer_ns", x->timer, true);
					json_num(f, "cpu_share", x->share, true);
					fprintf(f, "\"heap_errors\":{");
					for (i = 0, k = 0; i < AA_NR_ERRORS; i++)
						if (x->heap_err[i])
							fprintf(f, "%s\"%s\":%llu", k++ ? "," : "",
								aa_error_str(i),
								(unsigned long long)x->heap_err[i]);
					fprintf(f, "},");
					fprintf(f, "\"runs\":%llu,\"alloc_ops\":%llu,\"free_ops\":%llu,"
						"\"cross\":%llu,\"own\":%llu,\"errors\":%llu}",
						(unsigned long long)x->runs,
						(unsigned long long)x->alloc_ops,
						(unsigned long long)x->free_ops,
						(unsigned long long)x->cross, (unsigned long long)x->own,
						(unsigned long long)x->errors);
					first = false;
				}
	fprintf(f, "\n],\n\"htab\":[\n");
	first = true;
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
			for (P = 1; P <= nproc; P++) {
				struct hcell *x = &htab[uc][impl][P];

				if (!x->valid)
					continue;
				fprintf(f, "%s{\"use_case\":\"%s\",\"table\":\"%s\",\"producers\":%d,",
					first ? "" : ",\n", htab_case_name[uc], htab_impl_name[impl], P);
				json_num(f, "ops_per_s_per_producer", x->ops_per_prod, true);
				json_num(f, "mem_avg_bytes", x->mem_avg, true);
				json_num(f, "mem_peak_bytes", x->mem_peak, true);
				json_num(f, "in_use_avg_bytes", x->used_avg, true);
				json_num(f, "cpu_share", x->share, true);
				fprintf(f, "\"ops\":%llu,\"ok\":%llu,\"nomem\":%llu,\"runs\":%llu}",
					(unsigned long long)x->ops, (unsigned long long)x->ok,
					(unsigned long long)x->nomem, (unsigned long long)x->runs);
				first = false;
			}
	fprintf(f, "\n],\n\"targets\":[\n");
	for (i = 0; i < nr_targets; i++) {
		struct target *t = &targets[i];
		bool ok = t->at_least ? t->ratio >= t->limit : t->ratio <= t->limit;

		fprintf(f, "{\"name\":\"%s\",\"valid\":%s,", t->name, t->valid ? "true" : "false");
		json_num(f, "ratio", t->valid ? t->ratio : NAN, true);
		fprintf(f, "\"limit\":%.4f,\"at_least\":%s,\"met\":%s}%s\n", t->limit,
			t->at_least ? "true" : "false", t->valid && ok ? "true" : "false",
			i + 1 < nr_targets ? "," : "");
	}
	fprintf(f, "],\n\"slices\":%d,\"slices_redone\":%d,\"runtime_s\":%.1f\n}\n", slices,
		slices_redone, runtime);
}

/* --- main ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: aa_bench [OPTIONS]\n"
		"  --size N         object size in bytes, 8..2048 (default 64)\n"
		"  --json           print JSON on stdout instead of the tables\n"
		"  --json-out FILE  also write the JSON into FILE\n"
		"  --cell-ms N      measured time per latency cell, all passes (default %d)\n"
		"  --passes N       measure each latency cell in N slices (default %d)\n"
		"  --htab-ms N      measured time per htab cell (default %d)\n"
		"  --ref-allocs N   allocs row the targets are judged at (default %u)\n"
		"  --producers N    at most N producers (default: every CPU, at most %d)\n"
		"  --quick          short cells (a smoke run, noisy)\n"
		"  --raw            do not subtract the timer's cost per phase\n"
		"  --only WHAT      latency (tables 1-3) or htab (table 4) alone\n",
		opt.cell_ms, opt.passes, opt.htab_ms, opt.ref_allocs, BENCH_MAX_WORKERS);
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "json-out", required_argument, NULL, 'o' },
		{ "cell-ms", required_argument, NULL, 'c' },
		{ "passes", required_argument, NULL, 'P' },
		{ "htab-ms", required_argument, NULL, 'H' },
		{ "ref-allocs", required_argument, NULL, 'r' },
		{ "producers", required_argument, NULL, 'p' },
		{ "quick", no_argument, NULL, 'q' },
		{ "raw", no_argument, NULL, 'R' },
		{ "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': opt.size = strtoull(optarg, NULL, 0); break;
		case 'j': opt.json = true; break;
		case 'o': opt.json_out = optarg; break;
		case 'c': opt.cell_ms = atoi(optarg); break;
		case 'P': opt.passes = atoi(optarg); break;
		case 'H': opt.htab_ms = atoi(optarg); break;
		case 'r': opt.ref_allocs = atoi(optarg); break;
		case 'p': opt.max_producers = atoi(optarg); break;
		case 'q':
			opt.cell_ms = 60;
			opt.passes = 1;
			opt.warm_ms = 20;
			opt.htab_ms = 150;
			opt.htab_warm_ms = 60;
			break;
		case 'R': opt.raw = true; break;
		case 'O':
			opt.no_latency = strcmp(optarg, "latency");
			opt.no_htab = strcmp(optarg, "htab");
			if (opt.no_latency && opt.no_htab)
				die("--only takes latency or htab");
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (opt.size < 8 || opt.size > AA_MAX_CLASS_SIZE)
		die("--size must be 8..%u (the per-CPU cache's classes)", AA_MAX_CLASS_SIZE);
	if (row_of(opt.ref_allocs) < 0)
		die("--ref-allocs must be one of the allocs rows (1, 4, 16, 64, 256)");
	if (opt.cell_ms < 10 || opt.htab_ms < 10)
		die("--cell-ms and --htab-ms must be >= 10");
	if (opt.passes < 1 || opt.passes > 20)
		die("--passes must be 1..20");
}

static int quiet_print(enum aa_print_level level, const char *fmt, va_list ap)
{
	return level == AA_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	static const __u64 ksizes[BENCH_NR_KOBJ] = BENCH_KOBJ_SIZES;
	double t0 = now_s(), runtime;
	struct utsname u;
	int i;

	parse_args(argc, argv);
	out = opt.json ? stderr : stdout;
	aa_set_print(quiet_print);
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_ARENA, NULL) != 1)
		die("BPF arena needs Linux >= 6.9: this kernel has none");
	find_cpus();
	for (i = 0; i < BENCH_NR_KOBJ; i++)
		if (ksizes[i] >= opt.size) {
			kobj_class = i;
			kobj_bytes = ksizes[i];
			break;
		}

	inst_open(&inst_on, 0);
	inst_open(&inst_off, AA_F_NO_CACHES);

	/* the floor's LIFOs are indexed by CPU id modulo BENCH_MAX_WORKERS */
	floor_ok = true;
	for (i = 0; i < nproc; i++)
		if (cpus[i] != i)
			floor_ok = false;
	if (floor_ok) {
		struct bench_floor_args f = { .size = opt.size, .nworkers = nproc };

		if (run_prog(inst_off.skel->progs.bench_floor_setup, &f, sizeof(f)) || f.errors)
			die("bench_floor_setup: %llu objects missing", (unsigned long long)f.errors);
	}

	uname(&u);
	fprintf(out, "arena-alloc benchmarks: %s %s, %d producer CPU%s, object size %llu B, "
		"%d ms per latency cell, %d ms per htab cell\n", u.release, u.machine, nproc,
		nproc > 1 ? "s" : "", (unsigned long long)opt.size, opt.cell_ms, opt.htab_ms);
	fprintf(out, "Each op is timed in batches: one bpf_ktime_get_ns() pair per phase of "
		"`allocs` operations.\n");

	if (!opt.no_latency)
		run_latency();
	if (!opt.no_htab)
		run_htab();
	progress("");
	if (!opt.no_latency) {
		eval_targets();
		print_latency();
	}
	if (!opt.no_htab)
		print_htab();
	if (!opt.no_latency)
		print_targets();
	runtime = now_s() - t0;
	if (slices)
		fprintf(out, "\n%d multi-producer slices, %d re-measured (at most %d times each) "
			"because other processes\ntook a producer's CPU (it had it < %.0f%% of the "
			"time)\n", slices, slices_redone, opt.attempts - 1, 100 * opt.min_share);
	fprintf(out, "\ntotal runtime %.1f s\n", runtime);

	if (opt.json)
		write_json(stdout, runtime);
	if (opt.json_out) {
		FILE *f = fopen(opt.json_out, "w");

		if (!f)
			die("%s: %s", opt.json_out, strerror(errno));
		write_json(f, runtime);
		fclose(f);
	}
	aa_heap__destroy(inst_on.h);
	aa_heap__destroy(inst_off.h);
	bench__destroy(inst_on.skel);
	bench__destroy(inst_off.skel);
	return 0;
}
