/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * alloc.h - what alloc.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by alloc.bpf.c and by those files only.
 */
#ifndef __AA_ALLOC_H
#define __AA_ALLOC_H

#include "internal.h"

/* Free arr[0 .. n) one by one with free_one(p) (0 or -errno: through the
 * CPU cache, or with caches off a heap-lock round trip per object, each
 * object claimed first). Freed slots are set to 0. The number freed, or
 * -EINVAL when there were invalid pointers and nothing was freed, or
 * free_each_args()'s. A macro: aa_free_deferred_bulk_u64() (defer.bpf.c,
 * which comes after this file) passes its own free_one, inline. */
#define free_each(arr, n, free_one) ({					\
	__u64 __arena *___in = (__u64 __arena *)(arr);			\
	__u32 ___freed = AA_ZERO, ___bad = AA_ZERO;			\
	int ___i, ___ret = free_each_args((arr), (n));			\
									\
	if (___ret > 0) {						\
		aa_for(___i, 0, (n)) {					\
			__u64 ___obj = ___in[___i];			\
									\
			if (!___obj)					\
				continue;				\
			if (free_one(___obj)) {				\
				___bad++;				\
				continue;				\
			}						\
			___in[___i] = 0;				\
			___freed++;					\
		}							\
		___ret = ___bad && !___freed ? -EINVAL : (int)___freed; \
	}								\
	___ret;								\
})

static __always_inline int free_each_args(__u64 arr, __u32 n);
static __always_inline __u64 aligned_alloc_inline(__u64 align, __u64 size);
static __always_inline __u64 calloc_inline(__u64 n, __u64 size);
static __always_inline int free_inline(__u64 ptr);
static __always_inline int malloc_bulk_inline(__u64 arr, __u32 n, __u64 size);
static __always_inline __u64 malloc_inline(__u64 size);
static __always_inline __u64 usable_size_inline(__u64 ptr);

#endif /* __AA_ALLOC_H */
