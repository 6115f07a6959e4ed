/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The task-storage benchmark's settings and counters, shared by
 * bench/storage.c and bench/bpf/storage.bpf.c. */
#ifndef __AA_BENCH_STORAGE_H
#define __AA_BENCH_STORAGE_H

/* Where the two contexts of a task (64 B and 256 B) live. */
enum storage_mode {
	STORAGE_NONE,	/* nowhere: the programs only count */
	STORAGE_TASK,	/* task storage holds them (value sizes 64 and 256) */
	STORAGE_PTR,	/* arena-alloc; task storage holds their addresses */
	STORAGE_HASH,	/* arena-alloc; an arena hash by pid holds them */
	STORAGE_NMODES,
};

#define STORAGE_CTX_SMALL	64
#define STORAGE_CTX_LARGE	256

/* The arena hash: open addressing, linear probing. Live entries are the
 * workload's tasks between creation and free (a batch plus those whose
 * free waits for an RCU grace period); a task finds a slot within
 * STORAGE_PROBE of its pid's home or is counted in table_full. */
#define STORAGE_SLOTS		16384	/* a power of two */
#define STORAGE_PROBE		64
#define STORAGE_SLOT_EMPTY	0	/* never used: a lookup stops here */
#define STORAGE_SLOT_TOMB	1	/* freed: an insert takes it again */

/* Key: the task's address, not its pid: a pid is free again at release,
 * before its task's sched_process_free, so two live entries may share
 * one. The pid only picks the home slot. */
struct storage_slot {
	__u64 task;
	__u64 small;	/* arena addresses of the contexts */
	__u64 large;
	__u64 pid;
};

struct storage_cfg {
	__u32 mode;		/* enum storage_mode, set before attach */
	__u32 parent_tgid;	/* the workload's tasks are this process's
				 * children; 0: the programs count nothing
				 * (set between runs, with no task alive) */
};

/* Counted by the programs; userspace reads them between runs (no task of
 * the workload alive then, every free seen). */
struct storage_out {
	__u64 created;		/* workload tasks seen by task_newtask */
	__u64 freed;		/* ... and by sched_process_free */
	__u64 live, peak_live;	/* created - freed, and its maximum */
	__u64 kernel_allocs;	/* task storage elements created */
	__u64 arena_allocs;	/* contexts from arena-alloc */
	/* failures: a run with any says so */
	__u64 create_fails;	/* bpf_task_storage_get(F_CREATE) gave NULL */
	__u64 alloc_nulls;	/* aa_calloc() gave NULL */
	__u64 table_full;	/* no free slot within STORAGE_PROBE */
	__u64 lookup_misses;	/* at free: no storage, or no entry, found */
	__u64 delete_busy;	/* bpf_task_storage_delete() -EBUSY */
	__u64 delete_fails;	/* ... any other error */
	__u64 free_fails;	/* aa_free() != 0 */
};

#endif
