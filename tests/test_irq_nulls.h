/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by test_irq_nulls.c and its BPF programs. */
#ifndef __TEST_IRQ_NULLS_H
#define __TEST_IRQ_NULLS_H

#define IN_THREADS	64	/* task threads at most */
#define IN_SIZE		64	/* bytes of every object but the worker's large ones */
#define IN_RING		4096	/* IRQ objects in flight: each run frees the one it displaces */
#define IN_HAND		1024	/* task objects in flight between task threads */
#define IN_TASK_OBJS	64	/* objects a task round allocates, then frees */
#define IN_HAND_EVERY	10	/* one in this many goes to another thread (10%) */
#define IN_BULK		256	/* objects per bulk call of the worker */
#define IN_BIG		(2ULL << 20)	/* bytes of the worker's large allocations */
#define IN_LONG_NS	128000ULL	/* a long heap-lock hold (TCG's bounded holds: less) */
#define IN_STALL_NS	1000000ULL	/* a heap-lock hold this long: its CPU stopped */

/* NULLs by the heap-lock hold behind them (in_held[]): reported, never
 * left out. */
enum {
	IN_HELD_NONE,	/* no one hold covered the call */
	IN_HELD_SHORT,	/* one hold did, shorter than IN_LONG_NS */
	IN_HELD_LONG,	/* IN_LONG_NS or more */
	IN_HELD_STALL,	/* IN_STALL_NS or more */
	IN_HELD_KINDS
};

/* What an IRQ NULL found right after it (in_why[]): reported. */
enum {
	IN_WHY_CLAIMED,		/* its CPU's cache claimed */
	IN_WHY_RESERVE_EMPTY,	/* that cache's reserve of the class empty */
	IN_WHY_RESERVE_UNWANTED,	/* not wanted yet (no IRQ took from it) */
	IN_WHY_TC_EMPTY,	/* the transfer cache's stack empty */
	IN_WHY_TC_RESERVE_EMPTY,	/* and its reserve */
	IN_WHY_KINDS
};

/* in_task: rounds of a task thread, pinned to a CPU with others. */
struct in_task_args {
	__u32 rounds;	/* in */
	__u32 me;	/* in: the thread's index, < IN_THREADS */
	__u64 allocs;	/* out: objects allocated */
	__u64 nulls;	/* out: allocations that got NULL */
	__u64 handed;	/* out: objects handed to another thread */
	__u64 errors;	/* out: frees that failed */
};

/* in_worker: rounds of the heap-lock holder's load. */
struct in_worker_args {
	__u32 rounds;	/* in */
	__u32 pad;
	__u64 big;	/* out: large allocations that succeeded */
	__u64 bulk;	/* out: objects the bulk calls got */
	__u64 errors;	/* out: frees that failed */
};

#endif
