// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * debug.bpf.c - debug mode (AA_F_DEBUG): finds users' memory errors with
 * clang-19 on any kernel from 6.12, where BPF has no ASAN.
 *
 * Role:       wraps the front door (alloc.bpf.c) when the heap was
 *             initialised with AA_F_DEBUG. Every allocation gets
 *             AA_DEBUG_TAIL more bytes: a redzone and a trailer that a free
 *             checks (overflow), the 8 bytes before an object are checked
 *             too (underflow), freed class objects are filled with poison
 *             that the next allocation of the object checks (a write after
 *             free), and with a quarantine (tun.quarantine slots) a freed
 *             object waits for that many later frees before it is reused.
 *             Layout, patterns and records: aa_shared.h ("Debug mode").
 * From below: the same tiers as always (the CPU caches stay on):
 *             allocations come through the front door's routing
 *             (alloc.bpf.c: debug_alloc() adds the tail, then
 *             aa__debug_on_alloc() here checks and writes it); frees are
 *             claimed by aa__heap_claim_kind() with the poison as the
 *             tail that says a tier holds an object, and go back through
 *             aa_cpu_cache_free_slow()/aa__heap_return(); new spans'
 *             objects end with the poison too (aa_root.carve_tail, set by
 *             debug_reset()).
 * To above:   aa__debug_on_alloc(), debug_free(), debug_usable() for
 *             alloc.bpf.c; aa__debug_flush() for drain.
 * Reports:    each error is counted in aa__root.debug.errors[kind], the first
 *             AA_DEBUG_RECORDS are kept in aa__root.debug.rec[] (read from
 *             the mmap: `arena-alloc errors`), and every one is written to
 *             the ring buffer aa_debug_rb while it has room (lost ones
 *             counted). The call itself goes on: an allocation still
 *             returns its object, a free still frees (0), as a user would
 *             want from a heap that keeps running.
 * Locking:    none of its own. The object being checked is the caller's
 *             alone: just allocated, or claimed by the free (word 0 = the
 *             FREED mark). The underflow check reads the previous object's
 *             last word, which is always one 64-bit store away from either
 *             a valid trailer (allocated) or the poison (free, cached,
 *             carved): allocation and free each change it with one store,
 *             and no tier writes past word 1 of a free object.
 *             Quarantine: internal.h's model.
 *             Records: a writer reserves an index with an atomic add,
 *             fills the record, and stores seq (1 + index) last.
 *
 * Invisible to the inline API: AA_F_DEBUG is one of AA_FAST_OFF, so
 * publish_fast() leaves aa_fast.cc[] and arena_size at 0, and inline
 * aa_malloc()/aa_free() in users' programs always call the global
 * functions, which come here. The tiers below never ask for the mode.
 */
#include "internal.h"
#include "debug.h"
#include "lookup.h"
#include "heap.h"
#include "cpu_cache.h"

/* The error ring: one struct aa_debug_error per error found. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16384);
} aa_debug_rb SEC(".maps");

static __always_inline bool debug_on(void)
{
	return aa__root.flags & AA_F_DEBUG;
}

/* --- Reports ---------------------------------------------------------------- */

/* Count, keep (the first AA_DEBUG_RECORDS) and publish one error. Fills
 * ts, cpu and seq itself. Any context. */
static __noinline void debug_report(struct aa_debug_error *r)
{
	struct aa_debug_error __arena *slot;
	__u64 idx;

	if (r->kind >= AA_DBG_NR_KINDS)
		return;
	r->ts_ns = bpf_ktime_get_ns();
	r->cpu = bpf_get_smp_processor_id();
	__sync_fetch_and_add(&aa__root.debug.errors[r->kind], 1);
	idx = __sync_fetch_and_add(&aa__root.debug.recorded, 1);
	r->seq = idx + 1;
	if (idx < AA_DEBUG_RECORDS) {
		slot = &aa__root.debug.rec[idx];
		slot->addr = r->addr;
		slot->ts_ns = r->ts_ns;
		slot->found = r->found;
		slot->kind = r->kind;
		slot->cls = r->cls;
		slot->cpu = r->cpu;
		slot->size = r->size;
		slot->req = r->req;
		slot->offset = r->offset;
		aa_store_release(&slot->seq, r->seq);
	}
	if (bpf_ringbuf_output(&aa_debug_rb, r, sizeof(*r), 0))
		__sync_fetch_and_add(&aa__root.debug.events_lost, 1);
}

static __always_inline void report(__u32 kind, __u64 addr, __u32 cls, __u32 size,
				   __u32 req, __s32 offset, __u64 found)
{
	struct aa_debug_error r = {
		.addr = addr, .found = found, .kind = kind, .cls = cls,
		.size = size, .req = req, .offset = offset,
	};

	debug_report(&r);
}

/* --- Layout helpers ---------------------------------------------------------- */

/* The trailer of an object at addr with n requested bytes. */
static __always_inline __u64 trailer(__u64 addr, __u32 n)
{
	return ((__u64)(AA_DEBUG_MAGIC ^ n ^ (__u32)(addr >> 4)) << 32) | n;
}

/* n of a valid trailer t of an object at addr of b bytes, or -1. */
static __always_inline long trailer_n(__u64 addr, __u64 t, __u32 b)
{
	__u32 n = t;

	if (t != trailer(addr, n) || (__u64)n + AA_DEBUG_TAIL > b)
		return -1;
	return n;
}

/* Bytes of the object of kind `kind` (a class, AA_KIND_RUN or
 * AA_KIND_LARGE) that an allocation of n bytes got. */
static __always_inline __u32 debug_bytes(int kind, __u64 n)
{
	if (kind < AA_NR_CLASSES)
		return aa_class(kind)->size;
	return (n + AA_DEBUG_TAIL + AA_PAGE_SIZE - 1) & ~(__u64)(AA_PAGE_SIZE - 1);
}

static __always_inline __u32 report_cls(int kind)
{
	return kind < AA_NR_CLASSES ? kind : AA_DEBUG_CLS_RUN;
}

#define REDZONE_WORD	0xccccccccccccccccULL	/* AA_DEBUG_REDZONE, 8 times */

/*
 * Words of an object, checked four a trip (aa_word_fill() in internal.h
 * fills them so): each aa_for() trip calls the kfunc bpf_iter_num_next,
 * which one word a trip made debug mode's cost grow by ~8-9 ns per 8
 * bytes. (Arena loads need no bounds for the verifier: a bad address
 * faults to 0.)
 */

/* The first of words [from, to) of addr that is not pat, or `to`. */
static __always_inline __u32 word_scan(__u64 addr, __u32 from, __u32 to, __u64 pat)
{
	__u64 __arena *w = (__u64 __arena *)addr;
	__u32 quads = from < to ? (to - from) / 4 : 0, rest = from + quads * 4, i;
	int g;

	aa_for(g, 0, quads) {
		i = from + g * 4;
		if ((w[i] ^ pat) | (w[i + 1] ^ pat) | (w[i + 2] ^ pat) | (w[i + 3] ^ pat)) {
			rest = i;	/* the word is among these four */
			break;
		}
	}
	aa_for(g, rest, to) {
		if (w[g] != pat)
			return g;
	}
	return to;
}


/* Check that a free class object of b bytes at addr kept its poison
 * (words 2 .. b/8-1); report a write after free otherwise, and poison it
 * again (one report per write). */
static __always_inline void poison_check(__u64 addr, int cls, __u32 b)
{
	__u32 to = b / 8, bad = word_scan(addr, 2, to, AA_DEBUG_POISON);

	if (bad >= to)
		return;
	report(AA_DBG_USE_AFTER_FREE, addr, cls, b, 0, bad * 8, ((__u64 __arena *)addr)[bad]);
	aa_word_fill(addr, bad, to, AA_DEBUG_POISON);
}

/* The first byte of the redzone [n, b - 8) of the object at addr that
 * changed, or b. Word 0 is not checked: a free's claim has replaced it
 * with the FREED mark (so a request under 8 bytes has its first
 * redzone bytes unchecked). */
static __always_inline __u32 redzone_scan(__u64 addr, __u32 n, __u32 b)
{
	__u8 __arena *b8 = (__u8 __arena *)addr;
	__u32 head = (n + 7) & ~7U, bad;
	int j;

	aa_for(j, n > 8 ? n : 8, head) {
		if (b8[j] != AA_DEBUG_REDZONE)
			return j;
	}
	bad = word_scan(addr, head / 8, b / 8 - 1, REDZONE_WORD);
	return bad < b / 8 - 1 ? bad * 8 : b;
}

/* --- Allocation ------------------------------------------------------------- */

/*
 * A new allocation of n bytes at addr, of kind `kind`: check the poison
 * of a class object (a write since it was freed; an object not allocated
 * since its span was carved has none: struct aa_span_obj), then write the
 * redzone and the trailer. Calls only debug_report() (static: one frame).
 */
int aa__debug_on_alloc(__u64 addr, int kind, __u64 n)
{
	__u8 __arena *b8 = (__u8 __arena *)addr;
	__u64 __arena *w = (__u64 __arena *)addr;
	__u32 b = debug_bytes(kind, n), head;
	int j;

	if (n + AA_DEBUG_TAIL > b)
		return -EINVAL;		/* cannot be: the caller chose b */
	if (kind < AA_NR_CLASSES && ((aa_span_obj_t *)addr)->fresh != AA_SPAN_FRESH)
		poison_check(addr, kind, b);
	/* redzone: the bytes up to the next word, then whole words */
	head = (n + 7) & ~7U;
	aa_for(j, n, head)
		b8[j] = AA_DEBUG_REDZONE;
	aa_word_fill(addr, head / 8, b / 8 - 1, REDZONE_WORD);
	*(volatile __u64 __arena *)&w[b / 8 - 1] = trailer(addr, n);	/* one store */
	return 0;
}

/* --- Free ------------------------------------------------------------------- */

/*
 * A free of addr (claimed by the caller): check the trailer
 * and the redzone (overflow) and, inside a span, the last word of the
 * object before (underflow); then fill a class object with poison (words
 * 1 .. b/8-1: word 0 is the FREED mark). Returns the number of errors
 * found (each reported). Calls lookup() and debug_report() (static: one
 * frame each, never nested).
 */
int aa__debug_on_free(__u64 addr)
{
	__u64 __arena *w = (__u64 __arena *)addr;
	__u32 off = 0, pmw = 0, b, bad;
	int kind = lookup(addr, &off, &pmw), rcls = report_cls(kind), errs = 0;
	__u64 t, prev;
	long n;

	if (kind < 0)
		return 0;		/* cannot be: the caller claimed it */
	b = kind < AA_NR_CLASSES ? aa_class(kind)->size : kind_bytes(kind, off, pmw);
	if (b < AA_DEBUG_TAIL)
		return 0;
	t = w[b / 8 - 1];
	n = trailer_n(addr, t, b);
	if (n < 0) {
		report(AA_DBG_OVERFLOW, addr, rcls, b, 0, b - 8, t);
		errs++;
	} else if ((bad = redzone_scan(addr, n, b)) < b) {
		report(AA_DBG_OVERFLOW, addr, rcls, b, n, bad, w[bad / 8]);
		errs++;
	}
	/* underflow: inside a span, the object before ends at addr */
	if (kind < AA_NR_CLASSES && ((off & (AA_PAGE_SIZE - 1)) || AA_PM_SPAN_INDEX(pmw))) {
		prev = *(volatile __u64 __arena *)(addr - 8);
		if (prev != AA_DEBUG_POISON && trailer_n(addr - b, prev, b) < 0) {
			report(AA_DBG_UNDERFLOW, addr, rcls, b, n > 0 ? n : 0, -8, prev);
			errs++;
		}
	}
	if (kind < AA_NR_CLASSES)
		aa_word_fill(addr, 1, b / 8, AA_DEBUG_POISON);
	return errs;
}

/* --- Quarantine ------------------------------------------------------------- */

static __always_inline __u32 quarantine_cap(void)
{
	__u32 cap = aa__root.tun.quarantine;

	return cap <= AA_QUARANTINE_MAX ? cap : AA_QUARANTINE_MAX;
}

/* Give the claimed, poisoned object addr of class cls back to the tiers.
 * 0 or the tier's -errno. */
static __always_inline int release_poisoned(__u64 addr, __u32 cls)
{
	if (aa__root.flags & AA_F_NO_CACHES)
		return heap_return(addr);
	return aa_cpu_cache_free_slow(addr, cls);
}

/* An entry taken out of quarantine (offset << 8 | class): off the
 * counters, its poison checked again, and its word 0, which must have kept
 * the FREED mark the claim wrote (the tiers below want it): a write after
 * free there is reported and the mark put back. Returns the object's
 * address. */
static __always_inline __u64 quarantine_out(__u64 e)
{
	__u32 c = aa_cls_idx(e & 0xff), b = aa_class(c)->size;
	__u64 addr = aa__root.arena_base + (e >> 8), mark = aa_custody(addr, AA_TAG_FREED), w0;

	__sync_fetch_and_sub(&aa__root.debug.q_objs, 1);
	__sync_fetch_and_sub(&aa__root.debug.q_bytes, b);
	w0 = *(volatile __u64 __arena *)addr;
	if (w0 != mark) {
		report(AA_DBG_USE_AFTER_FREE, addr, c, b, 0, 0, w0);
		*(volatile __u64 __arena *)addr = mark;
	}
	poison_check(addr, c, b);
	return addr;
}

/* Put the claimed, poisoned object addr of class cls into quarantine and
 * take out the one that waited longest there (quarantine_out()). Returns
 * that one's entry (offset << 8 | class), 0 when the slot was empty. Any
 * context, lock-free. REQUIRES: quarantine_cap() > 0. */
__u64 aa__debug_quarantine(__u64 addr, __u32 cls)
{
	__u64 e = ((addr - aa__root.arena_base) << 8) | aa_cls_idx(cls), old, slot;
	__u32 cap = quarantine_cap();

	if (!cap)
		return e;
	slot = __sync_fetch_and_add(&aa__root.debug.q_head, 1) % cap;
	old = __sync_lock_test_and_set(&aa__root.debug.quarantine[slot & (AA_QUARANTINE_MAX - 1)], e);
	__sync_fetch_and_add(&aa__root.debug.q_objs, 1);
	__sync_fetch_and_add(&aa__root.debug.q_bytes, aa_class(cls)->size);
	if (old)
		quarantine_out(old);
	return old;
}

/* Release every object in quarantine to the heap (drain). Returns how
 * many. Every slot, not only those below tun.quarantine: the tunable is
 * read where used, and slots above a lowered value keep their objects
 * (nothing takes them out but this). */
int aa__debug_flush(void)
{
	__u32 n = AA_ZERO;
	__u64 e;
	int i;

	aa_for(i, 0, AA_QUARANTINE_MAX) {
		e = __sync_lock_test_and_set(&aa__root.debug.quarantine[i & (AA_QUARANTINE_MAX - 1)], 0);
		if (!e)
			continue;
		heap_return(quarantine_out(e));
		n++;
	}
	return n;
}

/* Forget the quarantine (init, teardown: its objects' pages are gone or
 * about to be). REQUIRES: heap not published. */
static __always_inline void debug_reset(void)
{
	int i;

	aa_for(i, 0, AA_QUARANTINE_MAX)
		aa__root.debug.quarantine[i] = 0;
	aa__root.debug.q_head = 0;
	aa__root.debug.q_objs = 0;
	aa__root.debug.q_bytes = 0;
	/* new spans' objects end with the poison, as freed ones do (the
	 * claim's tail and the underflow check: struct aa_span_obj) */
	aa__root.carve_tail = debug_on() ? AA_DEBUG_POISON : 0;
}

/* A bad free that the heap refused (err: the claim's -errno). */
static __always_inline void report_bad_free(__u64 addr, long err)
{
	report(err == -EALREADY ? AA_DBG_DOUBLE_FREE : AA_DBG_INVALID_FREE, addr,
	       AA_DEBUG_CLS_NONE, 0, 0, 0, 0);
}

/*
 * Free addr in debug mode: claim it (refusals as always, and recorded),
 * check and poison it, then quarantine a class object and release the one
 * quarantine gives back, or release it at once. 0 or -errno (counted),
 * as aa_free_u64(). REQUIRES: debug_on().
 */
static __always_inline int debug_free(__u64 addr)
{
	long kind = aa__heap_claim_kind(addr, AA_DEBUG_POISON);
	__u64 e;

	if (kind < 0) {
		if (kind != aa_errno(AA_ERR_UNINIT))
			report_bad_free(addr, kind);
		return kind;
	}
	aa__debug_on_free(addr);
	if (kind >= AA_NR_CLASSES)
		return heap_return(addr);
	if (!quarantine_cap())
		return release_poisoned(addr, kind);
	e = aa__debug_quarantine(addr, kind);
	return e ? release_poisoned(aa__root.arena_base + (e >> 8), e & 0xff) : 0;
}

/* Usable bytes in debug mode: what was asked for (the trailer's n), 0 for
 * anything that is not a live allocation or whose trailer was overwritten. */
static __always_inline __u64 debug_usable(__u64 addr)
{
	__u64 b = aa__heap_usable_size(addr);
	long n;

	if (b < AA_DEBUG_TAIL)
		return 0;
	n = trailer_n(addr, *(volatile __u64 __arena *)(addr + b - 8), b);
	return n < 0 ? 0 : n;
}
