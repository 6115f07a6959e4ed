// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * alloc.bpf.c - the front door's bodies: malloc, calloc, aligned_alloc,
 * free, usable_size and the bulk calls, which api.bpf.c's public
 * functions run (include/arena_alloc.bpf.h).
 *
 * Role:       check arguments, then route each request to the tier that
 *             serves it (route_alloc(), the one place that decides; in
 *             debug mode through debug_alloc()): sizes up to 8 KiB (the
 *             size classes) to this CPU's cache (tier 1), everything else,
 *             and everything when the heap was set up with AA_F_NO_CACHES,
 *             to the heap below (heap.bpf.c: central lists, page heap).
 * From below: aa_cpu_cache_*(), aa_heap_*(), debug mode's hooks, and
 *             aa__arena_self_grow() where the heap grows itself. Never a
 *             page kfunc but through that: every function here verifies
 *             in tc, xdp, tracing and syscall programs alike.
 * To above:   the bodies (malloc_inline() ...) for api.bpf.c's public
 *             functions and for deferred free's (defer.bpf.c).
 * Locking:    none of its own.
 */
#include "internal.h"
#include "alloc.h"
#include "buddy.h"
#include "self_grow.h"
#include "lookup.h"
#include "heap.h"
#include "cpu_cache.h"
#include "debug.h"

static __always_inline bool caches_on(void)
{
	return !(aa__root.flags & AA_F_NO_CACHES);
}

/* Call frames: frame 1 of internal.h's model (the public functions call
 * the inline bodies below, never each other). */

/* --- Routing: the one place that picks the tier of an allocation --------- */

/* The class that serves size bytes aligned to align (a power of two <=
 * page; <= AA_MIN_ALIGN: any class), or -1: a page run (page-aligned). An
 * object of a class whose size is a multiple of align is aligned to it,
 * since spans start on a page. */
static __always_inline int aa_aligned_class(__u64 size, __u64 align)
{
	int c, start;

	if (size > AA_MAX_CLASS_SIZE || align > AA_MAX_CLASS_SIZE)
		return -1;
	if (align <= AA_MIN_ALIGN)
		return __aa_size_class(size);
	start = __aa_size_class(size > align ? size : align);
	aa_for(c, start, AA_NR_CLASSES)
		if (!(aa_class(c)->size & (align - 1)))
			return c;
	return -1;
}

#define AA_CLS_LAZY	(-2)	/* route_alloc(): class not known yet */

/* The heap had no block for bytes bytes of class cls (< 0: a page run),
 * and it may grow itself (AA_DRY): map what that needs (a chunk; above a
 * chunk, the slots that complete a run of free chunks), then try once
 * more, from the heap (the next refill takes a batch of the new chunk).
 * Here, in a public function's own frame (internal.h, call frames).
 * REQUIRES: aa_self_grows(). Returns an address, or 0 (counted). */
static __always_inline __u64 grow_and_retry(__u64 bytes, int cls)
{
	__u64 p = AA_DRY;

	if (aa__arena_self_grow(cls >= 0 || bytes <= AA_CHUNK_SIZE ? 1 :
				large_chunks((bytes + AA_PAGE_SIZE - 1) >> AA_PAGE_SHIFT)) >= 0)
		p = heap_alloc(bytes, cls);
	if (p != AA_DRY)
		return p;	/* an address, or 0 counted */
	alloc_nomem();
	return 0;
}

/* An object of bytes bytes aligned to align (0: none) for a request of req
 * bytes: from this CPU's cache when the caches are on and a class serves
 * it, else from the heap (the same class, or a page run); where the heap
 * is empty and may grow itself, grow_and_retry(). cls: that class
 * (aa_aligned_class(bytes, align)) when the caller has it, else
 * AA_CLS_LAZY: computed here, after the cheap tests (the hit path loads
 * nothing before them). bytes - 1: 0 wraps and goes to the heap, which
 * refuses it. */
static __always_inline __u64 route_alloc(__u64 bytes, __u64 req, __u64 align, int cls)
{
	__u64 p;

	if (bytes - 1 < AA_MAX_CLASS_SIZE && caches_on() && aa_heap_ready()) {
		if (cls == AA_CLS_LAZY)
			cls = aa_aligned_class(bytes, align);
		if (cls >= 0) {
			p = aa_cpu_cache_alloc(cls, req);
			return aa_self_grows() && p == AA_DRY ? grow_and_retry(bytes, cls) : p;
		}
	}
	if (cls == AA_CLS_LAZY)
		cls = aa_aligned_class(bytes, align);
	p = heap_alloc(bytes, cls);
	return aa_self_grows() && p == AA_DRY ? grow_and_retry(bytes, cls) : p;
}

/* Debug mode: size bytes aligned to align (0: none) with the debug tail
 * (aa__debug_on_alloc(), debug.bpf.c). REQUIRES: debug_on(). */
static __always_inline __u64 debug_alloc(__u64 size, __u64 align)
{
	__u64 need = size + AA_DEBUG_TAIL, p;
	int cls;

	if (size == 0 || size > AA_MAX_ALLOC) {	/* the tail must not make 0 valid */
		aa_fail(AA_ERR_SIZE);
		return 0;
	}
	cls = aa_aligned_class(need, align);
	p = route_alloc(need, size, align, cls);
	if (p)
		aa__debug_on_alloc(p, cls >= 0 ? cls : AA_KIND_RUN, size);
	return p;
}

static __always_inline __u64 malloc_inline(__u64 size)
{
	if (debug_on())
		return debug_alloc(size, 0);
	return route_alloc(size, size, 0, AA_CLS_LAZY);
}

static __always_inline int free_inline(__u64 ptr)
{
	if (!ptr)
		return 0;
	if (debug_on())
		return debug_free(ptr);
	if (caches_on())
		return aa_cpu_cache_free(ptr);
	return aa__heap_free(ptr);
}

static __always_inline __u64 aligned_alloc_inline(__u64 align, __u64 size)
{
	if (!aa_align_ok(align)) {
		aa_fail(AA_ERR_ALIGN);
		return 0;
	}
	if (debug_on())
		return debug_alloc(size, align);
	return route_alloc(size, size, align, AA_CLS_LAZY);
}

static __always_inline __u64 usable_size_inline(__u64 ptr)
{
	if (!ptr)
		return 0;
	if (debug_on())
		return debug_usable(ptr);
	return aa__heap_usable_size(ptr);
}

/* n * size bytes, zeroed, or 0 (counted). */
static __always_inline __u64 calloc_inline(__u64 n, __u64 size)
{
	__u64 bytes, words, p;
	int i, done = AA_ZERO;
	__u64 __arena *w;

	if (!aa_calloc_ok(n, size)) {
		aa_fail(AA_ERR_SIZE);
		return 0;
	}
	bytes = n * size;
	p = malloc_inline(bytes);
	if (!p)
		return 0;
	/* Whole words, then the last few bytes one by one: exactly `bytes`
	 * (in debug mode the redzone starts right after them). */
	w = (__u64 __arena *)p;
	words = bytes / 8;
	aa_for(i, 0, words < AA_MAX_LOOPS ? words : AA_MAX_LOOPS) {
		w[i] = 0;
		done++;
	}
	aa_for(i, words * 8, bytes)
		((__u8 __arena *)p)[i] = 0;
	if (done < words) {	/* more than the loop bound: fail cleanly */
		aa__heap_free(p);	/* > 64 MiB: a page run */
		aa_fail(AA_ERR_ZEROING);
		return 0;
	}
	return p;
}

/* Arguments of a bulk call with n > 0: an array, and n <= AA_BULK_MAX
 * (-E2BIG, counted as a size error). Returns 0 or -errno. */
static __always_inline int bulk_args(__u64 arr, __u32 n)
{
	if (!arr)
		return aa_fail(AA_ERR_FOREIGN);
	if (n <= AA_BULK_MAX)
		return 0;
	aa_fail(AA_ERR_SIZE);
	return -E2BIG;
}

/* n objects of size bytes into arr[0 .. n): how many, or -errno. */
static __always_inline int malloc_bulk_inline(__u64 arr, __u32 n, __u64 size)
{
	__u64 __arena *out = (__u64 __arena *)arr;
	int i, got = AA_ZERO, err;

	if (n == 0)
		return 0;
	err = bulk_args(arr, n);
	if (err)
		return err;
	if (size - 1 < AA_MAX_CLASS_SIZE && !debug_on()) {
		__u32 cls = __aa_size_class(size);

		if (!caches_on() || !aa_heap_ready())	/* a batch per heap-lock hold */
			return aa_heap_alloc_bulk(arr, n, cls, 0);
		/* one by one through the CPU cache, like aa_free_bulk_u64():
		 * the heap lock only when the caches run dry */
		aa_for(i, 0, n) {
			__u64 p = aa_cpu_cache_alloc(cls, size);

			if (aa_self_grows() && p == AA_DRY)
				p = grow_and_retry(size, cls);
			if (!p)
				break;
			out[i] = p;
			got++;
		}
		return got;
	}
	aa_for(i, 0, n) {	/* page runs, and everything in debug mode */
		__u64 sz = size, p;

		/* nothing derived from size is hoisted out of the loop:
		 * kept across its iterations, it took 4 stack slots */
		barrier_var(sz);
		p = malloc_inline(sz);

		if (!p)
			break;
		out[i] = p;
		got++;
	}
	return got;
}

/* Whether a bulk free of arr[0 .. n) goes on: 1, or what it returns (0
 * for n == 0, -errno). */
static __always_inline int free_each_args(__u64 arr, __u32 n)
{
	int err;

	if (n == 0)
		return 0;
	err = bulk_args(arr, n);
	if (err)
		return err;
	if (!caches_on() && !aa_heap_ready())
		return aa_fail(AA_ERR_UNINIT);
	return 1;
}

