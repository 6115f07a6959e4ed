// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* runner.c - aa_bench: options, helpers, CPUs, the loaded objects,
 * producer threads and jobs. */
#include "harness.h"

/* --- Options ------------------------------------------------------------- */

const unsigned int allocs_rows[NR_ROWS] = { 1, 4, 16, 64, 256 };

struct bench_opts opt = {
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

FILE *out;		/* the tables: stdout, or stderr with --json */

void progress(const char *fmt, ...)
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

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "aa_bench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void sleep_ms(double ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000),
			       .tv_nsec = (long)(fmod(ms, 1000) * 1e6) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of v[0 .. n), NaNs (runs without that phase) left out. Sorts v. */
double median(double *v, size_t n)
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

int cpus[BENCH_MAX_WORKERS], nproc;

void find_cpus(void)
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

int pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}


struct inst inst_on = { .name = "caches on" }, inst_off = { .name = "caches off" };
struct inst inst_defer = { .name = "deferred free" };
struct inst inst_dbg = { .name = "debug", .quarantine = 0 };
struct inst inst_dbgq = { .name = "debug+quarantine", .quarantine = AA_QUARANTINE_DEFAULT };

void inst_open(struct inst *in, __u32 flags)
{
	double t = now_s();

	in->skel = bench__open();
	if (!in->skel)
		die("open the BPF object: %s", strerror(errno));
	if (bench__load(in->skel))
		die("load the BPF object (%s): %s", in->name, strerror(errno));
	struct aa_tunables tun;

	/* deferred free: limbo holds what a grace period of frees amounts
	 * to, at millions of frees a second: keep 16 MiB free */
	if (aa_tunables__default(&tun))
		die("tunables: %s", strerror(errno));
	if (flags & AA_F_DEFER)
		tun.low_watermark = 16 * MiB;
	if (flags & AA_F_DEBUG)
		tun.quarantine = in->quarantine;
	AA_OPTS(aa_heap_opts, o, .init_bytes = 64 * MiB, .flags = flags, .tunables = &tun);
	in->h = aa_heap__attach(in->skel->obj, &o);
	if (!in->h)
		die("aa_heap__attach (%s): %s", in->name, strerror(errno));
	if ((aa_heap__root(in->h)->flags & (AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG)) != flags)
		die("the %s heap came up with flags %#x, not %#x (ARENA_ALLOC_NO_CACHES, _DEFER "
		    "or _DEBUG set?)", in->name, aa_heap__root(in->h)->flags, flags);
	if ((flags & AA_F_DEBUG) && aa_heap__root(in->h)->tun.quarantine != in->quarantine)
		die("the %s heap came up with quarantine %u, not %u", in->name,
		    aa_heap__root(in->h)->tun.quarantine, in->quarantine);
	progress("loaded %s in %.1f s", in->name, now_s() - t);
}

void inst_close(struct inst *in)
{
	aa_heap__destroy(in->h);
	bench__destroy(in->skel);
	in->h = NULL;
	in->skel = NULL;
}

int run_prog(struct bpf_program *p, void *ctx, size_t sz)
{
	/* syscall programs: the kernel copies ctx back into ctx_in */
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = sz);
	int err = bpf_prog_test_run_opts(bpf_program__fd(p), &o);

	if (err)
		return -errno;
	return (int)o.retval;
}

/* --- Producers ------------------------------------------------------------ */





void add_sample(struct worker *w, double a, double f, double t, __u64 t0, __u64 t1)
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

int lat_once(struct worker *w, bool keep)
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

int htab_once(struct worker *w, bool keep)
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

double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

void *worker_main(void *arg)
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

void job_run(struct job *j, int warm_ms, int meas_ms, poll_fn poll, void *data)
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
double job_cpu(const struct job *j, double *cpu, double *wall)
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

void job_free(struct job *j)
{
	for (int i = 0; i < j->nworkers; i++)
		free(j->w[i].s);
}
