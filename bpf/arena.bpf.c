// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena.bpf.c - tier 5: the arena map, the root, init and teardown.
 *
 * Role:       own the allocator's root (an arena global), initialise and
 *             publish it (aa__arena_init()), tear it down
 *             (aa__arena_teardown()); give each CPU, and each user cache
 *             (user_cache.bpf.c), its cache pages; give chunks back
 *             (return_chunk(), for trim too).
 * From below: pages from the embedder's AA_ARENA_FUNCS() (aa_pages_alloc()),
 *             wherever the kernel puts them for CPU caches; chunks from
 *             grow.bpf.c (aa__arena_grow_chunks()).
 * To above:   the SEC("syscall") programs of entry.bpf.c.
 * Locking:    page kfuncs are called with no lock held (they sleep); a
 *             chunk leaves the heap through the RELEASING slot state: its
 *             meta_off stays valid and no grower maps the slot until its
 *             pages are back (aa__buddy_release_slot()).
 *
 * SLEEPABLE ONLY: every function here may call a page kfunc. They are only
 * called from SEC("syscall") programs (entry.bpf.c); growth from any
 * program, where the kernel allows it, is self_grow.bpf.c's.
 *
 * Every page comes and goes through pages_get() / pages_put(): fault
 * injection (struct aa_fault: every Nth allocation fails as the kernel's
 * would) and the page ledger. Invariants, at rest (no init, grow, trim or
 * teardown running):
 *   fault.pages_got - fault.pages_put
 *     == stats.pages_mapped + (CPUs with a cache + user caches)
 *        * AA_CPU_CACHE_PAGES + table_pages (the root's tables)
 *   stats.pages_mapped
 *     == nr_chunks * (AA_CHUNK_PAGES + aa_meta_pages()) - absent_pages
 * so every failure path gives back what it got:
 *   - init: a cache page allocation that fails frees every cache (none is
 *     published yet); a heap whose first grow added no chunk is not
 *     published, and its caches are freed too: a failed init leaves
 *     nothing mapped (caches kept by an earlier teardown included) but
 *     the root's tables, which stay for the arena's life, and caches that
 *     a reader of the mmap would not let go (close_readers());
 *   - grow (grow.bpf.c): see there.
 */
#include "internal.h"

/* The root. Zero until aa__arena_init() publishes the magic. */
struct aa_root __arena aa__root;

/* --- Pages from the kernel -------------------------------------------------
 * The only calls of the page kfuncs (through the embedder's AA_ARENA_FUNCS()).
 * Sleepable programs only.
 */

/* pages pages at addr (NULL: where the kernel likes), or NULL: the kernel
 * had none, the address is taken, or fault injection failed this call. */
static __always_inline void __arena *pages_get(void __arena *addr, __u32 pages)
{
	void __arena *p;

	if (aa_fault_hit(&aa__root.fault.pages_every, &aa__root.fault.page_calls,
			 &aa__root.fault.page_faults))
		return NULL;
	p = aa_pages_alloc(addr, pages);
	if (p)
		__sync_fetch_and_add(&aa__root.fault.pages_got, pages);
	return p;
}

static __always_inline void pages_put(void __arena *addr, __u32 pages)
{
	aa_pages_free(addr, pages);
	__sync_fetch_and_add(&aa__root.fault.pages_put, pages);
}

/* --- The retry time ------------------------------------------------------
 * A grow from an allocation (self_grow.bpf.c: growth in steps, and
 * self-growth of one slot) that found nothing to map is tried again
 * AA_GROW_RETRY_NS later at the earliest: until then, the allocations
 * that find the heap short fail at once, without the page kfunc calls
 * that would fail as well (the arena's other users may free pages
 * meanwhile). A chunk going back to the kernel (return_chunk(): trim,
 * teardown) clears it: its slot is free again. A global of the program's
 * object, not of the arena: a rate limit only.
 */
#define AA_GROW_RETRY_NS	10000000ULL	/* 10 ms */

/* When a grow from an allocation may try again (bpf_ktime_get_ns()). */
__u64 aa__grow_retry_at;

static __always_inline bool grow_may_try(__u64 now)
{
	return now >= *(volatile __u64 *)&aa__grow_retry_at;
}

static __always_inline void grow_missed(__u64 now)
{
	*(volatile __u64 *)&aa__grow_retry_at = now + AA_GROW_RETRY_NS;
}

/* The inline API's copy of the root's hot fields (aa_shared.h): filled by
 * publish_fast() after init, cleared by unpublish_fast() before teardown. */
struct aa_fast aa_fast SEC(".data.aa_fast");

/* Copy the hot fields, then the CPU caches' addresses, then the arena
 * size (the inline free's gate), each step visible before the next
 * (exchange: full barrier).
 * Without caches only root and arena_base are set (where tools find the
 * heap and map the arena: they never change), and the inline API always
 * calls the global functions, which serve everything from the heap.
 * REQUIRES: heap published, caches released. */
static void publish_fast(void)
{
	__u32 n = aa__root.nr_cpus, off;
	int cpu;

	aa_fast.root = (__u64)&aa__root;
	aa_fast.arena_base = aa__root.arena_base;
	aa_fast.slots = aa__root.slots;
	aa_fast.defer = aa__root.flags & AA_F_DEFER;
	if (aa__root.flags & AA_F_NO_CACHES)
		return;
	aa_fast.key = aa__root.cache_key;
	aa_fast.zero = 0;
	/* debug mode: no cache address and no arena size for the inline
	 * API, whose every call then goes through the global functions
	 * (debug.bpf.c); the library finds the caches in the root */
	if (aa__root.flags & AA_F_DEBUG)
		return;
	aa_for(cpu, 0, n < AA_MAX_CPUS ? n : AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu];
		aa_fast.cc[cpu] = off ? aa__root.arena_base + off : 0;
	}
	__sync_lock_test_and_set(&aa_fast.arena_size, aa__root.arena_size);
}

/* Stop new inline calls from finding the heap: arena size and every cache
 * address to 0 (a call that read them already fails its claim on a cache
 * that teardown holds, or is refused by the global function it falls to). */
static void unpublish_fast(void)
{
	int cpu;

	__sync_lock_test_and_set(&aa_fast.arena_size, 0);
	aa_for(cpu, 0, AA_MAX_CPUS)
		aa_fast.cc[cpu] = 0;
}

/* --- Readers of the mmap ---------------------------------------------------
 * The returner's side of the reader pin (aa_shared.h, AA_READERS_*): every
 * page a userspace reader may read (chunk metadata, CPU caches) goes back
 * between close_readers() returning true and open_readers().
 */

static void open_readers(void)
{
	__sync_fetch_and_sub(&aa__root.mmap_readers, AA_READERS_RETURNER);
}

/* Count us as a returner and wait until no reader is inside a read: true.
 * false (counted): a reader stayed for AA_READERS_WAIT_NS; we are no
 * longer counted and must return nothing. */
static bool close_readers(void)
{
	__u64 t0 = bpf_ktime_get_ns();
	__u32 readers;

	/* a full barrier: readers counted after it see us */
	readers = __sync_fetch_and_add(&aa__root.mmap_readers, AA_READERS_RETURNER);
	aa_repeat(AA_MAX_LOOPS) {
		if (!(readers & (AA_READERS_RETURNER - 1)))
			return true;
		readers = READ_ONCE_ARENA(aa__root.mmap_readers);
		if (bpf_ktime_get_ns() - t0 >= AA_READERS_WAIT_NS)
			break;
	}
	open_readers();
	aa_count(reader_stalls);
	return false;
}

/* Every CPU's and user cache back to the kernel: a failed init. Caches
 * that a reader of the mmap holds on to are kept (init reuses them). */
static void free_caches(void)
{
	__u32 off;
	int cpu, i;

	if (!close_readers())
		return;
	aa_for(cpu, 0, AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu];
		if (!off)
			continue;
		aa__root.cpu_cache_off[cpu] = 0;
		pages_put(aa_addr(off), AA_CPU_CACHE_PAGES);
	}
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		off = aa__root.user.off[i];
		if (!off)
			continue;
		aa__root.user.off[i] = 0;
		pages_put(aa_addr(off), AA_CPU_CACHE_PAGES);
	}
	open_readers();
	aa__root.nr_cpus = 0;
}

/* Empty cc (a cache kept from before a teardown, or fresh) and set its
 * caps from the tunables. REQUIRES: heap not published, or cc claimed. */
static __always_inline void reset_cache(struct aa_cpu_cache __arena *cc)
{
	__u32 cap;
	int c;

	aa_for(c, 0, AA_NR_CLASSES) {
		cap = aa__root.tun.cpu_cache_cap[c];
		cc->cls[c].count = 0;
		cc->cls[c].cap = cap < AA_CPU_CACHE_MAX ? cap : AA_CPU_CACHE_MAX;
	}
}

/* --- Teardown claims -------------------------------------------------------
 * A teardown claims every cache as AA_CC_TEARDOWN and keeps the claims until
 * init (or gives them back when it fails); only a claim so taken is ever
 * given back by a teardown or an init, with a cmpxchg from AA_CC_TEARDOWN,
 * so neither releases a claim that a thread or a drain holds. How a cache
 * registered during a teardown is kept out: aa_shared.h, "User caches".
 */

/* Claim the cache at arena offset off for a teardown (the only one:
 * user.closing), unless a teardown holds it already (a CPU cache init
 * kept unpublished). True when it does now (or off is 0: no cache). */
static __always_inline bool teardown_claim(__u32 off)
{
	__u32 v;

	if (!off)
		return true;
	v = __sync_val_compare_and_swap(&((struct aa_cpu_cache __arena *)aa_addr(off))->busy,
					AA_CC_FREE, AA_CC_TEARDOWN);
	return v == AA_CC_FREE || v == AA_CC_TEARDOWN;
}

/* Give back the teardown's claim of the cache at off (0: none); any other
 * claim stays. */
static __always_inline void teardown_release(__u32 off)
{
	if (off)
		__sync_val_compare_and_swap(&((struct aa_cpu_cache __arena *)aa_addr(off))->busy,
					    AA_CC_TEARDOWN, AA_CC_FREE);
}

/* No owner for user cache cc: the owner fields cleared, owner_pid last
 * (an OPEN may take it once it reads 0). REQUIRES: cc claimed. */
static __always_inline void user_cache_disown(struct aa_cpu_cache __arena *cc)
{
	cc->owner_tid = 0;
	cc->owner_start = 0;
	cc->owner_exec = 0;
	__aa_store_release(&cc->owner_pid, 0);
}

/* The user caches a teardown kept (it left them claimed) and those
 * registered since by an OPEN that then failed (unclaimed, no one's):
 * emptied, disowned and released; gen tells their former owners to open
 * again, and OPENs work again. A cache someone else holds a claim of
 * cannot be reset: by the protocol there is none; one is left to its
 * holder, out of the table (counted as corrupt).
 * REQUIRES: heap not published (init). */
static void init_user_caches(void)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	int i;

	__sync_fetch_and_add(&aa__root.user.gen, 1);
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		off = aa__root.user.off[i];
		if (!off)
			continue;
		if (!teardown_claim(off)) {
			aa__root.user.off[i] = 0;
			aa_fail(AA_ERR_CORRUPT);
			continue;
		}
		cc = aa_addr(off);
		reset_cache(cc);
		user_cache_disown(cc);
		teardown_release(off);
	}
	WRITE_ONCE_ARENA(aa__root.user.closing, 0);
}

/* A new user cache for process pid (its owner from the start: no OPEN can
 * take it before its owner fields are set), registered at the first free
 * index. Returns the index, -ENOMEM (no pages) or -ENOSPC (all
 * AA_MAX_USER_CACHES registered). Sleepable only (user_cache.bpf.c). */
int aa__arena_user_cache_new(__u32 pid)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	int i;

	if (!pid)
		return -EINVAL;
	cc = pages_get(NULL, AA_CPU_CACHE_PAGES);
	if (!cc)
		return -ENOMEM;
	reset_cache(cc);	/* fresh pages: busy == AA_CC_FREE */
	cc->owner_pid = pid;
	off = (__u64)cc - aa__root.arena_base;
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		cc->cpu = AA_USER_CACHE | i;
		if (__sync_val_compare_and_swap(&aa__root.user.off[i], 0, off) == 0)
			return i;
	}
	pages_put(cc, AA_CPU_CACHE_PAGES);
	return -ENOSPC;
}

/*
 * Give CPUs 0 .. n-1 a cache (n = 0: none) and take them from the others.
 * On -ENOMEM every cache is freed (free_caches()).
 * A cache kept from before a teardown is emptied and released (teardown
 * left it claimed); its event counters are kept. So are the user caches
 * (init_user_caches()).
 * REQUIRES: heap not published (init).
 */
static int init_caches(__u32 n)
{
	struct aa_cpu_cache __arena *cc;
	__u32 off;
	bool drop;
	int cpu;

	drop = close_readers();	/* else the caches of CPUs >= n are kept */
	aa_for(cpu, 0, AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu];
		if (cpu >= n) {
			if (off && drop) {
				aa__root.cpu_cache_off[cpu] = 0;
				pages_put(aa_addr(off), AA_CPU_CACHE_PAGES);
			}
			continue;
		}
		if (!off) {
			cc = pages_get(NULL, AA_CPU_CACHE_PAGES);
			if (!cc) {
				free_caches();	/* none is published: no one holds one */
				if (drop)
					open_readers();
				return -ENOMEM;
			}
			cc->cpu = cpu;	/* fresh pages: busy == AA_CC_FREE, counts 0 */
			aa__root.cpu_cache_off[cpu] = (__u64)cc - aa__root.arena_base;
		} else {
			cc = aa_addr(off);
		}
		reset_cache(cc);
		teardown_release(off);	/* kept from before a teardown: its claim */
	}
	if (drop)
		open_readers();
	aa__root.nr_cpus = n;
	init_user_caches();
	return 0;
}

/* No chunk has a free block: the page heap's bitmaps (per-chunk lists go
 * with their chunk's metadata). REQUIRES: heap not published, or the heap
 * lock held by teardown. */
static void clear_order_maps(void)
{
	int i;

	aa_for(i, 0, AA_NR_ORDERS * (AA_MAX_SLOTS / 64))
		aa__root.order_map[i / (AA_MAX_SLOTS / 64)][i % (AA_MAX_SLOTS / 64)] = 0;
	aa_for(i, 0, AA_NR_ORDERS)
		aa__root.order_summary[i] = 0;
}

/* Empty central lists, and the class table for tools that read the root.
 * REQUIRES: heap not published (init, or teardown after unpublishing). */
static void init_classes(void)
{
	int c;

	aa_for(c, 0, AA_NR_CLASSES) {
		aa__root.central[c].head = AA_NIL;
		aa__root.central[c].spans = 0;
		aa__root.central[c].objs_out = 0;
		aa__root.class_size[c] = aa_class(c)->size;
		aa__root.class_pages[c] = aa_class(c)->pages;
	}
	/* deferred free: empty limbo (a teardown dropped what it held) */
	aa__root.defer.limbo[0] = AA_NIL;
	aa__root.defer.limbo[1] = AA_NIL;
	aa__root.defer.pending_objs = 0;
	aa__root.defer.pending_bytes = 0;
	aa__root.defer.reclaiming = 0;
	aa_reclaim_run.rest = AA_NIL;
	debug_reset();		/* the quarantine's objects are gone too */
}

/* --- The root's tables ---------------------------------------------------
 * The slot table (nr_slots entries, in whole pages) and, for a heap with
 * CPU caches, the transfer caches: pages mapped where the kernel likes by
 * the first init that needs them, kept for the arena's life as the root
 * is (a teardown empties them, the next init reuses them; a failed init
 * keeps them too), in the page ledger as table_pages. Each is installed
 * by one compare-and-swap of its 8-byte word (the slot table's address;
 * the transfer caches' offset and count), so inits that race keep the
 * first one's and give theirs back, with no init claim: self-init maps
 * its table before it claims (it holds the claim with preemption
 * disabled, where 6.12 allows no page kfunc and no global call).
 */

/* The slots of an arena of bytes bytes (<= 4 GiB): nr_slots. */
static __always_inline __u32 slot_count(__u64 bytes)
{
	__u32 n = (bytes + AA_CHUNK_SIZE - 1) >> AA_CHUNK_SHIFT;

	return n < AA_MAX_SLOTS ? n : AA_MAX_SLOTS;
}

/* Table tc (the transfer caches; else the slot table) of pages pages,
 * mapped and installed in the root's word for it (0 while it has none):
 * the slot table's address, the transfer caches' offset from base (the
 * arena's user address) | AA_NR_CLASSES << 32. Returns 0 (installed, by
 * this call or another), or -ENOMEM. Any time before the heap is
 * published. A global function: verified once. */
int aa__arena_table(__u64 base, __u32 pages, __u32 tc)
{
	__u64 __arena *word = tc ? (__u64 __arena *)&aa__root.tc_off : &aa__root.slots;
	__u64 hi = tc ? (__u64)AA_NR_CLASSES << 32 : 0;
	void __arena *p;

	if (READ_ONCE_ARENA(*word))
		return 0;
	p = pages_get(NULL, pages);
	if (!p)
		return -ENOMEM;
	if (__sync_val_compare_and_swap(word, 0, ((__u64)p - (tc ? base : 0)) | hi))
		pages_put(p, pages);	/* another init's was first */
	else
		__sync_fetch_and_add(&aa__root.table_pages, pages);
	return 0;
}

/* The slot table of an arena of bytes bytes at base, and the transfer
 * caches if caches: installed. Returns 0 or -ENOMEM. */
static __always_inline int tables_get(__u64 base, __u64 bytes, bool caches)
{
	int err = aa__arena_table(base, AA_SLOT_TABLE_PAGES(slot_count(bytes)), 0);

	if (!err && caches)
		err = aa__arena_table(base, AA_TC_TABLE_PAGES, 1);
	return err;
}

/* The root has the tables the heap needs: 0 or -ENOMEM. */
static __always_inline int tables_check(bool caches)
{
	return !aa__root.slots || (caches && !aa__root.tc_off) ? -ENOMEM : 0;
}

/* Empty transfer caches (a teardown emptied them already; fresh pages are
 * empty). No lock: the heap is not published, and the callers that reach
 * them without a CPU cache claim touch nothing under their lock unless it
 * is (tc_lock_ready()); an object that a free pushed while a teardown ran
 * belongs to no heap now.
 * REQUIRES: heap not published (init), tc_off set. */
static void init_transfer_caches(void)
{
	int c;

	aa_for(c, 0, AA_NR_CLASSES)
		tc_of(c)->count = 0;
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

/* The arena at arena_base, arena_size bytes, holds the root: 0 or -EINVAL. */
static __always_inline int geometry_check(__u64 arena_base, __u64 arena_size)
{
	__u64 root = (__u64)&aa__root;

	if (arena_size == 0 || arena_size > (1ULL << 32) ||
	    (arena_size & (AA_PAGE_SIZE - 1)) || (arena_base & (AA_PAGE_SIZE - 1)) ||
	    root < arena_base || root + sizeof(aa__root) > arena_base + arena_size)
		return -EINVAL;
	return 0;
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
	err = tables_check(!(flags & AA_F_NO_CACHES));
	if (err)
		return err;
	clear_order_maps();
	init_classes();
	if (aa__root.tc_off)
		init_transfer_caches();
	aa__root.parked = AA_NIL;
	aa__root.flags = flags;
	aa__root.need_refill = 0;
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
	err = init_caches(nr_cpus);
	if (err)
		return err;
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

/* Give back the pages of the chunk at arena offset off that its page map
 * does not mark absent, one by one. */
static __always_inline void put_present(__u64 off, aa_meta_t *meta)
{
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES)
		if (meta->pm[p & (AA_CHUNK_PAGES - 1)] != AA_PM(AA_PM_ABSENT, 0))
			pages_put(aa_addr(off + ((__u64)p << AA_PAGE_SHIFT)), 1);
}

/* Return a RELEASING slot's chunk pages and metadata pages, then make the
 * slot mappable again. meta_off cannot change meanwhile: no grower takes a
 * RELEASING slot. */
static void return_chunk(__u32 slot)
{
	__u32 s = slot & (AA_MAX_SLOTS - 1);
	aa_meta_t *meta = aa_addr(slot_at(s)->meta_off);

	*(volatile __u64 *)&aa__grow_retry_at = 0;	/* a slot to grow into */
	if (meta->absent)	/* a partial chunk: only its pages */
		put_present((__u64)s << AA_CHUNK_SHIFT, meta);
	else
		pages_put(aa_addr(s << AA_CHUNK_SHIFT), AA_CHUNK_PAGES);
	if (aa__fault_trim_delay_ns)
		fault_delay(aa__fault_trim_delay_ns);
	pages_put(meta, aa_meta_pages());
	aa__buddy_release_slot(s);
}

/* Give back the teardown's claims of every CPU and user cache (a failed
 * teardown: the only one, user.closing says), and let OPENs and
 * teardowns in again. */
static __always_inline void release_caches(void)
{
	int cpu, i;

	aa_for(cpu, 0, AA_MAX_CPUS)
		teardown_release(aa__root.cpu_cache_off[cpu & (AA_MAX_CPUS - 1)]);
	aa_for(i, 0, AA_MAX_USER_CACHES)
		teardown_release(aa__root.user.off[i & (AA_MAX_USER_CACHES - 1)]);
	WRITE_ONCE_ARENA(aa__root.user.closing, 0);
}

/* Claim every CPU and user cache for teardown, from this CPU (the CPU
 * cache claim: internal.h's model), after setting user.closing: one
 * teardown at a time, and a cache registered meanwhile is claimed here or
 * its OPEN fails (aa_shared.h, "User caches"). Returns 0 with all claimed
 * and closing set, or -EBUSY with none claimed and closing as it was (a
 * program or a user thread is inside one, or another teardown runs). */
static int claim_all_caches(void)
{
	int cpu, i;

	if (__sync_lock_test_and_set(&aa__root.user.closing, 1))
		return -EBUSY;
	aa_for(cpu, 0, AA_MAX_CPUS)
		if (!teardown_claim(aa__root.cpu_cache_off[cpu & (AA_MAX_CPUS - 1)]))
			goto busy;
	aa_for(i, 0, AA_MAX_USER_CACHES)
		if (!teardown_claim(aa__root.user.off[i & (AA_MAX_USER_CACHES - 1)]))
			goto busy;
	return 0;
busy:
	release_caches();
	return -EBUSY;
}

/* Under the heap lock: unpublish, forget every list, mark every mapped slot
 * RELEASING. Returns the number of such slots, or -EBUSY (nothing changed)
 * if a trim is returning a chunk or a transfer-cache lock is held.
 * REQUIRES: heap lock held; all CPU caches claimed. */
static int teardown_locked(void)
{
	struct aa_transfer_cache __arena *tc;
	struct aa_slot __arena *st;
	__u32 nr_slots = aa__root.nr_slots, n = AA_ZERO, k;
	int s, c, err = 0;


	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS)
		if (slot_at(s)->state == AA_SLOT_RELEASING)
			return -EBUSY;
	aa_for(c, 0, aa__root.tc_off ? AA_NR_CLASSES : 0) {	/* heap lock first: allowed order */
		tc = tc_of(c);
		if (aa_lock_acquire(&tc->lock, 0)) {
			err = -EBUSY;
			continue;
		}
		tc->count = 0;
		aa_lock_release(&tc->lock);
	}
	if (err)
		return err;
	unpublish_fast();	/* new inline calls: the global functions */
	__sync_lock_test_and_set(&aa__root.magic, 0);	/* new callers: UNINIT */
	clear_order_maps();
	for (k = 0; k < AA_NR_ORDERS; k++)
		aa__root.stats.free_blocks[k] = 0;
	/* the parked frees go with every other block: completed, for the
	 * counters (frees_unparked <= frees_parked, heap.bpf.c) */
	aa__root.parked = AA_NIL;
	aa__root.stats.frees_unparked = READ_ONCE_ARENA(aa__root.stats.frees_parked);
	init_classes();		/* unpublished above: empty central lists */
	aa__root.stats.nr_chunks = 0;
	aa__root.stats.large_chunks = 0;
	aa__root.stats.span_pages = 0;
	aa__root.stats.run_pages = 0;
	aa__root.stats.absent_pages = 0;
	aa__root.stats.pages_mapped = 0;
	aa__root.stats.bytes_in_use = 0;
	aa__root.stats.live_allocs = 0;
	aa__root.large_bytes_in_use = 0;
	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		st = slot_at(s);
		if (st->state == AA_SLOT_UNMAPPED)
			continue;
		st->state = AA_SLOT_RELEASING;
		st->nr_chunks = 0;
		st->large_pages = 0;
		n++;
	}
	return n;
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
	struct aa_cpu_cache __arena *cc;
	__u32 nr_slots = aa__root.nr_slots, off;
	int s, n, err, cpu, c;

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
	aa_for(cpu, 0, AA_MAX_CPUS) {
		off = aa__root.cpu_cache_off[cpu];
		if (!off)
			continue;
		cc = aa_addr(off);
		aa_for(c, 0, AA_NR_CLASSES)
			cc->cls[c].count = 0;
	}
	aa_for(cpu, 0, AA_MAX_USER_CACHES) {
		off = aa__root.user.off[cpu];
		if (!off)
			continue;
		cc = aa_addr(off);
		aa_for(c, 0, AA_NR_CLASSES)
			cc->cls[c].count = 0;
	}
	open_readers();
	aa__root.stats.nr_trims += n;
	return n;
}
