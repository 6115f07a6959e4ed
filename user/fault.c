// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fault.c - fault injection from userspace: the load-time options
 * (aa_heap_opts.fault_*_every, ARENA_ALLOC_FAULT_*_EVERY) and
 * aa_heap__set_fault() on a running heap. The BPF side is struct aa_fault
 * (aa_shared.h): bpf/arena.bpf.c fails page allocations, central.bpf.c
 * and buddy.bpf.c fail requests for spans and page runs.
 */
#include "internal.h"

/* One option: opts' value when not 0, else the environment's, else 0. */
static int fault_option(const char *env, __u32 from_opts, __u32 *out)
{
	__u64 v = 0;
	int err;

	if (from_opts) {
		*out = from_opts;
		return 0;
	}
	err = aa__env_u64(env, &v);
	if (err < 0)
		return err;
	if (v > 0xffffffffULL) {
		pr_warn("%s=%llu is out of range (0 .. 4294967295; 0: off)\n", env,
			(unsigned long long)v);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int aa__heap_configure_fault(struct aa_heap *h, const struct aa_heap_opts *opts)
{
	__u32 pages = 0, spans = 0;
	int err;

	err = fault_option("ARENA_ALLOC_FAULT_PAGES_EVERY",
			   AA_OPTS_GET(opts, fault_pages_every, 0), &pages);
	if (!err)
		err = fault_option("ARENA_ALLOC_FAULT_SPANS_EVERY",
				   AA_OPTS_GET(opts, fault_spans_every, 0), &spans);
	if (err)
		return err;
	if (pages || spans)
		pr_info("fault injection (0: off): 1 in %u page allocations, 1 in %u span or page-run requests fail\n",
			pages, spans);
	h->fault_pages_every = pages;
	h->fault_spans_every = spans;
	return 0;
}

/*
 * Memory ordering: each value is one aligned 32-bit word of the root,
 * written here with one relaxed atomic store and read by BPF with one
 * volatile load per call (aa_fault_hit()). Nothing else is published with
 * it: a program reads the old value or the new one, never a mix, and no
 * other field depends on which. The store reaches other CPUs as soon as
 * the cache line does (coherence); a call already past its load finishes
 * with the old value. So "every Nth" counts from the calls before the
 * change: the first fault after it is the first call whose count is a
 * multiple of the new N.
 */
AA_API int aa_heap__set_fault(struct aa_heap *h, __u32 pages_every, __u32 spans_every)
{
	struct aa_root *r;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!h->root) {
		pr_warn("aa_heap__set_fault: the heap was never initialised\n");
		return aa_err(-EINVAL);
	}
	r = (struct aa_root *)h->root;	/* the mmap is writable */
	__atomic_store_n(&r->fault.pages_every, pages_every, __ATOMIC_RELAXED);
	__atomic_store_n(&r->fault.spans_every, spans_every, __ATOMIC_RELAXED);
	h->fault_pages_every = pages_every;
	h->fault_spans_every = spans_every;
	return 0;
}
