/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Layouts shared by test_stress.c and tests/bpf/test_stress.bpf.c. */
#ifndef __TEST_STRESS_H
#define __TEST_STRESS_H

#define ST_SLOTS	4096	/* exchange slots (power of two) */
#define ST_THREADS	64	/* task and userspace threads, at most: owners
				 * 0 .. 63 (test_stress.c: st_user_first on
				 * are userspace's) */
#define ST_IRQ_OWNER	64	/* owner of the perf_event program on CPU c: 64 + c */
#define ST_FLUSH_OWNER	127	/* owner of the final flush */
#define ST_OWNERS	128
#define ST_BULK		16	/* objects per bulk call, at most */

/*
 * A slot holds (low 32 bits of the object's address) << 32 | stamp, 0 when
 * empty. Stamp:
 *   kind << 30 | code << 24 | owner << 16 | seq (16 bits)
 * kind ST_K_CLASS: an object of class `code` (malloc, calloc, bulk), asked
 *   for class_size[code] - (seq & 3) bytes (at least 13); usable size == class size;
 * kind ST_K_RUN: a page run (code 2 .. 63), asked for code * 4096 + 1 +
 *   (seq & 0xfff) bytes; usable size == those bytes rounded up to the page
 *   (code + 1 pages of 4 KiB);
 * kind ST_K_ALIGNED: aa_aligned_alloc() of class `code`'s size (as
 *   ST_K_CLASS); usable size >= that.
 * The object carries the stamp in its first word, its complement in the
 * second, the stamp again in the word at half its size and in its last
 * word (of the size asked for). Whoever takes a slot checks all four before
 * it frees: an object handed to two owners, a stray write or a wrong size
 * shows as a mismatch.
 */
#define ST_K_CLASS	0
#define ST_K_RUN	1
#define ST_K_ALIGNED	2
#define ST_STAMP(kind, code, owner, seq) \
	(((__u32)(kind) << 30) | (((code) & 0x3f) << 24) | (((owner) & 0x7f) << 16) | ((seq) & 0xffff))
#define ST_KIND(s)	((s) >> 30)
#define ST_CODE(s)	(((s) >> 24) & 0x3f)
#define ST_OWNER(s)	(((s) >> 16) & 0x7f)

/* The stamp's four words, for both sides (the BPF programs and the
 * userspace threads): size is the size asked for (st_size() in the BPF
 * file; the words at half of it and last are at offset 8 or more, since it
 * is at least 13, clear of the first two). */
#ifndef __arena
#define __arena		/* userspace: the mmap */
#endif
#ifndef __BPF__
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif
#define ST_W(p, off)	(*(volatile __u32 __arena *)((p) + (off)))

static __always_inline __u64 st_mid(__u64 size)
{
	__u64 off = (size >> 1) & ~3ULL;

	return off < 8 ? 8 : off;
}

static __always_inline __u64 st_last(__u64 size)
{
	return (size - 4) & ~3ULL;
}

static __always_inline void st_stamp_size(__u64 p, __u32 stamp, __u64 size)
{
	ST_W(p, 0) = stamp;
	ST_W(p, 4) = ~stamp;
	ST_W(p, st_mid(size)) = stamp;
	ST_W(p, st_last(size)) = stamp;
}

static __always_inline int st_intact_size(__u64 p, __u32 stamp, __u64 size)
{
	return ST_W(p, 0) == stamp && ST_W(p, 4) == ~stamp && ST_W(p, st_mid(size)) == stamp &&
	       ST_W(p, st_last(size)) == stamp;
}

/* calloc: the words a previous owner stamped, and a few more, are zero. */
static __always_inline int st_zeroed(__u64 p, __u64 size)
{
	return !ST_W(p, 0) && !ST_W(p, 4) && !ST_W(p, st_mid(size)) && !ST_W(p, st_last(size)) &&
	       !ST_W(p, (size >> 2) & ~3ULL) && !ST_W(p, ((size >> 2) * 3) & ~3ULL);
}

/* Allocation calls, by kind. */
enum st_alloc_kind { ST_MALLOC, ST_RUN, ST_CALLOC, ST_ALIGNED, ST_BULK_ALLOC, ST_NR_ALLOC };
/* Frees, by kind. */
enum st_free_kind { ST_FREE, ST_FREE_BULK, ST_DEFER, ST_DEFER_BULK, ST_NR_FREE };

/* What one owner did (a task thread, one CPU's perf_event program, the
 * flush): written by that owner's programs only, read by userspace. Only
 * __u64 fields (test_stress.c sums them as an array). */
struct st_counts {
	__u64 alloc[ST_NR_ALLOC];	/* objects allocated */
	__u64 free[ST_NR_FREE];		/* objects freed (deferred: the call succeeded) */
	__u64 usable;			/* aa_usable_size() checks done */
	__u64 xcpu;			/* frees on another CPU than the allocation's */
	__u64 nulls;			/* objects asked for and not given */
	__u64 nulls_run;		/* of them page runs (the heap lock's) */
	__u64 defer_nomem;		/* deferred frees refused for want of a node
					 * (the object was then freed plainly) */
	__u64 bad_stamp;		/* objects whose stamps were overwritten */
	__u64 bad_free;			/* frees that returned an error */
	__u64 bad_align;		/* addresses off their alignment */
	__u64 bad_zero;			/* calloc objects with non-zero words */
	__u64 bad_usable;		/* aa_usable_size() off the expected size */
	__u64 runs;			/* program runs (IRQ: hard-IRQ runs) */
	__u64 xside;			/* frees of objects the other side (BPF,
					 * userspace) allocated */
} __attribute__((aligned(64)));

/* st_run (syscall): iters steps of the owner `me`. st_flush: empties every
 * slot (as ST_FLUSH_OWNER). */
struct st_args {
	__u32 iters;	/* in */
	__u32 seed;	/* in, not 0 */
	__u32 me;	/* in: owner id, < ST_THREADS */
	__u32 pad;
};

#endif
