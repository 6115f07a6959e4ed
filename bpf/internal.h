/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * internal.h - private helpers shared by the tier files of arena-alloc:
 * the arena map and root, address conversion, the heap lock, error
 * accounting and the cross-file (global) functions of each tier.
 */
#ifndef __AA_INTERNAL_H
#define __AA_INTERNAL_H

#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

#define EPERM		1
#define ENOENT		2
#define EFAULT		14
#define EBUSY		16
#define EEXIST		17
#define ENODEV		19
#define EINVAL		22
#define ENOMEM		12
#define E2BIG		7
#define EDEADLK		35
#define EALREADY	114
#define EUCLEAN		117

#define NUMA_NO_NODE	(-1)

/* Sleepable-only page kfuncs: reachable from SEC("syscall") programs only. */
void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, __u32 page_cnt,
				    int node_id, __u64 flags) __ksym __weak;
void bpf_arena_free_pages(void *map, void __arena *ptr, __u32 page_cnt) __ksym __weak;

/* The allocator's root (arena.bpf.c). */
extern struct aa_root __arena aa_root;

#define READ_ONCE_ARENA(x)	(*(volatile typeof(x) *)&(x))
#define WRITE_ONCE_ARENA(x, v)	(*(volatile typeof(x) *)&(x) = (v))
#define aa_barrier()		asm volatile("" ::: "memory")

/*
 * Loops. Two kinds only, so that both 6.12 and 6.18 verify them cheaply:
 *  - loops over orders (at most 17 trips) have constant bounds and are
 *    simply unrolled by the verifier;
 *  - every other loop (slots, lists, batches, spins) is bpf_for()/
 *    bpf_repeat(): an open-coded iterator the verifier checks once, whose
 *    trip count the kernel bounds (BPF_MAX_LOOPS, 2^23).
 *
 * Verifier: clang-19 turns store loops into memset(), whose BPF lowering
 * drops the arena addr_space_cast ("R1 invalid mem access 'scalar'"): all
 * BPF code here is built with -fno-builtin (see README for embedders).
 */
#define AA_MAX_LOOPS	(1 << 23)

/*
 * Verifier: a counter that is an exact constant on every path (got = 0;
 * got++) and is branched on after the loop becomes precise, so the verifier
 * walks the loop once per value ("sequence of 8193 jumps is too complex").
 * Counters start from AA_ZERO, a 0 read from the arena that the verifier
 * cannot know.
 */
#define AA_ZERO		READ_ONCE_ARENA(aa_root.zero)

/* --- Address conversion -------------------------------------------------
 * Inside the allocator a place in the arena is a __u32 offset from the
 * arena's first byte; users get full user addresses (arena_base + off),
 * which BPF and userspace can both dereference.
 */
static __always_inline void __arena *aa_addr(__u32 off)
{
	return (void __arena *)(aa_root.arena_base + off);
}

/* --- Errors ------------------------------------------------------------- */
static __always_inline int aa_errno(enum aa_error e)
{
	switch (e) {
	case AA_ERR_SIZE:	 return -EINVAL;
	case AA_ERR_ALIGN:	 return -EINVAL;
	case AA_ERR_NOMEM:	 return -ENOMEM;
	case AA_ERR_BUSY:	 return -EBUSY;
	case AA_ERR_NESTED:	 return -EDEADLK;
	case AA_ERR_DOUBLE_FREE: return -EALREADY;
	case AA_ERR_FOREIGN:	 return -EFAULT;
	case AA_ERR_INTERIOR:	 return -ENOENT;
	case AA_ERR_MISALIGNED:	 return -EINVAL;
	case AA_ERR_CORRUPT:	 return -EUCLEAN;
	case AA_ERR_UNINIT:	 return -ENODEV;
	default:		 return -EINVAL;
	}
}

/* Count error e (any context: atomic add) and return its negative errno. */
static __always_inline int aa_fail(enum aa_error e)
{
	if (e < AA_NR_ERRORS)
		__sync_fetch_and_add(&aa_root.stats.err[e], 1);
	return aa_errno(e);
}

/* --- Locks ----------------------------------------------------------------
 * Test-and-set locks in arena words: the heap lock (aa_root.lock) protects
 * the free lists, the chunk metadata, the slot table and aa_root.stats (but
 * err[]); each transfer cache has its own. Rules:
 *  - never spins without bound: AA_LOCK_SPINS attempts, then -EBUSY;
 *  - a program that interrupts the holder on the same CPU (IRQ/NMI context)
 *    sees lock_cpu == its CPU + 1 and returns -EDEADLK at once instead of
 *    spinning on a lock that cannot be released until it returns;
 *  - no page kfunc is called while holding it.
 */
#define AA_LOCK_SPINS	(1U << 16)

static __always_inline int aa_spin_lock(__u32 __arena *lock, __u32 __arena *owner)
{
	__u32 me = bpf_get_smp_processor_id() + 1;

	bpf_repeat(AA_LOCK_SPINS) {
		if (__sync_val_compare_and_swap(lock, 0, 1) == 0) {
			*(volatile __u32 __arena *)owner = me;
			return 0;
		}
		if (*(volatile __u32 __arena *)owner == me)
			return aa_fail(AA_ERR_NESTED);
	}
	return aa_fail(AA_ERR_BUSY);
}

static __always_inline void aa_spin_unlock(__u32 __arena *lock, __u32 __arena *owner)
{
	*(volatile __u32 __arena *)owner = 0;
	__sync_lock_test_and_set(lock, 0);	/* xchg: full barrier */
}

static __always_inline int aa_lock(void)
{
	return aa_spin_lock(&aa_root.lock, &aa_root.lock_cpu);
}

static __always_inline void aa_unlock(void)
{
	aa_spin_unlock(&aa_root.lock, &aa_root.lock_cpu);
}

static __always_inline bool aa_heap_ready(void)
{
	return READ_ONCE_ARENA(aa_root.magic) == AA_ROOT_MAGIC;
}

/* --- Size helpers ------------------------------------------------------- */

/* Smallest order whose block (16 << order) holds size; size <= chunk. */
static __always_inline __u32 aa_size_to_order(__u64 size)
{
	__u32 order;

	for (order = 0; order < AA_MAX_ORDER; order++)
		if (((__u64)AA_MIN_SIZE << order) >= size)
			return order;
	return AA_MAX_ORDER;
}

/* --- Cross-file functions (global BPF functions: verified once each) ---- */

/* cpu_cache.bpf.c: tier 1 (fast paths are static inline there) */
__u64 aa_cpu_cache_alloc_slow(__u32 cls);
int aa_cpu_cache_free_slow(__u64 ptr, __u32 cls);
int aa_cpu_cache_drain(void);

/* transfer_cache.bpf.c: tier 2 (REQUIRES: caller owns a busy CPU cache) */
int aa_transfer_cache_remove_batch(__u32 cls, __u64 dst, __u32 n);
int aa_transfer_cache_insert_batch(__u32 cls, __u64 src, __u32 n);
int aa_transfer_cache_drain(void);

/* buddy.bpf.c: tier 3 */
__u64 aa_buddy_alloc(__u64 size, __u64 align);
int aa_buddy_free(__u64 ptr);
__u64 aa_buddy_usable_size(__u64 ptr);
int aa_buddy_alloc_bulk(__u64 arr, __u32 n, __u64 size);
int aa_buddy_free_bulk(__u64 arr, __u32 n);
int aa_buddy_add_chunk(__u32 slot, __u32 meta_off);
int aa_buddy_take_free_chunk(__u32 keep);
int aa_buddy_check(void);

/* arena.bpf.c: tier 4, sleepable only */
int aa_arena_init(__u64 arena_base, __u64 arena_size);
int aa_arena_init_caches(__u32 nr_cpus, __u32 flags);
int aa_arena_grow(__u64 bytes);
int aa_arena_grow_one(__u32 cursor);
int aa_arena_trim(__u64 keep_bytes);
int aa_arena_teardown(void);

#endif /* __AA_INTERNAL_H */
