/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * transfer_cache.h - what transfer_cache.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by transfer_cache.bpf.c and by those files only.
 */
#ifndef __AA_TRANSFER_CACHE_H
#define __AA_TRANSFER_CACHE_H

#include "internal.h"

int aa__transfer_cache_drain(void);
int aa__transfer_cache_insert_batch(__u32 cls, __u64 src, __u32 n);
__u64 aa__transfer_cache_pop(__u32 cls, bool reserve);
int aa__transfer_cache_push(__u32 cls, __u64 ptr);
int aa__transfer_cache_remove_batch(__u32 cls, __u64 dst, __u32 n);
static __always_inline int transfer_cache_check(void);
static __always_inline __u32 transfer_cache_stock(__u32 cls, __u64 arr, __u32 n, __u32 keep);
static __always_inline int transfer_cache_quiesce_locked(void);
static void transfer_cache_reset(void);

#endif /* __AA_TRANSFER_CACHE_H */
