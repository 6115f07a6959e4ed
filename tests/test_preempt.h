/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Program arguments shared by test_preempt.c and its BPF programs. */
#ifndef __TEST_PREEMPT_H
#define __TEST_PREEMPT_H

#define PS_SLOTS	4096	/* exchange slots (power of two) */
#define PS_THREADS	64	/* task threads, at most */
#define PS_BULK		8	/* objects per bulk call */
#define PS_IRQ_ME	0xff	/* owner id of the perf_event program */
#define PS_WAIT_TASK_NS	50000000ULL	/* AA_WAIT_TASK_NS, bpf/internal.h */

/*
 * A slot holds (low 32 bits of the object's address) << 32 | stamp, 0 when
 * empty. The stamp is written into the object's first and last 4 bytes;
 * whoever takes the slot checks both before freeing, so an object handed
 * to two owners (the second one overwrites the stamp), a stray write or a
 * wrong size shows as a mismatch. The stamp names its owner and the size:
 *   owner id << 24 | class << 18 | sub << 16 | seq
 * for a size of class_size[class] - 2 * sub bytes, sub < 4 (inside the
 * class: classes are at least 8 B apart; at least 10 bytes).
 */
#define PS_STAMP(me, cls, sub, seq) \
	(((__u32)(me) << 24) | (((cls) & 0x3f) << 18) | (((sub) & 3) << 16) | ((seq) & 0xffff))
#define PS_CLASS(stamp)	(((stamp) >> 18) & 0x3f)
#define PS_SUB(stamp)	(((stamp) >> 16) & 3)

/* Counters of one run; the perf_event program adds its own to a global. */
struct ps_counts {
	__u64 allocs;		/* objects allocated (single and bulk) */
	__u64 frees;		/* objects freed */
	__u64 nulls;		/* allocations that got NULL (bulk: each missing object) */
	__u64 quick_nulls;	/* of those, from calls shorter than PS_WAIT_TASK_NS */
	__u64 bad_stamp;	/* a taken object whose stamps were overwritten */
	__u64 bad_free;		/* frees that returned an error */
	__u64 misaligned;	/* addresses not aligned as the alignment rule says */
};

/* ps_run: iters steps of alloc/stamp/exchange/check/free (and every 16th a
 * bulk alloc/stamp/check/free of PS_BULK objects). */
/* ps_flush: empties every slot (checks and frees its object). */
struct ps_args {
	__u32 iters;	/* in */
	__u32 seed;	/* in */
	__u32 me;	/* in: owner id, < PS_THREADS */
	__u32 pad;
	__u64 hi;	/* in (ps_flush): upper 32 bits of arena addresses */
	struct ps_counts c;	/* out */
};

#endif
