// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena.bpf.c - tier 4: the arena map, the root, and page grant/return.
 *
 * Role:       own the allocator's root (an arena global) and move whole
 *             chunks between the kernel and the buddy tier.
 * From below: pages from bpf_arena_alloc_pages(), at addresses we choose for
 *             chunks (slot s = arena_base + s MiB) and wherever the kernel
 *             puts them for chunk metadata.
 * To above:   aa_buddy_add_chunk() of zeroed chunks; trim/teardown take
 *             entirely free chunks back (aa_buddy_take_free_chunk()).
 * Locking:    page kfuncs are called with no lock held (they sleep); the slot
 *             table only changes inside buddy.bpf.c under the heap lock. Two
 *             growers racing for one slot are arbitrated by the kernel: the
 *             second bpf_arena_alloc_pages() at that address fails and it
 *             moves on.
 *
 * SLEEPABLE ONLY: every function here may call a page kfunc. They are only
 * called from SEC("syscall") programs (entry.bpf.c); nothing on the alloc
 * or free path reaches this file.
 *
 * Slots that hold anything else (the root's own pages, metadata pages, a
 * user's pages) simply fail to map as a chunk and are skipped.
 */
#include "internal.h"

/* The root. Zero until aa_arena_init() sets the magic. */
struct aa_root __arena aa_root;

/* Pass to aa_arena_init(): the arena's user address and size. The root must
 * lie inside it. Idempotent for the same arena. */
int aa_arena_init(__u64 arena_base, __u64 arena_size)
{
	__u64 root = (__u64)&aa_root;
	__u32 k;

	if (arena_size == 0 || arena_size > (1ULL << 32) ||
	    (arena_size & (AA_PAGE_SIZE - 1)) || (arena_base & (AA_PAGE_SIZE - 1)))
		return -EINVAL;
	if (root < arena_base || root + sizeof(aa_root) > arena_base + arena_size)
		return -EINVAL;
	if (aa_heap_ready())
		return aa_root.arena_base == arena_base ? 0 : -EEXIST;

	aa_root.version = AA_LAYOUT_VERSION;
	aa_root.root_size = sizeof(aa_root);
	aa_root.arena_base = arena_base;
	aa_root.arena_size = arena_size;
	aa_root.nr_slots = arena_size >> AA_CHUNK_SHIFT;
	if (aa_root.nr_slots > AA_MAX_SLOTS)
		aa_root.nr_slots = AA_MAX_SLOTS;
	for (k = 0; k < AA_NR_ORDERS; k++)
		aa_root.free_head[k] = AA_NIL;
	aa_barrier();
	WRITE_ONCE_ARENA(aa_root.magic, AA_ROOT_MAGIC);
	return 0;
}

/*
 * Give each CPU its own cache pages, and set the tunables and the cache
 * key. REQUIRES: aa_arena_init() done; the loader already checked tun.
 */
int aa_arena_init_caches(__u32 nr_cpus, __u32 flags)
{
	struct aa_cpu_cache __arena *cc;
	int cpu;

	aa_root.flags = flags;
	aa_root.cache_key = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32() | 1;
	if (flags & AA_F_NO_CACHES)
		return 0;
	if (nr_cpus == 0 || nr_cpus > AA_MAX_CPUS)
		return -EINVAL;
	bpf_for(cpu, 0, nr_cpus) {
		if (aa_root.cpu_cache_off[cpu & (AA_MAX_CPUS - 1)])
			continue;	/* re-init after teardown keeps them */
		cc = bpf_arena_alloc_pages(&arena, NULL, AA_CPU_CACHE_PAGES, NUMA_NO_NODE, 0);
		if (!cc)
			return -ENOMEM;
		cc->cpu = cpu;
		aa_root.cpu_cache_off[cpu & (AA_MAX_CPUS - 1)] = (__u64)cc - aa_root.arena_base;
	}
	aa_root.nr_cpus = nr_cpus;
	return 0;
}

/* Map one chunk at the first slot >= cursor that takes it. Returns the
 * next cursor (slot + 1), or -errno. A global function: verified once. */
int aa_arena_grow_one(__u32 cursor)
{
	void __arena *meta, *chunk;
	__u32 nr_slots = aa_root.nr_slots;
	int s, err;

	meta = bpf_arena_alloc_pages(&arena, NULL, AA_META_PAGES, NUMA_NO_NODE, 0);
	if (!meta)
		return -ENOMEM;
	bpf_for(s, cursor, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		if (aa_root.slots[s].state != AA_SLOT_UNMAPPED)
			continue;
		chunk = bpf_arena_alloc_pages(&arena, aa_addr(s << AA_CHUNK_SHIFT),
					      AA_CHUNK_PAGES, NUMA_NO_NODE, 0);
		if (!chunk)
			continue;	/* something else lives in this slot */
		err = aa_buddy_add_chunk(s, (__u64)meta - aa_root.arena_base);
		if (err) {
			bpf_arena_free_pages(&arena, chunk, AA_CHUNK_PAGES);
			bpf_arena_free_pages(&arena, meta, AA_META_PAGES);
			return err;
		}
		return s + 1;
	}
	bpf_arena_free_pages(&arena, meta, AA_META_PAGES);
	return -ENOMEM;
}

/* Grow the heap by at least `bytes` (whole chunks). Returns the number of
 * chunks added (> 0), or -errno when none could be added. */
int aa_arena_grow(__u64 bytes)
{
	__u32 want, got = AA_ZERO, cursor = AA_ZERO;
	int i, ret, err = 0;

	if (!aa_heap_ready())
		return -ENODEV;
	if (bytes == 0)
		return -EINVAL;
	if (bytes > aa_root.arena_size)	/* as much as fits */
		bytes = aa_root.arena_size;
	want = (bytes + AA_CHUNK_SIZE - 1) >> AA_CHUNK_SHIFT;
	bpf_for(i, 0, want < AA_MAX_SLOTS ? want : AA_MAX_SLOTS) {
		ret = aa_arena_grow_one(cursor);
		if (ret < 0) {
			err = ret;
			break;
		}
		cursor = ret;
		got++;
	}
	if (got < want && !got)
		return err ? err : -ENOMEM;
	return got;
}

/* Return a chunk's pages and its metadata pages. REQUIRES: the slot was
 * taken out of the heap by aa_buddy_take_free_chunk(). */
static void return_chunk(__u32 slot)
{
	bpf_arena_free_pages(&arena, aa_addr(slot << AA_CHUNK_SHIFT), AA_CHUNK_PAGES);
	bpf_arena_free_pages(&arena, aa_addr(aa_root.slots[slot & (AA_MAX_SLOTS - 1)].meta_off),
			     AA_META_PAGES);
}

/* Return entirely free chunks to the kernel, keeping keep_bytes of them.
 * Returns the number of chunks returned, or -errno. */
int aa_arena_trim(__u64 keep_bytes)
{
	__u32 keep, n = AA_ZERO;
	int slot = -ENOENT;

	if (!aa_heap_ready())
		return -ENODEV;
	if (keep_bytes == AA_KEEP_DEFAULT)
		keep_bytes = aa_root.tun.keep_bytes;
	keep = keep_bytes >> AA_CHUNK_SHIFT;
	bpf_repeat(AA_MAX_SLOTS) {
		slot = aa_buddy_take_free_chunk(keep);
		if (slot < 0)
			break;
		return_chunk(slot);
		n++;
	}
	if (slot < 0 && slot != -ENOENT && !n)
		return slot;
	return n;
}

/* Empty every free list and zero the gauges (not the event counters). */
static void reset_lists(struct aa_root __arena *r)
{
	__u32 k;

	for (k = 0; k < AA_NR_ORDERS; k++) {
		r->free_head[k] = AA_NIL;
		r->stats.free_blocks[k] = 0;
	}
	r->stats.nr_chunks = 0;
	r->stats.large_chunks = 0;
	r->stats.pages_mapped = 0;
	r->stats.bytes_in_use = 0;
	r->stats.live_allocs = 0;
	r->large_bytes_in_use = 0;
}

/* Forget every cached object (their pages are gone).
 * REQUIRES: teardown; no program is using the heap (this touches other
 * CPUs' caches, which is otherwise never done). */
static void reset_caches(void)
{
	struct aa_cpu_cache __arena *cc;
	__u32 c;
	int cpu;

	for (c = 0; c < AA_NR_CLASSES; c++)
		aa_root.tc[c].count = 0;
	bpf_for(cpu, 0, AA_MAX_CPUS) {
		__u32 off = aa_root.cpu_cache_off[cpu];

		if (!off)
			continue;
		cc = aa_addr(off);
		for (c = 0; c < AA_NR_CLASSES; c++)
			cc->count[c] = 0;
	}
}

/* Return every page, live allocations included, and forget the heap.
 * REQUIRES: no other program uses the heap meanwhile. */
int aa_arena_teardown(void)
{
	__u32 nr_slots = aa_root.nr_slots, n = AA_ZERO;
	int s;

	if (!aa_heap_ready())
		return -ENODEV;
	if (aa_lock())
		return -EBUSY;
	WRITE_ONCE_ARENA(aa_root.magic, 0);	/* new callers fail with UNINIT */
	aa_unlock();
	bpf_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		if (aa_root.slots[s].state == AA_SLOT_UNMAPPED)
			continue;
		return_chunk(s);
		/* other fields are meaningless while UNMAPPED */
		aa_root.slots[s].state = AA_SLOT_UNMAPPED;
		n++;
	}
	reset_lists(&aa_root);
	reset_caches();
	aa_root.stats.nr_trims += n;
	return n;
}
