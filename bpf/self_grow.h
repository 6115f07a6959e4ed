/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * self_grow.h - what self_grow.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by self_grow.bpf.c and by those files only.
 */
#ifndef __AA_SELF_GROW_H
#define __AA_SELF_GROW_H

#include "internal.h"

int aa__arena_self_grow(__u32 chunks);
static __always_inline void self_grow_for(__u64 bytes);

#endif /* __AA_SELF_GROW_H */
