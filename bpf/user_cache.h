/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * user_cache.h - what user_cache.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by user_cache.bpf.c and by those files only.
 */
#ifndef __AA_USER_CACHE_H
#define __AA_USER_CACHE_H

#include "internal.h"

__u64 aa__user_cache_alloc(__u32 idx, __u32 cls, __u64 size);
int aa__user_cache_drain(__u32 idx);
int aa__user_cache_free(__u32 idx, __u64 ptr, __u32 cls);
static __always_inline bool user_caches_claim_all(void);
static __always_inline void user_caches_release_all(void);
static void user_caches_reset(void);
static int user_close(struct aa_user_args *a);
static __noinline int user_open(struct aa_user_args *a);
static __noinline int user_reap(struct aa_user_args *a);

#endif /* __AA_USER_CACHE_H */
