// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_fault.bpf.c - a non-sleepable (tc) program for the fault-injection
 * tests (test_fault.c): each run allocates tf_size bytes and keeps the
 * object in tf_held[], stamped (word 0: its address ^ TF_STAMP, word 1:
 * its slot), or counts the NULL. The syscall side is the library's own
 * aa__run, linked into this object.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_fault.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

/* user addresses of the objects the runs got; 0: that run got NULL */
__u64 __arena tf_held[TF_SLOTS];

__u64 tf_size;			/* in: bytes per allocation */
__u32 tf_next;			/* slots used (runs that found one) */
__u64 tf_ok, tf_nulls, tf_full;	/* out */

SEC("tc")
int tf_alloc(struct __sk_buff *skb)
{
	__u32 i = __sync_fetch_and_add(&tf_next, 1);
	__u64 __arena *p;

	if (i >= TF_SLOTS) {
		__sync_fetch_and_add(&tf_full, 1);
		return 3;
	}
	p = aa_malloc(tf_size);
	if (!p) {
		tf_held[i] = 0;
		__sync_fetch_and_add(&tf_nulls, 1);
		return 2;
	}
	p[0] = (__u64)p ^ TF_STAMP;
	p[1] = i;
	tf_held[i] = (__u64)p;
	__sync_fetch_and_add(&tf_ok, 1);
	return 1;
}
