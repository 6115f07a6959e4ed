/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* tracelist.h - one context switch, as tracelist.bpf.c links it into a list
 * in the arena and tracelist.c walks it from the mmap. */
#ifndef TRACELIST_H
#define TRACELIST_H

struct event {
	__u64 next;		/* arena address of the older event, 0: last */
	__u64 ts;		/* bpf_ktime_get_ns() */
	__u32 prev_pid, next_pid;
	__u64 comm[2];		/* next task's comm, 16 bytes */
};

#endif
