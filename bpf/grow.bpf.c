// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * grow.bpf.c - tier 5, continued: chunks from the kernel into the page heap
 * (grow: whole chunks, and partial ones).
 *
 * Role:       map chunks at addresses we choose (slot s = arena_base + s
 *             MiB), metadata wherever the kernel puts it.
 * From below: arena.bpf.c's pages_get() / pages_put() (page ledger, fault
 *             injection); buddy_chunks.bpf.c's aa__buddy_add_chunk() /
 *             aa__buddy_add_partial() of fresh chunks,
 *             aa__buddy_fill_page() of a partial chunk's page mapped later.
 * To above:   aa__arena_grow*() for lifecycle.bpf.c's init and the
 *             aa__grow program, aa__arena_grow_some() for the allocations
 *             that may map pages (self_grow.bpf.c). Chunks go back by
 *             lifecycle.bpf.c's trim and teardown.
 * Locking:    page kfuncs are called with no lock held (they sleep); the
 *             slot table only changes under the heap lock (buddy.bpf.c).
 *             Two growers racing for one slot are arbitrated by the
 *             kernel: the second one's page allocation at that address
 *             fails and it moves on.
 *
 * SLEEPABLE ONLY (on Linux >= 7.0 every program may call
 * the page kfuncs: aa__arena_grow_some() is for those too). Grow gets a
 * chunk's metadata pages first; a slot whose chunk pages fail is skipped,
 * and when no slot takes a whole chunk the first slot with pages to give
 * becomes a partial chunk; when none does, or the page heap refuses it,
 * the metadata pages (and the chunk's) go back. A grow that added some chunks and then failed returns
 * how many it added.
 */
#include "internal.h"
#include "grow.h"
#include "arena.h"
#include "buddy.h"
#include "buddy_chunks.h"

/* A partial chunk at slot s: what the kernel gives of the slot's pages
 * inside the arena, one page at a time, limit at most (the others are
 * another owner's: the root, metadata, caches, a user's pages; past the
 * arena's end; or beyond the limit: fill_page() may map them later),
 * with meta (fresh, zero) as its metadata, where absent_map names the
 * pages it did not get. Returns 0, -ENOENT (no page), or -errno from the
 * page heap; on failure the pages went back and meta is zero again. */
static __always_inline int grow_partial(__u32 s, aa_meta_t *meta, __u32 meta_off,
					__u32 unpublished, __u32 limit)
{
	__u64 off = (__u64)(s & (AA_MAX_SLOTS - 1)) << AA_CHUNK_SHIFT;
	__u64 size = aa__root.arena_size;
	__u32 got = AA_ZERO;
	int p, err;

	aa_for(p, 0, AA_CHUNK_PAGES) {
		if (got >= limit || off + ((__u64)p << AA_PAGE_SHIFT) >= size ||
		    !pages_get(aa_addr(off + ((__u64)p << AA_PAGE_SHIFT)), 1)) {
			meta->absent_map[(p / 64) & (AA_ABSENT_WORDS - 1)] |= 1ULL << (p & 63);
			continue;
		}
		got++;
	}
	meta->absent = AA_CHUNK_PAGES - got;
	if (got == AA_CHUNK_PAGES)	/* every page, one by one */
		err = aa__buddy_add_chunk(s, meta_off, unpublished);
	else
		err = got ? aa__buddy_add_partial(s, meta_off, unpublished) : -ENOENT;
	if (err) {
		aa_for(p, 0, AA_CHUNK_PAGES)
			if (!absent_in(meta, p))
				pages_put(aa_addr(off + ((__u64)p << AA_PAGE_SHIFT)), 1);
		aa_for(p, 0, AA_ABSENT_WORDS)
			meta->absent_map[p & (AA_ABSENT_WORDS - 1)] = 0;
		meta->absent = 0;
	}
	return err;
}

/* Map one chunk at the first slot >= cursor that takes it; when none
 * does, a partial chunk of limit pages at most at the first slot of all
 * that has pages to give (grow_partial(): a small arena, or a slot that
 * the root or other pages share). Returns the next cursor (slot + 1), or
 * -errno. For init and grow (sleepable; limit: a chunk) and
 * aa__arena_grow_some(); self-growth maps runs of whole chunks
 * (self_grow.bpf.c). unpublished: init's first grow. */
static __always_inline int grow_one(__u32 cursor, __u32 unpublished, __u32 limit)
{
	void __arena *meta, *chunk;
	__u32 nr_slots = aa__root.nr_slots, meta_off;
	int s, err;

	meta = pages_get(NULL, aa_meta_pages());
	if (!meta)
		return -ENOMEM;
	meta_off = (__u64)meta - aa__root.arena_base;
	aa_for(s, cursor, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		if (READ_ONCE_ARENA(slot_at(s)->state) != AA_SLOT_UNMAPPED)
			continue;
		chunk = pages_get(aa_addr(s << AA_CHUNK_SHIFT), AA_CHUNK_PAGES);
		if (!chunk)
			continue;	/* something else lives in this slot */
		err = aa__buddy_add_chunk(s, meta_off, unpublished);
		if (err == -EEXIST) {	/* another grower or a trim took it */
			pages_put(chunk, AA_CHUNK_PAGES);
			continue;
		}
		if (err) {
			pages_put(chunk, AA_CHUNK_PAGES);
			pages_put(meta, aa_meta_pages());
			return err;
		}
		return s + 1;
	}
	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {	/* cursor: whole chunks' */
		if (READ_ONCE_ARENA(slot_at(s)->state) != AA_SLOT_UNMAPPED)
			continue;
		err = grow_partial(s, meta, meta_off, unpublished, limit);
		if (!err)
			return s + 1;
		if (err != -ENOENT && err != -EEXIST)
			break;
	}
	pages_put(meta, aa_meta_pages());
	return -ENOMEM;
}

/* grow_one() for sleepable grow: a global function, verified once. */
int aa__arena_grow_one(__u32 cursor, __u32 unpublished)
{
	return grow_one(cursor, unpublished, AA_CHUNK_PAGES);
}

/* Grow the heap by at least `bytes` (whole chunks). Returns the number of
 * chunks added (> 0), or -errno when none could be added.
 * REQUIRES: heap published, or unpublished != 0: init's first grow. */
int aa__arena_grow_chunks(__u64 bytes, __u32 unpublished)
{
	__u32 want, got = AA_ZERO, cursor = AA_ZERO;
	int i, ret, err = 0;

	if (bytes == 0)
		return -EINVAL;
	if (bytes > aa__root.arena_size)	/* as much as fits */
		bytes = aa__root.arena_size;
	want = (bytes + AA_CHUNK_SIZE - 1) >> AA_CHUNK_SHIFT;
	aa_for(i, 0, want < AA_MAX_SLOTS ? want : AA_MAX_SLOTS) {
		ret = aa__arena_grow_one(cursor, unpublished);
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

int aa__arena_grow(__u64 bytes)
{
	if (!aa_heap_ready())
		return -ENODEV;
	return aa__arena_grow_chunks(bytes, 0);
}

/* --- Growth in steps ----------------------------------------------------------
 * aa__arena_grow_some() maps a few pages where an allocation needs them
 * (api.bpf.c's aa_malloc_grow_u64() and aa_calloc_grow_u64()), so that a small arena keeps
 * the rest for its other users (their own page kfunc calls): first the
 * absent pages of partial chunks, one at a time (fill_page()), then a new
 * chunk (grow_one(), a partial one of `want` pages at most). Pages that
 * another owner holds stay absent; the kernel refuses them again on the
 * next call. The caller limits how often it asks an arena that had
 * nothing to give.
 */

/* Page p of the partial chunk at slot s, absent there, mapped and added
 * to the page heap. Returns 1, or 0: the kernel refused the page, or the
 * chunk changed meanwhile (the page went back). */
static __always_inline int fill_page(__u32 s, __u32 p)
{
	void __arena *a = aa_addr(((__u64)s << AA_CHUNK_SHIFT) + ((__u64)p << AA_PAGE_SHIFT));

	if (!pages_get(a, 1))
		return 0;
	if (aa__buddy_fill_page(s, p)) {
		pages_put(a, 1);
		return 0;
	}
	return 1;
}

/* Absent pages of the partial chunk at slot s, want at most, filled.
 * Returns how many. The page map is read without the lock: a page seen
 * absent is checked again under it (aa__buddy_fill_page()). */
static __always_inline __u32 fill_chunk(__u32 s, __u32 want)
{
	__u32 __arena *pm = chunk_pm(s);
	__u64 size = aa__root.arena_size, base = (__u64)s << AA_CHUNK_SHIFT;
	__u32 got = AA_ZERO;
	int p;

	aa_for(p, 0, AA_CHUNK_PAGES) {
		if (got >= want || base + ((__u64)p << AA_PAGE_SHIFT) >= size)
			break;
		if (READ_ONCE_ARENA(pm[p & (AA_CHUNK_PAGES - 1)]) == AA_PM(AA_PM_ABSENT, 0))
			got += fill_page(s, p);
	}
	return got;
}

/* Map at least one page and about want (1 .. a chunk): the pages
 * filled, or those of a new chunk. Returns > 0 when it mapped pages, or
 * -errno (-ENOMEM: the arena had none to give).
 * REQUIRES: heap published. Frame 2 of internal.h's call frames. */
int aa__arena_grow_some(__u32 want)
{
	__u32 nr_slots = aa__root.nr_slots, got = AA_ZERO;
	__u64 w;
	int s, ret;

	if (!aa_heap_ready())
		return -ENODEV;
	if (want < 1 || want > AA_CHUNK_PAGES)
		want = want < 1 ? 1 : AA_CHUNK_PAGES;
	aa_for(s, 0, nr_slots < AA_MAX_SLOTS ? nr_slots : AA_MAX_SLOTS) {
		w = READ_ONCE_ARENA(*(__u64 __arena *)slot_at(s));
		if ((__u32)w != AA_SLOT_CHUNK || !READ_ONCE_ARENA(meta_of(s)->absent))
			continue;
		got += fill_chunk(s, want - got);
		if (got >= want)
			break;
	}
	if (got)
		return got;
	ret = grow_one(0, 0, want);
	return ret < 0 ? ret : want;
}
