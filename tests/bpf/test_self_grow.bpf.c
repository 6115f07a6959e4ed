// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_self_grow.bpf.c - a burst of allocations from a non-sleepable
 * program: each run of `burst` (tc) makes cfg.per_run allocations of
 * cfg.size bytes with the inline API, keeps them (cfg.keep) or frees each
 * at once, and counts them, the NULLs and each allocation's latency.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_self_grow.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

struct burst_cfg cfg;
struct burst_out out;

static long burst_step(__u64 i, void *data)
{
	__u64 t0 = bpf_ktime_get_ns(), dt;
	void __arena *p = aa_malloc(cfg.size);
	__u32 b;

	dt = bpf_ktime_get_ns() - t0;
	b = burst_bucket(dt);
	if (b < BURST_BUCKETS)
		out.hist[b]++;
	if (dt > out.max_ns)
		out.max_ns = dt;
	if (!p) {
		if (!out.nulls)
			out.ok_at_first_null = out.ok;
		out.nulls++;
		return 0;
	}
	out.ok++;
	*(__u64 __arena *)p = i;	/* the memory is there */
	if (!cfg.keep)
		aa_free(p);
	return 0;
}

SEC("tc")
int burst(struct __sk_buff *skb)
{
	bpf_loop(cfg.per_run, burst_step, NULL, 0);
	return 0;
}
