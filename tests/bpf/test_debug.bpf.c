// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_debug.bpf.c - the memory errors debug mode must find, made on
 * purpose by tc programs through the inline API (as a user's program
 * would), and a clean workload it must not complain about
 * (tests/test_debug.c runs them).
 *
 * Each buggy program leaves the address it misused in `victim` (and the
 * size it asked for in `asked`) so the test can look for its record.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(1 << 14);	/* 64 MiB */

__u64 victim, victim2, asked;
__u32 req_size = 40;	/* set by the test */
__s32 ret_free, ret_free2;
__u64 nulls, bad_frees, usable_wrong, not_zero, steps;

/* Use after free: free an object, write into it, allocate the class
 * again (the CPU cache is LIFO: the same object comes back, and its
 * poison is checked). With a quarantine the write is found when the
 * object leaves it (later frees, or a drain). */
SEC("tc")
int use_after_free(struct __sk_buff *skb)
{
	__u64 __arena *p = aa_malloc(req_size), *q;

	if (!p)
		return 1;
	victim = (__u64)p;
	asked = req_size;
	ret_free = aa_free(p);
	p[2] = 0x1234;		/* the bug: a write after free */
	q = aa_malloc(req_size);
	victim2 = (__u64)q;
	if (q)
		aa_free(q);
	return 0;
}

/* Overflow: write one byte past what was asked for, then free. */
SEC("tc")
int overflow(struct __sk_buff *skb)
{
	__u8 __arena *p = aa_malloc(req_size);

	if (!p)
		return 1;
	victim = (__u64)p;
	asked = req_size;
	p[req_size] = 0x42;	/* the bug: one byte too far */
	ret_free = aa_free(p);
	return 0;
}

/* Underflow: of two neighbours, write one byte before the second, then
 * free it. */
SEC("tc")
int underflow(struct __sk_buff *skb)
{
	__u8 __arena *a = aa_malloc(req_size), *b = aa_malloc(req_size), *hi, *lo;

	if (!a || !b) {
		aa_free(a);
		aa_free(b);
		return 1;
	}
	hi = (__u64)a > (__u64)b ? a : b;
	lo = hi == a ? b : a;
	victim = (__u64)hi;
	victim2 = (__u64)lo;
	asked = req_size;
	/* the bug: one byte before the object, changed whatever it held (a
	 * constant would equal the trailer's top byte, which follows the
	 * address, in 1 run of 256) */
	hi[-1] ^= 0x42;
	ret_free = aa_free(hi);
	ret_free2 = aa_free(lo);
	return 0;
}

/* Double free; with zero_word0, after a write after free of 0 over word
 * 0 (which holds the FREED mark while the object is quarantined or
 * cached): the second free must find the object free all the same. */
__u32 zero_word0;

SEC("tc")
int double_free(struct __sk_buff *skb)
{
	__u64 __arena *p = aa_malloc(req_size);

	if (!p)
		return 1;
	victim = (__u64)p;
	ret_free = aa_free(p);
	if (zero_word0)
		p[0] = 0;	/* a write after free, over word 0 */
	ret_free2 = aa_free(p);	/* the bug */
	return 0;
}

/* A correct program: sizes 1 .. 9000 through every call, each object
 * filled to its last requested byte; calloc checked for zeros, usable
 * size checked against the request. Nothing for debug mode to find. */
SEC("tc")
int clean(struct __sk_buff *skb)
{
	int n = (bpf_get_prandom_u32() % 9000) + 1, i;
	__u8 __arena *p, *c, *a;
	__u64 __arena *bulk;

	p = aa_malloc(n);
	c = aa_calloc(1, n);
	a = aa_aligned_alloc(64, n);
	bulk = aa_calloc(4, sizeof(__u64));
	if (!p || !c || !a || !bulk) {
		__sync_fetch_and_add(&nulls, 1);
		goto out;
	}
	if (aa_usable_size(p) != n || aa_usable_size(a) != n || ((__u64)a & 63))
		__sync_fetch_and_add(&usable_wrong, 1);
	bpf_for(i, 0, n) {
		if (c[i])
			__sync_fetch_and_add(&not_zero, 1);
		p[i] = i;
		a[i] = i;
		c[i] = i;
	}
	if (aa_malloc_bulk(bulk, 4, 24) == 4) {
		bpf_for(i, 0, 4) {
			__u8 __arena *o = (__u8 __arena *)bulk[i];

			o[23] = 1;	/* the last byte asked for */
		}
		if (aa_free_bulk(bulk, 4) != 4)
			__sync_fetch_and_add(&bad_frees, 1);
	}
out:
	if (aa_free(p) || aa_free(c) || aa_free(a) || aa_free(bulk))
		__sync_fetch_and_add(&bad_frees, 1);
	__sync_fetch_and_add(&steps, 1);
	return 0;
}

/* Cross-CPU traffic for the no-false-report stress: objects of random
 * sizes (8 .. 9000 B, whole object written) pass through shared slots, so
 * they are freed on another CPU, next to neighbours being allocated and
 * freed there; the same from hard IRQ (perf_event). */
#define NSLOTS	64
__u64 __arena slots[NSLOTS];
__u64 x_ops, x_bad;

static __always_inline void exchange_one(void)
{
	__u32 n = (bpf_get_prandom_u32() % 9000) + 8, i = bpf_get_prandom_u32() % NSLOTS;
	__u64 __arena *p = aa_malloc(n), *old;
	int j;

	if (!p)
		return;
	bpf_for(j, 0, n / 8)
		p[j] = n;
	old = (__u64 __arena *)__sync_lock_test_and_set(&slots[i], (__u64)p);
	if (old) {
		if (aa_usable_size(old) != old[0] || old[(old[0] / 8 - 1) & 2047] != old[0])
			__sync_fetch_and_add(&x_bad, 1);
		if (aa_free(old))
			__sync_fetch_and_add(&x_bad, 1);
	}
	__sync_fetch_and_add(&x_ops, 1);
}

SEC("tc")
int exchange(struct __sk_buff *skb)
{
	exchange_one();
	return 0;
}

SEC("perf_event")
int exchange_irq(void *ctx)
{
	exchange_one();
	return 0;
}

/* Empty the slots (the test's end). */
SEC("syscall")
int drain_slots(void *ctx)
{
	int i;

	bpf_for(i, 0, NSLOTS) {
		__u64 p = __sync_lock_test_and_set(&slots[i], 0);

		if (p && aa_free((void __arena *)p))
			__sync_fetch_and_add(&x_bad, 1);
	}
	return 0;
}
