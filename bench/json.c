// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* json.c - aa_bench: the JSON output (--json, --json-out). */
#include "harness.h"

/* --- JSON --------------------------------------------------------------------------- */

void json_num(FILE *f, const char *k, double v, bool comma)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\"%s\":null%s", k, comma ? "," : "");
	else
		fprintf(f, "\"%s\":%.3f%s", k, v, comma ? "," : "");
}

/* A JSON string, quotes, backslashes and control characters escaped;
 * null for s NULL. */
static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fprintf(f, "null");
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* "where": where.h's findings; null for what does not apply (a host has
 * no accelerator, bare metal no hypervisor, only TCG a caution). */
static void write_json_where(FILE *f)
{
	const struct where *w = where_get();

	fprintf(f, "\"where\":{\"text\":");
	json_str(f, w->str);
	fprintf(f, ",\"kernel\":");
	json_str(f, w->u.release);
	fprintf(f, ",\"arch\":");
	json_str(f, w->u.machine);
	fprintf(f, ",\"machine\":\"%s\",\"hypervisor\":", w->guest ? "guest" : "host");
	json_str(f, w->hv_sig[0] ? w->hv : NULL);
	fprintf(f, ",\"accel\":");
	json_str(f, w->accel);
	fprintf(f, ",\"accel_from\":\"%s\",\"cpus\":%d,\"caution\":", w->accel_from, w->cpus);
	json_str(f, where_caution());
	fprintf(f, "},\n");
}

/* Debug mode (table 1.3): each debug column's alloc, free and pair over
 * after's, per cell, and the errors it found. */
static void write_json_debug(FILE *f)
{
	int v, c, r, P;
	bool first = true;

	if (opt.no_latency || opt.no_debug)
		return;
	fprintf(f, "\"debug\":{\"quarantine\":{\"%s\":%u,\"%s\":%u},\"errors\":{\"%s\":%llu,"
		"\"%s\":%llu},\n\"ratios\":[\n", col_name[COL_DEBUG], inst_dbg.quarantine,
		col_name[COL_DEBUG_Q], inst_dbgq.quarantine, col_name[COL_DEBUG],
		(unsigned long long)debug_errors(&inst_dbg), col_name[COL_DEBUG_Q],
		(unsigned long long)debug_errors(&inst_dbgq));
	for (v = 0; v < 2; v++)
		for (c = COL_DEBUG; c <= COL_DEBUG_Q; c++)
			for (r = 0; r < (int)NR_ROWS; r++)
				for (P = 1; P <= nproc; P++) {
					struct cell *x = &lat[v][c][r][P], *a = &lat[v][COL_AFTER][r][P];

					if (!x->valid || !a->valid)
						continue;
					fprintf(f, "%s{\"variant\":\"%s\",\"impl\":\"%s\",\"over\":\"%s\","
						"\"allocs\":%u,\"producers\":%d,", first ? "" : ",\n",
						var_name[v], col_name[c], col_name[COL_AFTER],
						allocs_rows[r], P);
					json_num(f, "alloc", x->alloc / a->alloc, true);
					json_num(f, "free", x->free / a->free, true);
					json_num(f, "pair", pair(x) / pair(a), false);
					fputc('}', f);
					first = false;
				}
	fprintf(f, "\n]},\n");
}

void write_json(FILE *f, double runtime)
{
	struct utsname u;
	int v, c, r, P, uc, impl, i, k;
	bool first = true;

	uname(&u);
	fprintf(f, "{\n\"machine\":{\"kernel\":\"%s\",\"arch\":\"%s\",\"cpus\":%d},\n", u.release,
		u.machine, nproc);
	write_json_where(f);
	fprintf(f, "\"options\":{\"size\":%llu,\"kobj_bytes\":%llu,\"cell_ms\":%d,\"ref_allocs\":%u,"
		"\"raw\":%s,\"passes\":%d,\"code_layouts\":%d},\n", (unsigned long long)opt.size,
		(unsigned long long)kobj_bytes, opt.cell_ms, opt.ref_allocs, opt.raw ? "true" : "false",
		opt.passes, opt.one_layout ? 1 : opt.passes);
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
	fprintf(f, "\n],\n");
	write_json_debug(f);
	fprintf(f, "\"htab\":[\n");
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
