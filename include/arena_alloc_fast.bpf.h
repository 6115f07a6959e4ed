/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena_alloc_fast.bpf.h - the internals of arena_alloc.bpf.h that users'
 * programs inline: the size-class tables, the CPU-cache hit path (one
 * definition, which the library's global functions run too), the inline
 * aa_malloc()/aa_calloc()/aa_free() bodies and the struct copies. Not for
 * direct use: include arena_alloc.bpf.h. The concurrency model behind the
 * claims is at the top of bpf/internal.h.
 */
#ifndef __ARENA_ALLOC_FAST_BPF_H
#define __ARENA_ALLOC_FAST_BPF_H

#ifndef __ARENA_ALLOC_BPF_H
#error "include arena_alloc.bpf.h, not arena_alloc_fast.bpf.h"
#endif

/* The slow half of the inline free (not for direct use): take ptr, an
 * object of class cls that the caller CLAIMED (word 0 = the FREED custody
 * mark, see __aa_claim()), when this CPU's cache is full or claimed. The
 * inline allocation's slow half is aa_malloc_u64() itself. */
int aa_cpu_cache_free_slow(__u64 ptr, __u32 cls);

/* --- Size classes (include/aa_size_classes.h) ----------------------------
 * Read-only tables (.rodata of every object that includes this header):
 * the class of a request, and per class the object size, span pages,
 * objects per span and cache defaults; aa_class_hot below holds what a
 * free needs (the reciprocal that tells an object start without a
 * division).
 */
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

/* What a free needs to know of a class, in one 64-bit word (one load,
 * one register): the bytes its objects fill in a span (objs * size) << 32
 * | recip. __aa_object_start() says why that is enough. */
#define AA_CLASS_HOT(c, sz, pg, ob, ba, ca, rc) [c] = ((__u64)((ob) * (sz)) << 32) | (rc),
static const __u64 aa_class_hot[AA_NR_CLASSES] = {
	AA_SIZE_CLASSES(AA_CLASS_HOT)
};

/* Lock-free frees find a chunk's metadata from its page-map entry's page,
 * and load a slot's state and meta_off as one word (state the low half). */
_Static_assert(sizeof(((struct aa_chunk_meta *)0)->pm) <= AA_PAGE_SIZE, "pm[] in one page");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "AA_SLOT_WORD: state is the low half");

/*
 * Verifier: indexes into these tables must be bounded where the load is.
 * The compiler drops a clamp it can prove redundant (size - 1 < 8192 was
 * checked by the caller, table values are < 45), but 6.12's verifier does
 * not link size and size - 1: barrier_var() hides the range from the
 * compiler, so the clamp stays. A constant size folds to a constant class.
 */
#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

/* Class of a request of size bytes, 1 <= size <= AA_MAX_CLASS_SIZE. */
static __always_inline __u32 aa_size_class(__u64 size)
{
	__u64 q = (size + AA_MIN_SIZE - 1) >> AA_MIN_SHIFT;

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

/* --- The hit path, shared by the inline API and the library -------------
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

/* Custody marks, word 0 of a block the allocator holds: aa_fast.key ^
 * address ^ tag (bpf/internal.h lists the tags). */
#define AA_TAG_FREED		1
#define AA_TAG_BITS		5

#define __aa_barrier()		asm volatile("" ::: "memory")

/* The target architecture picks the memory-ordering code below; without
 * one the portable code is used on every CPU, x86's included. */
#if !defined(__TARGET_ARCH_x86) && !defined(__TARGET_ARCH_arm64) && \
	!defined(__TARGET_ARCH_s390) && !defined(__TARGET_ARCH_powerpc) && \
	!defined(__TARGET_ARCH_riscv) && !defined(__TARGET_ARCH_arm) && \
	!defined(__TARGET_ARCH_mips) && !defined(__TARGET_ARCH_sparc) && \
	!defined(__TARGET_ARCH_loongarch)
#warning "arena_alloc.bpf.h: no -D__TARGET_ARCH_<arch> (x86, arm64, ...): the portable, slower fast path"
#endif

/* Release store of a 32-bit arena word: every access before it is visible
 * to whoever sees the new value. BPF has no store-release before 6.15: on
 * x86 (TSO) a plain store after a compiler barrier is one; elsewhere an
 * exchange, which BPF orders fully. */
static __always_inline void __aa_store_release(__u32 __arena *p, __u32 v)
{
#if defined(__TARGET_ARCH_x86)
	__aa_barrier();
	*(volatile __u32 __arena *)p = v;
#else
	__sync_lock_test_and_set(p, v);
#endif
}

/* A 64-bit load that the CPU cannot perform before the load that produced
 * dep (x86 never reorders loads; elsewhere an address dependency through
 * aa_fast.zero, which the compiler cannot know is 0). */
static __always_inline __u64 __aa_load_after(__u64 __arena *p, __u64 dep)
{
#if defined(__TARGET_ARCH_x86)
	(void)dep;
	return *(volatile __u64 __arena *)p;
#else
	return *(volatile __u64 __arena *)((__u64)p + (dep & aa_fast.zero));
#endif
}

/* cmpxchg returning the old value. barrier_var(): compared with the
 * expected value as it is, clang turns the comparison into the
 * instruction's success flag, which the BPF backend materialises through
 * the stack, on the critical path after the locked instruction. */
static __always_inline __u64 __aa_cmpxchg64(__u64 __arena *p, __u64 old, __u64 new)
{
	__u64 was = __sync_val_compare_and_swap(p, old, new);

	barrier_var(was);
	return was;
}

/* This CPU's cache, or NULL (not initialised, caches off, CPU >= 256). */
static __always_inline struct aa_cpu_cache __arena *__aa_this_cache(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (cpu >= AA_MAX_CPUS)
		return NULL;
	return (struct aa_cpu_cache __arena *)aa_fast.cc[cpu];
}

/* Claim cc as `who`. A full barrier: what the last holder wrote before its
 * release is visible to us. */
static __always_inline bool __aa_cache_claim(struct aa_cpu_cache __arena *cc, __u32 who)
{
	__u32 old = __sync_val_compare_and_swap(&cc->busy, AA_CC_FREE, who);

	barrier_var(old);	/* see __aa_cmpxchg64() */
	return old == AA_CC_FREE;
}

static __always_inline void __aa_cache_release(struct aa_cpu_cache __arena *cc)
{
	__aa_store_release(&cc->busy, AA_CC_FREE);
}

/* Pop an object of class c for a request of size bytes, or 0 (empty).
 * REQUIRES: cc claimed; c < AA_NR_CLASSES. */
static __always_inline __u64 __aa_cache_pop(struct aa_cpu_cache __arena *cc, __u32 c, __u64 size)
{
	struct aa_cpu_class __arena *k = &cc->cls[c];
	__u32 n = k->count;
	__u64 p;

	if (n - 1 >= AA_CPU_CACHE_MAX)
		return 0;
	p = k->objs[(n - 1) & (AA_CPU_CACHE_MAX - 1)];
	k->count = n - 1;
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
		*(volatile __u64 __arena *)p = 0;	/* no longer carries a mark */
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
	return __aa_object_start(off, e, aa_class_hot[cls]) ? cls : -AA_ERR_INTERIOR;
}

/* The slot word (AA_SLOT_WORD()) of the chunk slot holding ptr, which is
 * inside the arena. */
static __always_inline __u64 __aa_slot_word(__u64 ptr)
{
	struct aa_root __arena *root = (struct aa_root __arena *)aa_fast.root;
	__u64 s = ((ptr - aa_fast.arena_base) >> AA_CHUNK_SHIFT) & (AA_MAX_SLOTS - 1);

	return *(volatile __u64 __arena *)&root->slots[s];
}

/* The span page under ptr, lock-free: its class (>= 0) with *off = ptr's
 * arena offset, *pm = the page-map entry's address and *e = the entry, or
 * -1 for anything else (not published, outside the arena, not in a span:
 * the global aa_free_u64() judges it). Whether ptr starts an object (or
 * is even 16-byte aligned) is the caller's to check: __aa_object_start().
 * One slot load, one page-map load. */
static __always_inline int __aa_span_entry(__u64 ptr, __u32 *off, __u32 __arena **pm, __u32 *e)
{
	__u64 base = aa_fast.arena_base, rel = ptr - base, w;
	struct aa_chunk_meta __arena *meta;
	__u32 cls;

	if (rel >= aa_fast.arena_size)	/* 0 until published */
		return -1;
	w = __aa_slot_word(ptr);
	if ((__u32)w != AA_SLOT_CHUNK)
		return -1;
	meta = (struct aa_chunk_meta __arena *)(base + (w >> 32));
	*off = rel;
	*pm = &meta->pm[(rel >> AA_PAGE_SHIFT) & (AA_CHUNK_PAGES - 1)];
	*e = **pm;
	/* kind SPAN and class < AA_NR_CLASSES, in one comparison */
	cls = (*e >> 8) - (AA_PM_SPAN << (AA_PM_KIND_SHIFT - 8));
	if (cls >= AA_NR_CLASSES)
		return -1;
	return cls;
}

/* __aa_span_entry() for a span object: its class, or < 0. */
static __always_inline int __aa_class_of(__u64 ptr, __u32 __arena **pm, __u32 *e)
{
	__u32 off = 0;
	int cls = __aa_span_entry(ptr, &off, pm, e);

	if (cls < 0 || !__aa_object_start(off, *e, aa_class_hot[cls]))
		return -1;
	return cls;
}

/* Deferred free (limbo: bpf/internal.h's model): the pending bitmap of
 * the chunk whose metadata is at the arena address meta, and in *g the
 * index of the bit of the object at arena offset rel (one bit per 16-byte
 * granule: bit g & 63 of word g >> 6). */
static __always_inline __u64 __arena *__aa_pending_map(__u64 rel, __u64 meta, __u64 *g)
{
	*g = (rel & (AA_CHUNK_SIZE - 1)) >> 4;
	return (__u64 __arena *)(meta + AA_META_DEFER_OFF);
}

/* Is the object at ptr (its chunk's metadata at meta) in limbo? */
static __always_inline bool __aa_defer_pending(__u64 ptr, __u64 meta)
{
	__u64 g;
	__u64 __arena *bits = __aa_pending_map(ptr - aa_fast.arena_base, meta, &g);

	return (*(volatile __u64 __arena *)&bits[g >> 6] >> (g & 63)) & 1;
}

/*
 * Claim the block at ptr for a free (the claim: bpf/internal.h's model),
 * lock-free, any context, in two steps: __aa_claim_word() reads word 0
 * into *v (false: it is a custody mark, the block is not live);
 * __aa_claim() turns it into the FREED mark and re-checks the lookup: 0
 * (the caller owns the block) or -1 with nothing changed. check is the word
 * that says the block is allocated (its page-map entry, or its slot's
 * state), expect its value at the lookup, meta the arena address of the
 * chunk metadata the lookup used and state the slot state it saw.
 */
static __always_inline bool __aa_claim_word(__u64 ptr, __u64 key, __u64 *v)
{
	*v = *(volatile __u64 __arena *)ptr;
	return ((*v ^ key ^ ptr) >> AA_TAG_BITS) != 0;	/* not a custody mark */
}

static __always_inline int __aa_claim(__u64 ptr, __u64 key, __u64 v, __u32 __arena *check,
				      __u32 expect, __u64 meta, __u32 state)
{
	__u64 __arena *w = (__u64 __arena *)ptr;
	__u64 mine = key ^ ptr ^ AA_TAG_FREED;
	__u32 now;

	if (__aa_cmpxchg64(w, v, mine) != v)
		return -1;
	now = *(volatile __u32 __arena *)check;
	if (now == expect &&
	    __aa_slot_word(ptr) == AA_SLOT_WORD(state, meta - aa_fast.arena_base) &&
	    __aa_load_after(w, now) == mine &&
	    !(aa_fast.defer && __aa_defer_pending(ptr, meta)))
		return 0;
	__sync_val_compare_and_swap(w, mine, v);	/* undo the stray write */
	return -1;
}

/* --- The hit path: one definition, for the inline API and the library ---- */

/* Claim ptr, a span object whose page-map entry is e at pm, for a free:
 * 0 (the caller owns it), or -1 (not live: the caller judges it). */
static __always_inline int __aa_claim_object(__u64 ptr, __u32 __arena *pm, __u32 e)
{
	__u64 v = 0;

	if (!__aa_claim_word(ptr, aa_fast.key, &v))
		return -1;
	return __aa_claim(ptr, aa_fast.key, v, pm, e, (__u64)pm & ~(__u64)(AA_PAGE_SIZE - 1),
			  AA_SLOT_CHUNK);
}

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
	__u64 p;

	/* size - 1: size 0 wraps and takes the global path, which refuses it */
	if (size - 1 >= AA_MAX_CLASS_SIZE)
		return aa_malloc_u64(size);
	cc = __aa_this_cache();
	p = cc ? __aa_hit_alloc(cc, aa_size_class(size), size) : 0;
	/* a miss, no cache (not initialised, caches off, CPU >= 256): the
	 * global function, whose frame budget covers refills and self-growth */
	return p ? p : aa_malloc_u64(size);
}

/*
 * aa_free(): 0 or -errno, as aa_free_u64(). Written for few live values
 * (a BPF program has 6 scratch registers, and its loop state holds the 4
 * callee-saved ones): the class is kept as the page-map entry, the key is
 * read where it is used, this CPU's cache is looked up after the claim.
 */
static __always_inline int aa_free_inline(__u64 ptr)
{
	__u32 __arena *pm = NULL;
	__u32 e = 0;
	int c;

	if (!ptr)
		return 0;
	c = __aa_class_of(ptr, &pm, &e);
	if (c < 0 || __aa_claim_object(ptr, pm, e))
		return aa_free_u64(ptr);	/* judged there, counted */
	return __aa_cache_free(__aa_this_cache(), ptr, c);
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
