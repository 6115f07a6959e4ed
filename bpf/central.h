/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * central.h - what central.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by central.bpf.c and by those files only.
 */
#ifndef __AA_CENTRAL_H
#define __AA_CENTRAL_H

#include "internal.h"

static int central_check_spans_locked(__u32 cls, __u32 *off, __u32 *prev);
static __always_inline __u32 central_pop_locked(__u32 cls, __u64 mark_mask);
static __always_inline __u32 central_push_locked(__u32 o, __u32 cls, __u32 span_off);
static __u32 central_release_empty_locked(__u32 cls);
static void central_reset(void);

#endif /* __AA_CENTRAL_H */
