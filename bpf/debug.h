/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * debug.h - what debug.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by debug.bpf.c and by those files only.
 */
#ifndef __AA_DEBUG_H
#define __AA_DEBUG_H

#include "internal.h"

int aa__debug_flush(void);
int aa__debug_on_alloc(__u64 addr, int kind, __u64 n);
int aa__debug_on_free(__u64 addr);
static __always_inline int debug_free(__u64 addr);
static __always_inline bool debug_on(void);
static __always_inline void debug_reset(void);
static __always_inline __u64 debug_usable(__u64 addr);

#endif /* __AA_DEBUG_H */
