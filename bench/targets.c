// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* targets.c - aa_bench: table 5: the speed targets, met or missed. */
#include "harness.h"

/* --- 5: targets ------------------------------------------------------------------ */


struct target targets[16];
int nr_targets;


double t_pair_vs_kobj(int r, int P)
{
	return pair(&lat[0][COL_AFTER][r][P]) / pair(&lat[0][COL_KOBJ][r][P]);
}

/* The global functions (the call column) against the one-call floor:
 * what one BPF-to-BPF call per operation can reach. */
double t_call_alloc_vs_floor(int r, int P)
{
	return lat[0][COL_CALL][r][P].alloc / lat[0][COL_FLOOR][r][P].alloc;
}

double t_call_free_vs_floor(int r, int P)
{
	return lat[0][COL_CALL][r][P].free / lat[0][COL_FLOOR][r][P].free;
}

/* The inline API against the inline floor (no call at all). */
double t_alloc_vs_inline_floor(int r, int P)
{
	return lat[0][COL_AFTER][r][P].alloc / lat[0][COL_FLOOR_INLINE][r][P].alloc;
}

double t_free_vs_inline_floor(int r, int P)
{
	return lat[0][COL_AFTER][r][P].free / lat[0][COL_FLOOR_INLINE][r][P].free;
}

/* Past the cache capacity (refills and spills) against the reference row;
 * the same at every row (the rows list shows it once per row). */
double t_free_256_vs_64(int r, int P)
{
	int r256 = row_of(256), ref = row_of(opt.ref_allocs);

	if (r256 < 0 || ref < 0)
		return NAN;
	return lat[0][COL_AFTER][r256][P].free / lat[0][COL_AFTER][ref][P].free;
}

double t_scaling(int r, int P)
{
	return pair(&lat[0][COL_AFTER][r][2]) / pair(&lat[0][COL_AFTER][r][1]);
}

double t_xfree(int r, int P)
{
	return pair(&lat[1][COL_AFTER][r][2]) / pair(&lat[0][COL_AFTER][r][2]);
}

double t_speedup(int r, int P)
{
	return pair(&lat[0][COL_BEFORE][r][1]) / pair(&lat[0][COL_AFTER][r][1]);
}

/* The worst ratio over producers 1..nproc (or the one P the target names). */
void add_target(const char *name, const char *how, ratio_fn fn, double limit,
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

void eval_targets(void)
{
	bool two = nproc >= 2;

	add_target("alloc+free pair <= 1/3 of bpf_obj_new+bpf_obj_drop",
		   "after pair / kernel pair, malloc-free, worst over producers",
		   t_pair_vs_kobj, 1.0 / 3, false, true, true);
	add_target("fast-path alloc <= 2x the floor",
		   "call alloc / floor (one call) alloc, malloc-free, worst over producers",
		   t_call_alloc_vs_floor, 2, false, true, floor_ok);
	add_target("fast-path free <= 2x the floor",
		   "call free / floor (one call) free, malloc-free, worst over producers",
		   t_call_free_vs_floor, 2, false, true, floor_ok);
	if (floor_ok) {
		int ref = row_of(opt.ref_allocs);
		struct cell *a = &lat[0][COL_CALL][ref][1], *i = &lat[0][COL_FLOOR_INLINE][ref][1];
		struct cell *f = &lat[0][COL_FLOOR][ref][1];

		snprintf(targets[1].note, sizeof(targets[1].note),
			 "at P=1: call %.1f ns, floor %.1f ns (one call), %.1f ns inlined: a call "
			 "level costs ~%.1f ns here", a->alloc, f->alloc, i->alloc, f->alloc - i->alloc);
		snprintf(targets[2].note, sizeof(targets[2].note),
			 "at P=1: call %.1f ns, floor %.1f ns (one call), %.1f ns inlined", a->free,
			 f->free, i->free);
	}
	add_target("per-op latency at 2 producers <= 1.2x at 1 producer",
		   "after pair, P=2 / P=1, malloc-free", t_scaling, 1.2, false, false, two);
	add_target("xfree <= 1.5x free at 2 producers",
		   "after pair, malloc-xfree / malloc-free, P=2", t_xfree, 1.5, false, false, two);
	add_target("cached vs caches-off >= 4x at 1 producer",
		   "before pair / after pair, malloc-free, P=1", t_speedup, 4, true, false, true);
	/* the global functions against the one-call floor, tighter limits */
	add_target("fast-path alloc <= 1.25x the floor (call)",
		   "call alloc / floor (one call) alloc, malloc-free, worst over producers",
		   t_call_alloc_vs_floor, 1.25, false, true, floor_ok);
	add_target("fast-path free <= 1.3x the floor (call)",
		   "call free / floor (one call) free, malloc-free, worst over producers",
		   t_call_free_vs_floor, 1.3, false, true, floor_ok);
	htab_target();
	/* the inline API */
	add_target("inline alloc <= 2.5x the inline floor",
		   "after alloc / floor-inline alloc, malloc-free, worst over producers",
		   t_alloc_vs_inline_floor, 2.5, false, true, floor_ok);
	add_target("inline free <= 3.5x the inline floor",
		   "after free / floor-inline free, malloc-free, worst over producers",
		   t_free_vs_inline_floor, 3.5, false, true, floor_ok);
	if (floor_ok) {
		int ref = row_of(opt.ref_allocs);
		struct cell *a = &lat[0][COL_AFTER][ref][1], *i = &lat[0][COL_FLOOR_INLINE][ref][1];
		struct cell *c = &lat[0][COL_CALL][ref][1];

		snprintf(targets[nr_targets - 2].note, sizeof(targets[0].note),
			 "at P=1: after (inline) %.1f ns, call %.1f ns, floor-inline %.1f ns",
			 a->alloc, c->alloc, i->alloc);
		snprintf(targets[nr_targets - 1].note, sizeof(targets[0].note),
			 "at P=1: after (inline) %.1f ns, call %.1f ns, floor-inline %.1f ns",
			 a->free, c->free, i->free);
	}
	add_target("inline pair <= 1/30 of bpf_obj_new+bpf_obj_drop",
		   "after pair / kernel pair, malloc-free, worst over producers",
		   t_pair_vs_kobj, 1.0 / 30, false, true, true);
	add_target("allocs 256: free <= 2x its allocs-64 figure",
		   "after free at allocs=256 / after free at the reference row, malloc-free, "
		   "worst over producers (refills and spills)",
		   t_free_256_vs_64, 2, false, true, row_of(256) >= 0);
	targets[nr_targets - 1].rows[0] = 0;	/* one ratio, not one per row */
}

/* htab-mem: arena-alloc's ops/s at least the baseline's in every use case
 * and producer count; the worst ratio counts. The baseline ran
 * in another process a minute earlier: the kernel's own tables, the same
 * code in both runs, measure how much the machine itself drifted in
 * between (their geometric mean after/before ratio), and each ratio is
 * divided by that. */
void htab_target(void)
{
	struct target *t = &targets[nr_targets++];
	int uc, P, impl, len = 0;

	t->name = "htab-mem ops/s >= the baseline's";
	t->how = "after / before ops/s per producer, arena-alloc table, over the kernel "
		 "tables' after / before (drift between the runs), worst case";
	t->limit = 1;
	t->at_least = true;
	t->ratio = NAN;
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (P = 1; P <= nproc; P++) {
			struct hcell *c = &htab[uc][BENCH_HTAB_ARENA][P];
			double raw, drift = 1, x;
			int n = 0;

			if (!c->valid || isnan(c->before_ops) || c->before_ops <= 0)
				continue;
			raw = c->ops_per_prod / c->before_ops;
			for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++) {
				struct hcell *k = &htab[uc][impl][P];

				if (impl == BENCH_HTAB_ARENA || !k->valid || isnan(k->before_ops) ||
				    k->before_ops <= 0)
					continue;
				drift *= k->ops_per_prod / k->before_ops;
				n++;
			}
			drift = n ? pow(drift, 1.0 / n) : 1;
			x = raw / drift;
			if (isnan(t->ratio) || x < t->ratio)
				t->ratio = x;
			len += snprintf(t->rows + len, sizeof(t->rows) - len, "%s%s/%d: %.2f (raw %.2f)",
					len ? ", " : "", htab_case_name[uc], P, x, raw);
		}
	t->valid = !isnan(t->ratio);
	memcpy(t->note, "by case: ", 9);
	memcpy(t->note + 9, t->rows, sizeof(t->note) - 10);
	t->note[sizeof(t->note) - 1] = 0;
	t->rows[0] = 0;
}

void print_targets(void)
{
	int i, met = 0, valid = 0;

	fprintf(out, "\n5. Targets (%llu B, reference row allocs=%u, ratios of medians)\n",
		(unsigned long long)opt.size, opt.ref_allocs);
	where_caption(out, "   ", true);
	fputc('\n', out);
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
		if (t->rows[0])
			fprintf(out, "           %s; by allocs row: %s\n", t->how, t->rows);
		else
			fprintf(out, "           %s\n", t->how);
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
