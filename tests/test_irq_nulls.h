/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by test_irq_nulls.c and its BPF programs. */
#ifndef __TEST_IRQ_NULLS_H
#define __TEST_IRQ_NULLS_H

#define IN_RING		4096	/* objects the IRQ program keeps for the worker */
#define IN_BULK		256	/* objects per bulk call of the worker */
#define IN_BIG		(2ULL << 20)	/* bytes of the worker's large allocations */
#define IN_LONG_NS	128000ULL	/* a long heap-lock hold (TCG's bounded holds: less) */
#define IN_STALL_NS	1000000ULL	/* a heap-lock hold this long: its CPU stopped */

/* NULLs by the heap-lock hold behind them (in_held[]). */
enum {
	IN_HELD_NONE,	/* no one hold covered the call */
	IN_HELD_SHORT,	/* one hold did, shorter than IN_LONG_NS */
	IN_HELD_LONG,	/* IN_LONG_NS or more */
	IN_HELD_STALL,	/* IN_STALL_NS or more */
	IN_HELD_KINDS
};

/* worker: one round of the other CPU's load. */
struct in_worker_args {
	__u32 rounds;	/* in */
	__u32 pad;
	__u64 freed;	/* out: ring objects it freed */
	__u64 big;	/* out: large allocations that succeeded */
	__u64 bulk;	/* out: objects the bulk calls got */
	__u64 errors;	/* out: frees that failed */
};

#endif
