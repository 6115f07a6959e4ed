/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena_alloc_fast.bpf.h - the internals of arena_alloc.bpf.h that users'
 * programs inline: the inline aa_malloc()/aa_calloc()/aa_free() bodies,
 * which run the CPU-cache hit path (aa_classes.bpf.h, one definition that
 * the library's tiers run too) and call the CPU-cache tier's slow halves
 * or the public functions for the rest, and the struct copies. Not for
 * direct use: include arena_alloc.bpf.h. The concurrency model behind the
 * claims is at the top of bpf/internal.h.
 */
#ifndef __ARENA_ALLOC_FAST_BPF_H
#define __ARENA_ALLOC_FAST_BPF_H

#ifndef __ARENA_ALLOC_BPF_H
#error "include arena_alloc.bpf.h, not arena_alloc_fast.bpf.h"
#endif

/* The target architecture picks the memory-ordering code of aa_hit.h;
 * without one the portable code is used on every CPU, x86's included. */
#if !defined(__TARGET_ARCH_x86) && !defined(__TARGET_ARCH_arm64) && \
	!defined(__TARGET_ARCH_s390) && !defined(__TARGET_ARCH_powerpc) && \
	!defined(__TARGET_ARCH_riscv) && !defined(__TARGET_ARCH_arm) && \
	!defined(__TARGET_ARCH_mips) && !defined(__TARGET_ARCH_sparc) && \
	!defined(__TARGET_ARCH_loongarch)
#warning "arena_alloc.bpf.h: no -D__TARGET_ARCH_<arch> (x86, arm64, ...): the portable, slower fast path"
#endif

/* The size classes, this CPU's cache and the hit path's code (aa_hit.h,
 * shared with the userspace library) */
#include "aa_classes.bpf.h"

/* The slow halves of the inline API (not for direct use), the CPU-cache
 * tier's own, called where the hit path stopped:
 *  - aa_cpu_cache_alloc_slow(): an object of class cls for a request of
 *    size bytes when this CPU's cache is empty or claimed: a refill, the
 *    transfer cache or the heap. Returns its address, 0 (counted), or
 *    AA_DRY: the heap is empty and grows itself, which the public
 *    aa_malloc_u64() does (a frame with room for the page functions);
 *  - aa_cpu_cache_free_slow(): take ptr, an object of class cls that the
 *    caller CLAIMED (word 0 = the FREED custody mark, see __aa_claim()),
 *    when this CPU's cache is full or claimed. */
__u64 aa_cpu_cache_alloc_slow(__u32 cls, __u64 size);
int aa_cpu_cache_free_slow(__u64 ptr, __u32 cls);

/* Put ptr (claimed, class c) into cc (this CPU's cache, or NULL): a hit,
 * else the slow path, which always takes it. 0, or -EUCLEAN. */
static __always_inline int __aa_cache_free(struct aa_cpu_cache __arena *cc, __u64 ptr, __u32 c)
{
	if (cc && __aa_hit_free(cc, ptr, c))
		return 0;
	return aa_cpu_cache_free_slow(ptr, c);
}

/* --- The inline API ------------------------------------------------------ */

/* aa_malloc(): the hit path inline, anything else through the globals. */
static __always_inline __u64 aa_malloc_inline(__u64 size)
{
	struct aa_cpu_cache __arena *cc;
	__u32 c;
	__u64 p;

	/* size - 1: size 0 wraps and takes the global path, which refuses it */
	if (size - 1 >= AA_MAX_CLASS_SIZE)
		return aa_malloc_u64(size);
	cc = __aa_this_cache();
	if (!cc)	/* not initialised, caches off, debug mode, CPU >= 256 */
		return aa_malloc_u64(size);
	c = __aa_size_class(size);
	p = __aa_hit_alloc(cc, c, size);
	if (p)
		return p;
	/* a miss goes straight down to the tier below; only an empty heap
	 * that grows itself goes back to the public function */
	p = aa_cpu_cache_alloc_slow(c, size);
	return p != AA_DRY ? p : aa_malloc_u64(size);
}

/*
 * aa_free(): 0 or -errno, as aa_free_u64(). Written for few live values
 * (a BPF program has 6 scratch registers, and its loop state holds the 4
 * callee-saved ones): this CPU's cache is found first, by the one helper
 * call, so that only ptr lives across a call and the lookup's values and
 * the claim's stay in scratch registers; the key is read where it is used.
 * Which cache does not depend on the claim: a program does not migrate.
 * A heap in deferred-free mode takes the global function (its
 * aa_fast.free_size is 0), whose claim also checks the object's pending
 * bit (limbo: bpf/internal.h's model), so the claim here has no such
 * check.
 */
static __always_inline int aa_free_inline(__u64 ptr)
{
	struct aa_cpu_cache __arena *cc;
	struct aa_seen s = {};

	if (!ptr)
		return 0;
	cc = __aa_this_cache();
	if (__aa_class_in(&aa_fast, aa_fast.free_size, ptr, &s) < 0 ||
	    __aa_claim_object(&aa_fast, ptr, &s, 0))
		return aa_free_u64(ptr);	/* judged there, counted */
	return __aa_cache_free(cc, ptr, AA_PM_SPAN_CLASS(__aa_seen_e(&s)));
}

/* aa_calloc(): inline when n * size is a compile-time constant of at most
 * AA_CALLOC_INLINE_MAX bytes (zeroed word by word; volatile stores so that
 * no compiler turns them into a memset), else aa_calloc_u64(). */
#define AA_CALLOC_INLINE_MAX	256

static __always_inline __u64 aa_calloc_inline(__u64 n, __u64 size)
{
	__u64 p;
	int i;

	if (!(__builtin_constant_p(n) && __builtin_constant_p(size) && n && size &&
	      n <= AA_CALLOC_INLINE_MAX && size <= AA_CALLOC_INLINE_MAX &&
	      n * size <= AA_CALLOC_INLINE_MAX))
		return aa_calloc_u64(n, size);
	p = aa_malloc_inline(n * size);
	if (!p)
		return 0;
	/* exactly n * size bytes (debug mode's redzone starts after them) */
#pragma clang loop unroll(full)
	for (i = 0; i < (int)(n * size / 8); i++)
		((volatile __u64 __arena *)p)[i] = 0;
#pragma clang loop unroll(full)
	for (i = (int)(n * size / 8 * 8); i < (int)(n * size); i++)
		((volatile __u8 __arena *)p)[i] = 0;
	return p;
}

/* --- Structs in and out of the arena ----------------------------------------
 * `*rec = local;` with rec in the arena is a memcpy whose BPF lowering
 * loses the arena address cast, even with -fno-builtin (the verifier: "R0
 * invalid mem access 'scalar'"). These copy a struct word by word instead,
 * in the widest unit both sides' alignment allow (the verifier refuses
 * misaligned stack access), with volatile stores that clang cannot merge
 * back into a memcpy:
 *     aa_store_struct(rec, &local);    rec: a __arena pointer
 *     aa_load_struct(&local, rec);
 * Both sides must have the same size (checked at compile time).
 */
#define __AA_ALIGN2(a, b)	(__alignof__(a) < __alignof__(b) ? __alignof__(a) : __alignof__(b))

/* n bytes as n / sizeof(T) words: to_arena says which side is the arena. */
#define __AA_COPY_WORDS(T, to_arena, dst, src, n)				\
	do {								\
		_Pragma("clang loop unroll(full)")			\
		for (__u32 ___i = 0; ___i < (n) / sizeof(T); ___i++) {	\
			if (to_arena)					\
				((volatile T __arena *)(dst))[___i] = ((const T *)(src))[___i]; \
			else						\
				((volatile T *)(dst))[___i] = ((const T __arena *)(src))[___i]; \
		}							\
	} while (0)

/* Copy n bytes between arena memory and the stack (or a map value);
 * to_arena: dst is the arena side, else src is. */
static __always_inline void __aa_copy_struct(__u64 dst, __u64 src, __u32 n, __u32 align,
					     bool to_arena)
{
	if (align >= 8 && !(n & 7))
		__AA_COPY_WORDS(__u64, to_arena, dst, src, n);
	else if (align >= 4 && !(n & 3))
		__AA_COPY_WORDS(__u32, to_arena, dst, src, n);
	else if (align >= 2 && !(n & 1))
		__AA_COPY_WORDS(__u16, to_arena, dst, src, n);
	else
		__AA_COPY_WORDS(__u8, to_arena, dst, src, n);
}

#endif /* __ARENA_ALLOC_FAST_BPF_H */
