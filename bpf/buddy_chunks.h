/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * buddy_chunks.h - what buddy_chunks.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by buddy_chunks.bpf.c and by those files only.
 */
#ifndef __AA_BUDDY_CHUNKS_H
#define __AA_BUDDY_CHUNKS_H

#include "internal.h"

int aa__buddy_add_chunk(__u32 slot, __u32 meta_off, __u32 unpublished);
int aa__buddy_add_partial(__u32 slot, __u32 meta_off, __u32 unpublished);
int aa__buddy_fill_page(__u32 slot, __u32 p);
int aa__buddy_take_free_chunk(__u32 keep);
static __always_inline bool absent_in(aa_meta_t *meta, __u32 p);
static __always_inline int chunks_release_all_locked(void);
static __always_inline bool chunks_releasing(void);
static void return_chunk(__u32 slot);

#endif /* __AA_BUDDY_CHUNKS_H */
