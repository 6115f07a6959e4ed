/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * grow.h - what grow.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by grow.bpf.c and by those files only.
 */
#ifndef __AA_GROW_H
#define __AA_GROW_H

#include "internal.h"

int aa__arena_grow(__u64 bytes);
int aa__arena_grow_chunks(__u64 bytes, __u32 unpublished);
int aa__arena_grow_some(__u32 want);

#endif /* __AA_GROW_H */
