/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cpu_cache.h - what cpu_cache.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by cpu_cache.bpf.c and by those files only.
 */
#ifndef __AA_CPU_CACHE_H
#define __AA_CPU_CACHE_H

#include "internal.h"

int aa__cpu_cache_drain(__u32 cpu);
static __always_inline __u64 aa_cpu_cache_alloc(__u32 cls, __u64 size);
static __always_inline int aa_cpu_cache_free(__u64 ptr);
static __always_inline __u64 aa_cpu_cache_take(__u32 cls);
int aa_cpu_cache_free_slow(__u64 ptr, __u32 cls);
static __always_inline __u64 cache_alloc_slow(struct aa_cpu_cache __arena *cc, __u32 cls,
					      __u64 size);
static __always_inline int cache_empty(struct aa_cpu_cache __arena *cc);
static __always_inline int cache_free_slow(struct aa_cpu_cache __arena *cc, __u64 ptr,
					   __u32 cls);
static __always_inline bool caches_claim_all(__u32 __arena *tab);
static __always_inline int cpu_caches_check(void);
static __always_inline void caches_empty(__u32 __arena *tab);
static __always_inline void caches_put(__u32 __arena *tab);
static __always_inline void caches_release_all(__u32 __arena *tab);
static int cpu_caches_init(__u32 n);
static __always_inline void reset_cache(struct aa_cpu_cache __arena *cc);
static __always_inline bool teardown_claim(__u32 off);
static __always_inline void teardown_release(__u32 off);

#endif /* __AA_CPU_CACHE_H */
