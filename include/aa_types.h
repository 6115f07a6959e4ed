/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * aa_types.h - the types and constants of the public API, which BPF
 * programs and userspace share: the geometry and limits a caller sizes
 * requests and arenas by, the init flags, the tunables, the error codes,
 * the counters aa_heap__stats() returns, debug mode's error records and
 * the refill events. arena_alloc.h (userspace) includes it and nothing of
 * the layout; aa_shared.h (the layout) includes it too, so each type is
 * defined once. Some of these types are also fields of the layout
 * (aa_root.stats, .tun, .debug.rec[]): aa_shared.h pins their sizes with
 * the rest, under AA_LAYOUT_VERSION.
 */
#ifndef __AA_TYPES_H
#define __AA_TYPES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * The page heap (bpf/buddy.bpf.c): 1-MiB chunks of 256 pages (64 of 16
 * KiB), split into power-of-two page blocks, order 0 (one page) .. 8 (6:
 * the whole chunk). The heap grows and trims by whole chunks;
 * aa_heap_stats.free_blocks[k] counts the free blocks of 2^k pages.
 *
 * The page is the kernel's (an arena's pages are), fixed at build time:
 * 4 KiB, or 16 KiB with -DAA_PAGE_SHIFT=14 (`make PAGE_KB=16`). Every
 * side (BPF objects, library, CLI, embedders' programs) must be built
 * alike; the loader refuses a kernel whose page differs.
 */
#ifndef AA_PAGE_SHIFT
#define AA_PAGE_SHIFT		12
#endif
#if AA_PAGE_SHIFT != 12 && AA_PAGE_SHIFT != 14
#error "AA_PAGE_SHIFT: 12 (4-KiB pages) or 14 (16-KiB pages)"
#endif
#define AA_PAGE_SIZE		(1U << AA_PAGE_SHIFT)
#define AA_CHUNK_SHIFT		20
#define AA_CHUNK_SIZE		(1U << AA_CHUNK_SHIFT)
#define AA_CHUNK_PAGES		(AA_CHUNK_SIZE / AA_PAGE_SIZE)	/* 256 (64) */
#define AA_MAX_ORDER		(AA_CHUNK_SHIFT - AA_PAGE_SHIFT)	/* 8 (6) */
#define AA_NR_ORDERS		(AA_MAX_ORDER + 1)
/* The shared layout's per-order and per-page arrays hold what a 4-KiB
 * page needs, the most of any page size: one layout for every build (its
 * pins in aa_shared.h hold for all). With 16-KiB pages, orders 7 and 8
 * and a chunk's pages 64..255 have entries that stay 0. */
#define AA_LAYOUT_ORDERS	9
#define AA_LAYOUT_CHUNK_PAGES	256
#if AA_NR_ORDERS > AA_LAYOUT_ORDERS || AA_CHUNK_PAGES > AA_LAYOUT_CHUNK_PAGES
#error "the layout's arrays must hold every page size's"
#endif

#include "aa_size_classes.h"

/* The alignment rule. The smallest object is 16 bytes (two words: a
 * custody mark and a free-list link); classes are multiples of 8 bytes
 * (AA_CLASS_GRAIN) up to 128 and of 16 above. An object is aligned to 8
 * bytes, and to 16 where its class's size is a multiple of 16; a request
 * whose size is a multiple of 16 gets such a class (a C type's size is a
 * multiple of its alignment, so every type gets what it needs). Page runs
 * are page-aligned; aa_aligned_alloc() picks a class by its alignment. */
#define AA_MIN_SIZE		16U
#define AA_MIN_ALIGN		AA_CLASS_GRAIN
/* The alignment of an object of class size n, and so the least one a
 * request of n bytes gets (a multiple of 16 gets a class that is one). */
#define AA_OBJ_ALIGN(n)		((n) % 16 ? AA_MIN_ALIGN : 16U)

/* Largest request: a quarter of the biggest arena (page runs above). */
#define AA_MAX_ALLOC		(1ULL << 30)

/*
 * Size classes (include/aa_size_classes.h, generated): 8-B steps up to 128 B,
 * then at most 12.5% waste per request, up to 8 KiB. Every class goes
 * through the cache tiers; larger requests are page runs. The count sizes
 * arrays of the root and of the CPU caches: a new table is a new layout.
 */
#define AA_NR_CLASSES		AA_SIZE_CLASS_COUNT
#define AA_MAX_CLASS_SIZE	AA_SIZE_CLASS_MAX
#define AA_CPU_CACHE_MAX	128	/* objects per class per CPU, at most */
#define AA_TRANSFER_MAX		256	/* objects per class in transfer, at most */

/* Init flags (aa_heap_opts.flags; aa_heap__flags() reads them back) */
#define AA_F_NO_CACHES		(1U << 0)	/* no CPU or transfer caches: every
						 * request takes the heap lock */
#define AA_F_DEFER		(1U << 1)	/* deferred free (aa_free_deferred):
						 * the pending bitmaps */
#define AA_F_DEBUG		(1U << 2)	/* debug mode (bpf/debug.bpf.c):
						 * poison, redzones, error records */
#define AA_F_NO_SELF_GROW	(1U << 3)	/* allocations never map pages
						 * themselves (only grow and the
						 * refill agent do) */
/* Set by init, never given: an allocation that finds the page heap empty
 * maps chunks itself (Linux >= 7.0 lets every program allocate arena
 * pages; bpf/self_grow.bpf.c, aa__arena_self_grow()), unless AA_F_NO_SELF_GROW. */
#define AA_F_SELF_GROW		(1U << 4)

/* aa_heap__trim(): keep what the keep_bytes tunable says. */
#define AA_KEEP_DEFAULT		(~0ULL)

/* Tunables, set by the loader before init (user/tunables.c has their
 * table: defaults, ranges, the ARENA_ALLOC_<KEY> environment overrides;
 * aa_tunables__validate() the limits). */
#define AA_QUARANTINE_MAX	1024	/* quarantine slots, at most */
#define AA_QUARANTINE_DEFAULT	256

struct aa_tunables {
	__u32 cpu_cache_cap[AA_NR_CLASSES];	/* <= AA_CPU_CACHE_MAX */
	__u32 batch[AA_NR_CLASSES];		/* <= cap / 2 */
	__u32 transfer_cap[AA_NR_CLASSES];	/* <= AA_TRANSFER_MAX */
	__u64 keep_bytes;	/* trim keeps this much free memory mapped */
	__u64 low_watermark;	/* signal a refill below this many free bytes */
	__u64 defer_limit;	/* signal a reclaim above this many bytes in
				 * limbo; refuse deferred frees past twice it */
	__u32 quarantine;	/* AA_F_DEBUG: freed objects held back from
				 * reuse, <= AA_QUARANTINE_MAX (0: none) */
	__u32 pad;
};

/* Error codes: returned negated by BPF functions, counted in aa_heap_stats.err. */
enum aa_error {
	AA_ERR_SIZE,		/* size 0, over AA_MAX_ALLOC, or n*size overflow */
	AA_ERR_ALIGN,		/* alignment not a power of two or > page */
	AA_ERR_NOMEM,		/* every tier empty; grow the heap */
	AA_ERR_BUSY,		/* alloc failed: heap lock held by another CPU past
				 * the wait budget (frees never fail: parked) */
	AA_ERR_NESTED,		/* alloc failed: IRQ/NMI nested over a holder of
				 * the heap lock on the same CPU */
	AA_ERR_DOUBLE_FREE,	/* pointer inside a block that is already free */
	AA_ERR_FOREIGN,		/* pointer outside every chunk of the heap */
	AA_ERR_INTERIOR,	/* pointer inside an allocation, not its start */
	AA_ERR_MISALIGNED,	/* pointer not AA_MIN_ALIGN-aligned */
	AA_ERR_CORRUPT,		/* metadata disagreed with itself (use after free?) */
	AA_ERR_UNINIT,		/* heap used before init */
	AA_ERR_ZEROING,		/* calloc could not zero within the loop budget */
	AA_NR_ERRORS,
};

/*
 * The heap's counters: aa_root.stats, written by the BPF tiers and by
 * nothing else. Updated under the heap lock except err[], the contention
 * counters, the calls below and self-growth (atomic adds, any context).
 * heap_* are the heap's view: objects and page runs out of the central
 * lists and the page heap, to whoever took them: a caller, a CPU or user
 * cache (a refill is an allocation of each object it moved, a spill a
 * free of each), debug mode's quarantine, parked frees, the limbo (its
 * nodes, and the objects in it, which stay allocated). At every instant
 * but inside a teardown (which drops what is out without freeing it):
 *   heap_allocs - heap_frees == heap_live
 * and (aa_heap__check() checks it, bpf/heap.bpf.c):
 *   frees_unparked <= frees_parked
 *   frees_parked - frees_unparked >= blocks on the parked list (more only
 *                 while a push is under way)
 * A macro, so that struct aa_stats can show the same fields by name. */
#define AA_HEAP_STATS_FIELDS						\
	__u64 heap_bytes;	/* bytes of the blocks out */		\
	__u64 heap_peak_bytes;	/* its peak */				\
	__u64 heap_live;	/* blocks out */			\
	__u64 heap_allocs;	/* blocks handed out, total */		\
	__u64 heap_frees;	/* blocks taken back, total */		\
	__u64 pages_mapped;	/* arena pages we hold: chunks + metadata */ \
	__u64 peak_pages_mapped;					\
	__u64 nr_chunks;	/* chunks mapped (page heap + large) */	\
	__u64 large_chunks;	/* whole chunks held by multi-chunk	\
				 * allocations */			\
	__u64 span_pages;	/* pages of chunks held by spans */	\
	__u64 run_pages;	/* pages of chunks held by page runs */	\
	__u64 absent_pages;	/* pages of partial chunks the heap does \
				 * not have (AA_PM_ABSENT) */		\
	__u64 nr_grows;		/* chunks added by grow */		\
	__u64 nr_trims;		/* chunks returned by trim/teardown */	\
	__u64 free_blocks[AA_LAYOUT_ORDERS]; /* free page blocks per order */ \
	__u64 err[AA_NR_ERRORS];					\
	/* contention (atomic): recovered events, not errors */	\
	__u64 lock_waits;	/* acquisitions that waited for another CPU */ \
	__u64 lock_misses;	/* acquisitions given up whose caller	\
				 * recovered (another tier, a parked free) */ \
	__u64 frees_parked;	/* blocks parked: a free without the heap \
				 * lock, a transfer-cache drain, the	\
				 * limbo's spare nodes at a drain (counted \
				 * before they are pushed) */		\
	__u64 frees_unparked;	/* parked blocks completed (counted after \
				 * they are popped; teardown sets it to	\
				 * frees_parked): always <= frees_parked */ \
	__u64 no_cache;		/* calls on a CPU without a CPU cache */ \
	__u64 refill_events_lost; /* refill events the ring had no room \
				 * for (nobody reading it); need_refill	\
				 * was still raised */			\
	__u64 reader_stalls;	/* page returns given up because a reader \
				 * of the mmap stayed inside its read	\
				 * (AA_READERS_*): the pages were kept */ \
	/* Callers' calls no cache counted (atomic; slow paths only): */ \
	__u64 direct_allocs;	/* allocations the heap served (no CPU	\
				 * cache for them: caches off, page runs, \
				 * a claimed cache and an empty transfer \
				 * cache); never a refill, never a limbo \
				 * node */				\
	__u64 direct_frees;	/* frees given to the heap one by one	\
				 * (aa__heap_return()); never a spill */ \
	__u64 tc_allocs;	/* allocations the transfer cache served \
				 * to callers that found their cache	\
				 * claimed by another (a claim holder's \
				 * cache counts its own) */		\
	__u64 tc_frees;		/* frees the transfer cache took so */	\
	/* Self-growth (AA_F_SELF_GROW), and the growth in steps of	\
	 * aa_*_grow_u64() (atomic): */					\
	__u64 self_grows;	/* chunks allocations mapped themselves	\
				 * (part of nr_grows) */		\
	__u64 self_grow_fails;	/* self-grows and steps that mapped nothing */ \
	__u64 self_grow_ns;	/* time spent in them, failed ones too */

struct aa_heap_stats {
	AA_HEAP_STATS_FIELDS
};

/*
 * What aa_heap__stats() (user/stats.c) returns: the calls programs and
 * userspace threads made, what the heap holds that no caller does, and a
 * copy of the heap's counters (above). Not in the arena. With cs the
 * counters of every CPU and user cache (aa_cpu_class_stats, summed over
 * caches and classes), H = aa_root.stats, D = aa_root.defer and
 * Q = aa_root.debug, it computes:
 *   nr_allocs        = cs.allocs + H.tc_allocs + H.direct_allocs
 *   nr_frees         = cs.frees + H.tc_frees + H.direct_frees
 *                      + D.deferred + quarantined_objs
 *   cached_objs      = objects in CPU, user and transfer caches
 *   quarantined_objs = Q.q_objs          quarantined_bytes = Q.q_bytes
 *   limbo_objs       = D.pending_objs    limbo_bytes = D.pending_bytes
 *   limbo_nodes      = D.nodes           limbo_node_bytes = D.nodes * AA_MIN_SIZE
 *   parked_objs      = H.frees_parked - H.frees_unparked
 *   live_allocs      = H.heap_live - cached_objs - quarantined_objs
 *                      - limbo_objs - limbo_nodes - parked_objs
 *   bytes_in_use     = H.heap_bytes - cached_bytes - quarantined_bytes
 *                      - limbo_bytes - limbo_node_bytes
 * Each call is counted once, where it ends: by the cache or the heap that
 * served it (cs, tc_*, direct_*), or, for a free that no tier has taken
 * yet, by what holds its object: a deferred free when called (the reclaim
 * gives its object to the heap uncounted), a debug-mode free in the
 * quarantine until it leaves (then as a cache or direct free). The limbo's
 * nodes are its own memory, taken from the heap by no caller's call.
 * So, at rest (no call running, no parked free), with no term to correct:
 *   nr_allocs - nr_frees == live_allocs
 *   heap_bytes == bytes_in_use + cached_bytes + quarantined_bytes
 *                 + limbo_bytes + limbo_node_bytes
 * and heap_allocs - heap_frees == heap_live, as in the arena (until a
 * teardown drops live objects: they count as freed in neither view).
 * While programs run, each field is exact but read apart from the others;
 * the differences are clamped (aa_sub_clamp(), aa_shared.h).
 */
struct aa_stats {
	/* the calls */
	__u64 nr_allocs;	/* successful allocations, total */
	__u64 nr_frees;		/* successful frees (deferred ones included) */
	__u64 live_allocs;	/* allocations not yet freed */
	__u64 bytes_in_use;	/* their usable bytes (class or run size) */
	/* what the heap holds that no caller does */
	__u64 cached_objs;	/* free objects in CPU, user, transfer caches */
	__u64 cached_bytes;
	__u64 quarantined_objs;	/* freed, held back by debug mode */
	__u64 quarantined_bytes;
	__u64 limbo_objs;	/* deferred frees waiting for a grace period */
	__u64 limbo_bytes;
	__u64 limbo_nodes;	/* the limbo's own nodes, spare or in use */
	__u64 limbo_node_bytes;
	__u64 parked_objs;	/* frees waiting for the heap lock */
	/* the heap's counters, as read from the arena: by name, or whole */
	union {
		struct aa_heap_stats heap;
		struct {
			AA_HEAP_STATS_FIELDS
		};
	};
};

/* Debug mode (AA_F_DEBUG): what it found, as aa_heap__errors() and
 * aa_heap__wait_error() give it (the protocol: aa_shared.h, "Debug mode"). */
#define AA_DEBUG_RECORDS	32	/* first errors kept in the root */
#define AA_DEBUG_CLS_RUN	AA_NR_CLASSES		/* aa_debug_error.cls: a page run */
#define AA_DEBUG_CLS_NONE	0xffU			/* not an allocation */

/* What debug mode found (aa_debug_error.kind). */
enum aa_debug_kind {
	AA_DBG_USE_AFTER_FREE = 0,	/* poison changed while the object was free */
	AA_DBG_OVERFLOW = 1,		/* redzone or trailer changed: a write past n */
	AA_DBG_UNDERFLOW = 2,		/* the 8 bytes before the object changed */
	AA_DBG_DOUBLE_FREE = 3,		/* freed while free (or in a cache, quarantine) */
	AA_DBG_INVALID_FREE = 4,	/* interior, misaligned or foreign pointer */
	AA_DBG_NR_KINDS,
};

/* One error, in aa_debug.rec[] (the first AA_DEBUG_RECORDS) and in the
 * ring buffer aa_debug_rb (every one, while it has room). */
struct aa_debug_error {
	__u64 addr;		/* user address of the object (or the pointer freed) */
	__u64 ts_ns;		/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 found;		/* the 8 bytes found at offset & ~7 */
	__u32 kind;		/* enum aa_debug_kind */
	__u32 cls;		/* size class, AA_DEBUG_CLS_RUN, AA_DEBUG_CLS_NONE */
	__u32 cpu;
	__u32 size;		/* object bytes (class size or run), 0 if none */
	__u32 req;		/* bytes requested (the trailer's n), 0 if unknown */
	__s32 offset;		/* first bad byte, from addr (negative: before it) */
	__u32 seq;		/* 1 + its index: written last (0: being written) */
	__u32 pad;
};

/* One record of the refill event ring (aa_refill_rb): need_refill was
 * raised on cpu at ts_ns (CLOCK_MONOTONIC), or limbo needs a reclaim. */
struct aa_refill_event {
	__u64 ts_ns;
	__u64 bytes_in_use;	/* at the raise */
	__u64 bytes_mapped;	/* chunks mapped, in bytes */
	__u32 cpu;
	__u32 reason;		/* enum aa_event_reason */
};

/* Why an event was written (aa_refill_event.reason). */
enum aa_event_reason {
	AA_EV_LOW_WATERMARK = 0,	/* free memory below tun.low_watermark */
	AA_EV_NOMEM = 1,		/* an allocation failed */
	AA_EV_LIMBO_LIMIT = 2,		/* limbo above tun.defer_limit */
	AA_EV_LIMBO_START = 3,		/* limbo got its first object: reclaim */
};

#endif /* __AA_TYPES_H */
