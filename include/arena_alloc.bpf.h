/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena_alloc.bpf.h - the BPF API of arena-alloc.
 *
 * Include from BPF programs that are linked (bpftool gen object) with
 * libarena_alloc.bpf.o. Nothing here but the *_grow calls reaches a page
 * kfunc, so tc, xdp, perf_event, tracepoint and syscall programs can all
 * use the rest; their heap grows from userspace (aa_heap__grow(), the
 * refill agent), and the *_grow calls grow it themselves where the kernel
 * lets the program map pages (below).
 *
 * Two shapes of one API: the macros aa_malloc(), aa_calloc(), aa_free()
 * run the CPU-cache hit path inline in the caller's program and call the
 * *_u64 global functions for everything else; the *_u64 functions are one
 * call each, verified once per program load. Define AA_NO_INLINE before
 * including this header to make the macros call them (for programs short
 * on verified instructions). Pointers come back as __u64 (a global BPF
 * function cannot return a pointer); the macros make them `void __arena *`.
 *
 * Call frames: a program has 8 (itself, its subprograms and callbacks, and
 * ours); every call here needs at most AA_API_FRAMES counting itself, so a
 * call from a program's fourth frame (the program, a callback, two
 * subprograms) verifies, and one from the fifth does not. Their stack
 * counts against the same 512 bytes as the program's: docs/EMBEDDING.md.
 *
 * The arena map (AA_ARENA(), AA_ARENA_FUNCS()) is aa_arena.bpf.h's; the
 * internals the macros inline are in arena_alloc_fast.bpf.h and
 * aa_classes.bpf.h, included below (not for direct use). In userspace (no
 * __BPF__) only the shared layouts remain.
 */
#ifndef __ARENA_ALLOC_BPF_H
#define __ARENA_ALLOC_BPF_H

#include "aa_shared.h"
#include "aa_size_classes.h"

#define AA_API_FRAMES	4

#ifdef __BPF__

#include "aa_arena.bpf.h"

/* --- Global functions ----------------------------------------------------
 * Allocations are 16-byte aligned, but those of a class whose size is an
 * odd multiple of 8 (24, 40 .. 120 B: requests of 17-24, 33-40 .. 113-120
 * bytes), which are 8-byte aligned: a type gets its alignment (aa_shared.h, the
 * alignment rule). A failure returns 0 (NULL) or -errno and is counted in
 * aa_heap_stats.err. Any program type, no lock held on return.
 */

/* size bytes, or 0. */
__u64 aa_malloc_u64(__u64 size);
/* n * size bytes, zeroed, or 0. */
__u64 aa_calloc_u64(__u64 n, __u64 size);
/* aa_malloc_u64() and aa_calloc_u64() for a program that may map arena
 * pages (a sleepable one; any on Linux >= 7.0; elsewhere the verifier
 * refuses the program): they initialise the heap that nobody initialised
 * and map memory where the heap runs short, first, as the kernel
 * selftests' bpf_alloc() and libarena's arena_malloc() do: the compat
 * front ends' allocations (compat/bpf_arena_alloc.h, docs/EMBEDDING.md). */
__u64 aa_malloc_grow_u64(__u64 size);
__u64 aa_calloc_grow_u64(__u64 n, __u64 size);
/* size bytes aligned to align (a power of two, at most AA_PAGE_SIZE), or 0. */
__u64 aa_aligned_alloc_u64(__u64 align, __u64 size);
/* 0, or -EALREADY (double free), -EFAULT (foreign), -ENOENT (interior), -EINVAL
 * (misaligned), the heap unchanged; aa_free(NULL) is 0. */
int aa_free_u64(__u64 ptr);
/* Usable bytes of an allocation, 0 for a pointer that is not one. */
__u64 aa_usable_size_u64(__u64 ptr);
/* n objects of size bytes into arr[0..ret) (an arena array of __u64); ret. */
int aa_malloc_bulk_u64(__u64 arr, __u32 n, __u64 size);
/* Free arr[0..n): each freed slot set to 0, invalid ones left and counted;
 * the number freed, or -EINVAL when nothing was valid. */
int aa_free_bulk_u64(__u64 arr, __u32 n);
/* Deferred free (heaps with AA_F_DEFER): ptr stays allocated, its contents
 * kept, until every program that could have found it before the call has
 * finished (an RCU grace period: non-sleepable programs, and sleepable ones
 * inside bpf_rcu_read_lock()); call it after unlinking ptr. 0, the errno of
 * aa_free_u64(), -ENOMEM (no limbo record, or limbo at its bound of twice
 * the defer_limit tunable: ptr stays allocated, the caller keeps it), or
 * -EOPNOTSUPP without AA_F_DEFER. Lock-free. */
int aa_free_deferred_u64(__u64 ptr);
/* aa_free_deferred_u64() of arr[0..n), as aa_free_bulk_u64(). */
int aa_free_deferred_bulk_u64(__u64 arr, __u32 n);

#include "arena_alloc_fast.bpf.h"

/* --- Macros: the API in arena pointers ----------------------------------- */
#ifdef AA_NO_INLINE
#define aa_malloc(size)		((void __arena *)aa_malloc_u64(size))
#define aa_calloc(n, size)	((void __arena *)aa_calloc_u64((n), (size)))
#define aa_free(p)		aa_free_u64((__u64)(p))
#else
#define aa_malloc(size)		((void __arena *)aa_malloc_inline(size))
#define aa_calloc(n, size)	((void __arena *)aa_calloc_inline((n), (size)))
#define aa_free(p)		aa_free_inline((__u64)(p))
#endif
#define aa_aligned_alloc(a, sz)	((void __arena *)aa_aligned_alloc_u64((a), (sz)))
#define aa_malloc_grow(size)	((void __arena *)aa_malloc_grow_u64(size))
#define aa_calloc_grow(n, size)	((void __arena *)aa_calloc_grow_u64((n), (size)))
#define aa_usable_size(p)	aa_usable_size_u64((__u64)(p))
#define aa_malloc_bulk(arr, n, size) aa_malloc_bulk_u64((__u64)(arr), (n), (size))
#define aa_free_bulk(arr, n)	aa_free_bulk_u64((__u64)(arr), (n))
#define aa_free_deferred(p)	aa_free_deferred_u64((__u64)(p))
#define aa_free_deferred_bulk(arr, n) aa_free_deferred_bulk_u64((__u64)(arr), (n))

/* Copy a struct between the arena and the stack, word by word (a plain
 * `*rec = local;` loses the arena address cast): aa_store_struct(rec,
 * &local) with rec in the arena, aa_load_struct(&local, rec). Both sides
 * must have the same size (checked at compile time). */
#define aa_store_struct(dst, src)						\
	({ _Static_assert(sizeof(*(dst)) == sizeof(*(src)), "aa_store_struct: sizes differ"); \
	   __aa_copy_struct((__u64)(dst), (__u64)(src), sizeof(*(src)),		\
			    __AA_ALIGN2(*(dst), *(src)), true); })

#define aa_load_struct(dst, src)						\
	({ _Static_assert(sizeof(*(dst)) == sizeof(*(src)), "aa_load_struct: sizes differ"); \
	   __aa_copy_struct((__u64)(dst), (__u64)(src), sizeof(*(src)),		\
			    __AA_ALIGN2(*(dst), *(src)), false); })

#endif /* __BPF__ */
#endif /* __ARENA_ALLOC_BPF_H */
