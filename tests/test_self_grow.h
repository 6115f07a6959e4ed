/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The burst program's settings and results, shared by test_self_grow.c,
 * bench/ and tests/bpf/test_self_grow.bpf.c. */
#ifndef __TEST_SELF_GROW_H
#define __TEST_SELF_GROW_H

/* Latency histogram: bucket 4 * log2(ns) + the next two bits below the
 * top one (a quarter-octave each: 25% wide at most). */
#define BURST_BUCKETS	256

static inline unsigned int burst_bucket(unsigned long long ns)
{
	unsigned int lg = 0;

	if (ns < 4)
		return ns;
	while ((ns >> lg) > 7)	/* ns >> lg in [4, 8): lg + 2 = log2 */
		lg++;
	return 4 * (lg + 2) + (unsigned int)((ns >> lg) & 3);
}

/* The bucket's lower bound in ns (buckets 4 .. 7 stay empty). */
static inline unsigned long long burst_bucket_ns(unsigned int b)
{
	if (b < 8)
		return b;
	return (4ULL + (b & 3)) << (b / 4 - 2);
}

struct burst_cfg {
	unsigned long long size;	/* bytes per allocation */
	unsigned int per_run;		/* allocations per program run */
	unsigned int keep;		/* 0: free each object at once */
};

struct burst_out {
	unsigned long long ok;		/* allocations that got memory */
	unsigned long long nulls;	/* allocations that got NULL */
	unsigned long long ok_at_first_null; /* ok when the first NULL came */
	unsigned long long max_ns;	/* slowest allocation */
	unsigned long long hist[BURST_BUCKETS];
};

#endif
