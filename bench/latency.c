// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* latency.c - aa_bench: tables 1-3: allocator latency cells (arena-alloc
 * before/after, debug mode, kernel, floor). */
#include "harness.h"

/* --- 1-3: latency ----------------------------------------------------------- */

const char *const col_name[NR_COLS] = {
	"before", "call", "after", "kobj", "floor", "floor-inline", "debug", "debug+quarantine",
};
const char *const impl_name[] = {
	"timer", "arena-alloc (call)", "bpf_obj_new", "floor", "floor-inline", "arena-alloc",
};
const char *const var_name[2] = { "malloc-free", "malloc-xfree" };

/* A latency cell: its latency is the lowest of its passes' medians (each
 * pass a code layout: main.c), its timer samples pooled over the passes. */

struct cell lat[2][NR_COLS][NR_ROWS][BENCH_MAX_WORKERS + 1];
double timer_ovh[BENCH_MAX_WORKERS + 1];
int kobj_class;
__u64 kobj_bytes;
bool floor_ok;

void lat_reset(struct inst *in, int impl, int nworkers)
{
	struct bench_reset_args r = { .impl = impl, .nworkers = nworkers, .kobj_class = kobj_class };
	int err = run_prog(in->skel->progs.bench_lat_reset, &r, sizeof(r));

	if (err || r.errors)
		die("bench_lat_reset: %s, %llu failed frees", strerror(-err),
		    (unsigned long long)r.errors);
	if (r.nulls)
		fprintf(stderr, "aa_bench: warning: the last round of the cell before left %llu "
			"failed allocations (NULL) unreported\n", (unsigned long long)r.nulls);
}

void cell_push(struct cell *c, const struct sample *s)
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
void lat_cell_run(struct inst *in, int impl, int variant, unsigned int allocs, int P,
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
	if (AA_IS_AA(impl) && aa_heap__drain(in->h) < 0)
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
	if (AA_IS_AA(impl))
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
		for (i = 0; AA_IS_AA(impl) && i < AA_NR_ERRORS; i++)
			if (st1.err[i] != st0.err[i])
				fprintf(stderr, ", %s: %llu", aa_error_str(i),
					(unsigned long long)(st1.err[i] - st0.err[i]));
		fputc('\n', stderr);
	}
}

/* Keep the lower of x and a pass's median m in *x (NaN: none yet). */
static void keep_lower(double *x, double m)
{
	if (!isnan(m) && (isnan(*x) || m < *x))
		*x = m;
}

/* Add pass results src to dst: its alloc and free medians (dst keeps the
 * lowest), its timer samples (pooled) and its counts; free src's samples. */
void cell_merge(struct cell *dst, struct cell *src)
{
	size_t k;
	int i;

	if (!dst->nt)	/* its first pass */
		dst->pass_alloc = dst->pass_free = NAN;
	keep_lower(&dst->pass_alloc, median(src->va, src->na));
	keep_lower(&dst->pass_free, median(src->vf, src->nf));
	for (k = 0; k < src->nt; k++) {
		struct sample s = { .alloc = NAN, .free = NAN, .timer = src->vt[k] };

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

void cell_finish(struct cell *c)
{
	c->alloc = c->pass_alloc;
	c->free = c->pass_free;
	c->timer = median(c->vt, c->nt);
	c->alloc_mean = c->alloc_ops ? c->alloc_sum / c->alloc_ops : NAN;
	c->free_mean = c->free_ops ? c->free_sum / c->free_ops : NAN;
	c->share = c->wall_ns ? c->cpu_ns / c->wall_ns : NAN;
	c->valid = true;
}


int slices, slices_redone;	/* multi-producer slices, and redone ones */

/* Is column c measured in this run? */
bool col_on(int c)
{
	if (c == COL_FLOOR || c == COL_FLOOR_INLINE)
		return floor_ok;
	if (c == COL_DEBUG || c == COL_DEBUG_Q)
		return !opt.no_debug;
	return true;
}

/* Errors debug mode found on the heap of in (the benchmark makes none). */
__u64 debug_errors(const struct inst *in)
{
	__u64 total = 0;

	if (aa_heap__errors(in->h, NULL, 0, &total) < 0)
		die("aa_heap__errors (%s): %s", in->name, strerror(errno));
	return total;
}

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
			if (!col_on(c))
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
void run_latency(void)
{
	static const struct lat_col_def cols[NR_COLS] = {
		[COL_BEFORE] = { BENCH_IMPL_AA, &inst_off },
		[COL_CALL] = { BENCH_IMPL_AA, &inst_on },
		[COL_AFTER] = { BENCH_IMPL_AA_INLINE, &inst_on },
		[COL_KOBJ] = { BENCH_IMPL_KOBJ, &inst_on },
		[COL_FLOOR] = { BENCH_IMPL_FLOOR, &inst_off },
		[COL_FLOOR_INLINE] = { BENCH_IMPL_FLOOR_INLINE, &inst_off },
		[COL_DEBUG] = { BENCH_IMPL_AA_INLINE, &inst_dbg },
		[COL_DEBUG_Q] = { BENCH_IMPL_AA_INLINE, &inst_dbgq },
	};
	int pass, v, c, r, P, done = 0, total = opt.passes * 2 * NR_ROWS * nproc;
	int ms = (opt.cell_ms + opt.passes - 1) / opt.passes;
	double *vt;
	size_t nt;

	for (pass = 0; pass < opt.passes; pass++) {
		code_layout(pass);
		for (v = 0; v < 2; v++)
			for (r = 0; r < (int)NR_ROWS; r++)
				for (P = 1; P <= nproc; P++) {
					progress("latency %d/%d: pass %d, %s, allocs=%u, %d producer%s",
						 ++done, total, pass + 1, var_name[v], allocs_rows[r], P,
						 P > 1 ? "s" : "");
					lat_slice(cols, v, r, P, ms);
				}
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
