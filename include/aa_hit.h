/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * aa_hit.h - the hit path and the claim, one definition for BPF programs
 * (arena_alloc_fast.bpf.h includes it) and for the userspace library,
 * which runs the same code over its mmap of the arena (a userspace
 * thread's cache, user/user_cache.c): claiming and releasing a cache,
 * popping and pushing objects, finding a pointer's span and class without
 * a lock, and claiming a block for a free. Not for direct use.
 *
 * Every function that reads the heap's addresses takes `f`, the heap's
 * struct aa_fast (aa_shared.h): in BPF the library's `aa_fast` global, in
 * userspace the loader's copy of the same fields. Arena addresses are
 * user addresses in both worlds (an arena maps at its user_vm_start in
 * every process), so one __u64 names a block on both sides.
 *
 * The concurrency model behind the claims is at the top of bpf/internal.h.
 */
#ifndef __AA_HIT_H
#define __AA_HIT_H

#include "aa_shared.h"
#include "aa_size_classes.h"

#ifndef __BPF__
#include <stdbool.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif

#ifndef __arena
#ifdef __BPF__
#define __arena __attribute__((address_space(1)))
#else
#define __arena		/* userspace: the mmap, plain memory */
#endif
#endif

#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif
#define __aa_barrier()		asm volatile("" ::: "memory")

/* The ordering primitives below. Built with -DAA_ORDERING_CHECK (GCC, the
 * ordering check: scripts/ordering-check.py) each stays out of line under
 * its own name, so that the assembly shows what it is made of and every
 * place the hit path calls it. */
#if defined(AA_ORDERING_CHECK) && !defined(__BPF__)
#define __aa_ordering		static __attribute__((noipa, used))
#else
#define __aa_ordering		static __always_inline
#endif

/* x86 is TSO: a plain store after a compiler barrier is a release, and
 * loads are never reordered. BPF learns the target from
 * -D__TARGET_ARCH_<arch> (arena_alloc_fast.bpf.h warns without one). */
#if defined(__TARGET_ARCH_x86) || (!defined(__BPF__) && (defined(__x86_64__) || defined(__i386__)))
#define __AA_TSO 1
#else
#define __AA_TSO 0
#endif

/* Arena words read or written as another type than the one stored there
 * (word 0 of a block is its user's data; a slot word is two fields). */
typedef __u64 __attribute__((__may_alias__)) __aa_word64;

/* Custody marks, word 0 of a block the allocator holds: f->key ^ address
 * ^ tag (bpf/internal.h lists the tags). */
#define AA_TAG_FREED		1
#define AA_TAG_BITS		5

/* What a free needs to know of a class, in one 64-bit word (one load,
 * one register): the bytes its objects fill in a span (objs * size) << 32
 * | recip. __aa_object_start() says why that is enough. */
#define AA_CLASS_HOT(c, sz, pg, ob, ba, ca, rc) [c] = ((__u64)((ob) * (sz)) << 32) | (rc),
static const __u64 aa_class_hot[AA_NR_CLASSES] = {
	AA_SIZE_CLASSES(AA_CLASS_HOT)
};

/* The size classes (include/aa_size_classes.h), the one table of them that
 * BPF and userspace read: the class of a request (aa_class_index[] by
 * AA_CLASS_INDEX_OF(size)), and per class the object size, span pages,
 * objects per span and the loader's defaults (refill batch, CPU cache
 * capacity). Read-only: .rodata of every object that includes this
 * header and uses them. */
struct aa_class_info {
	__u32 size;		/* object bytes */
	__u16 pages;		/* pages per span */
	__u16 objs;		/* objects per span */
	__u16 batch;		/* default refill batch (the loader's default) */
	__u16 cap;		/* default CPU cache capacity */
};

#define AA_CLASS_INFO(c, sz, pg, ob, ba, ca, rc) \
	[c] = { .size = sz, .pages = pg, .objs = ob, .batch = ba, .cap = ca },
static const struct aa_class_info aa_classes[AA_NR_CLASSES] = {
	AA_SIZE_CLASSES(AA_CLASS_INFO)
};
static const __u8 aa_class_index[AA_CLASS_INDEX_LEN] = { AA_CLASS_INDEX };

/* Class of a request of size bytes, 1 <= size <= AA_MAX_CLASS_SIZE
 * (unchecked: the caller checked the size; the library's public
 * aa_size_class() is the checked one). BPF: the index is clamped where
 * the table is read, for the verifier. The compiler would drop the clamp
 * as redundant (size - 1 < AA_MAX_CLASS_SIZE was checked), but 6.12's
 * verifier does not link size and size - 1: barrier_var() hides the
 * range from the compiler, so the clamp stays. A constant size folds to
 * a constant class. */
static __always_inline __u32 __aa_size_class(__u64 size)
{
	__u64 q = AA_CLASS_INDEX_OF(size);

#ifdef __BPF__
	if (!__builtin_constant_p(size))
		barrier_var(q);
	q = q < AA_CLASS_INDEX_LEN ? q : AA_CLASS_INDEX_LEN - 1;
#endif
	return aa_class_index[q];
}

/* A claim in a heap that defers frees loads a slot's state and meta_off
 * as one word (state the low half). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "AA_SLOT_WORD: state is the low half");

/* struct aa_fast from the root r, whose user address is root_addr: every
 * field but arena_size and cc[], which each side publishes after these
 * (BPF: bpf/lifecycle.bpf.c's publish_fast(); userspace:
 * user/user_cache.c), and free_size, which only publish_fast() sets (the
 * inline free's bound; userspace's frees are bounded by arena_size). The
 * one fill of struct aa_fast. */
static __always_inline void __aa_fast_fill(struct aa_fast *f, const struct aa_root __arena *r,
					   __u64 root_addr)
{
	f->root = root_addr;
	f->arena_base = r->arena_base;
	f->slots = r->slots;
	f->pm = r->pm;
	f->key = r->cache_key;
	f->zero = 0;
	f->mode = r->flags & AA_FAST_MODES;
	f->defer = r->flags & AA_F_DEFER;
}

/* Release store of a 32-bit arena word: every load and store before it
 * is visible to whoever sees the new value (and reads it with an acquire:
 * the claims below).
 *  - userspace: a C11 release store (x86: a plain store, which TSO makes
 *    a release; arm64: stlr). Not __sync_lock_test_and_set(), which GCC
 *    documents as an acquire barrier only: aarch64 GCC makes it swpa, or
 *    ldxr/stxr followed by `dmb ish`, and either lets the count and objs[]
 *    stores of a hit become visible after the release.
 *  - BPF on TSO: a plain store after a compiler barrier.
 *  - BPF elsewhere: BPF has no store-release before 6.15 and clang-19
 *    cannot build __atomic_*() for BPF; an exchange, which the kernel's
 *    JITs make fully ordered (BPF_XCHG: arm64 swpal, or ldxr/stlxr + dmb
 *    ish; the BPF memory model orders fetching atomics fully).
 * scripts/ordering-check.py checks the userspace build for arm64. */
__aa_ordering void __aa_store_release(__u32 __arena *p, __u32 v)
{
#ifndef __BPF__
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#elif __AA_TSO
	__aa_barrier();
	*(volatile __u32 __arena *)p = v;
#else
	__sync_lock_test_and_set(p, v);
#endif
}

/* A 64-bit load that the CPU cannot perform before the load that produced
 * dep (TSO never reorders loads; elsewhere an address dependency through
 * f->zero, which the compiler cannot know is 0). */
static __always_inline __u64 __aa_load_after(const struct aa_fast *f, __aa_word64 __arena *p,
					     __u64 dep)
{
#if __AA_TSO
	(void)f;
	(void)dep;
	return *(volatile __aa_word64 __arena *)p;
#else
	return *(volatile __aa_word64 __arena *)((__u64)p + (dep & f->zero));
#endif
}

/* cmpxchg returning the old value. barrier_var(): compared with the
 * expected value as it is, clang turns the comparison into the
 * instruction's success flag, which the BPF backend materialises through
 * the stack, on the critical path after the locked instruction. */
__aa_ordering __u64 __aa_cmpxchg64(__aa_word64 __arena *p, __u64 old, __u64 new)
{
	__u64 was = __sync_val_compare_and_swap(p, old, new);

	barrier_var(was);
	return was;
}

/* --- A cache: claim, release, pop, push ---------------------------------
 * struct aa_cpu_cache serves a CPU's programs and, registered in the root
 * (aa_root.user_cache_off[]), a userspace thread: the same code and claim
 * protocol for both.
 */

/* Claim cc as `who`. A full barrier: what the last holder wrote before its
 * release is visible to us. */
__aa_ordering bool __aa_cache_claim(struct aa_cpu_cache __arena *cc, __u32 who)
{
	__u32 old = __sync_val_compare_and_swap(&cc->busy, AA_CC_FREE, who);

	barrier_var(old);	/* see __aa_cmpxchg64() */
	return old == AA_CC_FREE;
}

static __always_inline void __aa_cache_release(struct aa_cpu_cache __arena *cc)
{
	__aa_store_release(&cc->busy, AA_CC_FREE);
}

/* Take the top of class k's LIFO into *p; false when it is empty. No
 * counter counts it. REQUIRES: its cache claimed. */
static __always_inline bool __aa_class_take(struct aa_cpu_class __arena *k, __u64 *p)
{
	__u32 n = k->count;

	if (n - 1 >= AA_CPU_CACHE_MAX)
		return false;
	*p = k->objs[(n - 1) & (AA_CPU_CACHE_MAX - 1)];
	k->count = n - 1;
	return true;
}

/* Pop an object of class c for a request of size bytes, or 0 (empty).
 * REQUIRES: cc claimed; c < AA_NR_CLASSES. */
static __always_inline __u64 __aa_cache_pop(struct aa_cpu_cache __arena *cc, __u32 c, __u64 size)
{
	struct aa_cpu_class __arena *k = &cc->cls[c];
	__u64 p = 0;

	if (!__aa_class_take(k, &p))
		return 0;
	k->stats.allocs++;
	k->stats.req_bytes += size;
	return p;
}

/* Push ptr (claimed, class c); false when the cache is full.
 * REQUIRES: cc claimed; c < AA_NR_CLASSES. */
static __always_inline bool __aa_cache_push(struct aa_cpu_cache __arena *cc, __u32 c, __u64 ptr)
{
	struct aa_cpu_class __arena *k = &cc->cls[c];
	__u32 n = k->count;

	/* cap is in the arena, which userspace can write: bound it here too */
	if (n >= k->cap || n >= AA_CPU_CACHE_MAX)
		return false;
	k->objs[n] = ptr;
	/* objs[n] before count, for the compiler too: a thread killed between
	 * the two stores leaves a cache that does not count ptr (marked, in
	 * no tier: lost, never owned twice), never one that counts a slot
	 * not yet written (a stale pointer, which a reap would hand to a
	 * tier). Program order is all a reap of a dead thread needs, on any
	 * CPU: a kill stops the thread at an instruction boundary, and the
	 * kernel makes its earlier stores visible before anyone can learn of
	 * the death. Live readers wait for the claim, whose release orders
	 * both stores. */
	__aa_barrier();
	k->count = n + 1;
	k->stats.frees++;
	return true;
}

/* A hit: claim cc, pop an object of class c, release. Returns it (word 0
 * cleared) or 0 (cache claimed by someone else, or empty). */
static __always_inline __u64 __aa_hit_alloc(struct aa_cpu_cache __arena *cc, __u32 c, __u64 size)
{
	__u64 p;

	if (!__aa_cache_claim(cc, AA_CC_OWNER))
		return 0;
	p = __aa_cache_pop(cc, c, size);
	__aa_cache_release(cc);
	if (p)
		*(volatile __aa_word64 __arena *)p = 0;	/* no longer carries a mark */
	return p;
}

/* A hit: claim cc, push ptr (claimed, class c), release. Returns false
 * (cache claimed by someone else, or full) with ptr still the caller's. */
static __always_inline bool __aa_hit_free(struct aa_cpu_cache __arena *cc, __u64 ptr, __u32 c)
{
	bool ok;

	if (!__aa_cache_claim(cc, AA_CC_OWNER))
		return false;
	ok = __aa_cache_push(cc, c, ptr);
	__aa_cache_release(cc);
	return ok;
}

/* --- A pointer's span and class, lock-free ------------------------------ */

/*
 * Is arena offset off the start of an object of a span whose page-map
 * entry is e, for the class whose aa_class_hot[] word is hot? From the
 * span's first page, off is rel bytes in; rel < 2^16 (spans are at most
 * 16 pages). An object starts there iff rel is below the bytes the
 * objects fill and a multiple of size: with recip = ceil(2^32 / size),
 * rel % size == 0 iff (rel * recip) mod 2^32 < recip, exact for 16-bit
 * rel and 13-bit size since 32 >= 16 + 13 (Lemire, Kaser, Kurz, "Faster
 * remainder by direct computation", 2019; tests/test_size_classes.c
 * checks every rel of every class). One multiplication, no division.
 */
static __always_inline bool __aa_object_start(__u32 off, __u32 e, __u64 hot)
{
	__u32 rel = (off & (AA_PAGE_SIZE - 1)) + (AA_PM_SPAN_INDEX(e) << AA_PAGE_SHIFT);

	return rel < (hot >> 32) && rel * (__u32)hot < (__u32)hot;
}

/* The class of the span object at arena offset off (page-map entry e), or
 * -AA_ERR_INTERIOR / -AA_ERR_CORRUPT. */
static __always_inline int __aa_span_object(__u32 off, __u32 e)
{
	__u32 cls = AA_PM_SPAN_CLASS(e);

	if (cls >= AA_NR_CLASSES)
		return -AA_ERR_CORRUPT;
	return __aa_object_start(off, e, aa_class_hot[cls]) ? (int)cls : -AA_ERR_INTERIOR;
}

/* The page-map entry of arena offset rel, which is inside the arena (rel
 * < arena_size: its entry is inside the page map), and in *pm its
 * address. */
static __always_inline __u32 __aa_pm_entry(const struct aa_fast *f, __u64 rel, __u32 __arena **pm)
{
	*pm = (__u32 __arena *)f->pm + ((rel >> AA_PAGE_SHIFT) & (AA_MAX_ARENA_PAGES - 1));
	return *(volatile __u32 __arena *)*pm;
}

/* What a lock-free lookup of a span object saw, for its claim to check
 * again: the page-map entry and its address. In BPF one word, the address
 * by its low 32 bits, because it lives across the claim's cmpxchg, where
 * an inline free in a program's loop has two or three scratch registers
 * to spare: an arena never crosses a 4-GiB boundary of the address space
 * (the kernel refuses such a map), and a BPF access uses the low half of
 * an arena address only (the JIT adds it to the kernel's mapping).
 * Userspace keeps both as they are. */
#ifdef __BPF__
struct aa_seen {
	__u64 pm_e;		/* page-map entry address << 32 | entry */
};
#else
struct aa_seen {
	__u32 *pm;
	__u32 e;
};
#endif

static __always_inline void __aa_seen_set(struct aa_seen *s, __u32 __arena *pm, __u32 e)
{
#ifdef __BPF__
	s->pm_e = (__u64)(__u32)(__u64)pm << 32 | e;
	/* one register, not its two parts: the compiler must not see
	 * through the packing */
	barrier_var(s->pm_e);
#else
	s->pm = pm;
	s->e = e;
#endif
}

static __always_inline __u32 __aa_seen_e(const struct aa_seen *s)
{
#ifdef __BPF__
	return (__u32)s->pm_e;
#else
	return s->e;
#endif
}

static __always_inline __u32 __arena *__aa_seen_pm(const struct aa_seen *s)
{
#ifdef __BPF__
	return (__u32 __arena *)(s->pm_e >> 32);
#else
	return s->pm;
#endif
}

/* The span page under ptr, lock-free: its class (>= 0) with *off = ptr's
 * arena offset and *s what the lookup saw, or -1 for anything else (at or
 * above bound: outside the arena, or 0, not published; not in a span: the
 * global aa_free_u64() judges it). Whether ptr starts an object (or is
 * even aligned) is the caller's to check: __aa_object_start(). One
 * page-map load, at an address that ptr alone gives: the entries of a
 * slot without a chunk are 0 (aa_shared.h), never a span's. */
static __always_inline int __aa_span_entry(const struct aa_fast *f, __u64 bound, __u64 ptr,
					   __u32 *off, struct aa_seen *s)
{
	__u64 rel = ptr - f->arena_base;
	__u32 __arena *pm;
	__u32 cls, e;

	if (rel >= bound)
		return -1;
	e = __aa_pm_entry(f, rel, &pm);
	*off = rel;
	__aa_seen_set(s, pm, e);
	/* kind SPAN and class < AA_NR_CLASSES, in one comparison */
	cls = (e >> 8) - (AA_PM_SPAN << (AA_PM_KIND_SHIFT - 8));
	if (cls >= AA_NR_CLASSES)
		return -1;
	return cls;
}

/* __aa_span_entry() for a span object: its class, or < 0. */
static __always_inline int __aa_class_in(const struct aa_fast *f, __u64 bound, __u64 ptr,
					 struct aa_seen *s)
{
	__u32 off = 0;
	int cls = __aa_span_entry(f, bound, ptr, &off, s);

	if (cls < 0 || !__aa_object_start(off, __aa_seen_e(s), aa_class_hot[cls]))
		return -1;
	return cls;
}

/* __aa_class_in() for any pointer of the published arena (arena_size: 0
 * until published). */
static __always_inline int __aa_class_of(const struct aa_fast *f, __u64 ptr, struct aa_seen *s)
{
	return __aa_class_in(f, f->arena_size, ptr, s);
}

/* --- The claim ------------------------------------------------------------ */

/* Deferred free (limbo: bpf/internal.h's model): the pending bitmap of
 * the chunk whose metadata is at the arena address meta, and in *g the
 * index of the bit of the object at arena offset rel (one bit per 16-byte
 * granule: bit g & 63 of word g >> 6; objects are at least AA_MIN_SIZE
 * apart, so no two start in one granule). */
static __always_inline __u64 __arena *__aa_pending_map(__u64 rel, __u64 meta, __u64 *g)
{
	*g = (rel & (AA_CHUNK_SIZE - 1)) >> 4;
	return (__u64 __arena *)(meta + AA_META_DEFER_OFF);
}

/* Is the block at ptr, which the caller claimed, in limbo? Its chunk's
 * metadata through its slot: the claim keeps the chunk (the span or the
 * page heap counts the block as out), so the slot holds it, a chunk or
 * the head of a multi-chunk allocation, both with their metadata; a slot
 * that does not (a heap corrupted under us) answers yes, and the claim is
 * undone. */
static __always_inline bool __aa_defer_pending(const struct aa_fast *f, __u64 ptr)
{
	struct aa_slot __arena *slots = (struct aa_slot __arena *)f->slots;
	__u64 rel = ptr - f->arena_base, g, sw;
	__u64 __arena *bits;

	sw = *(volatile __aa_word64 __arena *)&slots[(rel >> AA_CHUNK_SHIFT) & (AA_MAX_SLOTS - 1)];
	if ((__u32)sw != AA_SLOT_CHUNK && (__u32)sw != AA_SLOT_LARGE_HEAD)
		return true;
	bits = __aa_pending_map(rel, f->arena_base + (sw >> 32), &g);
	return (*(volatile __u64 __arena *)&bits[g >> 6] >> (g & 63)) & 1;
}

/*
 * Claim the block at ptr for a free (the claim: bpf/internal.h's model),
 * lock-free, any context, in two steps: __aa_claim_word() reads word 0
 * into *v (false: it is a custody mark, the block is not live);
 * __aa_claim() turns it into the FREED mark and re-checks the lookup: 0
 * (the caller owns the block) or -1 with nothing changed. check is the word
 * that says the block is allocated (its page-map entry, or its slot's
 * state for whole chunks), expect its value at the lookup: a word at an
 * address that ptr alone gives, which says what ptr's page is and nothing
 * else, so that the same value after the claim means the same block.
 * defer: the heap's f->defer, read by the caller, or 0 where the caller
 * let deferred-free heaps go elsewhere (a constant 0 drops the
 * pending-bit check from the code).
 */
static __always_inline bool __aa_claim_word(__u64 ptr, __u64 key, __u64 *v)
{
	*v = *(volatile __aa_word64 __arena *)ptr;
	return ((*v ^ key ^ ptr) >> AA_TAG_BITS) != 0;	/* not a custody mark */
}

/* ptr as a pointer to its word 0. */
static __always_inline __aa_word64 __arena *__aa_word_at(__u64 ptr)
{
	return (__aa_word64 __arena *)ptr;
}

static __always_inline int __aa_claim(const struct aa_fast *f, __u64 ptr, __u64 key, __u64 v,
				      __u32 __arena *check, __u32 expect, __u64 defer)
{
	__u64 mine = key ^ ptr ^ AA_TAG_FREED;
	__u32 now;

	if (__aa_cmpxchg64(__aa_word_at(ptr), v, mine) != v)
		return -1;
	now = *(volatile __u32 __arena *)check;
	if (now == expect && __aa_load_after(f, __aa_word_at(ptr), now) == mine &&
	    !(defer && __aa_defer_pending(f, ptr)))
		return 0;
	__sync_val_compare_and_swap(__aa_word_at(ptr), mine, v);	/* undo the stray write */
	return -1;
}

/* Claim ptr, a span object whose lookup saw s, for a free: 0 (the caller
 * owns it), or -1 (not live: the caller judges it). defer: as __aa_claim(). */
static __always_inline int __aa_claim_object(const struct aa_fast *f, __u64 ptr,
					     const struct aa_seen *s, __u64 defer)
{
	__u64 v = 0;

	if (!__aa_claim_word(ptr, f->key, &v))
		return -1;
	return __aa_claim(f, ptr, f->key, v, __aa_seen_pm(s), __aa_seen_e(s), defer);
}

#endif /* __AA_HIT_H */
