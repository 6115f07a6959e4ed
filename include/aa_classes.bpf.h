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

/*
 * Verifier: indexes into these tables must be bounded where the load is.
 * The compiler drops a clamp it can prove redundant (size - 1 < 8192 was
 * checked by the caller, table values are < AA_NR_CLASSES), but 6.12's
 * verifier does not link size and size - 1: barrier_var() (aa_hit.h)
 * hides the range from the compiler, so the clamp stays. A constant size
 * folds to a constant class.
 */
/* Class of a request of size bytes, 1 <= size <= AA_MAX_CLASS_SIZE
 * (unchecked: the caller checked the size). The library's public
 * aa_size_class() (arena_alloc.h) is the checked one, for userspace. */
static __always_inline __u32 __aa_size_class(__u64 size)
{
	__u64 q = AA_CLASS_INDEX_OF(size);

	if (__builtin_constant_p(size))
		return aa_class_index[q < AA_CLASS_INDEX_LEN ? q : AA_CLASS_INDEX_LEN - 1];
	barrier_var(q);
	return aa_class_index[q < AA_CLASS_INDEX_LEN ? q : AA_CLASS_INDEX_LEN - 1];
}

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
