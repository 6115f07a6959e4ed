// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * api.bpf.c - the public functions of the BPF API
 * (include/arena_alloc.bpf.h): one global function per call, each the
 * front door's body (alloc.bpf.c, defer.bpf.c) after the one decision
 * that needs the heap's lifecycle: an arena nobody initialised is
 * initialised here first, where the kernel lets every program map pages.
 *
 * Role:       the global functions that users' programs, the inline API's
 *             fallbacks (arena_alloc_fast.bpf.h) and entry.bpf.c call;
 *             self-init before an allocation (aa__arena_self_init()).
 * From below: the front door's bodies: malloc_inline() and the others of
 *             alloc.bpf.c, free_deferred_inline() of defer.bpf.c,
 *             self_grow_for() of self_grow.bpf.c; lifecycle.bpf.c's
 *             self-init.
 * To above:   users' programs; entry.bpf.c's allocator and batch calls.
 * Locking:    none of its own.
 *
 * Call frames: each function here is frame 1 of internal.h's model; they
 * never call each other.
 */
#include "internal.h"
#include "arena_alloc.bpf.h"
#include "self_grow.h"
#include "alloc.h"
#include "defer.h"
#include "lifecycle.h"

/* An allocation from an arena that nobody initialised initialises it
 * first, where the kernel lets every program map pages (a load-time
 * constant: pruned before Linux 7.0). Failures are left to the
 * allocation, which says so (UNINIT). */
static __always_inline void self_init_maybe(void)
{
	if (aa_kernel_self_grows() && !aa_heap_ready())
		aa__arena_self_init();
}

__u64 aa_malloc_u64(__u64 size)
{
	self_init_maybe();
	return malloc_inline(size);
}

__u64 aa_calloc_u64(__u64 n, __u64 size)
{
	self_init_maybe();
	return calloc_inline(n, size);
}

__u64 aa_aligned_alloc_u64(__u64 align, __u64 size)
{
	self_init_maybe();
	return aligned_alloc_inline(align, size);
}

int aa_free_u64(__u64 ptr)
{
	return free_inline(ptr);
}

__u64 aa_usable_size_u64(__u64 ptr)
{
	return usable_size_inline(ptr);
}

int aa_malloc_bulk_u64(__u64 arr, __u32 n, __u64 size)
{
	self_init_maybe();
	return malloc_bulk_inline(arr, n, size);
}

int aa_free_bulk_u64(__u64 arr, __u32 n)
{
	return free_each(arr, n, free_inline);
}

int aa_free_deferred_u64(__u64 ptr)
{
	return free_deferred_inline(ptr);
}

int aa_free_deferred_bulk_u64(__u64 arr, __u32 n)
{
	return free_each(arr, n, free_deferred_inline);
}

/* --- Allocations that may map pages ----------------------------------------
 * For programs that may call the page kfuncs (sleepable ones; every one on
 * Linux >= 7.0), as the kernel selftests' bpf_alloc() and libarena's
 * arena_malloc() do (the compat front ends): the heap initialised where
 * nobody did, even before 7.0, then what the request lacks mapped first
 * (self_grow_for()). The caller checks its arguments only once the heap
 * is ready, as aa_size_ok() reads the arena's size from the heap.
 */
static __always_inline bool grow_prepare(void)
{
	if (!aa_heap_ready())
		aa__arena_self_init();
	return aa_heap_ready();
}

__u64 aa_malloc_grow_u64(__u64 size)
{
	if (grow_prepare() && aa_size_ok(size))
		self_grow_for(size);
	return malloc_inline(size);
}

__u64 aa_calloc_grow_u64(__u64 n, __u64 size)
{
	if (grow_prepare() && aa_calloc_ok(n, size))
		self_grow_for(n * size);
	return calloc_inline(n, size);
}
