/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by test_irq_nulls.c and its BPF programs. */
#ifndef __TEST_IRQ_NULLS_H
#define __TEST_IRQ_NULLS_H

#define IN_RING		4096	/* objects the IRQ program keeps for the worker */
#define IN_BULK		256	/* objects per bulk call of the worker */
#define IN_BIG		(2ULL << 20)	/* bytes of the worker's large allocations */

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
