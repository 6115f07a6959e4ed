/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * buddy.h - what buddy.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by buddy.bpf.c and by those files only.
 */
#ifndef __AA_BUDDY_H
#define __AA_BUDDY_H

#include "internal.h"

/* Header written into the first page of every free block. */
struct aa_free_hdr {
	__u64 mark;	/* aa_custody(addr, AA_TAG_BUDDY + order) */
	__u32 next;	/* arena offset of next free block of this order, AA_NIL */
	__u32 prev;
};

typedef struct aa_free_hdr __arena aa_free_hdr_t;

static __always_inline __u32 aa_ctz64(__u64 x);
static __always_inline __u32 aa_popcount32(__u32 x);
static int buddy_check_chunk_locked(__u32 s, __u64 *cnt, __u64 *absent);
static void buddy_reset(void);
static __always_inline bool chunk_is_free(__u32 slot);
static __always_inline __u32 __arena *chunk_pm(__u32 s);
static __always_inline __u32 free_order_from(__u32 order);
static __always_inline void free_push(__u32 order, __u32 off);
static __always_inline void free_unlink(__u32 order, __u32 off);
static __always_inline __u32 large_alloc_locked(__u64 pages, int first);
static __always_inline __u32 large_chunks(__u64 pages);
static __always_inline int large_find(__u32 need);
static __always_inline __u32 large_free_locked(__u32 slot, __u32 *tail);
static __always_inline aa_meta_t *meta_of(__u32 slot);
static __always_inline __u32 page_run_alloc_locked(__u32 pages);
static __always_inline void page_run_free_locked(__u32 off, __u32 pages);
static __always_inline __u64 pages_bytes(__u32 pages);
static __always_inline __u32 pages_to_order(__u32 pages);
static __always_inline __u32 __arena *pm_at(__u32 off);
static __u32 run_alloc_locked(__u32 pages);
static __always_inline void run_free_locked(__u32 off, __u32 pages);
static __always_inline aa_span_t *span_at(__u32 off);

#endif /* __AA_BUDDY_H */
