/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lookup.h - what lookup.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by lookup.bpf.c and by those files only.
 */
#ifndef __AA_LOOKUP_H
#define __AA_LOOKUP_H

#include "internal.h"

/* Kinds of allocation lookup() reports, after the classes 0..NR-1. */
#define AA_KIND_RUN	AA_NR_CLASSES		/* page run inside a chunk */
#define AA_KIND_LARGE	(AA_NR_CLASSES + 1)	/* whole chunks (+ a run) */

static __always_inline int aa_claim(__u64 ptr, __u32 off, int kind, __u32 pmw, __u64 tail);
static __always_inline int lookup_check_reserve(struct aa_reserve __arena *r, __u32 cls);
static __always_inline bool lookup_transit(__u64 p, __u32 cls);
static int lookup(__u64 ptr, __u32 *off, __u32 *pmw);
static __always_inline int lookup_inline(__u64 ptr, __u32 *off, __u32 *pmw);
static __always_inline __u32 span_start(__u32 off, __u32 e);

#endif /* __AA_LOOKUP_H */
