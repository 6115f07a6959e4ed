// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_compat.bpf.c - a program written for the kernel selftests'
 * bpf_arena_alloc.h, built against include/compat's: a 100-page arena of
 * its own, sleepable programs, no loader change (nothing attaches the heap
 * before the first bpf_alloc()), and pages of the arena taken directly
 * with the page kfuncs beside the heap's.
 */
#define BPF_NO_KFUNC_PROTOTYPES	/* as the selftests: bpf_arena_common.h declares them */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "../test_compat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, COMPAT_ARENA_PAGES);
} arena SEC(".maps");

#include "compat/bpf_arena_alloc.h"

__u64 ptrs[COMPAT_MAX_PTRS];	/* the live allocations, user addresses */
__u32 nr_ptrs;
void __arena *direct;		/* pages taken with the page kfunc */
__u32 direct_pages;

/* The counts of a call, in a global: counters on the stack would be
 * loop state that the verifier tracks value by value. */
struct compat_args res;

/* Byte i of the allocation at *p: zero as it came? Then a pattern, which
 * the next allocation of these bytes must not see. */
static long fill_byte(__u64 i, __u64 *p)
{
	__u8 __arena *b = (__u8 __arena *)(*p + i);

	if (*b)
		res.not_zero = 1;
	*b = 0xa5;
	return 0;
}

/* bpf_alloc(res.size) once, checked and kept: 0 to go on, 1 to stop. */
static long alloc_one(__u64 i, void *unused)
{
	__u32 n = nr_ptrs, bad = res.not_zero;
	void __arena *p;
	__u64 addr;

	if (n >= COMPAT_MAX_PTRS)
		return 1;
	p = bpf_alloc(res.size);
	if (!p)
		return 1;
	if ((__u64)p & 7)
		res.misaligned++;
	addr = (__u64)p;
	res.not_zero = 0;
	bpf_loop(res.size < 4096 ? res.size : 4096, fill_byte, &addr, 0);
	res.not_zero += bad;
	ptrs[n & (COMPAT_MAX_PTRS - 1)] = addr;
	nr_ptrs = n + 1;
	res.got++;
	return 0;
}

SEC("syscall")
int alloc(struct compat_args *a)
{
	res = (struct compat_args){ .size = a->size, .n = a->n };
	bpf_loop(a->n, alloc_one, NULL, 0);
	a->got = res.got;
	a->not_zero = res.not_zero;
	a->misaligned = res.misaligned;
	return 0;
}

/* aa_malloc_grow_u64(a->size) once, kept: libarena's arena_malloc() on
 * arena-alloc (bpf/compat/libarena_aa.bpf.c), which may be the first call
 * of all, before the heap knows the arena's size. */
SEC("syscall")
int malloc_grow(struct compat_args *a)
{
	__u32 n = nr_ptrs;
	__u64 p;

	a->got = 0;
	if (n >= COMPAT_MAX_PTRS)
		return 0;
	p = aa_malloc_grow_u64(a->size);
	if (!p)
		return 0;
	ptrs[n & (COMPAT_MAX_PTRS - 1)] = p;
	nr_ptrs = n + 1;
	a->got = 1;
	a->misaligned = p & 7;
	return 0;
}

static long free_one(__u64 i, void *unused)
{
	__u32 n = nr_ptrs;

	if (!n)
		return 1;
	nr_ptrs = --n;
	bpf_free((void __arena *)ptrs[n & (COMPAT_MAX_PTRS - 1)]);
	return 0;
}

SEC("syscall")
int free_all(void *ctx)
{
	bpf_loop(COMPAT_MAX_PTRS, free_one, NULL, 0);
	return 0;
}

/* a->n pages anywhere in the arena, as bpf_arena_htab.h's htab_init()
 * takes its buckets */
SEC("syscall")
int pages_get(struct compat_args *a)
{
	if (direct)
		return -1;
	direct = bpf_arena_alloc_pages(&arena, NULL, a->n, NUMA_NO_NODE, 0);
	direct_pages = direct ? a->n : 0;
	a->got = direct_pages;
	return 0;
}

SEC("syscall")
int pages_put(void *ctx)
{
	if (direct)
		bpf_arena_free_pages(&arena, direct, direct_pages);
	direct = NULL;
	direct_pages = 0;
	return 0;
}
