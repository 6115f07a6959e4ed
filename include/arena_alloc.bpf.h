/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena_alloc.bpf.h - the BPF API of arena-alloc.
 *
 * Include from BPF programs that are linked (bpftool gen object) with
 * libarena_alloc.bpf.o. Every function here is a global BPF function that
 * never calls a page kfunc, so tc, xdp, perf_event, tracepoint and syscall
 * programs can all call them. Growing the heap is done by the sleepable
 * SEC("syscall") programs of the library (userspace: aa_heap__grow()).
 *
 * Call frames: the verifier allows a program 8 frames in all (the program
 * itself, its subprograms and callbacks, and ours). Each function here needs
 * at most AA_API_FRAMES of them, itself included, so a call from a program's
 * third frame (program > bpf_loop callback > subprogram) always verifies.
 *
 * Pointers come back as __u64 (a global BPF function cannot return a
 * pointer); the macros wrap them into `void __arena *`.
 *
 * The same header compiles in userspace (no __BPF__): the prototypes vanish
 * and only the shared layouts remain.
 */
#ifndef __ARENA_ALLOC_BPF_H
#define __ARENA_ALLOC_BPF_H

#include "aa_shared.h"

#define AA_API_FRAMES	5

#ifdef __BPF__

#ifndef __arena
#define __arena __attribute__((address_space(1)))
#endif

/* The arena map, __weak: every object that includes this header gets the
 * same definition and the linker merges them into one arena. Userspace
 * sets the real size with bpf_map__set_max_entries() before load. */
#ifndef AA_ARENA_PAGES
#define AA_ARENA_PAGES	(1U << 16)	/* 256 MiB of address space */
#endif
struct {
	__uint(type, BPF_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, AA_ARENA_PAGES);
} arena __weak SEC(".maps");

/* Allocate size bytes (16-byte aligned). 0 and sets no error on success;
 * returns 0 (NULL) on failure and counts the reason in aa_stats.err. */
__u64 aa_malloc_u64(__u64 size);
/* n * size bytes, zeroed. */
__u64 aa_calloc_u64(__u64 n, __u64 size);
/* size bytes aligned to align (power of two, at most AA_PAGE_SIZE). */
__u64 aa_aligned_alloc_u64(__u64 align, __u64 size);
/* Free an allocation. 0, or -errno (heap unchanged) for a bad pointer:
 * -EALREADY double free, -EFAULT foreign, -ENOENT interior, -EINVAL
 * misaligned. aa_free(NULL) is 0. */
int aa_free_u64(__u64 ptr);
/* Usable bytes of an allocation, 0 for a pointer that is not one. */
__u64 aa_usable_size_u64(__u64 ptr);
/* Allocate n objects of size bytes into arr[0..n) (an arena array of
 * __u64 addresses). Returns how many it got (they fill arr[0..ret)). */
int aa_malloc_bulk_u64(__u64 arr, __u32 n, __u64 size);
/* Free arr[0..n). Every valid pointer is freed and its slot set to 0;
 * invalid ones stay in arr and are counted. Returns the number freed, or
 * -EINVAL when there were invalid pointers and nothing was freed. */
int aa_free_bulk_u64(__u64 arr, __u32 n);

#define aa_malloc(size)		((void __arena *)aa_malloc_u64(size))
#define aa_calloc(n, size)	((void __arena *)aa_calloc_u64((n), (size)))
#define aa_aligned_alloc(a, sz)	((void __arena *)aa_aligned_alloc_u64((a), (sz)))
#define aa_free(p)		aa_free_u64((__u64)(p))
#define aa_usable_size(p)	aa_usable_size_u64((__u64)(p))
#define aa_malloc_bulk(arr, n, size) aa_malloc_bulk_u64((__u64)(arr), (n), (size))
#define aa_free_bulk(arr, n)	aa_free_bulk_u64((__u64)(arr), (n))

#endif /* __BPF__ */
#endif /* __ARENA_ALLOC_BPF_H */
