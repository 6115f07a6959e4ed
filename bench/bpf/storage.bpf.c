// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * storage.bpf.c - the programs of build/aa_bench_storage: a context of
 * 64 B and one of 256 B per task, made when the task is created
 * (tp_btf/task_newtask, in the parent's fork) and given back when it is
 * freed (tp_btf/sched_process_free, an RCU callback after the task was
 * reaped), in one of the modes of cfg.mode (storage.h):
 *
 *   none   the programs count the task and do nothing else;
 *   task   two task-storage maps hold the contexts themselves (the
 *          kernel's allocator): bpf_task_storage_get(F_CREATE) at
 *          creation, bpf_task_storage_delete() at free;
 *   ptr    aa_calloc() gives the contexts, two task-storage maps of 8-B
 *          values hold their addresses; aa_free() and delete at free;
 *   hash   aa_calloc() gives the contexts, a hash table in the arena
 *          (open addressing, keyed by the task, homed by its pid) holds
 *          their addresses: no task storage.
 *
 * Only the workload's tasks count: at creation the parent (current) is
 * cfg.parent_tgid; at free the task's real parent is, and the task is a
 * process (the workload makes no threads). Every mode counts the same
 * way, so "none" is the cost of the programs without the storage. The
 * loader keeps one object per mode attached and turns all but one off
 * (cfg.parent_tgid 0): every mode's tasks pass the same idle programs.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "arena_alloc.bpf.h"
#include "../storage.h"

#define CLONE_THREAD	0x00010000

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(1 << 14);	/* 64 MiB of address space */

struct ctx_small {
	__u64 w[STORAGE_CTX_SMALL / 8];
};

struct ctx_large {
	__u64 w[STORAGE_CTX_LARGE / 8];
};

#define TASK_STORAGE(name, vtype)				\
struct {							\
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);		\
	__uint(map_flags, BPF_F_NO_PREALLOC);			\
	__type(key, int);					\
	__type(value, vtype);					\
} name SEC(".maps")

TASK_STORAGE(task_small, struct ctx_small);
TASK_STORAGE(task_large, struct ctx_large);
TASK_STORAGE(ptr_small, __u64);
TASK_STORAGE(ptr_large, __u64);

struct storage_cfg cfg;
struct storage_out out;

struct storage_slot __arena table[STORAGE_SLOTS];

#define count(field)	__sync_fetch_and_add(&out.field, 1)

static __u32 home(__u32 pid)
{
	return (pid * 2654435761U) & (STORAGE_SLOTS - 1);
}

/* --- Creation --------------------------------------------------------------- */

static void task_create(struct task_struct *p)
{
	struct ctx_small *s = bpf_task_storage_get(&task_small, p, NULL,
						   BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct ctx_large *l = bpf_task_storage_get(&task_large, p, NULL,
						   BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (s) {
		s->w[0] = p->pid;
		count(kernel_allocs);
	} else {
		count(create_fails);
	}
	if (l) {
		l->w[0] = p->pid;
		count(kernel_allocs);
	} else {
		count(create_fails);
	}
}

/* A context of size bytes from the heap, its first word the pid; 0 on
 * NULL (counted). */
static __u64 ctx_alloc(__u64 size, __u32 pid)
{
	__u64 __arena *c = aa_calloc(1, size);

	if (!c) {
		count(alloc_nulls);
		return 0;
	}
	c[0] = pid;
	count(arena_allocs);
	return (__u64)c;
}

static void ptr_create(struct task_struct *p)
{
	__u64 *s = bpf_task_storage_get(&ptr_small, p, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 *l = bpf_task_storage_get(&ptr_large, p, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (s) {
		count(kernel_allocs);
		*s = ctx_alloc(STORAGE_CTX_SMALL, p->pid);
	} else {
		count(create_fails);
	}
	if (l) {
		count(kernel_allocs);
		*l = ctx_alloc(STORAGE_CTX_LARGE, p->pid);
	} else {
		count(create_fails);
	}
}

/* Task p's slot in the table: its entry, or with claim a slot taken for
 * it (the first empty or freed one from the pid's home, by a
 * compare-and-swap of its key: creations run on every CPU at once); NULL
 * when there is none within STORAGE_PROBE. A lookup ends at an empty
 * slot: slots never become empty again, so every entry sits before the
 * first one. */
static struct storage_slot __arena *hash_slot(struct task_struct *p, bool claim)
{
	struct storage_slot __arena *e;
	__u32 pid = p->pid, i;
	__u64 key;

	bpf_for(i, 0, STORAGE_PROBE) {
		e = &table[(home(pid) + i) & (STORAGE_SLOTS - 1)];
		key = e->task;
		if (!claim) {
			if (key == STORAGE_SLOT_EMPTY)
				break;
			if (key == (__u64)p)
				return e;
		} else if ((key == STORAGE_SLOT_EMPTY || key == STORAGE_SLOT_TOMB) &&
			   __sync_val_compare_and_swap(&e->task, key, (__u64)p) == key) {
			return e;
		}
	}
	return NULL;
}

/* A task's entry is complete before the task can run, so before its free. */
static void hash_create(struct task_struct *p)
{
	struct storage_slot __arena *e = hash_slot(p, true);

	if (!e) {
		count(table_full);
		return;
	}
	e->pid = p->pid;
	e->small = ctx_alloc(STORAGE_CTX_SMALL, p->pid);
	e->large = ctx_alloc(STORAGE_CTX_LARGE, p->pid);
}

/* The workload's tasks only: children (not threads) of cfg.parent_tgid. */
SEC("tp_btf/task_newtask")
int BPF_PROG(storage_newtask, struct task_struct *p, unsigned long clone_flags)
{
	__u64 live;

	if (!cfg.parent_tgid || (bpf_get_current_pid_tgid() >> 32) != cfg.parent_tgid ||
	    (clone_flags & CLONE_THREAD))
		return 0;
	count(created);
	live = __sync_add_and_fetch(&out.live, 1);
	if (live > out.peak_live)
		out.peak_live = live;	/* racy max: may miss one at a tie */
	switch (cfg.mode) {
	case STORAGE_TASK:
		task_create(p);
		break;
	case STORAGE_PTR:
		ptr_create(p);
		break;
	case STORAGE_HASH:
		hash_create(p);
		break;
	}
	return 0;
}

/* --- Free ------------------------------------------------------------------- */

static void storage_delete(void *map, struct task_struct *p)
{
	long err = bpf_task_storage_delete(map, p);

	if (err == -2)		/* -ENOENT */
		count(lookup_misses);
	else if (err == -16)	/* -EBUSY: the element goes with the task */
		count(delete_busy);
	else if (err)
		count(delete_fails);
}

static void ctx_free(__u64 c)
{
	if (c && aa_free((void __arena *)c))
		count(free_fails);
}

static void ptr_free(struct task_struct *p)
{
	__u64 *s = bpf_task_storage_get(&ptr_small, p, NULL, 0);
	__u64 *l = bpf_task_storage_get(&ptr_large, p, NULL, 0);

	/* NULL: the storage is busy on this CPU (or gone): the context leaks */
	if (s)
		ctx_free(*s);
	else
		count(lookup_misses);
	if (l)
		ctx_free(*l);
	else
		count(lookup_misses);
	storage_delete(&ptr_small, p);
	storage_delete(&ptr_large, p);
}

static void hash_free(struct task_struct *p)
{
	struct storage_slot __arena *e = hash_slot(p, false);

	if (!e) {
		count(lookup_misses);
		return;
	}
	ctx_free(e->small);
	ctx_free(e->large);
	e->small = 0;
	e->large = 0;
	e->task = STORAGE_SLOT_TOMB;
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(storage_free, struct task_struct *p)
{
	if (!cfg.parent_tgid || p->real_parent->tgid != cfg.parent_tgid || p->pid != p->tgid)
		return 0;
	count(freed);
	__sync_fetch_and_add(&out.live, -1);
	switch (cfg.mode) {
	case STORAGE_TASK:
		storage_delete(&task_small, p);
		storage_delete(&task_large, p);
		break;
	case STORAGE_PTR:
		ptr_free(p);
		break;
	case STORAGE_HASH:
		hash_free(p);
		break;
	}
	return 0;
}
