// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * debug.c - debug mode's reports, from userspace (bpf/debug.bpf.c finds
 * the errors; aa_shared.h, "Debug mode", has the layout).
 *
 * Two ways to read them:
 *  - aa_heap__errors(): the first AA_DEBUG_RECORDS errors and the totals,
 *    straight from the mmap (any heap: own, pinned, another process's);
 *    a record counts once its seq is written (BPF stores it last);
 *  - aa_heap__wait_error(): every error as it happens, from the ring
 *    buffer aa_debug_rb (errors the ring had no room for are counted in
 *    aa_debug.events_lost). One reader per handle.
 */
#include <bpf/libbpf.h>
#include "internal.h"

void aa__heap_close_debug(struct aa_heap *h)
{
	ring_buffer__free(h->debug_rb);
	h->debug_rb = NULL;
}

/* Takes one record per consume: copies it into h->error_out and stops
 * libbpf's loop with a negative return, which consumes that record only
 * (the rest stay queued for the next call). */
#define ONE_READ	(-ECANCELED)

static int on_error(void *ctx, void *data, size_t sz)
{
	struct aa_heap *h = ctx;

	if (sz >= sizeof(*h->error_out))
		memcpy(h->error_out, data, sizeof(*h->error_out));
	h->errors_read = 1;
	return ONE_READ;
}

AA_API int aa_heap__errors(const struct aa_heap *h, struct aa_debug_error *recs, __u32 max,
			   __u64 *total)
{
	const volatile struct aa_debug_error *r;
	__u32 i, n = 0;
	__u64 seen;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!h->root || (max && !recs))
		return aa_err(-EINVAL);
	seen = ((const volatile struct aa_debug *)&h->root->debug)->recorded;
	if (total)
		*total = seen;
	for (i = 0; i < AA_DEBUG_RECORDS && i < seen && n < max; i++) {
		r = &h->root->debug.rec[i];
		if (r->seq != i + 1)
			continue;	/* still being written */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		memcpy(&recs[n++], (const void *)r, sizeof(*recs));
	}
	return n;
}

AA_API int aa_heap__wait_error(struct aa_heap *h, int timeout_ms, struct aa_debug_error *out)
{
	struct aa_debug_error tmp;
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (timeout_ms < -1)
		return aa_err(-EINVAL);
	if (h->debug_fd < 0) {
		pr_warn("this heap's object has no debug error ring (%s)\n", AA_DEBUG_RING);
		return aa_err(-ENOENT);
	}
	if (!h->debug_rb) {
		h->debug_rb = ring_buffer__new(h->debug_fd, on_error, h, NULL);
		if (!h->debug_rb)
			return aa_err(-errno);
	}
	h->error_out = out ? out : &tmp;
	h->errors_read = 0;
	err = ring_buffer__consume(h->debug_rb);
	if (err >= 0 && !h->errors_read && timeout_ms)
		err = ring_buffer__poll(h->debug_rb, timeout_ms);
	if (h->errors_read)
		return 1;
	return err < 0 ? aa_err(err) : 0;
}

AA_API const char *aa_debug_kind_str(__u32 kind)
{
	static const char *const names[AA_DBG_NR_KINDS] = {
		[AA_DBG_USE_AFTER_FREE] = "use-after-free",
		[AA_DBG_OVERFLOW] = "overflow",
		[AA_DBG_UNDERFLOW] = "underflow",
		[AA_DBG_DOUBLE_FREE] = "double-free",
		[AA_DBG_INVALID_FREE] = "invalid-free",
	};

	return kind < AA_DBG_NR_KINDS ? names[kind] : "unknown";
}
