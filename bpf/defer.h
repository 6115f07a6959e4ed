/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * defer.h - what defer.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by defer.bpf.c and by those files only.
 */
#ifndef __AA_DEFER_H
#define __AA_DEFER_H

#include "internal.h"

__u32 aa__defer_advance(void);
int aa__defer_drain_nodes(void);
__u32 aa__defer_node_get(void);
static int aa_defer_reclaim(struct aa_reclaim_args *a);
static __always_inline void defer_reset(void);
static __always_inline int free_deferred_inline(__u64 ptr);

#endif /* __AA_DEFER_H */
