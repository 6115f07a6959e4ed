// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_embed.bpf.c - an embedder's object as most BPF projects write one,
 * linked with libarena_alloc.bpf.o (tests/test_embed.c):
 *  - its license is "GPL", not the library's "Dual BSD/GPL";
 *  - it loops with bpf_for() (the plain bpf_iter_num_* kfuncs) and calls
 *    the arena page kfuncs itself, under their plain names;
 *  - it brings its own arena map, named flows_arena, of 16 MiB;
 *  - it names its own things aa_init, aa_call and aa_root, which the
 *    library's object once exported.
 * All four used to break the link (bpftool 7.5: "non-identical contents
 * of section 'license'", "failed to resolve size of underlying type: -22",
 * "map max_entries mismatch" or "only single ARENA map is supported",
 * "conflicting non-weak symbol (aa_init)"):
 * that this file links at all is half the test, embed_ops running is the
 * rest.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define EMBED_ARENA_PAGES	((16 << 20) / AA_PAGE_SIZE)	/* 16 MiB */

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

/* The embedder's own aa_ names: a global variable, a global function and
 * a program (aa_call below). */
__u64 aa_root = 40;

__noinline int aa_init(int x)
{
	return x + (int)aa_root;
}

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

SEC("syscall")
int aa_call(void *ctx)
{
	return aa_init(2);
}

/* A program that only dereferences an arena pointer it got from elsewhere
 * (here a global) and calls no allocator function: AA_USE_ARENA names its
 * arena for the verifier. */
__u64 deref_ptr;

SEC("tc")
int embed_deref(struct __sk_buff *skb)
{
	__u64 __arena *p = (__u64 __arena *)deref_ptr;

	AA_USE_ARENA(flows_arena);
	if (!p)
		return 1;
	*p += 1;
	return 0;
}

/* Structs in and out of the arena (aa_store_struct/aa_load_struct): a
 * plain `*rec = local` is refused by the verifier. Three shapes, one per
 * copy unit: 8-byte, 4-byte and byte-aligned. The arena copies stay
 * allocated for userspace to read (their addresses come back in
 * struct_args). */
struct rec8 { __u64 a; __u32 b; __u16 c; __u8 d[2]; __u64 e; };
struct rec4 { __u32 a, b, c; };
struct rec1 { __u8 a[7]; };

struct struct_args {
	__u64 r8, r4, r1;	/* out: arena addresses of the copies */
};

SEC("syscall")
int embed_structs(struct struct_args *a)
{
	struct rec8 l8 = { .a = 0x1122334455667788ULL, .b = 0xaabbccdd, .c = 0x1234,
			   .d = { 7, 9 }, .e = 42 }, c8 = {};
	struct rec4 l4 = { 1, 2, 3 }, c4 = {};
	struct rec1 l1 = { { 1, 2, 3, 4, 5, 6, 7 } }, c1 = {};
	struct rec8 __arena *r8 = aa_malloc(sizeof(*r8));
	struct rec4 __arena *r4 = aa_malloc(sizeof(*r4));
	struct rec1 __arena *r1 = aa_malloc(sizeof(*r1));

	if (!r8 || !r4 || !r1)
		return 1;
	aa_store_struct(r8, &l8);
	aa_store_struct(r4, &l4);
	aa_store_struct(r1, &l1);
	aa_load_struct(&c8, r8);
	aa_load_struct(&c4, r4);
	aa_load_struct(&c1, r1);
	if (c8.a != l8.a || c8.b != l8.b || c8.c != l8.c || c8.d[1] != 9 || c8.e != 42)
		return 2;
	if (c4.a != 1 || c4.c != 3 || c1.a[0] != 1 || c1.a[6] != 7)
		return 3;
	a->r8 = (__u64)r8;
	a->r4 = (__u64)r4;
	a->r1 = (__u64)r1;
	return 0;
}
