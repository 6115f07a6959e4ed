// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lifecycle.bpf.c - a heap's life: init (the loader's, and self-init on
 * first use), trim and teardown, and the inline API's copy of the root.
 *
 * Role:       initialise and publish the root (aa__arena_init(),
 *             aa__arena_self_init()), give entirely free chunks back
 *             (aa__arena_trim()), tear the heap down
 *             (aa__arena_teardown()). Writes the root's own fields
 *             (geometry, flags, key, magic) and aa_fast; every tier's
 *             state is reset by that tier's hook, called here in tier
 *             order (tiers_reset()).
 * From below: every tier's reset hook; pages and the reader pin
 *             (arena.bpf.c); chunks (grow.bpf.c, buddy_chunks.bpf.c); the
 *             caches' pages and teardown claims (cpu_cache.bpf.c,
 *             user_cache.bpf.c).
 * To above:   the SEC("syscall") programs of entry.bpf.c; self-init for
 *             the public functions (api.bpf.c).
 * Locking:    page kfuncs are called with no lock held (they sleep); one
 *             init at a time (aa_root.init_state); a teardown claims every
 *             cache, then holds the heap lock while it forgets the lists;
 *             a chunk leaves the heap through the RELEASING slot state:
 *             its meta_off stays valid and no grower maps the slot until
 *             its pages are back (aa__buddy_release_slot()).
 *
 * SLEEPABLE ONLY but self-init: every function here may call a page kfunc
 * (self-init maps its slot table before it disables preemption, and then
 * calls no page kfunc and no global function: 6.12 allows neither there).
 *
 * A failed init gives back what it got: a cache page allocation that
 * fails frees every cache (none is published yet); a heap whose first
 * grow added no chunk is not published, and its caches are freed too: a
 * failed init leaves nothing mapped (caches kept by an earlier teardown
 * included) but the root's tables, which stay for the arena's life, and
 * caches that a reader of the mmap would not let go (close_readers()).
 */
#include "internal.h"
#include "lock.h"
#include "lifecycle.h"
#include "arena.h"
#include "buddy.h"
#include "central.h"
#include "buddy_chunks.h"
#include "grow.h"
#include "heap.h"
#include "transfer_cache.h"
#include "cpu_cache.h"
#include "user_cache.h"
#include "debug.h"
#include "defer.h"

/* The inline API's copy of the root's hot fields (aa_shared.h): filled by
 * publish_fast() after init, cleared by unpublish_fast() before teardown. */
struct aa_fast aa_fast SEC(".data.aa_fast");

/* --- Publication ------------------------------------------------------------ */

/* Copy the hot fields, then the CPU caches' addresses, then the inline
 * free's bound and the arena size (the lock-free lookups' gate), each step
 * visible before the next (exchange: full barrier).
 * Without caches, and in debug mode, cc[] and arena_size stay 0 (the
 * inline API's gate: struct aa_fast), and the inline API always calls the
 * global functions.
 * REQUIRES: heap published, caches released. */
static void publish_fast(void)
{
	__u32 n = aa__root.nr_cpus, off;
	int cpu;

	__aa_fast_fill(&aa_fast, &aa__root, (__u64)&aa__root);
	/* no caches, or debug mode: no cache address and no arena size for
	 * the inline API, whose every call then goes through the global
	 * functions, where the front door applies the mode (struct aa_fast) */
	if (aa_fast.mode & AA_FAST_OFF)
		return;
	aa_for(cpu, 0, n < AA_MAX_CPUS ? n : AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu];
		aa_fast.cc[cpu] = off ? aa__root.arena_base + off : 0;
	}
	__sync_lock_test_and_set(&aa_fast.free_size, aa_fast.defer ? 0 : aa__root.arena_size);
	__sync_lock_test_and_set(&aa_fast.arena_size, aa__root.arena_size);
}

/* Stop new inline calls from finding the heap: arena size, the inline
 * free's bound and every cache address to 0 (a call that read them
 * already fails its claim on a cache that teardown holds, or is refused
 * by the global function it falls to). */
static void unpublish_fast(void)
{
	int cpu;

	__sync_lock_test_and_set(&aa_fast.arena_size, 0);
	__sync_lock_test_and_set(&aa_fast.free_size, 0);
	aa_for(cpu, 0, AA_MAX_CPUS)
		aa_fast.cc[cpu] = 0;
}

/* --- Init ------------------------------------------------------------------- */

/* Every tier empty, in tier order (each one's hook writes its own state).
 * REQUIRES: heap not published (init), or the heap lock held by a
 * teardown that unpublished it. Calls static functions only (self-init
 * runs it with preemption disabled). */
static __always_inline void tiers_reset(void)
{
	buddy_reset();
	central_reset();
	heap_reset();
	transfer_cache_reset();
	debug_reset();		/* the quarantine's objects are gone too */
	defer_reset();
}

/* Every CPU's and user cache back to the kernel: a failed init. Caches
 * that a reader of the mmap holds on to are kept (init reuses them). */
static void free_caches(void)
{
	if (!close_readers())
		return;
	caches_put(aa__root.cpu_cache_off);
	aa__root.nr_cpus = 0;
	caches_put(aa__root.user.off);
	open_readers();
}

/* One init at a time (aa_root.init_state): the loader's claims an arena
 * never initialised or one initialised before (a teardown, or idempotent
 * init), self-init only the first; both leave it DONE. */
static __always_inline bool init_claim(bool self)
{
	if (__sync_val_compare_and_swap(&aa__root.init_state, AA_INIT_NEVER,
					AA_INIT_RUNNING) == AA_INIT_NEVER)
		return true;
	return !self && __sync_val_compare_and_swap(&aa__root.init_state, AA_INIT_DONE,
						    AA_INIT_RUNNING) == AA_INIT_DONE;
}

static __always_inline void init_release(void)
{
	__sync_lock_test_and_set(&aa__root.init_state, AA_INIT_DONE);
}

/* The root of a new heap: geometry (geometry_check()'s), its tables
 * (aa__arena_table()'s, checked), empty tiers, flags, a new key. Returns
 * 0 or -errno. REQUIRES: the init claim, heap not published. */
static __always_inline int init_root(__u64 arena_base, __u64 arena_size, __u32 flags)
{
	int err;

	aa__root.version = AA_LAYOUT_VERSION;
	aa__root.root_size = sizeof(aa__root);
	aa__root.arena_base = arena_base;
	aa__root.arena_size = arena_size;
	aa__root.nr_slots = slot_count(arena_size);	/* the last may be partial */
	err = tables_ready(!(flags & AA_F_NO_CACHES));
	if (err)
		return err;
	aa__root.flags = flags;	/* first: a tier's reset may follow its mode */
	tiers_reset();
	/* a new key on every init: marks of an earlier heap mean nothing */
	aa__root.cache_key = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32() | 1;
	return 0;
}

/* The magic last, by an atomic exchange: a program that sees it sees
 * everything else too; then aa_fast for the inline API. */
static __always_inline void publish(void)
{
	__sync_lock_test_and_set(&aa__root.magic, AA_ROOT_MAGIC);
	publish_fast();
}

/* aa__arena_init() under the init claim. */
static __always_inline int init_claimed(__u64 arena_base, __u64 arena_size, __u32 nr_cpus,
					__u32 flags, __u64 grow_bytes)
{
	int err, got = 0;

	if (aa_heap_ready()) {
		if (aa__root.arena_base != arena_base)
			return -EEXIST;
		/* a heap there already (a loader attaching to a heap that
		 * initialised itself): grown as far as the arena allows */
		err = grow_bytes ? aa__arena_grow(grow_bytes) : 0;
		return err == -ENOMEM ? 0 : err;
	}
	if (flags & ~(AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG | AA_F_NO_SELF_GROW))
		return -EINVAL;
	if (aa_kernel_self_grows() && !(flags & AA_F_NO_SELF_GROW))
		flags |= AA_F_SELF_GROW;
	if (flags & AA_F_NO_CACHES)
		nr_cpus = 0;
	else if (nr_cpus == 0)
		return -EINVAL;
	if (nr_cpus > AA_MAX_CPUS)
		nr_cpus = AA_MAX_CPUS;
	err = geometry_check(arena_base, arena_size);
	if (err)
		return err;
	/* AA_MIN_ARENA_PAGES, and the caches' pages beside */
	if (arena_size < (AA_MIN_ARENA_PAGES + (nr_cpus ? AA_CACHE_PAGES(nr_cpus) : 0)) *
			 (__u64)AA_PAGE_SIZE)
		return -ENOSPC;
	err = tables_get(arena_base, arena_size, nr_cpus > 0);
	if (!err)
		err = init_root(arena_base, arena_size, flags);
	if (err)
		return err;
	err = cpu_caches_init(nr_cpus);
	if (err) {
		free_caches();	/* none is published: no one holds one */
		return err;
	}
	user_caches_reset();
	if (grow_bytes) {
		got = aa__arena_grow_chunks(grow_bytes, 1);
		if (got <= 0) {
			free_caches();
			return got ? got : -ENOMEM;
		}
	}
	publish();
	return got;
}

/*
 * Initialise the heap for the arena at arena_base (arena_size bytes, the
 * root inside it) with flags and CPU caches for CPUs 0 .. nr_cpus-1, grow
 * it by grow_bytes (0: no chunk), then publish it (publish()). The
 * tunables must be set before.
 * The first grow runs before publication (no teardown, trim or grow can
 * run on an unpublished heap), so that an init that fails publishes
 * nothing: when a cache page or every chunk is refused, the caches go back
 * (free_caches()), the magic stays 0, and -ENOMEM says so.
 * Idempotent for the same arena: changes nothing but grows by grow_bytes
 * (tear the heap down first to change flags or tunables).
 * Returns the chunks added (>= 0), or -errno (-EBUSY: a self-init is
 * running, aa__arena_self_init()).
 */
int aa__arena_init(__u64 arena_base, __u64 arena_size, __u32 nr_cpus, __u32 flags,
		  __u64 grow_bytes)
{
	int ret;

	if (!init_claim(false))
		return -EBUSY;
	ret = init_claimed(arena_base, arena_size, nr_cpus, flags, grow_bytes);
	init_release();
	return ret;
}

/* --- Self-init ---------------------------------------------------------------- */

/* Another CPU's self-init runs (no chunk to map: it takes microseconds,
 * with preemption disabled): wait for it as for the heap lock, within the
 * context's budget (AA_WAIT_TASK_NS on a task's stack, else
 * AA_WAIT_IRQ_NS: an interrupt may have stopped the init on its own CPU).
 * 0 when the heap is published, else -EBUSY (it failed, takes longer,
 * or the arena was initialised before). */
static __always_inline int self_init_wait(void)
{
	__u64 t0 = bpf_ktime_get_ns();
	__u64 budget = aa_on_task_stack() ? AA_WAIT_TASK_NS : AA_WAIT_IRQ_NS;

	aa_repeat(AA_MAX_LOOPS) {
		if (aa_heap_ready())
			return 0;
		if (READ_ONCE_ARENA(aa__root.init_state) != AA_INIT_RUNNING ||
		    bpf_ktime_get_ns() - t0 > budget)
			break;
	}
	return aa_heap_ready() ? 0 : -EBUSY;
}

/* Self-init: an allocation from an arena that nobody initialised, in a
 * program that may map arena pages (any on Linux >= 7.0: the public
 * allocations, api.bpf.c; a sleepable one before: aa_calloc_grow_u64()), initialises the heap
 * itself, once, with the defaults of a loader that asks for nothing but
 * without CPU caches (no CPU count here) and no chunk (the allocation
 * maps what it needs): a loader that never heard of arena-alloc works.
 * Its arena's geometry comes from the kernel's map (AA_ARENA_FUNCS()).
 * An arena initialised before (a teardown) is left to its loader.
 * Returns 0 (published, by this call or another), or -errno: -EBUSY
 * (another init is running still (self_init_wait()), or the arena was
 * initialised before), or what init_root() said (kept in
 * self_init_err).
 * Called by public functions only (frame 2 of internal.h's call frames). */
int aa__arena_self_init(void)
{
	__u32 flags = AA_F_NO_CACHES | (aa_kernel_self_grows() ? AA_F_SELF_GROW : 0);
	__u64 base, bytes;
	int err;

	if (aa_heap_ready())
		return 0;
	/* before the claim: no global call and no page kfunc with
	 * preemption disabled (6.12) */
	base = aa_arena_user_base();
	bytes = aa_arena_bytes();
	err = geometry_check(base, bytes);
	if (!err && bytes < (__u64)AA_MIN_ARENA_PAGES * AA_PAGE_SIZE)
		err = -ENOSPC;
	if (!err)
		err = aa__arena_table(base, AA_ROOT_TABLE_PAGES(slot_count(bytes)), 0);
	if (err) {
		aa__root.self_init_err = err;
		return err;
	}
	/* no preemption while it holds the claim: a waiter on another CPU
	 * waits for running code only */
	bpf_preempt_disable___aa();
	if (!init_claim(true)) {
		bpf_preempt_enable___aa();
		return self_init_wait();
	}
	err = init_root(base, bytes, flags);
	if (!err) {
		/* an arena never initialised has no CPU or user cache: what
		 * cpu_caches_init(0) and user_caches_reset() do, without their
		 * calls (frames: three) */
		aa__root.nr_cpus = 0;
		__sync_fetch_and_add(&aa__root.user.gen, 1);
		publish();
		__sync_fetch_and_add(&aa__root.self_inits, 1);
	}
	aa__root.self_init_err = err;
	init_release();
	bpf_preempt_enable___aa();
	return err;
}

/* --- Trim ----------------------------------------------------------------------- */

/* Return entirely free chunks to the kernel, keeping keep_bytes of them
 * (any 64-bit value: more than the arena keeps everything). Returns the
 * number of chunks returned, or -errno (-EBUSY: a reader of the mmap
 * stayed inside its read, close_readers()). */
int aa__arena_trim(__u64 keep_bytes)
{
	__u32 keep, n = AA_ZERO;
	int slot = -ENOENT;

	if (!aa_heap_ready())
		return -ENODEV;
	if (keep_bytes == AA_KEEP_DEFAULT)
		keep_bytes = aa__root.tun.keep_bytes;
	aa__heap_release_empty();	/* kept empty spans hold chunks */
	keep = (keep_bytes >> AA_CHUNK_SHIFT) > AA_MAX_SLOTS ? AA_MAX_SLOTS
							     : keep_bytes >> AA_CHUNK_SHIFT;
	aa_repeat(AA_MAX_SLOTS) {	/* readers get in between chunks */
		if (!close_readers()) {
			slot = -EBUSY;
			break;
		}
		slot = aa__buddy_take_free_chunk(keep);
		if (slot >= 0)
			return_chunk(slot);
		open_readers();
		if (slot < 0)
			break;
		n++;
	}
	if (slot < 0 && slot != -ENOENT && !n)
		return slot;
	return n;
}

/* --- Teardown ------------------------------------------------------------------- */

/* Claim every CPU and user cache for teardown, from this CPU (the CPU
 * cache claim: internal.h's model). Returns 0 with all claimed and
 * user.closing set, or -EBUSY with none claimed and closing as it was (a
 * program or a user thread is inside one, or another teardown runs). */
static int claim_all_caches(void)
{
	if (!user_caches_claim_all())
		return -EBUSY;
	if (caches_claim_all(aa__root.cpu_cache_off))
		return 0;
	user_caches_release_all();
	return -EBUSY;
}

/* Give back the teardown's claims of every CPU and user cache (a failed
 * teardown), and let OPENs and teardowns in again. */
static __always_inline void release_caches(void)
{
	caches_release_all(aa__root.cpu_cache_off);
	user_caches_release_all();
}

/* Under the heap lock: unpublish, empty every tier, mark every mapped
 * slot RELEASING. Returns the number of such slots, or -EBUSY if a trim
 * is returning a chunk or a transfer-cache lock stayed held.
 * REQUIRES: heap lock held; all CPU caches claimed. */
static int teardown_locked(void)
{
	int err;

	if (chunks_releasing())
		return -EBUSY;
	err = transfer_cache_quiesce_locked();
	if (err)
		return err;
	unpublish_fast();	/* new inline calls: the global functions */
	__sync_lock_test_and_set(&aa__root.magic, 0);	/* new callers: UNINIT */
	tiers_reset();
	return chunks_release_all_locked();
}

/*
 * Return every page, live allocations included, and forget the heap.
 * Quiesces first: claims every CPU and user cache (they stay claimed until
 * the next init) and refuses with -EBUSY, changing nothing, while a program is
 * inside one or holds a transfer-cache lock, a trim is returning pages, or
 * a reader of the mmap stays inside its read (close_readers()).
 * Programs must not use the heap across a teardown: one that already got
 * past the ready check gets NULL / an error, never memory of the old heap
 * (a free that finds its cache claimed here falls to the transfer cache,
 * which takes nothing while the heap is unpublished; init empties it).
 */
int aa__arena_teardown(void)
{
	__u32 nr_slots = aa__root.nr_slots;
	int s, n, err;

	if (!aa_heap_ready())
		return -ENODEV;
	if (!close_readers())
		return -EBUSY;
	err = claim_all_caches();
	if (err) {
		open_readers();
		return err;
	}
	err = aa_lock();
	if (err) {
		n = -EBUSY;
	} else {
		n = teardown_locked();
		aa_unlock();
	}
	if (n < 0) {
		release_caches();
		open_readers();
		return n;
	}
	/* unpublished and quiesced: return the pages, no lock held */
	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		if (slot_at(s)->state == AA_SLOT_RELEASING)
			return_chunk(s);
	}
	caches_empty(aa__root.cpu_cache_off);
	caches_empty(aa__root.user.off);
	open_readers();
	aa__root.stats.nr_trims += n;
	return n;
}
