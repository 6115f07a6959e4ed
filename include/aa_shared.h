/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * aa_shared.h - the layouts tools read from shared memory, with the
 * constants that give them meaning: the arena (the root, chunk metadata,
 * CPU caches, limbo nodes) and the library's aa_fast map. BPF programs
 * write them; userspace reads them straight from the mmap, so only
 * fixed-size integer fields are used: no pointers (an arena pointer is
 * stored as a __u64 user address or as a __u32 offset from the arena
 * start). The syscall programs' arguments: aa_syscall.h.
 *
 * The public API's types, limits and flags (the records of the ring
 * buffers among them) are in aa_types.h, included here; the layout embeds
 * some of them (aa_root.stats, .tun, .debug.rec[]) and pins their sizes
 * below with its own. Userspace reads the layout through
 * arena_alloc_internal.h (the CLI, tests, debuggers). An embedder's loader
 * includes this file only for its skeleton, whose sections show the
 * library's globals: struct aa_root (arena), struct aa_fast (.data.aa_fast).
 *
 * AA_LAYOUT_VERSION names the layout; the sizes and offsets at the end of
 * this file pin it.
 */
#ifndef __AA_SHARED_H
#define __AA_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <stdbool.h>
#endif
#include "aa_types.h"

#define AA_ROOT_MAGIC		0x3150414548414141ULL	/* "AAAHEAP1" */
#define AA_LAYOUT_VERSION	22

/* Arenas are at most 4 GiB: at most 4096 chunk slots. The default arena
 * (AA_ARENA(), aa_heap__open() without arena_pages) is 256 MiB. */
#define AA_MAX_SLOTS		4096
#define AA_MAX_ARENA_PAGES	((__u32)AA_MAX_SLOTS * AA_CHUNK_PAGES)
#define AA_ARENA_PAGES_DEFAULT	((256U << 20) >> AA_PAGE_SHIFT)	/* 256 MiB */
#define AA_NIL			0xffffffffU	/* "no block" in free lists */

/* Chunks one allocation may map itself (AA_F_SELF_GROW): one that lacks
 * more gets NULL from an empty heap, as without self-growth. */
#define AA_SELF_GROW_MAX	16

/*
 * Page map: one 32-bit entry per page of the arena, a flat table that init
 * maps with the slot table (aa_root.slots, AA_PM_TABLE_PAGES(); entry i
 * for the page at arena offset i << AA_PAGE_SHIFT), as tcmalloc's
 * pagemap: one load from an address that the pointer alone gives says
 * what its page is. Entries of a slot that holds no chunk are 0 (the
 * checker's code 29): a chunk's entries are written after its slot is
 * taken and zeroed before the slot is let go (bpf/buddy_chunks.bpf.c).
 *   AA_PM_FREE       inside a free page block, not its first page (0: a
 *                    fresh chunk's entries, and every slot's without one)
 *   AA_PM_FREE_HEAD  first page of a free page block; low bits: order
 *   AA_PM_SPAN       page of a span; bits 8..15: class, 0..7: the page's
 *                    index in the span (the span starts that many pages
 *                    earlier)
 *   AA_PM_RUN_HEAD   first page of a page run (an allocation above the
 *                    largest class); low bits: pages in this chunk
 *   AA_PM_RUN_TAIL   later page of a run (or the part of a multi-chunk
 *                    allocation that lies in its last chunk)
 *   AA_PM_ABSENT     a page of a partial chunk that the heap does not
 *                    have (another owner's, or past the arena's end):
 *                    never free, so no block ever merges across it
 */
#define AA_PM_KIND_SHIFT	24
#define AA_PM_FREE		0U
#define AA_PM_FREE_HEAD		1U
#define AA_PM_SPAN		2U
#define AA_PM_RUN_HEAD		3U
#define AA_PM_RUN_TAIL		4U
#define AA_PM_ABSENT		5U
#define AA_PM(kind, low)	(((kind) << AA_PM_KIND_SHIFT) | (low))
#define AA_PM_KIND(e)		((e) >> AA_PM_KIND_SHIFT)
#define AA_PM_SPAN_ENTRY(cls, idx) AA_PM(AA_PM_SPAN, ((cls) << 8) | (idx))
#define AA_PM_SPAN_CLASS(e)	(((e) >> 8) & 0xff)
#define AA_PM_SPAN_INDEX(e)	((e) & 0xff)
#define AA_PM_LOW(e)		((e) & 0xffffff)

/*
 * A span: a run of pages carved into objects of one class, described by
 * the entry of its first page in aa_chunk_meta.span[]. Protected by the
 * heap lock. Free objects of the span are linked through the objects
 * themselves (word 0: custody mark AA_TAG_SPAN, word 1: next).
 */
struct aa_span {
	__u32 free;		/* arena offset of the first free object, AA_NIL */
	__u32 next;		/* central list of the class: next span (arena */
	__u32 prev;		/*   offset of its first page), AA_NIL */
	__u16 used;		/* objects out of the span (caches and users) */
	__u8 cls;		/* size class */
	__u8 listed;		/* on the class's central list (has free objects) */
};

/*
 * Per-chunk metadata (outside the chunk, so that a chunk is one block of
 * AA_MAX_ORDER): the span table, 4.1 KiB in 2 pages for a 1-MiB chunk,
 * 0.78% of what is mapped (one 16-KiB page: 1.56%).
 */
struct aa_chunk_meta {
	struct aa_span span[AA_LAYOUT_CHUNK_PAGES];	/* valid at a span's first page */
	/* The grower's, while the chunk is its own (before the page heap
	 * takes it, aa__buddy_add_partial()): bit p set when the kernel did
	 * not give the slot's page p; the page heap then marks those pages
	 * AA_PM_ABSENT in the page map, which alone says it after that. */
	__u64 absent_map[(AA_LAYOUT_CHUNK_PAGES + 63) / 64];
	__u32 free_head[AA_LAYOUT_ORDERS];	/* this chunk's free blocks per order:
					 * arena offset, AA_NIL = none */
	__u32 absent;		/* its AA_PM_ABSENT pages: 0 for a whole chunk;
				 * a partial chunk (some of its slot's pages the
				 * kernel would not give) is never entirely free,
				 * so trim never takes it */
};
/* The words of absent_map a chunk uses (1, or 4 with 4-KiB pages). */
#define AA_ABSENT_WORDS		((AA_CHUNK_PAGES + 63) / 64)
#define AA_META_PAGES		\
	((__u32)((sizeof(struct aa_chunk_meta) + AA_PAGE_SIZE - 1) / AA_PAGE_SIZE))	/* 2 (1) */

/* With AA_F_DEFER, more metadata pages per chunk: the pending bitmap (8
 * KiB), one bit per 16-byte granule of the chunk (objects are at least 16
 * bytes apart: no two start in one), set while the object that starts
 * there waits in limbo (bpf/defer.bpf.c). 0.78% of what is mapped. */
#define AA_META_DEFER_OFF	(AA_META_PAGES * AA_PAGE_SIZE)
#define AA_DEFER_MAP_BYTES	(AA_CHUNK_SIZE / 16 / 8)
#define AA_META_PAGES_DEFER	\
	(AA_META_PAGES + (AA_DEFER_MAP_BYTES + AA_PAGE_SIZE - 1) / AA_PAGE_SIZE)	/* 4 (2) */

enum aa_slot_state {
	AA_SLOT_UNMAPPED	= 0,	/* no pages of ours here */
	AA_SLOT_CHUNK		= 1,	/* page-heap chunk, metadata at meta_off */
	AA_SLOT_LARGE_HEAD	= 2,	/* first chunk of a multi-chunk allocation */
	AA_SLOT_LARGE_TAIL	= 3,	/* later whole chunk of one */
	AA_SLOT_RELEASING	= 4,	/* out of the heap, pages being returned
					 * (trim, teardown): meta_off stays valid
					 * and no grower may map the slot */
};

/* One 1-MiB slot of the arena's address space. Protected by the heap lock,
 * but a RELEASING slot's state, which its releaser turns into UNMAPPED by
 * cmpxchg (aa__buddy_release_slot()). state and meta_off are one aligned
 * 8-byte word, AA_SLOT_WORD(): a chunk is published by one store of both
 * (aa__buddy_add_chunk()) and lock-free readers load both at once, so no
 * reader pairs a new state with an old meta_off. */
#define AA_SLOT_WORD(state, meta_off)	((__u64)(meta_off) << 32 | (__u32)(state))

struct __attribute__((aligned(8))) aa_slot {
	__u32 state;		/* enum aa_slot_state */
	__u32 meta_off;		/* arena offset of the chunk's aa_chunk_meta */
	__u32 nr_chunks;	/* LARGE_HEAD: whole chunks of the allocation */
	__u32 large_pages;	/* LARGE_HEAD: its pages (the last chunk may
				 * hold the rest as an AA_PM_RUN_TAIL run) */
};

/* The cache tiers' tables (the size classes and their caches' limits:
 * aa_types.h). */
#define AA_MAX_CPUS		256	/* CPUs with a CPU cache; others use the shared tiers */

/* Bulk calls take at most this many objects (-E2BIG above). */
#define AA_BULK_MAX		(1U << 16)

/* Counters of one size class in one CPU cache (64 bytes: one line of its
 * struct aa_cpu_class). Written by the cache's claim holder; `nested` by
 * callers that found it claimed (atomic add). Hits (allocs served without
 * a refill) are not counted: aa_class_hits() derives them. */
struct aa_cpu_class_stats {
	__u64 allocs;		/* allocations served by this CPU for the class */
	__u64 frees;		/* frees taken by this CPU's cache */
	__u64 misses;		/* allocs that found the cache empty */
	__u64 refills;		/* batches moved in (transfer cache or central list) */
	__u64 spills;		/* batches moved out on overflow */
	__u64 nested;		/* calls that found the cache claimed and used
				 * the heap instead (recovered, not an error) */
	__u64 failures;		/* allocs that got NULL */
	__u64 req_bytes;	/* bytes requested by those allocs: allocs *
				 * class size - req_bytes is lost to rounding */
};

/*
 * A reserve: a few free objects of one class that any caller takes or puts
 * with one atomic instruction on one slot word, in any context, on any CPU,
 * with no claim and no lock (bpf/internal.h's model, "Reserves"): what a
 * caller that cannot use its CPU's cache, or cannot wait for a lock, gets
 * memory from. A slot holds 0 (empty) or AA_RESERVE_WORD(): the tag of the
 * heap that put the object there (the low half of cache_key, which is odd:
 * never 0) above its arena offset. A reserve of a class of s bytes uses
 * aa_reserve_slots(s) of the slots: at most AA_RESERVE_BYTES of objects,
 * or one object of a larger class.
 */
#define AA_RESERVE_SLOTS	4
#define AA_RESERVE_BYTES	1024
#define AA_RESERVE_WORD(key, off)	((__u64)(__u32)(key) << 32 | (__u32)(off))
/* Does slot word w hold an object of the heap whose cache_key is key? */
#define AA_RESERVE_OF(w, key)	((w) && (__u32)((w) >> 32) == (__u32)(key))

struct aa_reserve {
	__u64 slot[AA_RESERVE_SLOTS];
};

static inline __u32 aa_reserve_slots(__u32 class_size)
{
	__u32 n = class_size ? AA_RESERVE_BYTES / class_size : 0;

	return n < 1 ? 1 : n > AA_RESERVE_SLOTS ? AA_RESERVE_SLOTS : n;
}

/* Objects in reserve r of the heap whose cache_key is key: a word of
 * another heap's (a put that raced a teardown) is not counted. */
static inline __u32 aa_reserve_objs(const volatile struct aa_reserve *r, __u64 key)
{
	__u32 n = 0, i;
	__u64 w;

	for (i = 0; i < AA_RESERVE_SLOTS; i++) {
		w = r->slot[i];
		n += AA_RESERVE_OF(w, key);
	}
	return n;
}

/* Values of aa_cpu_cache.busy: who holds the cache's claim. */
#define AA_CC_FREE		0
#define AA_CC_OWNER		1	/* a program on the cache's own CPU; a
					 * user cache's thread */
#define AA_CC_DRAIN		2	/* a drain, from any CPU */
#define AA_CC_TEARDOWN		3	/* teardown: held until re-init */

/*
 * One size class of a CPU's cache: what the hit path touches, at constant
 * offsets from one base (count and cap, the counters, the LIFO array).
 */
struct aa_cpu_class {
	__u32 count;		/* objs[0 .. count) are free */
	__u32 cap;		/* capacity: tunable cpu_cache_cap, <= AA_CPU_CACHE_MAX;
				 * written by init only, with every cache
				 * claimed or not yet published */
	/* The class's reserve on this CPU, for callers that find the cache
	 * claimed and for claim holders in IRQ context whose refill failed;
	 * kept full by the claim holder once wanted. A user cache's stays
	 * empty: no caller nests over its thread. */
	__u32 reserve_want;	/* 1 once such a caller came to it (init: 0) */
	__u32 pad;
	__u64 reserve_allocs;	/* allocations it served (atomic add) */
	__u64 reserve_frees;	/* frees it took (atomic add) */
	struct aa_reserve reserve;
	struct aa_cpu_class_stats stats;
	__u64 objs[AA_CPU_CACHE_MAX];
};

/*
 * A CPU's object cache: one LIFO array per size class. Lives in its own
 * arena pages (no line shared with another CPU). Who may touch it: the
 * concurrency model at the head of bpf/internal.h (busy is the claim).
 * The same struct is a userspace thread's cache (a user cache: struct
 * aa_user_caches below); the owner_* fields are only set there.
 */
struct aa_cpu_cache {
	__u32 busy;		/* AA_CC_*: who holds the claim */
	__u32 cpu;		/* its CPU, or AA_USER_CACHE | its index */
	__u32 owner_pid;	/* user cache: the owning process, its pid in
				 * the initial pid namespace; 0 = no owner */
	__u32 owner_tid;	/* and thread (same namespace) */
	__u64 owner_start;	/* the process's start time (ns, its thread
				 * group leader's task start_time): a reused
				 * pid is not the owner; 0 while an OPEN
				 * records the owner */
	__u64 owner_exec;	/* the process's exec count (its leader's
				 * self_exec_id): after an exec, not the owner */
	__u32 pad[8];		/* busy alone on its line */
	struct aa_cpu_class cls[AA_NR_CLASSES];
};
#define AA_CPU_CACHE_PAGES	((sizeof(struct aa_cpu_cache) + AA_PAGE_SIZE - 1) / AA_PAGE_SIZE)

/*
 * The inline API's copy of what its hit paths read (include/arena_alloc.bpf.h):
 * a global variable of the library, `aa_fast` in section .data.aa_fast, so
 * that a user's program, linked with the library, reads it with one load
 * from a map value whose address the verifier knows (an extern arena
 * global does not link with libbpf 1.4; see the header).
 * Written only by the library's init and teardown (syscall programs):
 * init fills everything once the heap is published, cc[] after the rest,
 * then `free_size` and `arena_size` last; teardown clears them and cc[]
 * before it unpublishes (the lock-free lookups take the slow path for any
 * pointer at or above arena_base + arena_size: with 0, for every
 * pointer; the inline free's bound is free_size, 0 also where the heap
 * defers frees, so that its claim has no pending-bit check).
 * mode says which of the heap's modes (AA_FAST_MODES) the fast paths obey:
 * arena_size and cc[] stay 0 where it holds AA_F_NO_CACHES or AA_F_DEBUG
 * (the inline API's gate, with no load of its own: every inline call then
 * takes the global functions, where the front door applies the mode) and
 * while no heap is published; with AA_F_DEFER frees check the pending
 * bits. __aa_fast_fill() (aa_hit.h) is the one fill of both sides.
 */
#define AA_FAST_MODES		(AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG)
/* The modes in which no fast path runs: no inline hit (cc[] and
 * arena_size stay 0) and no user cache (the user call's OPEN refuses). */
#define AA_FAST_OFF		(AA_F_NO_CACHES | AA_F_DEBUG)

struct aa_fast {
	__u64 root;		/* user address of struct aa_root: set by
				 * the first init, never cleared (tools find
				 * the heap here: aa_heap__open_pinned) */
	__u64 arena_base;	/* aa_root.arena_base (set with root: the
				 * address every mmap of the arena must use) */
	__u64 arena_size;	/* aa_root.arena_size; 0: not published */
	__u64 key;		/* aa_root.cache_key: custody marks */
	__u64 zero;		/* always 0 (address dependencies) */
	__u64 free_size;	/* the inline free's bound: arena_size, or 0
				 * where the heap defers frees too (the
				 * global function's claim checks the
				 * pending bits); in the line of the other
				 * words the inline free reads */
	__u64 pm;		/* user address of the page map (with root) */
	__u64 cc[AA_MAX_CPUS];	/* user address of CPU i's cache, 0: none */
	__u64 mode;		/* the heap's flags & AA_FAST_MODES */
	__u64 defer;		/* mode & AA_F_DEFER, a word of its own: the
				 * claims test it with no mask */
	__u64 slots;		/* user address of aa_root's slot table (with
				 * root): deferred free's pending bits */
};

/*
 * A size class's transfer cache: a stack of free objects shared by all
 * CPUs, moved in batches. Protected by lock (0 free, else holder's CPU + 1;
 * same rules as the heap lock, tried with the short IRQ budget only).
 */
struct aa_transfer_cache {
	__u32 lock;
	__u32 count;		/* objs[0 .. count) are free */
	__u64 batches_in;	/* batches taken from CPU caches */
	__u64 batches_out;	/* batches handed to CPU caches */
	__u64 lock_fails;	/* busy or nested: caller went to the heap */
	__u64 remove_misses;	/* batches asked for that it did not have: the
				 * refill went to the central list */
	__u64 insert_misses;	/* batches offered that it had no room for: the
				 * spill went to the heap */
	struct aa_reserve reserve;	/* for callers that cannot wait for
					 * lock; filled by its holders */
	__u64 objs[AA_TRANSFER_MAX];
};

/* The tables that init maps beside the root (aa_root.slots, tc_off),
 * in pages: for n slots the slot table (AA_SLOTS_PER_PAGE entries a page)
 * and after it, in the same mapping, the page map (AA_PM_PER_PAGE entries
 * a page): AA_ROOT_TABLE_PAGES(n); the transfer caches, one per class
 * (with CPU caches only). */
#define AA_SLOTS_PER_PAGE	(AA_PAGE_SIZE / (__u32)sizeof(struct aa_slot))
#define AA_SLOT_TABLE_PAGES(n)	(((n) + AA_SLOTS_PER_PAGE - 1) / AA_SLOTS_PER_PAGE)
#define AA_PM_PER_PAGE		(AA_PAGE_SIZE / (__u32)sizeof(__u32))
#define AA_PM_TABLE_PAGES(n)	(((n) * AA_CHUNK_PAGES + AA_PM_PER_PAGE - 1) / AA_PM_PER_PAGE)
#define AA_ROOT_TABLE_PAGES(n)	(AA_SLOT_TABLE_PAGES(n) + AA_PM_TABLE_PAGES(n))
/* The page map of the slot table at slots, for n slots: after its pages. */
#define AA_PM_TABLE(slots, n)	((slots) + ((__u64)AA_SLOT_TABLE_PAGES(n) << AA_PAGE_SHIFT))
#define AA_TC_TABLE_PAGES	\
	((AA_NR_CLASSES * (__u32)sizeof(struct aa_transfer_cache) + AA_PAGE_SIZE - 1) / AA_PAGE_SIZE)

/*
 * A size class's central free list: the spans of the class that have free
 * objects, doubly linked through aa_span.next/prev. Under the heap lock.
 */
struct aa_central {
	__u32 head;		/* arena offset of the first such span, AA_NIL */
	__u32 pad;
	__u64 spans;		/* spans of the class, listed or full */
	__u64 objs_out;		/* objects out of its spans (caches + users) */
	__u64 span_allocs;	/* spans carved from the page heap, total */
	__u64 span_frees;	/* entirely free spans given back, total */
};

/* Free memory is short: the chunks mapped, less their absent pages, hold
 * less than low_watermark bytes beyond those in use (more in use or
 * absent than mapped, counters read one by one while programs run, counts
 * as short). The heap raises need_refill by it (bpf/heap.bpf.c), the
 * refill agent looks again after a grow (user/refill.c). */
static inline bool aa_below_watermark(__u64 nr_chunks, __u64 absent_pages, __u64 bytes_in_use,
				      __u64 low_watermark)
{
	__u64 mapped = nr_chunks << AA_CHUNK_SHIFT, absent = absent_pages << AA_PAGE_SHIFT;

	mapped = mapped > absent ? mapped - absent : 0;
	return mapped < bytes_in_use || mapped - bytes_in_use < low_watermark;
}

/* Raise the low-watermark signal: need_refill from 0 to 1 by compare-and-
 * swap, then one more in refill_signals; true for the one caller that
 * raised it (the BPF side then tells a sleeping loader). Every raise goes
 * through here: an allocation short of memory or below the watermark,
 * limbo over its limit, a refill that left the heap short; only a refill
 * clears the flag. flag, count: &root->need_refill, &root->refill_signals. */
#define AA_RAISE_REFILL(flag, count) \
	(__sync_val_compare_and_swap((flag), 0, 1) == 0 && \
	 (__sync_fetch_and_add((count), 1), 1))

/* Counters derived from others, as every reader prints them (the stats
 * commands, aa_heap__print_caches()), exact where they can be and clamped
 * where they cannot: counters are read one by one while programs run, and
 * anything that maps the arena can write them, so a difference is never
 * printed as a negative number read as a __u64 (~1.8e19).
 * aa_sub_clamp(): a - b, or 0 where b is larger; for differences whose
 * true value cannot be negative (objects in use: out of the spans less
 * cached; bytes lost to rounding: allocs * size less requested; a rate
 * over a counter that went back, as at a re-init). */
static inline __u64 aa_sub_clamp(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* Hits of a cache's class (struct aa_cpu_class_stats): allocs + failures
 * - misses is the hits less the misses that something past the cache
 * served (the transfer cache's last objects, or the fallback through the
 * front door when the heap was empty), which no counter keeps: a lower
 * bound, exact when there were none, clamped to [0, allocs]. */
static inline __u64 aa_class_hits(__u64 allocs, __u64 failures, __u64 misses)
{
	__u64 hits = aa_sub_clamp(allocs + failures, misses);

	return hits < allocs ? hits : allocs;
}

/*
 * Debug mode (AA_F_DEBUG, bpf/debug.bpf.c). Every allocation gets AA_DEBUG_TAIL
 * more bytes: an object of n requested bytes and b bytes in all (its class
 * size, or its page run) is laid out as
 *
 *   0           n                     b-8        b
 *   | user data | redzone 0xcc ...    | trailer |
 *
 * trailer = (AA_DEBUG_MAGIC ^ n ^ (addr >> 4)) << 32 | n, one 64-bit store.
 * A free checks the trailer and the redzone (overflow) and the 8 bytes
 * before the object (the previous object's trailer, or its poison:
 * underflow), then fills words 1 .. b/8-1 of a class object with
 * AA_DEBUG_POISON; an allocation checks words 2 .. b/8-1 (words 0 and 1
 * hold the allocator's custody mark and free-list link) and reports any
 * that changed (a write after free). A span is carved with only the last
 * word of each object poisoned, and an object's first allocation checks
 * nothing (bpf/internal.h, struct aa_span_obj). Word 0 of a live object
 * is never checked: a free's claim replaces it with the FREED mark first.
 * While in quarantine it must keep that mark: checked (and put back) when
 * the object leaves. A free of an object whose trailer is poison is a
 * double free, refused however word 0 reads.
 */
#define AA_DEBUG_TAIL		16	/* redzone >= 8 bytes + the trailer */
#define AA_DEBUG_MAGIC		0xa110c8edU
#define AA_DEBUG_POISON		0x6b6b6b6b6b6b6b6bULL	/* freed memory */
#define AA_DEBUG_REDZONE	0xcc			/* each byte past n */
/* The records (struct aa_debug_error) and the quarantine's limits: aa_types.h. */

/* Debug mode's state in the root. Counters: atomic adds, any context. */
struct aa_debug {
	__u64 errors[AA_DBG_NR_KINDS];	/* errors found, per kind */
	__u64 recorded;		/* errors found, total (rec[] keeps the first) */
	__u64 events_lost;	/* errors the ring had no room for */
	__u64 q_head;		/* quarantine: pushes, total (slot q_head % cap) */
	__u64 q_objs;		/* objects in quarantine now */
	__u64 q_bytes;		/* their bytes */
	struct aa_debug_error rec[AA_DEBUG_RECORDS];
	/* The quarantine ring: arena offset << 8 | class of a freed object,
	 * poisoned and claimed (word 0: the FREED mark), 0 = empty. A free
	 * exchanges its object into slot q_head++ % cap and releases the one
	 * it takes out. Reset by init and teardown; flushed by drain. */
	__u64 quarantine[AA_QUARANTINE_MAX];
};

/*
 * Deferred free (bpf/defer.bpf.c). An object freed with aa_free_deferred()
 * keeps its contents and stays allocated (its pending bit set) in limbo:
 * a 16-byte node (a class-0 object, the limbo's own: struct aa_defer's
 * spare and nodes) on the stack limbo[epoch & 1], epoch as read after the
 * caller unlinked it. The agent advances epoch, waits for an RCU grace
 * period, then reclaims the nodes of the epoch before (aa__run's reclaim call).
 */
struct aa_defer_node {
	__u32 next;		/* arena offset of the next node, AA_NIL */
	__u32 obj;		/* arena offset of the object */
	__u32 epoch;		/* global epoch when it was deferred */
	__u32 ts;		/* bpf_ktime_get_ns() >> AA_DEFER_TS_SHIFT when it
				 * was deferred (wraps after 73 minutes) */
};
#define AA_DEFER_TS_SHIFT	10	/* ~1-us units */

struct aa_defer {
	/* one cache line written by deferring frees (any CPU) */
	__u32 limbo[2];		/* lock-free stacks of nodes, arena offsets
				 * (AA_NIL: empty): push by cmpxchg; the
				 * reclaimer takes a whole stack by exchange */
	__u32 epoch;		/* advanced by the agent only (AA_RECLAIM_ADVANCE) */
	__u32 pad0;
	__u64 pending_objs;	/* objects in limbo now (the reclaimer
				 * subtracts once per run) */
	__u64 pending_bytes;	/* their usable bytes */
	__u64 peak_pending_bytes;
	__u64 deferred;		/* objects deferred, total */
	__u64 node_failures;	/* deferred frees refused: no memory for a node */
	__u64 nomem_in_limbo;	/* allocations that failed while limbo held memory */
	__u64 limit_signals;	/* refill signals raised for limbo over defer_limit */
	/* The limbo's nodes, its own memory (bpf/defer.bpf.c): */
	__u64 spare;		/* stack of spare nodes: a generation << 32
				 * | the top's arena offset (AA_NIL: empty);
				 * any CPU pushes and pops by cmpxchg, and
				 * each pop bumps the generation (no ABA) */
	__u64 nodes;		/* nodes taken from the heap and not given
				 * back: spare, in limbo, or being pushed */
	/* one cache line written by the reclaimer */
	__u32 reclaiming;	/* 1 while a reclaimer runs (cmpxchg) */
	__u32 oldest_epoch;	/* epoch of the oldest node the last reclaim kept */
	__u32 reclaim_epoch;	/* newest epoch reclaimed */
	__u32 pad1;
	__u64 reclaimed;	/* objects reclaimed, total */
	__u64 grace_periods;	/* reclaim rounds completed */
	__u64 latency_last_ns;	/* deferred -> reclaimed, newest node reclaimed */
	__u64 latency_max_ns;
	__u64 latency_sum_ns;	/* over `reclaimed` */
	__u64 limit_refusals;	/* deferred frees refused: limbo would pass
				 * twice tun.defer_limit (any CPU, atomic) */
	__u64 pad2;
} __attribute__((aligned(64)));

/*
 * Fault injection (bpf/arena.bpf.c, central.bpf.c, buddy.bpf.c), a
 * load-time option for tests: with pages_every = N, every Nth page-kfunc
 * allocation of arena.bpf.c (CPU cache pages, chunk metadata, chunks)
 * fails as if the kernel had no page; with spans_every = N, every Nth
 * page-heap request for a new span or a page run fails as if the page
 * heap were empty. 0: off. The call that fails is the one whose count
 * (*_calls after its own increment) is a multiple of N.
 * pages_every and spans_every are set by init (aa_init_args) and by
 * userspace through the mmap (aa_heap__set_fault(): plain 32-bit stores;
 * BPF reads each with one volatile load per call). Every counter is an
 * atomic add (any context) and is never reset: not by teardown, not by
 * init.
 * The page ledger counts every page arena.bpf.c got from and gave back to
 * the kernel; with no grow, trim, init or teardown running:
 *   pages_got - pages_put == stats.pages_mapped
 *                            + (CPUs with a cache + user caches)
 *                              * AA_CPU_CACHE_PAGES
 *                            + aa_root.table_pages
 * (t_assert_ledger() in tests/common.h checks it).
 */
struct aa_fault {
	__u32 pages_every;	/* fail every Nth page allocation; 0: never */
	__u32 spans_every;	/* fail every Nth span / page-run request; 0: never */
	__u64 page_calls;	/* page-kfunc allocations asked for */
	__u64 page_faults;	/* of those, failed by injection */
	__u64 span_calls;	/* page-heap requests for a new span or page run */
	__u64 span_faults;	/* of those, failed by injection */
	__u64 pages_got;	/* pages the kernel gave arena.bpf.c, total */
	__u64 pages_put;	/* pages arena.bpf.c gave back, total */
	__u64 pad;
};

/*
 * Readers of the mmap. Userspace reads chunk metadata and CPU caches
 * straight from the arena mmap; a read of a page the heap has returned
 * would map a fresh page there (the arena faults pages in for userspace):
 * memory that no ledger knows, at an address the kernel then never gives
 * out again. So both sides count themselves in root.mmap_readers, by
 * atomic adds (full barriers):
 *  - a reader adds 1 and reads only if no returner was counted (the bits
 *    from AA_READERS_RETURNER up), then subtracts 1 (user/stats.c);
 *  - whoever returns such pages (trim, teardown, an init that drops CPU
 *    caches) adds AA_READERS_RETURNER, waits until the reader count (the
 *    bits below) is 0, returns them, and subtracts it (bpf/arena.bpf.c).
 * A reader is thus either counted before the returner and waited for, or
 * sees the returner and reads nothing. A reader that stays longer than
 * AA_READERS_WAIT_NS makes the returner give up and keep the pages
 * (stats.reader_stalls); a returner makes readers retry. A bad value
 * written here stalls trims or reads; it never returns a page under a read.
 */
#define AA_READERS_RETURNER	(1U << 16)
#define AA_READERS_WAIT_NS	(20 * 1000 * 1000ULL)

/*
 * User caches: each userspace thread that allocates through the library
 * (aa_heap__malloc(), user/user_cache.c) owns a struct aa_cpu_cache in the
 * arena, which it claims and uses over its mmap with the CPU caches' code
 * and protocol (include/aa_hit.h); its misses and overflows run the
 * aa__run's user calls (bpf/user_cache.bpf.c), which moves batches
 * from and to the tiers below as a CPU cache's slow paths do.
 * Ownership: a cache is taken by a cmpxchg of owner_pid from 0
 * (AA_USER_OPEN, which records its caller as the kernel knows it) and
 * given back, emptied, by AA_USER_CLOSE (the thread's exit,
 * aa_heap__destroy(): the owning process only) or AA_USER_REAP (its owner
 * is gone, or exec()ed: aa_heap__reap(), which aa_heap__drain() calls,
 * from any process in any pid namespace).
 * Caches keep their pages (a later owner reuses them) until a failed init;
 * a teardown claims them with the CPU caches, init empties them, disowns
 * them and bumps gen (an owner that sees another gen opens again). A
 * registration racing a teardown: the OPEN registers (or takes) its cache
 * with a cmpxchg and then reads `closing`; the teardown sets `closing`
 * with an exchange and then claims every cache: one of the two sees
 * the other (both are full barriers), so every cache a thread can hold is
 * claimed by the teardown, or the OPEN fails. Init releases only the
 * claims the teardown took (a cmpxchg from AA_CC_TEARDOWN).
 */
#define AA_MAX_USER_CACHES	256
#define AA_USER_CACHE		0x80000000U	/* aa_cpu_cache.cpu: a user cache */

struct aa_user_caches {
	__u32 off[AA_MAX_USER_CACHES];	/* arena offset of cache i, 0 = none */
	__u32 gen;		/* bumped by every init */
	__u32 closing;		/* 1 from a teardown's start to the next init
				 * (or its failure): one teardown at a time,
				 * and an OPEN gives back what it took and
				 * fails */
	__u64 opens;		/* caches taken by a thread */
	__u64 closes;		/* given back (reaped ones included) */
	__u64 reaped;		/* of a process that died with them */
};

/*
 * The allocator's root. Lives at a fixed place in the arena (an arena global),
 * starts with magic + layout version so tools can find it in any arena.
 *
 * Invariant (whole heap, under the lock), in pages:
 *   sum(free_blocks[k] << k) + span_pages + run_pages
 *     == (nr_chunks - large_chunks) * AA_CHUNK_PAGES - absent_pages
 *   absent_pages == sum over chunks of meta->absent
 *     == their page-map entries AA_PM_ABSENT
 *
 * Who owns what (each file of bpf/ writes its own fields, and resets them
 * in its own hook, which bpf/lifecycle.bpf.c calls in tier order):
 *   magic .. nr_slots, flags, cache_key, init_state ..   lifecycle.bpf.c
 *   lock, parked, lock_waiters, lock_gen,                 heap.bpf.c
 *     large_bytes_in_use
 *   mmap_readers, slots .. table_pages, fault, pm        arena.bpf.c
 *   order_summary, order_map                              buddy.bpf.c
 *   debug, carve_tail                                     debug.bpf.c
 *   nr_cpus, cpu_cache_off                                cpu_cache.bpf.c
 *   need_refill, refill_signals                           heap.bpf.c (raised
 *                                                           by any tier)
 *   central, class_size, class_pages                      central.bpf.c
 *   defer                                                 defer.bpf.c
 *   user                                                  user_cache.bpf.c
 *   tun                                                   the loader (init)
 *   stats: each counter its tier's (aa_heap_stats says which)
 */
struct aa_root {
	__u64 magic;		/* AA_ROOT_MAGIC once initialised */
	__u32 version;		/* AA_LAYOUT_VERSION */
	__u32 root_size;	/* sizeof(struct aa_root) */
	__u64 arena_base;	/* user address of the arena's first byte */
	__u64 arena_size;	/* bytes */
	__u32 nr_slots;		/* arena_size / AA_CHUNK_SIZE, <= AA_MAX_SLOTS */
	__u32 lock;		/* heap lock: 0 free, else the holder's CPU + 1 */
	__u32 parked;		/* parked frees: arena offset of the newest, AA_NIL
				 * = none (lock-free push, popped under the lock) */
	__u32 zero;		/* always 0: AA_ZERO in bpf/internal.h */
	__u32 lock_waiters;	/* CPUs waiting for a lock (aa_lock_wait()) */
	__u32 lock_gen;		/* heap-lock holds so far (aa_unlock()) */
	__u64 large_bytes_in_use; /* part of stats.heap_bytes in page runs */
	__u32 flags;		/* AA_F_* */
	__u32 mmap_readers;	/* the reader pin: AA_READERS_* */
	/* Which chunks have a free page block of order k (under the heap
	 * lock): bit s of order_map[k] for chunk s, bit w of order_summary[k]
	 * when word w of order_map[k] is not 0. The page heap takes the
	 * lowest such chunk of the smallest order that fits. */
	__u64 order_summary[AA_LAYOUT_ORDERS];
	__u64 order_map[AA_LAYOUT_ORDERS][AA_MAX_SLOTS / 64];
	struct aa_heap_stats stats;	/* the heap's counters */
	struct aa_debug debug;		/* AA_F_DEBUG: errors, quarantine */
	/* The tables init maps beside the root, sized by the arena and the
	 * flags (arena offsets, 0: none), kept for the arena's life: */
	__u64 slots;		/* user address of struct aa_slot[nr_slots] (slot
				 * s), then of the page map (AA_PM_TABLE()):
				 * AA_ROOT_TABLE_PAGES(nr_slots) pages */
	__u32 tc_off;		/* struct aa_transfer_cache[tc_classes]: with
				 * CPU caches only (flags without AA_F_NO_CACHES) */
	__u32 tc_classes;	/* AA_NR_CLASSES, set with tc_off (one word) */
	__u32 table_pages;	/* the pages of both (the page ledger) */

	/* cache tiers */
	__u32 nr_cpus;		/* CPUs with a cache: 0 .. nr_cpus-1 (<= AA_MAX_CPUS) */
	__u32 need_refill;	/* low-watermark signal: 1 until the loader grows */
	__u64 refill_signals;	/* times need_refill was raised */
	__u64 cache_key;	/* random, odd: custody marks (bpf/internal.h) */
	struct aa_tunables tun;
	__u32 cpu_cache_off[AA_MAX_CPUS];	/* arena offset, 0 = none */

	/* central free lists (bpf/central.bpf.c), under the heap lock */
	struct aa_central central[AA_NR_CLASSES];
	__u32 class_size[AA_NR_CLASSES];	/* object size per class, for tools */
	__u32 class_pages[AA_NR_CLASSES];	/* pages per span */

	struct aa_defer defer;		/* deferred free */
	struct aa_fault fault;		/* fault injection, page ledger */
	struct aa_user_caches user;	/* userspace threads' caches */

	/* init, the loader's (aa__arena_init()) or the heap's own on first
	 * use (self-init: Linux >= 7.0, an arena nobody initialised) */
	__u32 init_state;	/* AA_INIT_*: one init at a time */
	__s32 self_init_err;	/* 0, or why self-init failed (-errno) */
	__u64 self_inits;	/* times the heap initialised itself */
	__u64 carve_tail;	/* 0, or the word a new span's objects end
				 * with (central.bpf.c): debug mode's poison,
				 * set by its reset hook */
	__u64 pm;		/* user address of the page map:
				 * AA_PM_TABLE(slots, nr_slots), set by init
				 * with the geometry (arena.bpf.c) */
};

/* The library's arena globals: the root and the deferred-free reclaim
 * run's state (bpf/defer.bpf.c, AA_RECLAIM_STATE_MAX bytes at most). */
#define AA_RECLAIM_STATE_MAX	1024
#define AA_GLOBALS_PAGES	\
	((__u32)((sizeof(struct aa_root) + AA_RECLAIM_STATE_MAX + AA_PAGE_SIZE - 1) / AA_PAGE_SIZE))

/* The smallest arena a heap works in, in pages: the library's globals, a
 * page of slot table and one of page map (a small arena's), one chunk's
 * metadata and one page of heap (a partial chunk). A heap with CPU caches needs
 * AA_CACHE_PAGES(cpus) more. Self-init fails below it (-ENOSPC,
 * aa_root.self_init_err), and so do the library's init and
 * aa_heap__open(). */
#define AA_MIN_ARENA_PAGES	(AA_GLOBALS_PAGES + 2 + AA_META_PAGES + 1)
#define AA_CACHE_PAGES(cpus)	(AA_TC_TABLE_PAGES + (cpus) * AA_CPU_CACHE_PAGES)

/* aa_root.init_state: an init claims it (NEVER or DONE -> RUNNING) and
 * leaves it DONE; self-init claims NEVER only, so a heap torn down stays
 * down until its loader inits it again. */
#define AA_INIT_NEVER		0
#define AA_INIT_RUNNING		1
#define AA_INIT_DONE		2

/* --- The pinned layout ------------------------------------------------------
 * Checked by every compile that includes this file (BPF, C, C++): the size
 * of each struct above; offset and size of each member of the root and of
 * the members that locate caches, metadata and records or that the inline
 * API reads (arena_alloc.bpf.h).
 * Change a layout -> bump AA_LAYOUT_VERSION and the numbers.
 */
#ifdef __cplusplus
#define AA_LAYOUT_ASSERT	static_assert
#else
#define AA_LAYOUT_ASSERT	_Static_assert
#endif
#define AA_LAYOUT_PIN(e)	\
	AA_LAYOUT_ASSERT(e, "layout changed: bump AA_LAYOUT_VERSION and the numbers (" #e ")")
#define AA_PIN_SIZE(s, n)	AA_LAYOUT_PIN(sizeof(struct s) == (n))
#define AA_PIN_FIELD(s, f, off, n)	\
	AA_LAYOUT_PIN(__builtin_offsetof(struct s, f) == (off) && sizeof(((struct s *)0)->f) == (n))

AA_LAYOUT_ASSERT(AA_LAYOUT_VERSION == 22,
		 "AA_LAYOUT_VERSION changed: pin the new layout's numbers here");

/* Never move: tools of any version read them to check the rest. */
AA_PIN_FIELD(aa_root, magic, 0, 8);		AA_PIN_FIELD(aa_root, version, 8, 4);
AA_PIN_FIELD(aa_root, root_size, 12, 4);	AA_PIN_FIELD(aa_fast, root, 0, 8);

AA_PIN_SIZE(aa_span, 16);		AA_PIN_SIZE(aa_chunk_meta, 4168);
AA_PIN_SIZE(aa_slot, 16);		AA_PIN_SIZE(aa_cpu_class_stats, 64);
AA_PIN_SIZE(aa_reserve, 32);
AA_PIN_SIZE(aa_cpu_class, 1152);	AA_PIN_SIZE(aa_cpu_cache, 59968);
AA_PIN_SIZE(aa_fast, 2128);		AA_PIN_SIZE(aa_transfer_cache, 2128);
AA_PIN_SIZE(aa_central, 40);		AA_PIN_SIZE(aa_tunables, 656);
AA_PIN_SIZE(aa_stats, 496);		AA_PIN_SIZE(aa_debug_error, 56);
AA_PIN_SIZE(aa_debug, 10064);		AA_PIN_SIZE(aa_refill_event, 32);
AA_PIN_SIZE(aa_defer_node, 16);		AA_PIN_SIZE(aa_defer, 192);
AA_PIN_SIZE(aa_fault, 64);		AA_PIN_SIZE(aa_root, 20800);
AA_PIN_SIZE(aa_user_caches, 1056);	AA_PIN_SIZE(aa_heap_stats, 392);

AA_PIN_FIELD(aa_root, arena_base, 16, 8);	AA_PIN_FIELD(aa_root, arena_size, 24, 8);
AA_PIN_FIELD(aa_root, nr_slots, 32, 4);		AA_PIN_FIELD(aa_root, lock, 36, 4);
AA_PIN_FIELD(aa_root, parked, 40, 4);		AA_PIN_FIELD(aa_root, zero, 44, 4);
AA_PIN_FIELD(aa_root, lock_waiters, 48, 4);	AA_PIN_FIELD(aa_root, lock_gen, 52, 4);
AA_PIN_FIELD(aa_root, large_bytes_in_use, 56, 8);
AA_PIN_FIELD(aa_root, flags, 64, 4);		AA_PIN_FIELD(aa_root, mmap_readers, 68, 4);
AA_PIN_FIELD(aa_root, order_summary, 72, 72);	AA_PIN_FIELD(aa_root, order_map, 144, 4608);
AA_PIN_FIELD(aa_root, stats, 4752, 392);	AA_PIN_FIELD(aa_root, debug, 5144, 10064);
AA_PIN_FIELD(aa_root, slots, 15208, 8);
AA_PIN_FIELD(aa_root, tc_off, 15216, 4);	AA_PIN_FIELD(aa_root, tc_classes, 15220, 4);
AA_PIN_FIELD(aa_root, table_pages, 15224, 4);	AA_PIN_FIELD(aa_root, nr_cpus, 15228, 4);
AA_PIN_FIELD(aa_root, need_refill, 15232, 4);	AA_PIN_FIELD(aa_root, refill_signals, 15240, 8);
AA_PIN_FIELD(aa_root, cache_key, 15248, 8);	AA_PIN_FIELD(aa_root, tun, 15256, 656);
AA_PIN_FIELD(aa_root, cpu_cache_off, 15912, 1024);
AA_PIN_FIELD(aa_root, central, 16936, 2080);
AA_PIN_FIELD(aa_root, class_size, 19016, 208);	AA_PIN_FIELD(aa_root, class_pages, 19224, 208);
AA_PIN_FIELD(aa_root, defer, 19456, 192);	AA_PIN_FIELD(aa_root, fault, 19648, 64);
AA_PIN_FIELD(aa_root, user, 19712, 1056);
AA_PIN_FIELD(aa_root, init_state, 20768, 4);	AA_PIN_FIELD(aa_root, self_inits, 20776, 8);
AA_PIN_FIELD(aa_root, carve_tail, 20784, 8);	AA_PIN_FIELD(aa_root, pm, 20792, 8);
AA_PIN_FIELD(aa_fast, arena_base, 8, 8);	AA_PIN_FIELD(aa_fast, arena_size, 16, 8);
AA_PIN_FIELD(aa_fast, key, 24, 8);		AA_PIN_FIELD(aa_fast, zero, 32, 8);
AA_PIN_FIELD(aa_fast, free_size, 40, 8);	AA_PIN_FIELD(aa_fast, pm, 48, 8);
AA_PIN_FIELD(aa_fast, cc, 56, 2048);	AA_PIN_FIELD(aa_fast, mode, 2104, 8);
AA_PIN_FIELD(aa_fast, defer, 2112, 8);	AA_PIN_FIELD(aa_fast, slots, 2120, 8);
AA_PIN_FIELD(aa_cpu_cache, busy, 0, 4);		AA_PIN_FIELD(aa_cpu_cache, cpu, 4, 4);
AA_PIN_FIELD(aa_cpu_cache, owner_pid, 8, 4);	AA_PIN_FIELD(aa_cpu_cache, owner_tid, 12, 4);
AA_PIN_FIELD(aa_cpu_cache, owner_start, 16, 8);	AA_PIN_FIELD(aa_cpu_cache, owner_exec, 24, 8);
AA_PIN_FIELD(aa_cpu_cache, cls, 64, 59904);
AA_PIN_FIELD(aa_user_caches, off, 0, 1024);	AA_PIN_FIELD(aa_user_caches, gen, 1024, 4);
AA_PIN_FIELD(aa_cpu_class, count, 0, 4);	AA_PIN_FIELD(aa_cpu_class, cap, 4, 4);
AA_PIN_FIELD(aa_cpu_class, reserve_want, 8, 4);
AA_PIN_FIELD(aa_cpu_class, reserve_allocs, 16, 8);
AA_PIN_FIELD(aa_cpu_class, reserve_frees, 24, 8);
AA_PIN_FIELD(aa_cpu_class, reserve, 32, 32);
AA_PIN_FIELD(aa_cpu_class, stats, 64, 64);	AA_PIN_FIELD(aa_cpu_class, objs, 128, 1024);
AA_PIN_FIELD(aa_chunk_meta, span, 0, 4096);	AA_PIN_FIELD(aa_chunk_meta, absent_map, 4096, 32);
AA_PIN_FIELD(aa_chunk_meta, free_head, 4128, 36);
AA_PIN_FIELD(aa_slot, state, 0, 4);		AA_PIN_FIELD(aa_slot, meta_off, 4, 4);
AA_PIN_FIELD(aa_slot, nr_chunks, 8, 4);		AA_PIN_FIELD(aa_slot, large_pages, 12, 4);
AA_PIN_FIELD(aa_transfer_cache, lock, 0, 4);	AA_PIN_FIELD(aa_transfer_cache, count, 4, 4);
AA_PIN_FIELD(aa_transfer_cache, reserve, 48, 32);
AA_PIN_FIELD(aa_transfer_cache, objs, 80, 2048);
AA_PIN_FIELD(aa_debug, rec, 80, 1792);		AA_PIN_FIELD(aa_debug, quarantine, 1872, 8192);

#undef AA_PIN_FIELD
#undef AA_PIN_SIZE
#undef AA_LAYOUT_PIN
#undef AA_LAYOUT_ASSERT

#endif /* __AA_SHARED_H */
