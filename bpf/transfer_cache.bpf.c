// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * transfer_cache.bpf.c - tier 2: per-size-class stacks shared by all CPUs.
 *
 * Role:       move whole batches between CPU caches, so that a CPU that
 *             frees what another allocated (cross-CPU frees) feeds the
 *             other's refills without touching the buddy.
 * From below: nothing: when empty, the CPU cache refills from the buddy
 *             itself; when full, the CPU cache spills to the buddy.
 * To above:   aa_transfer_cache_remove_batch / _insert_batch: all of a
 *             batch or nothing (try operations: 0 means "go below").
 * Locking:    tc->lock per class (aa_spin_lock rules: bounded spin, same-CPU
 *             nesting refused at once). Holding it, no other lock is taken.
 *
 * Invariant: tc->objs[0 .. count) are free objects of the class, each
 * carrying the cache key; count <= tun.transfer_cap[cls] <= AA_TRANSFER_MAX.
 */
#include "internal.h"

static __always_inline struct aa_transfer_cache __arena *tc_of(__u32 cls)
{
	return &aa_root.tc[cls & (AA_NR_CLASSES - 1)];
}

/* Copy n object addresses between arena arrays. */
static __always_inline void copy_objs(__u64 __arena *dst, __u64 __arena *src, __u32 n)
{
	int i;

	bpf_for(i, 0, n)
		dst[i] = src[i];
}

/* Take exactly n objects into dst[0 .. n). Returns n, or 0 when the
 * transfer cache has fewer or is locked (counted). */
int aa_transfer_cache_remove_batch(__u32 cls, __u64 dst, __u32 n)
{
	struct aa_transfer_cache __arena *tc = tc_of(cls);
	__u32 count;

	if (cls >= AA_NR_CLASSES || n == 0 || n > AA_CPU_CACHE_MAX)
		return 0;
	if (aa_spin_lock(&tc->lock, &tc->lock_cpu)) {
		__sync_fetch_and_add(&tc->lock_fails, 1);
		return 0;
	}
	count = tc->count;
	if (count < n || count > AA_TRANSFER_MAX) {
		tc->from_buddy++;
		aa_spin_unlock(&tc->lock, &tc->lock_cpu);
		return 0;
	}
	copy_objs((__u64 __arena *)dst, &tc->objs[(count - n) & (AA_TRANSFER_MAX - 1)], n);
	tc->count = count - n;
	tc->batches_out++;
	aa_spin_unlock(&tc->lock, &tc->lock_cpu);
	return n;
}

/* Put src[0 .. n) in. Returns n, or 0 when full or locked. */
int aa_transfer_cache_insert_batch(__u32 cls, __u64 src, __u32 n)
{
	struct aa_transfer_cache __arena *tc = tc_of(cls);
	__u32 count, cap;

	if (cls >= AA_NR_CLASSES || n == 0 || n > AA_CPU_CACHE_MAX)
		return 0;
	cap = aa_root.tun.transfer_cap[cls & (AA_NR_CLASSES - 1)];
	if (cap > AA_TRANSFER_MAX)
		cap = AA_TRANSFER_MAX;
	if (aa_spin_lock(&tc->lock, &tc->lock_cpu)) {
		__sync_fetch_and_add(&tc->lock_fails, 1);
		return 0;
	}
	count = tc->count;
	if (count + n > cap) {
		tc->to_buddy++;
		aa_spin_unlock(&tc->lock, &tc->lock_cpu);
		return 0;
	}
	copy_objs(&tc->objs[count & (AA_TRANSFER_MAX - 1)], (__u64 __arena *)src, n);
	tc->count = count + n;
	tc->batches_in++;
	aa_spin_unlock(&tc->lock, &tc->lock_cpu);
	return n;
}

/* Return every object of every class to the buddy. Returns the number of
 * objects, or -errno if a lock could not be taken. */
int aa_transfer_cache_drain(void)
{
	struct aa_transfer_cache __arena *tc;
	int total = AA_ZERO, freed;
	__u32 c;

	for (c = 0; c < AA_NR_CLASSES; c++) {
		tc = tc_of(c);
		if (aa_spin_lock(&tc->lock, &tc->lock_cpu))
			return -EBUSY;
		if (tc->count && tc->count <= AA_TRANSFER_MAX) {
			freed = aa_buddy_free_bulk((__u64)&tc->objs[0], tc->count);
			if (freed >= 0) {
				total += freed;
				tc->count = 0;
			}
		}
		aa_spin_unlock(&tc->lock, &tc->lock_cpu);
	}
	return total;
}
