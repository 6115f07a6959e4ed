// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_inline.bpf.c - the inline API (aa_malloc/aa_calloc/aa_free run
 * their CPU-cache hit path in the caller, include/arena_alloc.bpf.h):
 *  - inline_ops: the hit path and every way out of it, from a syscall
 *    program; each step returns 0 or its own code (step * 100 + code);
 *  - cost_*: tc programs whose verified instructions tests/test_inline.c
 *    compares: nothing, one site of the global functions, one inline site
 *    of each, eight of each.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

#define EINVAL		22
#define ENOENT		2
#define EFAULT		14
#define EALREADY	114

struct inline_args {
	__u64 size;		/* in: a size the verifier cannot know */
	__u32 cpu;		/* out: where it ran */
	__u32 pad;
	__u64 first;		/* out: the first object of the size */
};

static int step_hit(__u64 size)
{
	__u64 __arena *p = aa_malloc(size), *q;
	int i;

	if (!p)
		return 1;
	for (i = 0; i < 6; i++)	/* sizes >= 48 */
		p[i] = i;
	if (aa_free(p))
		return 2;
	q = aa_malloc(size);	/* LIFO: the same object again */
	if (q != p)
		return 3;
	if (q[0] != 0 || q[1] != 1)	/* word 0 cleared, the rest untouched */
		return 4;
	return aa_free(q) ? 5 : 0;
}

/* Every bad pointer falls to the global path, which refuses and counts it
 * (userspace checks the counters): double free of a cached object, an
 * interior pointer, a misaligned one, one outside the arena. */
static int step_bad_pointers(void)
{
	__u64 __arena *p = aa_malloc(64);

	if (!p)
		return 1;
	if (aa_free((__u64)p + 16) != -ENOENT)
		return 2;
	if (aa_free((__u64)p + 4) != -EINVAL)
		return 3;
	if (aa_free(16) != -EFAULT)
		return 4;
	if (aa_free(p))
		return 5;
	if (aa_free(p) != -EALREADY)	/* now in this CPU's cache */
		return 6;
	if (aa_free(NULL))
		return 7;
	return 0;
}

/* calloc with a constant size takes the inline path and zeroes. */
static int step_calloc(void)
{
	__u64 __arena *p = aa_malloc(64), *q;
	int i;

	if (!p)
		return 1;
	for (i = 0; i < 8; i++)
		p[i] = ~0ULL;
	aa_free(p);
	q = aa_calloc(4, 16);
	if (q != p)
		return 2;
	for (i = 0; i < 8; i++)
		if (q[i])
			return 3;
	return aa_free(q) ? 4 : 0;
}

/* Sizes outside the classes take the global path. */
static int step_outside(void)
{
	__u64 __arena *p;

	if (aa_malloc(0))
		return 1;
	p = aa_malloc(AA_MAX_CLASS_SIZE + 1);	/* a page run */
	if (!p)
		return 2;
	return aa_free(p) ? 3 : 0;
}

SEC("syscall")
int inline_ops(struct inline_args *a)
{
	int err;

	a->cpu = bpf_get_smp_processor_id();
	if ((err = step_hit(a->size)))
		return 100 + err;
	if ((err = step_hit(48)))
		return 200 + err;
	if ((err = step_bad_pointers()))
		return 300 + err;
	if ((err = step_calloc()))
		return 400 + err;
	if ((err = step_outside()))
		return 500 + err;
	return 0;
}

/* One allocation and its free, for the uninitialised and caches-off
 * heaps: returns 1 with memory, 0 without, 2 if the free failed. */
SEC("syscall")
int inline_one(struct inline_args *a)
{
	__u64 __arena *p = aa_malloc(a->size);

	a->cpu = bpf_get_smp_processor_id();
	a->first = (__u64)p;
	if (!p)
		return 0;
	return aa_free(p) ? 2 : 1;
}

/* In a heap that defers frees: an object deferred, then freed inline
 * (a double free the pending bit shows, which only the global function's
 * claim checks: the inline free must hand it over), then a plain inline
 * free of a live one. 0, or the step that failed. */
SEC("syscall")
int inline_after_deferred(struct inline_args *a)
{
	__u64 __arena *p = aa_malloc(a->size), *q;

	if (!p)
		return 1;
	if (aa_free_deferred(p))
		return 2;
	if (aa_free(p) != -EALREADY)
		return 3;
	q = aa_malloc(a->size);
	if (!q || q == p)
		return 4;
	return aa_free(q) ? 5 : 0;
}

/* --- Verifier cost --------------------------------------------------------- */

SEC("tc")
int cost_none(struct __sk_buff *skb)
{
	return 0;
}

SEC("tc")
int cost_call_1(struct __sk_buff *skb)
{
	__u64 p = aa_malloc_u64(64);

	return p ? aa_free_u64(p) : 1;
}

SEC("tc")
int cost_inline_1(struct __sk_buff *skb)
{
	void __arena *p = aa_malloc(64);

	return p ? aa_free(p) : 1;
}

#define COST_SITE(sz)				\
	p = aa_malloc(sz);			\
	if (!p)					\
		return 1;			\
	ret |= aa_free(p);

SEC("tc")
int cost_inline_8(struct __sk_buff *skb)
{
	void __arena *p;
	int ret = 0;

	COST_SITE(16) COST_SITE(32) COST_SITE(48) COST_SITE(64)
	COST_SITE(96) COST_SITE(128) COST_SITE(256) COST_SITE(skb->len)
	return ret;
}
