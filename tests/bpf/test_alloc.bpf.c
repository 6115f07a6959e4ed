// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_alloc.bpf.c - the BPF API exercised from BPF programs that link the
 * library like an embedder does: a syscall program with subtests, and tc
 * and xdp programs (non-sleepable: they verify only if nothing on the
 * alloc/free path reaches a page kfunc).
 *
 * Each subtest returns 0 or its own non-zero code; the entry returns the
 * first failure as subtest * 100 + code.
 *
 * Loops: constant small bounds only.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

#define EINVAL		22
#define EALREADY	114

/* Results the tc/xdp programs leave for userspace. */
__u64 tc_runs, tc_allocs, tc_nulls;

static int st_malloc_write_free(void)
{
	__u64 __arena *p = aa_malloc(64);
	int i;

	if (!p)
		return 1;
	for (i = 0; i < 8; i++)
		p[i] = 0x1111111111111111ULL * i;
	for (i = 0; i < 8; i++)
		if (p[i] != 0x1111111111111111ULL * i)
			return 2;
	if (aa_usable_size(p) != 64)
		return 3;
	if (aa_free(p))
		return 4;
	if (aa_free(p) != -EALREADY)	/* double free is refused */
		return 5;
	return 0;
}

static int st_calloc(void)
{
	__u64 __arena *p = aa_malloc(256);
	int i;

	if (!p)
		return 1;
	for (i = 0; i < 32; i++)
		p[i] = ~0ULL;
	aa_free(p);
	p = aa_calloc(4, 64);	/* same block size: likely the same block */
	if (!p)
		return 2;
	for (i = 0; i < 32; i++)
		if (p[i])
			return 3;
	if (aa_calloc(1ULL << 40, 1ULL << 40))	/* overflow */
		return 4;
	return aa_free(p) ? 5 : 0;
}

static int st_aligned(void)
{
	void __arena *p = aa_aligned_alloc(4096, 100);
	void __arena *q = aa_aligned_alloc(256, 16);

	if (!p || !q)
		return 1;
	if (((__u64)p & 4095) || ((__u64)q & 255))
		return 2;
	if (aa_aligned_alloc(3, 16) || aa_aligned_alloc(2 * AA_PAGE_SIZE, 16))
		return 3;
	return aa_free(p) || aa_free(q) ? 4 : 0;
}

static int st_bulk(void)
{
	__u64 __arena *arr = aa_calloc(16, sizeof(__u64));
	__u64 keep;
	int n, i;

	if (!arr)
		return 1;
	n = aa_malloc_bulk(arr, 16, 72);
	if (n != 16)
		return 2;
	for (i = 0; i < 16; i++)	/* the 72-B class */
		if (!arr[i] || aa_usable_size_u64(arr[i]) != 72)
			return 3;
	keep = arr[3];
	arr[3] = arr[2] + 4;	/* misaligned: refused, stays in the array */
	n = aa_free_bulk(arr, 16);
	if (n != 15 || arr[3] == 0 || arr[0] != 0)
		return 4;
	if (aa_free(keep))
		return 5;
	return aa_free(arr) ? 6 : 0;
}

static int st_bad_input(void)
{
	if (aa_malloc(0))
		return 1;
	if (aa_malloc(1ULL << 40))
		return 2;
	if (aa_free(16) != -14 /* -EFAULT: not in the arena */)
		return 3;
	return 0;
}

#define RUN(n, fn)					\
	do {						\
		int __e = fn();				\
		if (__e)				\
			return (n) * 100 + __e;		\
	} while (0)

SEC("syscall")
int test_bpf_api(void *ctx)
{
	RUN(1, st_malloc_write_free);
	RUN(2, st_calloc);
	RUN(3, st_aligned);
	RUN(4, st_bulk);
	RUN(5, st_bad_input);
	return 0;
}

/* A second object freed deferred: counted in `deferred`; on a heap
 * without AA_F_DEFER refused (-EOPNOTSUPP) and freed plain. 0, or 3 on a
 * wrong result. Any context: the deferred path verifies and runs here. */
__u64 deferred;

static __always_inline int defer_one(void)
{
	__u64 __arena *q = aa_malloc(64);
	int r;

	if (!q)
		return 0;
	q[0] = 1;
	r = aa_free_deferred(q);
	if (r == -95 /* -EOPNOTSUPP */)
		return aa_free(q) ? 3 : 0;
	if (r)
		return 3;
	__sync_fetch_and_add(&deferred, 1);
	return 0;
}

/* A non-sleepable program: allocate, touch, free (and defer_one()).
 * Returns 1 when it got memory, 2 when the heap was empty (NULL), 3 on a
 * wrong result. */
static __always_inline int alloc_touch_free(void)
{
	__u64 __arena *p = aa_malloc(128);

	__sync_fetch_and_add(&tc_runs, 1);
	if (!p) {
		__sync_fetch_and_add(&tc_nulls, 1);
		return 2;
	}
	p[0] = 42;
	p[15] = p[0] + 1;
	if (p[15] != 43 || aa_free(p) || defer_one())
		return 3;
	__sync_fetch_and_add(&tc_allocs, 1);
	return 1;
}

SEC("tc")
int tc_alloc(struct __sk_buff *skb)
{
	return alloc_touch_free();
}

SEC("xdp")
int xdp_alloc(struct xdp_md *ctx)
{
	return alloc_touch_free();
}

/* Tracing programs: raw_tp is run with BPF_PROG_TEST_RUN, tp_btf fires on
 * every hrtimer expiry once attached (hard-IRQ context). Detaching does not
 * wait for runs under way on other CPUs: a test that counts the heap
 * afterwards sets tp_btf_stop, then waits for tp_btf_inflight to reach 0
 * (each run adds 1, a full barrier, before it reads tp_btf_stop). */
__u64 tp_btf_runs, tp_btf_allocs, tp_btf_inflight;
__u32 tp_btf_stop;

SEC("raw_tp")
int raw_tp_alloc(void *ctx)
{
	return alloc_touch_free();
}

static __always_inline void tp_btf_run(void)
{
	__u64 __arena *p = aa_malloc(32);

	__sync_fetch_and_add(&tp_btf_runs, 1);
	if (!p)
		return;
	p[3] = 7;
	if (p[3] == 7 && !aa_free(p) && !defer_one())
		__sync_fetch_and_add(&tp_btf_allocs, 1);
}

SEC("tp_btf/hrtimer_expire_entry")
int tp_btf_alloc(void *ctx)
{
	__sync_fetch_and_add(&tp_btf_inflight, 1);
	if (!*(volatile __u32 *)&tp_btf_stop)
		tp_btf_run();
	__sync_fetch_and_sub(&tp_btf_inflight, 1);
	return 0;
}
