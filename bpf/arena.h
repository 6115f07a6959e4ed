/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena.h - what arena.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by arena.bpf.c and by those files only.
 */
#ifndef __AA_ARENA_H
#define __AA_ARENA_H

#include "internal.h"

static __always_inline int arena_check_tables(void);
int aa__arena_table(__u64 base, __u32 pages, __u32 tc);
static bool close_readers(void);
static __always_inline int geometry_check(__u64 arena_base, __u64 arena_size);
static __always_inline bool grow_may_try(__u64 now);
static __always_inline void grow_missed(__u64 now);
static __always_inline void grow_retry_clear(void);
static void open_readers(void);
static __always_inline void __arena *pages_get(void __arena *addr, __u32 pages);
static __always_inline void pages_put(void __arena *addr, __u32 pages);
static __always_inline __u32 slot_count(__u64 bytes);
static __always_inline int tables_ready(bool caches);
static __always_inline int tables_get(__u64 base, __u64 bytes, bool caches);

#endif /* __AA_ARENA_H */
