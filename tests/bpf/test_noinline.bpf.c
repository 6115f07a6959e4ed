// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_noinline.bpf.c - AA_NO_INLINE: the same aa_malloc()/aa_free()
 * macros, calling the global functions (tests/test_inline.c compares its
 * verified instructions with test_inline.bpf.c's cost_call_1, the same
 * calls spelt out).
 */
#define AA_NO_INLINE
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

SEC("tc")
int cost_noinline_1(struct __sk_buff *skb)
{
	void __arena *p = aa_malloc(64);

	return p ? aa_free(p) : 1;
}
