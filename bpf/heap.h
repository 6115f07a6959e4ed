/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * heap.h - what heap.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by heap.bpf.c and by those files only.
 */
#ifndef __AA_HEAP_H
#define __AA_HEAP_H

#include "internal.h"

/* A parked block: claimed (word 0 = FREED mark), waiting for the lock. */
struct aa_parked {
	__u64 mark;
	__u32 next;	/* arena offset of the next parked block, AA_NIL */
	__u32 pad;
};

typedef struct aa_parked __arena aa_parked_t;

__u32 aa__heap_alloc_chain(__u32 cls, __u32 n);
long aa__heap_claim_kind(__u64 ptr, __u64 tail);
int aa__heap_free(__u64 ptr);
long aa__heap_judge(__u64 ptr);
int aa__heap_release_empty(void);
int aa__heap_unpark(void);
__u64 aa__heap_usable_size(__u64 ptr);
static __always_inline int aa_heap_alloc_bulk(__u64 arr, __u32 n, __u32 cls, __u32 cached);
static __always_inline int aa_heap_return_bulk(__u64 arr, __u32 n);
static __always_inline __u64 alloc_failed(int err);
static __always_inline void alloc_nomem(void);
static int heap_check_locked(void);
static __always_inline __u64 heap_alloc(__u64 size, int cls);
static __always_inline void heap_reset(void);
static __always_inline void heap_settle(void);
static __always_inline int heap_return(__u64 ptr);
static __always_inline long heap_take(__u32 cls);
static __always_inline __u64 kind_bytes(int kind, __u32 off, __u32 pmw);
static __always_inline void park_chain(__u32 first, __u32 last, __u32 n);
static __noinline void refill_notify(__u32 reason);

#endif /* __AA_HEAP_H */
