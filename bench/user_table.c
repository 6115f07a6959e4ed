// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user_table.c - build/aa_bench_user's output: the tables of its rows
 * (pairs, cross-side frees, calibration, counted pairs, targets) and the
 * TSV that carries rows from each kernel's run to one table (make
 * bench-user).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user.h"

/* --- Printing ----------------------------------------------------------- */

static void print_pairs_header(void)
{
	printf("%-22s %-5s %5s %3s | %9s %11s %9s | %12s %10s | %7s %4s\n", "kernel", "pat",
	       "size", "thr", "user ns", "syscall ns", "glibc ns", "user/syscall", "user/glibc",
	       "slow/1k", "cpu");
}

/* user/syscall as "1/N": the syscall pair costs N user pairs */
static double syscall_over_user(const struct row *w)
{
	return w->ns[PATH_SYSCALL] / w->ns[PATH_USER];
}

static void print_pairs_row(const struct row *w)
{
	char ratio[32];

	snprintf(ratio, sizeof(ratio), "1/%.0f", syscall_over_user(w));
	printf("%-22s %-5s %5llu %3d | %9.1f %11.1f %9.1f | %12s %9.2fx | %7.2f %3.0f%%\n",
	       w->kernel, w->pattern, (unsigned long long)w->size, w->threads,
	       w->ns[PATH_USER], w->ns[PATH_SYSCALL], w->ns[PATH_GLIBC], ratio,
	       w->ns[PATH_USER] / w->ns[PATH_GLIBC], w->slow[PATH_USER], 100 * w->share);
}

static void print_cross_header(void)
{
	printf("%-22s %-5s %5s %3s | %11s %11s %9s | %11s %11s %9s | %4s\n", "kernel", "", "size",
	       "thr", "BPF's>user", "user's>user", "cross/own", "user's>BPF", "BPF's>BPF",
	       "cross/own", "cpu");
}

/* A cross-side column: "ns (slow/1k)" */
static const char *cross_cell(char *buf, size_t sz, const struct row *w, int c)
{
	snprintf(buf, sz, "%.1f (%.0f)", w->ns[c], w->slow[c]);
	return buf;
}

static void print_cross_row(const struct row *w)
{
	char b[4][32];

	printf("%-22s %-5s %5llu %3d | %11s %11s %8.2fx | %11s %11s %8.2fx | %3.0f%%\n",
	       w->kernel, "", (unsigned long long)w->size, w->threads,
	       cross_cell(b[0], sizeof(b[0]), w, 0), cross_cell(b[1], sizeof(b[1]), w, 1),
	       w->ns[0] / w->ns[1], cross_cell(b[2], sizeof(b[2]), w, 2),
	       cross_cell(b[3], sizeof(b[3]), w, 3), w->ns[2] / w->ns[3], 100 * w->share);
}

static void print_count_header(const struct row *w)
{
	printf("\nCounted, not timed (valgrind callgrind, %llu pairs a cell, where: %s):\n"
	       "instructions and locked instructions (lock prefix, xchg with memory) per malloc +\n"
	       "free pair inside the calls, in userspace: not the loop's own functions (loop: the\n"
	       "instructions per pair of the same loop with no calls); an aa__run user call's kernel\n"
	       "side is in no count (slow/1k: how many there were)\n",
	       (unsigned long long)w->pairs, w->where);
	printf("  %-6s %-5s %5s %11s %12s %8s %6s\n", "path", "pat", "size", "insns/pair",
	       "locked/pair", "slow/1k", "loop");
}

static void print_count_row(const struct row *w)
{
	static const enum path paths[] = { PATH_USER, PATH_GLIBC };
	unsigned int i;
	enum path p;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		p = paths[i];
		printf("  %-6s %-5s %5llu", p == PATH_USER ? "user" : "glibc", w->pattern,
		       (unsigned long long)w->size);
		if (isnan(w->ns[p])) {
			printf("  not counted (no arena where it ran)\n");
			continue;
		}
		printf(" %11.2f %12.2f", w->ns[p], w->slow[p]);
		if (p == PATH_USER)
			printf(" %8.2f", w->slow[PATH_NONE]);
		else
			printf(" %8s", "-");
		printf(" %6.2f\n", w->ns[PATH_NONE]);
	}
}

void print_calib(const struct row *w)
{
	printf("calibration, ns per op: volatile add %.2f, call + return %.2f, lock cmpxchg +\n"
	       "release store %.2f, glibc 64-B malloc + free %.2f\n", w->ns[CAL_PLAIN],
	       w->ns[CAL_CALL], w->ns[CAL_CMPXCHG], w->ns[CAL_GLIBC]);
}

static const char *tcg_caution =
	"caution (TCG): the emulator slows kinds of code by different factors (the calibration\n"
	"line; `aa_bench_user --calibrate` prints it on any machine). Carry over to hardware:\n"
	"slow/1k (counts), 1 against 2 threads of one path and pattern, the BPF side's\n"
	"cross/own (JIT-ed BPF both). Do not: user/syscall (userspace C against a syscall\n"
	"into the kernel and JIT-ed BPF), ratios across different slow/1k (hits against\n"
	"aa__run user calls: loop against batch, the user side's cross/own), user/glibc (userspace\n"
	"C both, another mix of locked and plain instructions: a hint only). Absolute ns are\n"
	"the emulator's.";

static void print_targets(const struct row *rows, int n, const char *where)
{
	const struct row *worst = NULL, *slowest = NULL;
	bool emulated;
	int i;

	for (i = 0; i < n; i++) {
		const struct row *w = &rows[i];

		if (strcmp(w->kind, "pairs") || strcmp(w->where, where))
			continue;
		if (!worst || syscall_over_user(w) < syscall_over_user(worst))
			worst = w;
		if (!slowest || w->ns[PATH_USER] > slowest->ns[PATH_USER])
			slowest = w;
	}
	if (!worst)
		return;
	/* neither target carries over from an emulator: see tcg_caution */
	emulated = strstr(where, "QEMU guest") && !strstr(where, "KVM");
	printf("target: user pair <= 1/%d of the syscall pair: worst 1/%.0f (%s %llu B, %d thread%s): "
	       "%s\n", TARGET_RATIO, syscall_over_user(worst), worst->pattern,
	       (unsigned long long)worst->size, worst->threads, worst->threads > 1 ? "s" : "",
	       emulated ? "not judged (emulated: see the caution)"
	       : syscall_over_user(worst) >= TARGET_RATIO ? "met" : "missed");
	printf("target: user pair <= %d ns on hardware: worst %.1f ns (%s %llu B, %d thread%s): %s\n",
	       TARGET_NS, slowest->ns[PATH_USER], slowest->pattern,
	       (unsigned long long)slowest->size, slowest->threads,
	       slowest->threads > 1 ? "s" : "",
	       emulated ? "not judged (emulated)"
	       : slowest->ns[PATH_USER] <= TARGET_NS ? "met" : "missed");
}

/* The rows, one block per kernel (where it ran above it): the pairs, the
 * cross-side frees, the counted pairs, the targets. */
void print_rows(const struct row *rows, int n)
{
	bool timed = false, counted = false;
	int i, j;

	for (i = 0; i < n; i++) {
		const struct row *w = &rows[i];
		bool new_where = !i || strcmp(w->where, rows[i - 1].where);

		if (new_where)
			timed = counted = false;
		timed |= !strcmp(w->kind, "pairs");
		counted |= !strcmp(w->kind, "count");
		if (new_where) {
			printf("%swhere: %s\n", i ? "\n" : "", w->where);
			if (strstr(w->where, "TCG"))
				printf("%s\n", tcg_caution);
		}
		if (!strcmp(w->kind, "calib")) {
			print_calib(w);
			continue;
		}
		if (new_where || strcmp(w->kind, rows[i - 1].kind)) {
			if (!strcmp(w->kind, "count")) {
				print_count_header(w);
			} else if (!strcmp(w->kind, "pairs")) {
				printf("\nPairs: ns per malloc + free pair (user: aa_heap__malloc/free; "
				       "syscall: aa_heap__call\nAA_OP_MALLOC/AA_OP_FREE; glibc: "
				       "malloc/free)\n");
				print_pairs_header();
			} else {
				printf("\nCross-side frees: ns per object freed (slow/1k), batches "
				       "of %d; A's>B: A allocated\n(untimed), B frees (timed)\n", BATCH);
				print_cross_header();
			}
		}
		if (!strcmp(w->kind, "pairs"))
			print_pairs_row(w);
		else if (!strcmp(w->kind, "count"))
			print_count_row(w);
		else
			print_cross_row(w);
		if (i < n - 1 && !strcmp(w->where, rows[i + 1].where))
			continue;
		if (timed && !counted)
			printf("\ncounted: nothing from this run (--count-pairs 0, or it said why)\n");
		print_targets(rows, n, w->where);
	}
	for (j = 0; j < n; j++)
		if (rows[j].errors)
			printf("FAILED calls: %llu in %s %s %llu B, %d thread%s (%s)\n",
			       (unsigned long long)rows[j].errors, rows[j].kind, rows[j].pattern,
			       (unsigned long long)rows[j].size, rows[j].threads,
			       rows[j].threads > 1 ? "s" : "", rows[j].kernel);
	printf("  loop: malloc, write a byte, free, again; batch: %d mallocs, then their frees;\n"
	       "  user/syscall as 1/N: the syscall pair costs N user pairs; slow/1k: misses +\n"
	       "  spills per 1000 pairs (user path: of the thread's user cache, an aa__run user call\n"
	       "  each) or per 1000 frees (cross: of the cache the frees go to, the thread's or\n"
	       "  its CPU's); cross/own: the free of the other side's objects over the free of\n"
	       "  the freeing side's own; >BPF: one AA_OP_FREE_BULK run per batch, its syscall\n"
	       "  included; cpu: the smallest share of its CPU a thread had; each figure the\n"
	       "  median of the passes\n", BATCH);
}

/* --- TSV ----------------------------------------------------------------- */

int write_row(FILE *f, const struct row *w)
{
	int i;

	fprintf(f, "%s\t%s\t%s\t%llu\t%d", w->kind, w->kernel, w->pattern,
		(unsigned long long)w->size, w->threads);
	for (i = 0; i < 4; i++)
		fprintf(f, "\t%.6f", w->ns[i]);
	for (i = 0; i < 4; i++)
		fprintf(f, "\t%.6f", w->slow[i]);
	return fprintf(f, "\t%.3f\t%llu\t%llu\t%s\n", w->share, (unsigned long long)w->errors,
		       (unsigned long long)w->pairs, w->where) < 0 ? -EIO : 0;
}

static int read_row(const char *line, struct row *w)
{
	memset(w, 0, sizeof(*w));
	return sscanf(line, "%7[^\t]\t%64[^\t]\t%7[^\t]\t%llu\t%d\t%lf\t%lf\t%lf\t%lf"
		      "\t%lf\t%lf\t%lf\t%lf\t%lf\t%llu\t%llu\t%255[^\n]", w->kind, w->kernel,
		      w->pattern, (unsigned long long *)&w->size, &w->threads, &w->ns[0], &w->ns[1],
		      &w->ns[2], &w->ns[3], &w->slow[0], &w->slow[1], &w->slow[2], &w->slow[3],
		      &w->share, (unsigned long long *)&w->errors, (unsigned long long *)&w->pairs,
		      w->where) == 17 ? 0 : -EINVAL;
}

int print_table(const char *path)
{
	struct row *rows = NULL, *more;
	char line[1024];
	FILE *f = fopen(path, "r");
	int n = 0, bad = 0;

	if (!f) {
		fprintf(stderr, "user: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		more = realloc(rows, (n + 1) * sizeof(*rows));
		if (!more) {
			bad = 1;
			break;
		}
		rows = more;
		if (read_row(line, &rows[n])) {
			fprintf(stderr, "user: %s: not a row: %s", path, line);
			bad = 1;
			break;
		}
		n++;
	}
	fclose(f);
	if (!n && !bad)
		fprintf(stderr, "user: %s has no rows\n", path);
	if (n)
		print_rows(rows, n);
	free(rows);
	return bad || !n;
}
