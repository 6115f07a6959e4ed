// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tracelist.bpf.c - a tp_btf program on sched_switch that records context
 * switches as a singly linked list in the arena: each event is aa_malloc()ed
 * and pushed on `head` with a compare-and-swap (any CPU, any order), until
 * `limit` events. Userspace walks the list straight from the mmap
 * (tracelist.c); tracelist_clear frees it.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "arena_alloc.bpf.h"
#include "tracelist.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA((16 << 20) / AA_PAGE_SIZE);	/* 16 MiB of address space */

const volatile __u64 limit = 256;	/* events kept; set before load */
__u64 head;		/* arena address of the newest event, 0: empty */
__u64 taken, dropped, freed;

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct event __arena *e;
	__u64 comm[2] = {}, old;
	int i;

	if (__sync_fetch_and_add(&taken, 1) >= limit)
		return 0;
	e = aa_malloc(sizeof(*e));
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	bpf_probe_read_kernel_str(comm, sizeof(comm), next->comm);
	e->ts = bpf_ktime_get_ns();
	e->prev_pid = prev->pid;
	e->next_pid = next->pid;
	e->comm[0] = comm[0];	/* word by word: helpers cannot write arena */
	e->comm[1] = comm[1];
	for (i = 0; i < 64; i++) {	/* push; retried only under contention */
		old = head;
		e->next = old;
		if (__sync_val_compare_and_swap(&head, old, (__u64)e) == old)
			return 0;
	}
	aa_free(e);
	__sync_fetch_and_add(&dropped, 1);
	return 0;
}

/* Free the whole list (after detaching: nothing pushes meanwhile). */
SEC("syscall")
int tracelist_clear(void *ctx)
{
	struct event __arena *e;
	__u64 a = head;
	int i;

	head = 0;
	bpf_for(i, 0, 1 << 20) {
		if (!a)
			break;
		e = (struct event __arena *)a;
		a = e->next;
		if (!aa_free(e))
			freed++;
	}
	return 0;
}
