// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * alloc.bpf.c - the front door: malloc, calloc, aligned_alloc, free,
 * usable_size and the bulk API (include/arena_alloc.bpf.h).
 *
 * Role:       check arguments, then route each request to the tier that
 *             serves it. Today every request goes to the buddy (tier 3);
 *             the per-CPU and transfer caches slot in here.
 * From below: aa_buddy_*() (buddy.bpf.c). Never a page kfunc: every
 *             function here verifies in tc, xdp, tracing and syscall
 *             programs alike.
 * Locking:    none of its own; the buddy takes the heap lock.
 */
#include "internal.h"

__u64 aa_malloc_u64(__u64 size)
{
	return aa_buddy_alloc(size, 0);
}

__u64 aa_aligned_alloc_u64(__u64 align, __u64 size)
{
	if (align == 0 || (align & (align - 1)) || align > AA_PAGE_SIZE) {
		aa_fail(AA_ERR_ALIGN);
		return 0;
	}
	return aa_buddy_alloc(size, align);
}

__u64 aa_calloc_u64(__u64 n, __u64 size)
{
	__u64 bytes, words, p;
	int i, done = AA_ZERO;
	__u64 __arena *w;

	/* n * size must not overflow: both <= 2^30 and product <= 2^30 */
	if (n == 0 || size == 0 || n > AA_MAX_ALLOC || size > AA_MAX_ALLOC ||
	    n * size > AA_MAX_ALLOC) {
		aa_fail(AA_ERR_SIZE);
		return 0;
	}
	bytes = n * size;
	p = aa_buddy_alloc(bytes, 0);
	if (!p)
		return 0;
	/* Blocks are 16-byte multiples: clear whole words. */
	w = (__u64 __arena *)p;
	words = (bytes + 7) / 8;
	bpf_for(i, 0, words < AA_MAX_LOOPS ? words : AA_MAX_LOOPS) {
		w[i] = 0;
		done++;
	}
	if (done < words) {	/* more than the loop bound: fail cleanly */
		aa_buddy_free(p);
		aa_fail(AA_ERR_ZEROING);
		return 0;
	}
	return p;
}

int aa_free_u64(__u64 ptr)
{
	if (!ptr)
		return 0;
	return aa_buddy_free(ptr);
}

__u64 aa_usable_size_u64(__u64 ptr)
{
	if (!ptr)
		return 0;
	return aa_buddy_usable_size(ptr);
}

int aa_malloc_bulk_u64(__u64 arr, __u32 n, __u64 size)
{
	__u64 __arena *out = (__u64 __arena *)arr;
	int i, got = AA_ZERO;

	if (!arr || n == 0)
		return aa_fail(AA_ERR_SIZE);
	if (size <= AA_CHUNK_SIZE)
		return aa_buddy_alloc_bulk(arr, n, size);
	bpf_for(i, 0, n) {
		__u64 p = aa_buddy_alloc(size, 0);

		if (!p)
			break;
		out[i] = p;
		got++;
	}
	return got;
}

int aa_free_bulk_u64(__u64 arr, __u32 n)
{
	if (!arr)
		return aa_fail(AA_ERR_FOREIGN);
	return aa_buddy_free_bulk(arr, n);
}
