/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Program arguments shared by test_cpu_cache.c and its BPF programs. */
#ifndef __TEST_CPU_CACHE_H
#define __TEST_CPU_CACHE_H

struct stress_args {
	__u32 iters;	/* in */
	__u32 seed;	/* in */
	__u64 allocs;	/* out */
	__u64 frees;	/* out */
	__u64 errors;	/* out: failed alloc/free or a wrong tag */
	__u64 cross;	/* out: frees of objects another CPU allocated */
};

struct reent_args {
	__u32 iters;	/* in */
	__u32 cpu;	/* out */
	__u64 ok;	/* out: alloc/free pairs */
	__u64 errors;	/* out */
};

struct free_slow_args {
	__u64 ptr;	/* in: the object, already claimed */
	__u32 cls;	/* in: its class */
	int ret;	/* out: aa_cpu_cache_free_slow() */
};

/* calls: n aa_malloc (even i) / aa_calloc (odd i) calls of size bytes
 * into xslots[first + i], or with free set n aa_free of those slots. */
struct calls_args {
	__u32 first;	/* in */
	__u32 n;	/* in */
	__u64 size;	/* in */
	__u32 free;	/* in */
	__u64 done;	/* out: calls that succeeded */
};

#endif
