// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * scx_tasks.bpf.c - a sched_ext scheduler (global FIFO, default slice)
 * whose state lives in arena-alloc:
 *  - a context per task, from aa_calloc() in init_task, freed in exit_task;
 *    its address is kept in task local storage (the kernel finds it from
 *    the task in O(1), and frees the storage with the task), and in a table
 *    by pid in the arena, where the loader reads every live context from
 *    the mmap;
 *  - per-CPU state, allocated when the scheduler is enabled;
 *  - a record per enqueue, of 32 to 256 bytes, freed when the task runs:
 *    traffic for the CPU caches.
 * The callbacks are named aa_*: the library's own globals are aa__*.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "arena_alloc.bpf.h"
#include "scx_tasks.h"

#define ENOMEM	12

char LICENSE[] SEC("license") = "GPL";

AA_ARENA((64 << 20) / AA_PAGE_SIZE);	/* 64 MiB of address space */

#define STRUCT_OPS(name, args...)	SEC("struct_ops/" #name) BPF_PROG(name, ##args)
#define STRUCT_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} task_ctx_of SEC(".maps");

struct tasks __arena tasks;

/* Why the scheduler stopped (ops.exit), for the loader. */
__s32 exit_kind;
__s64 exit_code;
char exit_reason[128];

static struct task_ctx __arena *ctx_of(struct task_struct *p)
{
	__u64 *slot = bpf_task_storage_get(&task_ctx_of, p, NULL, 0);

	return slot ? (struct task_ctx __arena *)*slot : NULL;
}

/* The context into the table: the first free slot from pid on. */
static void table_add(struct task_ctx __arena *c)
{
	__u32 i, s;

	c->slot = SCX_TASKS_SLOTS;
	bpf_for(i, 0, SCX_TASKS_PROBE) {
		s = (c->pid + i) & (SCX_TASKS_SLOTS - 1);
		if (__sync_val_compare_and_swap(&tasks.slot[s], 0, (__u64)c) == 0) {
			c->slot = s;
			return;
		}
	}
	__sync_fetch_and_add(&tasks.untabled, 1);
}

s32 STRUCT_OPS(aa_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

void STRUCT_OPS(aa_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx __arena *c = ctx_of(p);
	void __arena *rec;

	if (c) {
		c->enqueues++;
		if (!c->pending) {
			rec = aa_malloc(32 << (c->enqueues & 3));
			if (rec) {
				*(__u64 __arena *)rec = c->enqueues;
				c->pending = (__u64)rec;
				__sync_fetch_and_add(&tasks.rec_allocs, 1);
			} else {
				__sync_fetch_and_add(&tasks.rec_nulls, 1);
			}
		}
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
}

void STRUCT_OPS(aa_running, struct task_struct *p)
{
	struct task_ctx __arena *c = ctx_of(p);
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_state __arena *cs;
	__u64 rec;

	if (!c)
		return;
	c->runs++;
	c->last_cpu = cpu;
	c->hist[c->hist_at++ & (SCX_TASKS_HIST - 1)] = cpu;
	c->started_ns = bpf_ktime_get_ns();
	rec = c->pending;
	c->pending = 0;
	if (rec && !aa_free((void __arena *)rec))
		__sync_fetch_and_add(&tasks.rec_frees, 1);
	cs = (struct cpu_state __arena *)tasks.cpu[cpu & (SCX_TASKS_MAX_CPUS - 1)];
	if (cs) {
		cs->runs++;
		cs->records += !!rec;
	}
}

/* Touches its context only: AA_USE_ARENA names the arena for the verifier. */
void STRUCT_OPS(aa_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx __arena *c = ctx_of(p);

	AA_USE_ARENA(arena);
	if (c && c->started_ns)
		c->runtime_ns += bpf_ktime_get_ns() - c->started_ns;
}

s32 STRUCT_OPS_SLEEPABLE(aa_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx __arena *c;
	__u64 comm[2] = {};
	__u64 *slot;

	slot = bpf_task_storage_get(&task_ctx_of, p, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!slot)
		return -ENOMEM;
	c = aa_calloc(1, sizeof(*c));
	if (!c) {
		__sync_fetch_and_add(&tasks.ctx_nulls, 1);
		return 0;	/* the task runs without a context */
	}
	c->pid = p->pid;
	/* helpers write to the stack, not the arena: copy it in two words */
	bpf_probe_read_kernel_str(comm, sizeof(comm), p->comm);
	((__u64 __arena *)c->comm)[0] = comm[0];
	((__u64 __arena *)c->comm)[1] = comm[1];
	*slot = (__u64)c;
	table_add(c);
	__sync_fetch_and_add(&tasks.ctx_allocs, 1);
	return 0;
}

void STRUCT_OPS(aa_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	__u64 *slot = bpf_task_storage_get(&task_ctx_of, p, NULL, 0);
	struct task_ctx __arena *c;

	if (!slot || !*slot)
		return;
	c = (struct task_ctx __arena *)*slot;
	*slot = 0;
	if (c->slot < SCX_TASKS_SLOTS)
		tasks.slot[c->slot] = 0;
	if (c->pending && !aa_free((void __arena *)c->pending))
		__sync_fetch_and_add(&tasks.rec_frees, 1);
	if (!aa_free(c))
		__sync_fetch_and_add(&tasks.ctx_frees, 1);
}

s32 STRUCT_OPS_SLEEPABLE(aa_init)
{
	__u32 cpu;

	bpf_for(cpu, 0, SCX_TASKS_MAX_CPUS)
		tasks.cpu[cpu] = (__u64)aa_calloc(1, sizeof(struct cpu_state));
	return 0;
}

void STRUCT_OPS(aa_exit, struct scx_exit_info *ei)
{
	__u32 cpu;

	bpf_for(cpu, 0, SCX_TASKS_MAX_CPUS) {
		aa_free((void __arena *)tasks.cpu[cpu]);
		tasks.cpu[cpu] = 0;
	}
	exit_kind = ei->kind;
	exit_code = ei->exit_code;
	bpf_probe_read_kernel_str(exit_reason, sizeof(exit_reason), ei->reason);
}

SEC(".struct_ops.link")
struct sched_ext_ops scx_tasks_ops = {
	.select_cpu = (void *)aa_select_cpu,
	.enqueue = (void *)aa_enqueue,
	.running = (void *)aa_running,
	.stopping = (void *)aa_stopping,
	.init_task = (void *)aa_init_task,
	.exit_task = (void *)aa_exit_task,
	.init = (void *)aa_init,
	.exit = (void *)aa_exit,
	.name = "scx_tasks",
};
