// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_defer_race.bpf.c - a lock-free reader against a writer that
 * unlinks and frees (tests/test_defer_race.c runs them on two CPUs).
 *
 * Shared: NSLOTS arena words, each the address of a live element or 0.
 *  - writer (tc): a new element with a fresh stamp, swapped into a random
 *    slot (atomic exchange: the unlink), then the old one freed: plain
 *    aa_free() (mode 0) or aa_free_deferred() (mode 1);
 *  - reader (tc, so inside RCU): reads a slot, then the element's stamp
 *    (word 0) and its check word, again and again for a while. An
 *    element's words never change while it lives: any change means the
 *    element was freed and reused (or its word 0 overwritten by the
 *    allocator) under the reader: counted in recycled.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(1 << 14);	/* 64 MiB */

#define NSLOTS		16
#define READS		(1 << 14)	/* ~20-50 us holding one element */

struct elem {
	__u64 stamp;	/* word 0: what a plain free overwrites first */
	__u64 check;	/* ~stamp */
	__u64 pad[2];
};

__u64 __arena slots[NSLOTS];
__u32 mode;		/* 0 plain free, 1 deferred */
__u64 stamp_ctr;
__u64 w_ops, w_nulls, w_free_errors;
__u64 r_reads, r_recycled, r_empty;

SEC("tc")
int writer(struct __sk_buff *skb)
{
	__u32 i = bpf_get_prandom_u32() % NSLOTS;
	struct elem __arena *n = aa_malloc(sizeof(*n)), *old;
	__u64 s;
	int err;

	if (!n) {
		__sync_fetch_and_add(&w_nulls, 1);
		return 0;
	}
	s = __sync_fetch_and_add(&stamp_ctr, 1) + 1;
	n->stamp = s;
	n->check = ~s;
	old = (struct elem __arena *)__sync_lock_test_and_set(&slots[i], (__u64)n);
	if (old) {
		err = mode ? aa_free_deferred(old) : aa_free(old);
		if (err)
			__sync_fetch_and_add(&w_free_errors, 1);
	}
	__sync_fetch_and_add(&w_ops, 1);
	return 0;
}

SEC("tc")
int reader(struct __sk_buff *skb)
{
	__u32 i = bpf_get_prandom_u32() % NSLOTS;
	struct elem __arena *p;
	__u64 s;
	int k;

	p = (struct elem __arena *)*(volatile __u64 __arena *)&slots[i];
	if (!p) {
		__sync_fetch_and_add(&r_empty, 1);
		return 0;
	}
	s = *(volatile __u64 __arena *)&p->stamp;
	bpf_for(k, 0, READS) {
		if (*(volatile __u64 __arena *)&p->stamp != s ||
		    *(volatile __u64 __arena *)&p->check != ~s) {
			__sync_fetch_and_add(&r_recycled, 1);
			break;
		}
	}
	__sync_fetch_and_add(&r_reads, 1);
	return 0;
}
