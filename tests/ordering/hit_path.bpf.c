// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hit_path.bpf.c - the BPF hit path of include/aa_hit.h, for the BPF half
 * of the ordering check (scripts/ordering-check-bpf.py, `make
 * ordering-check`): built once per -D__TARGET_ARCH_<arch> and read as BPF
 * instructions, which every JIT turns into the architecture's code with
 * the ordering the BPF memory model gives them. Each function keeps one
 * path out of line under its own name. Never loaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

__noinline void aa_oc_cache_release(struct aa_cpu_cache __arena *cc)
{
	__aa_cache_release(cc);
}

__noinline bool aa_oc_hit_free(struct aa_cpu_cache __arena *cc, __u64 ptr, __u32 c)
{
	return __aa_hit_free(cc, ptr, c);
}

__noinline __u64 aa_oc_hit_alloc(struct aa_cpu_cache __arena *cc, __u32 c, __u64 size)
{
	return __aa_hit_alloc(cc, c, size);
}

char LICENSE[] SEC("license") = "GPL";
