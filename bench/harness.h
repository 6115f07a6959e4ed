/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * harness.h - what the files of build/aa_bench share (bench/main.c says
 * what the benchmark does): options, the loaded objects, producers and
 * jobs (runner.c), the latency cells (latency.c), the htab-mem cells
 * (htab.c), the tables (tables.c), the targets (targets.c), the JSON
 * (json.c). bench.h is what the BPF programs share with all of them;
 * where.h says where the run happened (with build/aa_bench_mem).
 */
#ifndef __AA_BENCH_HARNESS_H
#define __AA_BENCH_HARNESS_H

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
#include "arena_alloc_internal.h"
#include "bench.h"
#include "bench.skel.h"
#include "where.h"
#define MiB		(1ULL << 20)
#define AA_IS_AA(impl)	((impl) == BENCH_IMPL_AA || (impl) == BENCH_IMPL_AA_INLINE)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define NR_ROWS		5	/* allocs_rows[] */
#define OPS_PER_RUN	1024	/* allocations per program run (rounds * allocs) */
struct bench_opts {
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
	bool no_debug;		/* --no-debug: no debug-mode columns */
	bool one_layout;	/* --one-layout: one code layout for all passes */
	double min_share;	/* P > 1: redo a slice where a producer had its
				 * CPU less than this share of the time ... */
	int attempts;		/* ... up to this many times in all */
	const char *htab_before;	/* JSON of the baseline's htab run */
};

struct inst {
	const char *name;
	__u32 quarantine;	/* AA_F_DEBUG: tunable quarantine (slots) */
	struct bench *skel;
	struct aa_heap *h;
};

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

typedef void (*poll_fn)(void *data, bool measuring);
/* before: caches off (global functions); call: caches on, global functions;
 * after: caches on, the inline API (what a program gets from aa_malloc());
 * debug, debug_q: the inline API on AA_F_DEBUG heaps, quarantine 0 and
 * AA_QUARANTINE_DEFAULT (--no-debug leaves them out) */
enum lat_col {
	COL_BEFORE, COL_CALL, COL_AFTER, COL_KOBJ, COL_FLOOR, COL_FLOOR_INLINE,
	COL_DEBUG, COL_DEBUG_Q, NR_COLS
};
struct cell {
	bool valid;
	double alloc, free;		/* ns per op: the lowest pass median */
	double pass_alloc, pass_free;	/* the lowest so far (NaN: none) */
	double alloc_mean, free_mean;	/* sum / sum */
	double timer;			/* median timer cost per phase */
	__u64 runs, alloc_ops, free_ops, errors, cross, own;
	__u64 heap_err[AA_NR_ERRORS];	/* arena-alloc: aa_stats.err deltas */
	double alloc_sum, free_sum;
	double cpu_ns, wall_ns;		/* job_cpu(), summed over passes */
	double share;			/* cpu_ns / wall_ns */
	double min_share;		/* job_cpu() of this slice (lat_slice) */
	double *va, *vf, *vt;		/* per-run samples (a pass's; over
					 * the passes, the timer's only) */
	size_t na, nf, nt, cap;
};

struct lat_col_def {
	int impl;
	struct inst *in;
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
	double before_ops, before_mem;	/* the baseline's, NAN: none */
};

struct mem_poll {
	struct inst *in;
	int impl, map_fd;
	double sum, peak, used_sum;	/* used: arena-alloc's bytes_in_use */
	__u64 samples, grows;
};

struct target {
	const char *name;
	const char *how;
	double ratio, limit;
	bool at_least;		/* met when ratio >= limit (else <=) */
	bool valid;
	char rows[240];		/* the same ratio at every allocs row, for context */
	char note[240];
};

typedef double (*ratio_fn)(int r, int P);

extern const unsigned int allocs_rows[NR_ROWS];
extern struct bench_opts opt;
extern FILE *out;		/* the tables: stdout, or stderr with --json */
extern int cpus[BENCH_MAX_WORKERS], nproc;
extern struct inst inst_on, inst_off, inst_defer, inst_dbg, inst_dbgq;
extern const char *const col_name[NR_COLS];
extern const char *const impl_name[];
extern const char *const var_name[2];
extern struct cell lat[2][NR_COLS][NR_ROWS][BENCH_MAX_WORKERS + 1];
extern double timer_ovh[BENCH_MAX_WORKERS + 1];
extern int kobj_class;
extern __u64 kobj_bytes;
extern bool floor_ok;
extern int slices, slices_redone;	/* multi-producer slices, and redone ones */
extern const char *const htab_impl_name[BENCH_NR_HTAB_IMPLS];
extern const char *const htab_case_name[BENCH_NR_HTAB_CASES];
extern struct hcell htab[BENCH_NR_HTAB_CASES][BENCH_NR_HTAB_IMPLS][BENCH_MAX_WORKERS + 1];
extern struct target targets[16];
extern int nr_targets;

void progress(const char *fmt, ...);
void die(const char *fmt, ...);
double now_s(void);
void sleep_ms(double ms);
int cmp_double(const void *a, const void *b);
double median(double *v, size_t n);
void find_cpus(void);
int pin_self(int cpu);
void inst_open(struct inst *in, __u32 flags);
void inst_close(struct inst *in);
int run_prog(struct bpf_program *p, void *ctx, size_t sz);
void add_sample(struct worker *w, double a, double f, double t, __u64 t0, __u64 t1);
int lat_once(struct worker *w, bool keep);
int htab_once(struct worker *w, bool keep);
double clock_ns(clockid_t id);
void *worker_main(void *arg);
void job_run(struct job *j, int warm_ms, int meas_ms, poll_fn poll, void *data);
double job_cpu(const struct job *j, double *cpu, double *wall);
void job_free(struct job *j);
void lat_reset(struct inst *in, int impl, int nworkers);
void cell_push(struct cell *c, const struct sample *s);
void lat_cell_run(struct inst *in, int impl, int variant, unsigned int allocs, int P,
			 struct cell *c, int ms);
void cell_merge(struct cell *dst, struct cell *src);
void cell_finish(struct cell *c);
bool col_on(int c);
__u64 debug_errors(const struct inst *in);
void run_latency(void);
void insts_open(unsigned int pad);
void insts_close(void);
void code_layout(int pass);
__u64 map_memlock(int fd);
__u64 htab_mem_now(struct mem_poll *m);
void htab_poll(void *data, bool measuring);
void htab_setup(struct inst *in, int impl, bool destroy);
void htab_cell_run(struct inst *in, int impl, int uc, int P, struct hcell *c, int ms);
void hcell_merge(struct hcell *dst, struct hcell *src);
void run_htab(void);
int row_of(unsigned int allocs);
void rule(int width);
void print_header(const char *left, int colw, const char *cols);
double pair(const struct cell *c);
void share_stats(int v, int P, double *med, double *min);
void print_share(int v);
void print_before_after(int v);
void print_row_head(int r, int P);
void print_kobj(void);
void print_floor(void);
void print_debug(void);
void print_latency(void);
void print_htab(void);
double t_pair_vs_kobj(int r, int P);
double t_scaling(int r, int P);
double t_xfree(int r, int P);
double t_speedup(int r, int P);
double t_call_alloc_vs_floor(int r, int P);
double t_call_free_vs_floor(int r, int P);
double t_alloc_vs_inline_floor(int r, int P);
double t_free_vs_inline_floor(int r, int P);
double t_free_256_vs_64(int r, int P);
void add_target(const char *name, const char *how, ratio_fn fn, double limit,
		       bool at_least, bool all_p, bool valid);
void eval_targets(void);
void htab_target(void);
void read_htab_before(const char *path);
void print_targets(void);
void json_num(FILE *f, const char *k, double v, bool comma);
void write_json(FILE *f, double runtime);
void usage(FILE *f);
void parse_args(int argc, char **argv);
int quiet_print(enum aa_print_level level, const char *fmt, va_list ap);

#endif
