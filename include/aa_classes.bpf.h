/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * aa_classes.bpf.h - what the inline API and the library's tiers share,
 * calling nothing: the size-class tables and lookups, the inline API's
 * copy of the root (aa_fast) and this CPU's cache in it, AA_DRY, and the
 * hit path's and the claim's code (aa_hit.h). Not for direct use: include
 * arena_alloc.bpf.h. The concurrency model behind the claims is at the
 * top of bpf/internal.h.
 */
#ifndef __AA_CLASSES_BPF_H
#define __AA_CLASSES_BPF_H

#include "aa_shared.h"
#include "aa_size_classes.h"
/* The hit path's and the claim's code, shared with the userspace library */
#include "aa_hit.h"

/* What aa_cpu_cache_alloc_slow() and the tiers below return where the
 * heap grows itself (aa_self_grows()) and had no block: never an address
 * (blocks are AA_MIN_ALIGN-aligned). */
#define AA_DRY	1ULL

/* --- Size classes: aa_hit.h's tables -------------------------------------- */

/* A class index made safe for indexing per-class arrays (callers pass
 * valid ones; anything else reads class 0 instead of past the array). */
static __always_inline __u32 aa_cls_idx(__u32 cls)
{
	return cls < AA_NR_CLASSES ? cls : 0;
}

static __always_inline const struct aa_class_info *aa_class(__u32 cls)
{
	barrier_var(cls);
	return &aa_classes[aa_cls_idx(cls)];
}

/* --- The hit path: aa_hit.h's, on this CPU's cache ----------------------
 *
 * State: `aa_fast` (struct aa_fast, aa_shared.h), a .data global of the
 * library that init fills and teardown clears; an object linked with the
 * library resolves this extern to it. (Not an extern arena global: libbpf
 * 1.4's skeleton generator rejects one defined in another object,
 * "need offset 0, already at 262144".)
 *
 * Claims of a CPU cache and of a block for a free: the concurrency model
 * at the top of bpf/internal.h.
 */
extern struct aa_fast aa_fast;

/* This CPU's cache, or NULL (not initialised, caches off, CPU >= 256). */
static __always_inline struct aa_cpu_cache __arena *__aa_this_cache(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (cpu >= AA_MAX_CPUS)
		return NULL;
	return (struct aa_cpu_cache __arena *)aa_fast.cc[cpu];
}

#endif /* __AA_CLASSES_BPF_H */
