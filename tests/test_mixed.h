/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by test_mixed.c and its BPF programs. */
#ifndef __TEST_MIXED_H
#define __TEST_MIXED_H

#define MX_FLOWS	600	/* UDP flows the tc program keeps a record for */
#define MX_ENDED_FIRST	200	/* flows that end while the IRQs allocate */
#define MX_LIST_MAX	300	/* nodes the perf_event program puts on its list */
#define MX_RING		64	/* per CPU: nodes the perf_event program keeps, then frees */
#define MX_CPUS		8	/* CPUs the rings cover (the test uses at most this many) */
#define MX_NODE_SZ	48	/* bytes of a list node */
#define MX_BIG		(256ULL << 10)	/* bytes of the task's page runs */
#define MX_IRQ_RUN	(12ULL << 10)	/* bytes of the IRQs' page runs */

/* A flow's record (tc). */
struct mx_rec {
	__u64 flow;
	__u64 packets;
	__u64 bytes;
	__u64 first_ns;
	__u64 last_ns;
};

/* A node of the perf_event program's list. */
struct mx_node {
	__u64 next;	/* arena address of the next node, 0: the end */
	__u64 ts;
	__u32 cpu;
	__u32 zeroed;	/* 1: came from aa_calloc() */
	__u64 pad[3];
};

/* The payload after the UDP header of a test packet. */
struct mx_pkt {
	__u32 flow;
	__u32 op;	/* MX_OP_* */
};

enum { MX_OP_DATA, MX_OP_END };

/* mx_walk / mx_churn (syscall programs). */
struct mx_walk_args {
	__u64 freed;	/* out: nodes freed */
	__u64 errors;	/* out: frees that failed */
	__u64 bad;	/* out: nodes whose contents were not what was written */
};

struct mx_churn_args {
	__u32 rounds;	/* in */
	__u32 pad;
	__u64 big;	/* out: page runs allocated and freed */
	__u64 bulk;	/* out: objects the bulk calls got */
	__u64 errors;	/* out: frees that failed */
};

#endif
