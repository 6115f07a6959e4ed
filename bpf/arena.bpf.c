// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena.bpf.c - the bottom of the heap: the root, pages from the kernel,
 * the readers' pin and the root's tables.
 *
 * Role:       own the allocator's root (an arena global); get and give
 *             back every page (pages_get() / pages_put(): fault injection
 *             and the page ledger), the only calls of the page kfuncs;
 *             keep the grow retry time; the returner's side of the reader
 *             pin; map the root's tables (slot table, transfer caches).
 * From below: the embedder's AA_ARENA_FUNCS() (aa_pages_alloc()).
 * To above:   every tier's pages (chunks, metadata, caches, tables) and
 *             the root; lifecycle.bpf.c's init and teardown.
 * Locking:    page kfuncs are called with no lock held (they sleep, and
 *             6.12 allows none with preemption disabled).
 *
 * Every page comes and goes through pages_get() / pages_put(). Invariants,
 * at rest (no init, grow, trim or teardown running):
 *   fault.pages_got - fault.pages_put
 *     == stats.pages_mapped + (CPUs with a cache + user caches)
 *        * AA_CPU_CACHE_PAGES + table_pages (the root's tables)
 *   stats.pages_mapped
 *     == nr_chunks * (AA_CHUNK_PAGES + aa_meta_pages()) - absent_pages
 * so every failure path gives back what it got (lifecycle.bpf.c: init;
 * grow.bpf.c: grow).
 */
#include "internal.h"
#include "arena.h"

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

/* A slot came free (a chunk went back): growth may try at once. */
static __always_inline void grow_retry_clear(void)
{
	*(volatile __u64 *)&aa__grow_retry_at = 0;
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

/* --- The root's tables ---------------------------------------------------
 * The slot table (nr_slots entries) with the page map after it
 * (AA_ROOT_TABLE_PAGES(), aa_shared.h) and, for a heap with CPU caches,
 * the transfer caches: pages mapped where the kernel likes by
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
	int err = aa__arena_table(base, AA_ROOT_TABLE_PAGES(slot_count(bytes)), 0);

	if (!err && caches)
		err = aa__arena_table(base, AA_TC_TABLE_PAGES, 1);
	return err;
}

/* The page map's address: after the root's slot table (AA_PM_TABLE()). */
static __always_inline __u64 pm_table(void)
{
	__u32 n = aa__root.nr_slots;

	return AA_PM_TABLE(aa__root.slots, n < AA_MAX_SLOTS ? n : AA_MAX_SLOTS);
}

/* The root has the tables the heap needs: 0, with the page map's address
 * in aa__root.pm, or -ENOMEM. REQUIRES: aa__root.nr_slots set. */
static __always_inline int tables_ready(bool caches)
{
	if (!aa__root.slots || (caches && !aa__root.tc_off))
		return -ENOMEM;
	aa__root.pm = pm_table();
	return 0;
}

/* The arena at arena_base, arena_size bytes, holds the root: 0 or -EINVAL. */
static __always_inline int geometry_check(__u64 arena_base, __u64 arena_size)
{
	__u64 root = (__u64)&aa__root;

	if (arena_size == 0 || arena_size > (__u64)AA_MAX_ARENA_PAGES * AA_PAGE_SIZE ||
	    (arena_size & (AA_PAGE_SIZE - 1)) || (arena_base & (AA_PAGE_SIZE - 1)) ||
	    root < arena_base || root + sizeof(aa__root) > arena_base + arena_size)
		return -EINVAL;
	return 0;
}

/* --- Checks (check.bpf.c's aa__heap_check()) -------------------------------- */

/* The root's tables: a slot table on a page of the arena, the page map
 * after it; the transfer caches wherever the heap has CPU caches;
 * table_pages their pages (the page ledger). Returns 0 or 26. They are
 * installed before the heap is first published, and never change after. */
static __always_inline int arena_check_tables(void)
{
	__u64 rel = aa__root.slots - aa__root.arena_base;
	__u32 pages;

	if (!aa__root.slots || (rel & (AA_PAGE_SIZE - 1)) || rel >= aa__root.arena_size ||
	    aa__root.pm != pm_table())
		return 26;
	if ((!(aa__root.flags & AA_F_NO_CACHES) && !aa__root.tc_off) ||
	    (aa__root.tc_off && aa__root.tc_classes != AA_NR_CLASSES))
		return 26;
	pages = AA_ROOT_TABLE_PAGES(aa__root.nr_slots) + (aa__root.tc_off ? AA_TC_TABLE_PAGES : 0);
	return pages == aa__root.table_pages ? 0 : 26;
}
