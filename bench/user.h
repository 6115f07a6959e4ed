/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by bench/user.c (the measurements) and bench/user_table.c (the
 * tables and the TSV) of build/aa_bench_user. */
#ifndef __BENCH_USER_H
#define __BENCH_USER_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <linux/types.h>

#define BATCH		256	/* objects per batch and per cross-side round */
#define TARGET_RATIO	40	/* user pair <= 1/40 of the syscall pair */
#define TARGET_NS	50	/* user pair <= 50 ns on hardware */

/* PATH_NONE: the same loop with no calls (user.c's pairs()): what it runs
 * is the loop's own, outside a counted pair's calls. */
enum path { PATH_USER, PATH_SYSCALL, PATH_GLIBC, NR_PATHS, PATH_NONE = NR_PATHS };

#define NR_CROSS	4	/* cross-side columns (user.c's cross_cols[]) */

/* One line of the TSV and of the tables: kind "calib" (ns[CAL_*]),
 * "pairs" (pattern "loop" or "batch", ns[PATH_*]), "cross" (ns[0 ..
 * NR_CROSS)) or "count" (pattern as pairs; counted, not timed:
 * ns[PATH_USER] and ns[PATH_GLIBC] instructions per pair, slow[] of the
 * same paths locked instructions per pair, inside the calls, NAN where a
 * path was not counted; ns[PATH_NONE] the loop's own instructions per
 * pair, outside the calls; slow[PATH_NONE] the user path's misses +
 * spills per 1000 pairs); pattern "-" but for pairs and count. */
struct row {
	char kind[8], pattern[8];
	char kernel[sizeof(((struct utsname *)0)->release)];
	__u64 size;
	int threads;
	double ns[4];		/* medians over the passes: NR_CALIB, NR_PATHS or
				 * NR_CROSS of them */
	double slow[4];		/* misses + spills of the cache the calls use, per
				 * 1000 pairs (pairs: [0], the user path) or
				 * per 1000 frees (cross: each column's) */
	double share;		/* smallest CPU share of a thread */
	__u64 errors;		/* calls that failed (none expected) */
	__u64 pairs;		/* count: pairs counted per path; else 0 */
	char where[256];	/* where_str() of the run */
};

/* Calibration probes (user.c): ns per op of each kind. */
enum calib { CAL_PLAIN, CAL_CALL, CAL_CMPXCHG, CAL_GLIBC, NR_CALIB };

/* Counted cells need the client requests of <valgrind/callgrind.h>:
 * without them the counted table says it was skipped. */
#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#define AA_HAVE_CALLGRIND	1
#else
#define AA_HAVE_CALLGRIND	0
#endif

/* The child's cells (user.c, run under callgrind by user_count.c): each
 * dumped with a trigger "COUNT_TAG path=P pattern=L size=S n=N slow=K
 * errors=E" (P: user, glibc, none or probe). */
#define COUNT_TAG	"aa_count"

/* user_count.c */
int count_cells(const char *self, bool user, __u64 n, const char *kernel, struct row *rows,
		int max);

/* user_table.c */
void print_calib(const struct row *w);
void print_rows(const struct row *rows, int n);
int write_row(FILE *f, const struct row *w);
int print_table(const char *path);

#endif
