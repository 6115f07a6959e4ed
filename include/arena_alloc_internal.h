/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena_alloc_internal.h - the loader library's functions for tools that
 * read the heap's layout: the CLI, the tests and benchmarks, debuggers.
 * They hand out the root and tables inside the mmap (struct aa_root,
 * aa_slot, aa_transfer_cache), copies of caches (struct aa_cpu_cache) and
 * of chunks, and run the syscall programs with their own argument structs
 * (aa_syscall.h). No stability promise beyond AA_LAYOUT_VERSION: a release
 * that changes the layout changes these structs, and a handle refuses a
 * heap of another layout version when it opens. Their symbols are
 * exported and versioned as arena_alloc.h's (user/libarena_alloc.map).
 * A loader that allocates, frees, tunes and reads the counters needs
 * arena_alloc.h only.
 */
#ifndef __ARENA_ALLOC_INTERNAL_H
#define __ARENA_ALLOC_INTERNAL_H

#include "arena_alloc.h"
#include "aa_shared.h"
#include "aa_syscall.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief **aa_heap__root()** is the allocator's root inside the mmap
 * (magic and layout version checked when the handle was opened): the
 * heap's own counters (root->stats, struct aa_heap_stats) can be read from
 * it at any time without a syscall; the calls: aa_heap__stats().
 * @return the root, or NULL (errno EINVAL for a NULL heap) */
AA_API const struct aa_root *aa_heap__root(const struct aa_heap *heap);

/** @brief **aa_heap__slot()** is slot's entry in the heap's slot table
 * (struct aa_slot, inside the mmap: read it with atomic loads; the table
 * lives as long as the arena).
 * @return the entry, or NULL: errno ENOENT for a slot past the heap's (or
 * no heap yet), EFAULT for a table the root places outside the arena */
AA_API const struct aa_slot *aa_heap__slot(const struct aa_heap *heap, __u32 slot);

/** @brief **aa_heap__transfer_cache()** is size class cls's transfer
 * cache (struct aa_transfer_cache, inside the mmap; the table lives as
 * long as the arena).
 * @return the cache, or NULL: errno ENOENT for a heap without CPU caches
 * (none has a transfer cache) or a class that is not one, EFAULT as
 * aa_heap__slot() */
AA_API const struct aa_transfer_cache *aa_heap__transfer_cache(const struct aa_heap *heap, int cls);

/* One chunk as aa_heap__chunk() reads it from the mmap (a snapshot: the
 * heap keeps running). */
struct aa_chunk_info {
	__u32 slot;			/* 1-MiB slot of the arena */
	__u32 state;			/* enum aa_slot_state */
	__u32 free_pages, span_pages, run_pages;
	__u32 free_blocks[AA_LAYOUT_ORDERS];	/* free blocks per order (2^k pages) */
	__u32 largest_free;		/* pages of the largest free block */
	char map[AA_LAYOUT_CHUNK_PAGES];	/* per page: '.' free, 's' span, 'r' run,
					 * 'x' absent (a partial chunk: a page
					 * the heap does not have) */
};

/** @brief **aa_heap__chunk()** describes slot's chunk.
 * @return 0; -ENOENT for a slot past the heap's; -EINVAL for bad args. A
 * slot that holds no page-heap chunk comes back with its state and no
 * pages (a chunk of a multi-chunk allocation: state AA_SLOT_LARGE_*). */
AA_API int aa_heap__chunk(const struct aa_heap *heap, __u32 slot, struct aa_chunk_info *out);

/** @brief **aa_heap__cpu_cache()** copies CPU cpu's cache out of the
 * mmap (a snapshot while programs run) into a buffer of the handle's:
 * the copy stays valid until the next call on the handle, and one thread
 * at a time may call it. The copy is taken under the reader pin
 * (aa_shared.h, AA_READERS_*) so that no page the heap returns is read.
 * @return the copy, or NULL (no caches, cpu out of range, no memory, or
 * -EBUSY: the caches were being returned for 100 ms) */
AA_API const struct aa_cpu_cache *aa_heap__cpu_cache(const struct aa_heap *heap, int cpu);

/** @brief **aa_heap__user_cache()** copies user cache idx (0 ..
 * AA_MAX_USER_CACHES - 1: a userspace thread's, aa_shared.h) as
 * aa_heap__cpu_cache() copies a CPU's, into the same buffer.
 * @return the copy, or NULL (no such cache, or as aa_heap__cpu_cache()) */
AA_API const struct aa_cpu_cache *aa_heap__user_cache(const struct aa_heap *heap, int idx);

/** @brief **aa_heap__call()** runs one allocator call (struct aa_op_args,
 * enum aa_op_kind in aa_syscall.h) through the aa__run syscall program.
 * @return 0 when the program ran (the call's own result is in args->ret);
 * negative error, otherwise */
AA_API int aa_heap__call(struct aa_heap *heap, struct aa_op_args *args);

/** @brief **aa_heap__batch()** runs n struct aa_batch_op at arena address
 * ops in one program run.
 * @return ops executed (>= 0); negative error, otherwise */
AA_API int aa_heap__batch(struct aa_heap *heap, __u64 ops, __u32 n);

#ifdef __cplusplus
}
#endif
#endif /* __ARENA_ALLOC_INTERNAL_H */
