/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* demo.h - what demo.bpf.c and demo.c share: the slot table's shape, the
 * size mix and the stamp every live object carries. */
#ifndef __AA_DEMO_H
#define __AA_DEMO_H

#define DEMO_SLOTS	1024
#define DEMO_STAMP	0x64656d6f00000000ULL	/* "demo" */

/* Counters of the tc program (its .bss). */
struct demo_counts {
	__u64 runs, allocs, frees, nulls, free_errors, corrupt;
};

/* Run i's object size: small classes, a page, a multi-page span class (5000 B). */
static inline __u64 demo_size(__u64 i)
{
	return (__u64[]){ 16, 24, 64, 100, 256, 1000, 4096, 5000 }[i & 7];
}

/* Run i's slot: a multiplicative hash, so slots are reused out of order. */
static inline __u32 demo_slot(__u64 i)
{
	return (__u32)(i * 2654435761ULL >> 8) & (DEMO_SLOTS - 1);
}

/* Word 0 of run i's object; word 1 is its size. */
static inline __u64 demo_stamp(__u64 i)
{
	return DEMO_STAMP | (i & 0xffffffffULL);
}

static inline int demo_stamp_ok(__u64 w0, __u64 w1)
{
	return (w0 & ~0xffffffffULL) == DEMO_STAMP && w1 == demo_size(w0);
}
#endif
