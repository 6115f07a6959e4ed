/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by bench/user.c (the measurements) and bench/user_table.c (the
 * tables and the TSV) of build/aa_bench_user. */
#ifndef __BENCH_USER_H
#define __BENCH_USER_H

#include <stdio.h>
#include <sys/utsname.h>
#include <linux/types.h>

#define BATCH		256	/* objects per batch and per cross-side round */
#define TARGET_RATIO	40	/* user pair <= 1/40 of the syscall pair */
#define TARGET_NS	50	/* user pair <= 50 ns on hardware */

enum path { PATH_USER, PATH_SYSCALL, PATH_GLIBC, NR_PATHS };

#define NR_CROSS	4	/* cross-side columns (user.c's cross_cols[]) */

/* One line of the TSV and of the tables: kind "calib" (ns[CAL_*]),
 * "pairs" (pattern "loop" or "batch", ns[PATH_*]) or "cross" (ns[0 ..
 * NR_CROSS)); pattern "-" but for pairs. */
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
	char where[256];	/* where_str() of the run */
};

/* Calibration probes (user.c): ns per op of each kind. */
enum calib { CAL_PLAIN, CAL_CALL, CAL_CMPXCHG, CAL_GLIBC, NR_CALIB };

/* user_table.c */
void print_calib(const struct row *w);
void print_rows(const struct row *rows, int n);
int write_row(FILE *f, const struct row *w);
int print_table(const char *path);

#endif
