// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tables.c - aa_bench: printing tables 1-4 (and 1.3, debug mode). */
#include "harness.h"

/* --- Tables ---------------------------------------------------------------------- */

int row_of(unsigned int allocs)
{
	for (int r = 0; r < (int)NR_ROWS; r++)
		if (allocs_rows[r] == allocs)
			return r;
	return -1;
}

void rule(int width)
{
	while (width-- > 0)
		fputc('-', out);
	fputc('\n', out);
}

void print_header(const char *left, int colw, const char *cols)
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

double pair(const struct cell *c)
{
	return c->alloc + c->free;
}

/* How much of their CPU the producers got (job_cpu()), over a variant's
 * cells at P producers: median and minimum. */
void share_stats(int v, int P, double *med, double *min)
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

void print_share(int v)
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

void print_before_after(int v)
{
	static const char *const what[2] = { "alloc", "free" };
	const char *cols = " before    call   after  speedup";
	int k, r, P, colw = strlen(cols);

	fprintf(out, "\n1.%d Allocator latency, %s, %llu B: ns per op (before = caches off, "
		"call = caches on,\n    global functions aa_malloc_u64/aa_free_u64; after = caches "
		"on, the inline API aa_malloc/aa_free;\n    speedup = before/after)\n", v + 1,
		var_name[v], (unsigned long long)opt.size);
	where_caption(out, "    ", false);
	for (k = 0; k < 2; k++) {
		fprintf(out, "\n%s\n", k ? "free latency" : "alloc latency");
		print_header(what[k], colw, cols);
		for (r = 0; r < (int)NR_ROWS; r++) {
			fprintf(out, "%8u", allocs_rows[r]);
			for (P = 1; P <= nproc; P++) {
				struct cell *b = &lat[v][COL_BEFORE][r][P], *a = &lat[v][COL_AFTER][r][P];
				struct cell *c = &lat[v][COL_CALL][r][P];
				double x = k ? b->free : b->alloc, y = k ? a->free : a->alloc;

				fprintf(out, " | %7.1f %7.1f %7.1f %7.2fx", x, k ? c->free : c->alloc, y,
					x / y);
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

void print_row_head(int r, int P)
{
	if (P == 1)
		fprintf(out, "%6u %3d", allocs_rows[r], P);
	else
		fprintf(out, "%6s %3d", "", P);
}

/* Table 2: rows allocs x producers, one block of columns per variant. */
void print_kobj(void)
{
	int r, P, v;

	fprintf(out, "\n2. The kernel's allocator: bpf_obj_new / bpf_obj_drop of %llu-B objects "
		"(same harness), ns per op;\n   kernel/after = kernel pair / arena-alloc pair "
		"(caches on)\n", (unsigned long long)kobj_bytes);
	where_caption(out, "   ", true);
	fputc('\n', out);
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

/* A column group of tables 1.3 and 3: a cell's alloc and free, ns per op,
 * or with den >= 0 the ratios num / den. */
struct group {
	const char *name;
	int num, den;
};

/* One block per variant, rows allocs x producers, two columns (alloc,
 * free) per group. */
static void print_groups(const struct group *g, int n)
{
	int v, r, P, k;

	for (v = 0; v < 2; v++) {
		fprintf(out, "\n%s\n%6s %3s", var_name[v], "", "");
		for (k = 0; k < n; k++)
			fprintf(out, " | %15s", g[k].name);
		fprintf(out, "\n%6s %3s |", "allocs", "P");
		for (k = 0; k < n; k++)
			fprintf(out, " %7s %7s%s", "alloc", "free", k < n - 1 ? " |" : "\n");
		rule(10 + n * 18);
		for (r = 0; r < (int)NR_ROWS; r++)
			for (P = 1; P <= nproc; P++) {
				print_row_head(r, P);
				for (k = 0; k < n; k++) {
					struct cell *a = &lat[v][g[k].num][r][P];
					struct cell *b = &lat[v][g[k].den < 0 ? g[k].num : g[k].den][r][P];

					if (!a->valid || !b->valid)	/* no runs */
						fprintf(out, " | %7s %7s", "-", "-");
					else if (g[k].den < 0)
						fprintf(out, " | %7.1f %7.1f", a->alloc, a->free);
					else
						fprintf(out, " | %6.2fx %6.2fx", a->alloc / b->alloc,
							a->free / b->free);
				}
				fputc('\n', out);
			}
	}
}

/* Table 3: one block per variant, rows allocs x producers. */
void print_floor(void)
{
	static const struct group g[] = {
		{ "floor call", COL_FLOOR, -1 }, { "floor inline", COL_FLOOR_INLINE, -1 },
		{ "call", COL_CALL, -1 }, { "after", COL_AFTER, -1 },
		{ "call/fc", COL_CALL, COL_FLOOR }, { "after/fi", COL_AFTER, COL_FLOOR_INLINE },
	};

	if (!floor_ok) {
		fprintf(out, "\n3. The floor: skipped (worker CPU ids are not 0 .. P-1)\n");
		where_caption(out, "   ", false);
		return;
	}
	fprintf(out, "\n3. The floor: a per-CPU LIFO of preallocated arena objects, no allocator "
		"logic (same harness),\n   ns per op. floor call: one global-function call per op, "
		"like any library API; floor inline:\n   no call (the limit). call: arena-alloc's "
		"global functions; after: its inline API.\n   call/fc: call over the call floor; "
		"after/fi: after over the inline floor.\n");
	where_caption(out, "   ", false);
	print_groups(g, ARRAY_SIZE(g));
}

/* Table 1.3: debug mode next to the normal heap, and what it found. */
void print_debug(void)
{
	static const struct group g[] = {
		{ "after", COL_AFTER, -1 }, { "debug", COL_DEBUG, -1 },
		{ "debug+q", COL_DEBUG_Q, -1 }, { "debug/after", COL_DEBUG, COL_AFTER },
		{ "debug+q/after", COL_DEBUG_Q, COL_AFTER },
	};
	int ref = row_of(opt.ref_allocs), v, c, P;
	__u64 need = opt.size + AA_DEBUG_TAIL;

	if (opt.no_debug)
		return;
	fprintf(out, "\n1.3 Debug mode, %llu B: ns per op of the inline API (after) on heaps "
		"opened with AA_F_DEBUG:\n    debug = quarantine 0, debug+q = quarantine %u (the "
		"default); ratios over after.\n    With its %u-B tail a %llu-B request takes ",
		(unsigned long long)opt.size, inst_dbgq.quarantine, AA_DEBUG_TAIL,
		(unsigned long long)opt.size);
	if (need <= AA_MAX_CLASS_SIZE)
		fprintf(out, "a %u-B object (%u B without).\n",
			aa_class_size(aa_size_class(need)), aa_class_size(aa_size_class(opt.size)));
	else
		fprintf(out, "a page run.\n");
	where_caption(out, "    ", false);
	print_groups(g, ARRAY_SIZE(g));
	fprintf(out, "\npair (alloc + free) over after's, allocs=%u:", opt.ref_allocs);
	for (c = COL_DEBUG; c <= COL_DEBUG_Q; c++)
		for (v = 0; v < 2; v++) {
			fprintf(out, "\n  %-7s %-12s", g[c - COL_DEBUG + 1].name, var_name[v]);
			for (P = 1; P <= nproc; P++)
				fprintf(out, "%sP=%d %.2fx", P > 1 ? ", " : " ", P,
					pair(&lat[v][c][ref][P]) / pair(&lat[v][COL_AFTER][ref][P]));
		}
	fprintf(out, "\nerrors debug mode found in this workload: %llu (debug), %llu (debug+q)\n",
		(unsigned long long)debug_errors(&inst_dbg),
		(unsigned long long)debug_errors(&inst_dbgq));
}

void print_latency(void)
{
	int v, P;

	fprintf(out, "Timer cost per timed phase (subtracted%s):", opt.raw ? ": no, --raw" : "");
	for (P = 1; P <= nproc; P++)
		fprintf(out, " %.1f ns at %d producer%s%s", timer_ovh[P], P, P > 1 ? "s" : "",
			P < nproc ? "," : "\n");
	for (v = 0; v < 2; v++)
		print_before_after(v);
	print_debug();
	print_kobj();
	print_floor();
}

void print_htab(void)
{
	int uc, impl, P;

	fprintf(out, "\n4. htab-mem style: %d keys (u32), %d-B values; ops/s per producer "
		"(median of runs), memory\n   average and peak: arena-alloc: arena pages the heap "
		"maps (1-MiB chunks + metadata; in use:\n   what the allocator hands out, cached "
		"objects included); kernel maps: memlock (fdinfo).\n   cpu: the least share of its "
		"CPU a producer got (other processes take the rest)\n", BENCH_HTAB_ENTRIES,
		BENCH_HTAB_VALUE);
	where_caption(out, "   ", true);
	fputc('\n', out);
	fprintf(out, "%-20s %-17s %2s %14s %8s %8s %8s %6s %8s %s\n", "use case", "table", "P",
		"ops/s/producer", "avg MiB", "peak MiB", "in use", "ok %", "cpu",
		"  before: ops/s, avg MiB (after/before)");
	rule(140);
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++) {
		for (P = 1; P <= nproc; P++)
			for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++) {
				struct hcell *c = &htab[uc][impl][P];
				char used[16] = "-", tog[16] = "-", bef[64] = "";

				if (!c->valid)
					continue;
				if (!isnan(c->before_ops) && c->before_ops > 0)
					snprintf(bef, sizeof(bef), "  %.2fM (%.2fx), %.2f (%.2fx)",
						 c->before_ops / 1e6, c->ops_per_prod / c->before_ops,
						 c->before_mem / MiB, c->mem_avg / c->before_mem);
				if (!isnan(c->used_avg))
					snprintf(used, sizeof(used), "%.2f", c->used_avg / MiB);
				if (!isnan(c->share))
					snprintf(tog, sizeof(tog), "%.0f%%", 100 * c->share);
				fprintf(out, "%-20s %-17s %2d %13.2fM %8.2f %8.2f %8s %5.1f%% %8s%s\n",
					htab_case_name[uc], htab_impl_name[impl], P,
					c->ops_per_prod / 1e6, c->mem_avg / MiB, c->mem_peak / MiB, used,
					c->ops ? 100.0 * c->ok / c->ops : 0, tog, bef);
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
