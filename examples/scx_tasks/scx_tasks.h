/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What scx_tasks' scheduler and its loader share: the per-task context
 * (in the arena, read by the loader straight from the mmap) and the table
 * of live contexts. */
#ifndef __SCX_TASKS_H
#define __SCX_TASKS_H

#define SCX_TASKS_SLOTS		4096	/* table of live contexts, by pid */
#define SCX_TASKS_PROBE		32	/* slots a context may try */
#define SCX_TASKS_HIST		4	/* last CPUs a task ran on */
#define SCX_TASKS_MAX_CPUS	64

/* One per task, from aa_calloc() in init_task, aa_free() in exit_task. */
struct task_ctx {
	__u32 pid;
	__u32 slot;		/* its index in tasks.slot[], or SCX_TASKS_SLOTS */
	char comm[16];
	__u64 enqueues;
	__u64 runs;
	__u64 runtime_ns;
	__u64 started_ns;	/* when it last started running */
	__u32 last_cpu;
	__u32 hist_at;
	__u32 hist[SCX_TASKS_HIST];
	__u64 pending;		/* this enqueue's record, freed when it runs */
};

/* Per-CPU state, allocated when the scheduler is enabled. */
struct cpu_state {
	__u64 runs;
	__u64 records;		/* enqueue records freed on this CPU */
};

/* The scheduler's globals in the arena: where the loader finds them. */
struct tasks {
	__u64 slot[SCX_TASKS_SLOTS];	/* arena addresses of contexts, 0: free */
	__u64 cpu[SCX_TASKS_MAX_CPUS];	/* arena addresses of struct cpu_state */
	__u64 ctx_allocs, ctx_frees, ctx_nulls, untabled;
	__u64 rec_allocs, rec_frees, rec_nulls;
};

#endif
