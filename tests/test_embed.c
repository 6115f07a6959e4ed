// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_embed.c - runs tests/bpf/test_embed.bpf.c: an embedder's object with
 * a "GPL" license, its own bpf_for() loops and page kfunc calls and its own
 * arena map (another name, another size), linked
 * with the library (the Makefile's bpf_prog chain) and set up by
 * aa_heap__attach().
 */
#include "common.h"
#include "test_embed.skel.h"
#include "test_struct_ops.skel.h"

struct embed_args {
	__u64 sum;
	__u64 page_word;
	__s32 freed;
	__s32 pad;
};

static struct test_embed *skel;
static struct aa_heap *heap;

static void setup(void)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);

	t_need_arena();
	skel = test_embed__open_and_load();
	cr_assert_not_null(skel, "test_embed load failed: %s", strerror(errno));
	heap = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(heap, "aa_heap__attach: %s", strerror(errno));
}

static void teardown(void)
{
	aa_heap__destroy(heap);
	test_embed__destroy(skel);
}

TestSuite(embed, .init = setup, .fini = teardown);

Test(embed, gpl_object_with_its_own_kfuncs_and_arena_links_and_runs)
{
	struct embed_args a = {};

	cr_assert_eq(bpf_map__max_entries(skel->maps.flows_arena), T_PAGES(16 << 20));
	cr_assert_eq(aa_heap__arena_size(heap), 16 << 20, "the heap is not in flows_arena");
	cr_assert_eq(t_run(skel->progs.embed_ops, &a, sizeof(a)), 0);
	cr_assert_eq(a.sum, 16 * 17 / 2, "objects held %llu", (unsigned long long)a.sum);
	cr_assert_eq(a.freed, 16);
	cr_assert_eq(a.page_word, 0x5eed);
	cr_assert_eq(t_user_live(heap), 0, "objects left behind");
	t_check(heap);
	/* its own aa_call, aa_init and aa_root, next to the library's aa__ ones */
	cr_assert_eq(t_run(skel->progs.aa_call, NULL, 0), 42);
	cr_assert_eq(skel->data->aa_root, 40);
}

/* A tc program that only dereferences a pointer it read from a global
 * loads (AA_USE_ARENA) and writes through it. */
Test(embed, a_program_that_only_dereferences_names_its_arena_in_one_line)
{
	__u64 p = aa_heap__malloc(heap, 8);
	volatile __u64 *q;

	cr_assert_neq(p, 0);
	q = aa_heap__ptr(heap, p);
	cr_assert_not_null(q);
	*q = 41;
	skel->bss->deref_ptr = p;
	cr_assert_eq(t_run_pkt(skel->progs.embed_deref), 0);
	cr_assert_eq(*q, 42, "the program did not write through the pointer");
	cr_assert_eq(aa_heap__free(heap, p), 0);
}

struct struct_args {
	__u64 r8, r4, r1;
};

struct rec8 { __u64 a; __u32 b; __u16 c; __u8 d[2]; __u64 e; };
struct rec4 { __u32 a, b, c; };

/* aa_store_struct()/aa_load_struct() round-trip three struct shapes
 * through the arena; what landed there is checked from the mmap too. */
Test(embed, structs_copy_in_and_out_of_the_arena)
{
	struct struct_args a = {};
	const struct rec8 *r8;
	const struct rec4 *r4;
	const __u8 *r1;

	cr_assert_eq(t_run(skel->progs.embed_structs, &a, sizeof(a)), 0);
	r8 = aa_heap__ptr(heap, a.r8);
	r4 = aa_heap__ptr(heap, a.r4);
	r1 = aa_heap__ptr(heap, a.r1);
	cr_assert(r8 && r4 && r1);
	cr_assert_eq(r8->a, 0x1122334455667788ULL);
	cr_assert_eq(r8->b, 0xaabbccdd);
	cr_assert_eq(r8->c, 0x1234);
	cr_assert_eq(r8->d[0], 7);
	cr_assert_eq(r8->e, 42);
	cr_assert_eq(r4->b, 2);
	cr_assert_eq(r1[3], 4);
	cr_assert_eq(r1[6], 7);
}

/* An object with a struct_ops map (tests/bpf/test_struct_ops.bpf.c): its
 * skeleton compiles with the toolchain the README installs (this file
 * would not build otherwise), and it loads: struct_ops callbacks that
 * allocate, and one that only dereferences its context (AA_USE_ARENA). */
Test(embed_struct_ops, an_object_with_a_struct_ops_map_builds_and_loads)
{
	struct test_struct_ops *s;

	t_need_arena();
	s = test_struct_ops__open();
	cr_assert_not_null(s, "open: %s", strerror(errno));
	cr_assert_eq(bpf_map__type(s->maps.aa_test_cc), BPF_MAP_TYPE_STRUCT_OPS);
	cr_assert_eq(test_struct_ops__load(s), 0, "load: %s", strerror(errno));
	test_struct_ops__destroy(s);
}
