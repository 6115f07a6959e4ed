// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_embed.bpf.c - an embedder's object as most BPF projects write one,
 * linked with libarena_alloc.bpf.o (tests/test_embed.c):
 *  - its license is "GPL", not the library's "Dual BSD/GPL";
 *  - it loops with bpf_for() (the plain bpf_iter_num_* kfuncs) and calls
 *    the arena page kfuncs itself, under their plain names;
 *  - it brings its own arena map, named flows_arena, of 16 MiB.
 * All three used to break the link (bpftool 7.5: "non-identical contents
 * of section 'license'", "failed to resolve size of underlying type: -22",
 * "map max_entries mismatch" or "only single ARENA map is supported"):
 * that this file links at all is half the test, embed_ops running is the
 * rest.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define EMBED_ARENA_PAGES	4096

struct {
	__uint(type, BPF_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, EMBED_ARENA_PAGES);
} flows_arena SEC(".maps");

AA_ARENA_FUNCS(flows_arena);

void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, __u32 page_cnt,
				    int node_id, __u64 flags) __ksym __weak;
void bpf_arena_free_pages(void *map, void __arena *ptr, __u32 page_cnt) __ksym __weak;

#define EMBED_N	16

struct embed_args {
	__u64 sum;		/* out: sum of what the objects held */
	__u64 page_word;	/* out: what the page kfunc's page held */
	__s32 freed;		/* out: frees that returned 0 */
	__s32 pad;
};

/* EMBED_N objects through the allocator, then a page of the embedder's own.
 * Returns 0 or a step code. */
SEC("syscall")
int embed_ops(struct embed_args *a)
{
	__u64 __arena *obj[EMBED_N];
	__u64 __arena *page;
	int i;

	bpf_for(i, 0, EMBED_N) {
		obj[i & (EMBED_N - 1)] = aa_malloc(32);
		if (!obj[i & (EMBED_N - 1)])
			return 1;
		*obj[i & (EMBED_N - 1)] = i + 1;
	}
	bpf_for(i, 0, EMBED_N) {
		a->sum += *obj[i & (EMBED_N - 1)];
		if (!aa_free(obj[i & (EMBED_N - 1)]))
			a->freed++;
	}
	page = bpf_arena_alloc_pages(&flows_arena, NULL, 1, -1, 0);
	if (!page)
		return 2;
	*page = 0x5eed;
	a->page_word = *page;
	bpf_arena_free_pages(&flows_arena, page, 1);
	return 0;
}
