// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * refill.c - the low-watermark signal, from userspace: wait for it, answer
 * it.
 *
 * BPF raises aa_root.need_refill (0 -> 1, AA_RAISE_REFILL()) when an
 * allocation fails or free memory drops below tun.low_watermark, and then,
 * lock dropped, writes one struct aa_refill_event into the ring buffer map
 * aa_refill_rb. The flag is the truth; the ring is only the wake-up:
 *  - aa_heap__wait_refill() sleeps in epoll on the ring (libbpf's
 *    ring_buffer), so an idle waiter costs nothing; a heap whose object has
 *    no ring (found by an older library) is read every 200 ms instead;
 *  - it reads the flag before every sleep and after every wake-up, and the
 *    ring's epoll is level-triggered, so a raise between the two is seen;
 *  - aa_heap__refill() grows the heap, clears the flag, and raises it
 *    again if free memory is still short (allocations during the grow
 *    took it); the next raise writes the next event;
 *  - on heaps with deferred free, limbo's first object also writes one
 *    (AA_EV_LIMBO_START): the waiter returns 2 while limbo holds objects,
 *    answered by aa_heap__reclaim().
 * Only one thread may wait on a heap handle at a time (the ring reader is
 * the handle's).
 */
#include <unistd.h>
#include <bpf/libbpf.h>
#include "internal.h"

#define FALLBACK_READ_MS	200

static int on_event(void *ctx, void *data, size_t sz)
{
	struct aa_heap *h = ctx;

	if (sz >= sizeof(h->last_event))
		memcpy(&h->last_event, data, sizeof(h->last_event));
	return 0;
}

void aa__heap_close_refill(struct aa_heap *h)
{
	ring_buffer__free(h->refill_rb);
	h->refill_rb = NULL;
}

/* The ring's reader, opened once; NULL when the heap has none. */
static struct ring_buffer *refill_ring(struct aa_heap *h)
{
	if (!h->refill_rb && h->refill_fd >= 0) {
		h->refill_rb = ring_buffer__new(h->refill_fd, on_event, h, NULL);
		if (!h->refill_rb) {
			pr_warn("cannot read the refill event ring: %s; reading the flag every %d ms\n",
				strerror(errno), FALLBACK_READ_MS);
			h->refill_fd = -1;
		}
	}
	return h->refill_rb;
}

static long long now_ms(void)
{
	return aa__now_ns() / 1000000;
}

AA_API int aa_heap__refill_fd(struct aa_heap *h)
{
	struct ring_buffer *rb;

	AA_CHECK_HEAP(h, -EINVAL);
	rb = refill_ring(h);
	return rb ? ring_buffer__epoll_fd(rb) : aa_err(-ENOENT);
}

AA_API int aa_heap__wait_refill(struct aa_heap *h, int timeout_ms, struct aa_refill_event *ev)
{
	const volatile __u64 *pending = NULL;
	const volatile __u32 *flag;
	struct ring_buffer *rb;
	long long end, left;
	struct timespec nap;
	int n;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!h->root || timeout_ms < -1) {
		pr_warn("aa_heap__wait_refill: %s\n", h->root ? "timeout_ms < -1" : "no heap root");
		return aa_err(-EINVAL);
	}
	flag = (const volatile __u32 *)&h->root->need_refill;
	if (h->root->flags & AA_F_DEFER)
		pending = (const volatile __u64 *)&h->root->defer.pending_objs;
	rb = refill_ring(h);
	end = now_ms() + timeout_ms;
	memset(&h->last_event, 0, sizeof(h->last_event));
	for (;;) {
		if (rb) {
			n = ring_buffer__consume(rb);	/* what is queued, no sleep */
			if (n < 0)
				return aa_err(n);
		}
		if (*flag || (pending && *pending)) {
			if (ev)
				*ev = h->last_event;
			return *flag ? 1 : 2;
		}
		left = timeout_ms < 0 ? -1 : end - now_ms();
		if (timeout_ms >= 0 && left <= 0)
			return 0;
		if (rb) {
			n = ring_buffer__poll(rb, left);
			if (n < 0)
				return aa_err(n);	/* -EINTR: a signal handler ran */
			continue;
		}
		if (left < 0 || left > FALLBACK_READ_MS)
			left = FALLBACK_READ_MS;
		nap.tv_sec = left / 1000;
		nap.tv_nsec = left % 1000 * 1000000L;
		if (nanosleep(&nap, NULL))
			return aa_err(-errno);
	}
}

static bool below_watermark(const struct aa_root *r)
{
	return aa_below_watermark(r->stats.nr_chunks, r->stats.absent_pages, r->stats.heap_bytes,
				  r->tun.low_watermark);
}

/*
 * The flag stays up until the answer is in, so that whoever sees it down
 * finds the new memory. But while it is up an allocation that fails
 * raises nothing (it is up already): one that found the new memory gone
 * during the grow was forgotten by a plain clear, and its waiter slept
 * until some later allocation failed. So after the clear free memory is
 * checked as BPF checks it, and the flag raised again when it is still
 * short (compare-and-swap: a failing allocation may have raised it
 * first). A request that failed for its size alone, with free memory
 * above the watermark, raises again when it is retried.
 */
static void refill_answered(struct aa_heap *h, __u32 *flag)
{
	/* the clear before the loads of below_watermark(), against an
	 * allocation that writes the stats and then raises the flag (a full
	 * barrier in BPF): a full fence, since a later load may pass even a
	 * seq_cst store on arm64 (stlr, then a plain ldr) */
	__atomic_store_n(flag, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (below_watermark(h->root))
		AA_RAISE_REFILL(flag, (__u64 *)&h->root->refill_signals);
}

AA_API int aa_heap__refill(struct aa_heap *h, __u64 bytes)
{
	__u32 *flag;
	int n;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!h->root)
		return aa_err(-EINVAL);
	flag = (__u32 *)&h->root->need_refill;
	if (!__atomic_load_n(flag, __ATOMIC_SEQ_CST))
		return 0;
	if ((h->root->flags & AA_F_DEFER) && h->root->defer.pending_objs) {
		/* limbo first: over its limit, it raised the signal itself */
		if (aa_heap__reclaim(h) < 0)
			return -errno;
		if (!below_watermark(h->root)) {
			refill_answered(h, flag);
			return 0;
		}
	}
	n = aa_heap__grow(h, bytes ? bytes : AA_GROW_BYTES_DEFAULT);
	if (n > 0)
		refill_answered(h, flag);
	return n;
}
