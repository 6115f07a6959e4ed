// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * demo.bpf.c - the BPF half of `arena-alloc demo`: a tc program (not
 * sleepable: it may only take memory the heap already has) that keeps a
 * table of DEMO_SLOTS live objects of mixed sizes. Each run replaces one
 * slot's object: it checks the old object's stamp, frees it, allocates a
 * new one and stamps it. Linked with libarena_alloc.bpf.o like any user's
 * object, so the demo also shows what embedding takes.
 *
 * The demo runs it through BPF_PROG_TEST_RUN from one thread; the slot
 * swap is an atomic exchange anyway, so concurrent runs would not lose an
 * object.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "demo.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);	/* the demo sets the size before load */

__u64 __arena demo_slots[DEMO_SLOTS];	/* arena address of a live object, or 0 */
struct demo_counts counts;

SEC("tc")
int demo_tc(struct __sk_buff *skb)
{
	__u64 i = __sync_fetch_and_add(&counts.runs, 1), size = demo_size(i);
	__u32 slot = demo_slot(i);
	__u64 __arena *old, *p;

	old = (__u64 __arena *)__sync_lock_test_and_set(&demo_slots[slot], 0);
	if (old) {
		if (!demo_stamp_ok(old[0], old[1]))
			__sync_fetch_and_add(&counts.corrupt, 1);
		if (aa_free(old))
			__sync_fetch_and_add(&counts.free_errors, 1);
		else
			__sync_fetch_and_add(&counts.frees, 1);
	}
	p = aa_malloc(size);
	if (!p) {
		__sync_fetch_and_add(&counts.nulls, 1);
		return 0;
	}
	p[0] = demo_stamp(i);
	p[1] = size;
	__sync_lock_test_and_set(&demo_slots[slot], (__u64)p);
	__sync_fetch_and_add(&counts.allocs, 1);
	return 0;
}
