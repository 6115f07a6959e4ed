// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_embed.c - runs tests/bpf/test_embed.bpf.c: an embedder's object with
 * a "GPL" license, its own bpf_for() loops and page kfunc calls and its own
 * arena map (another name, another size), linked
 * with the library (Makefile: tests/%.linked.o) and set up by
 * aa_heap__attach().
 */
#include "common.h"
#include "test_embed.skel.h"

struct embed_args {
	__u64 sum;
	__u64 page_word;
	__s32 freed;
	__s32 pad;
};

Test(embed, gpl_object_with_its_own_kfuncs_and_arena_links_and_runs)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);
	struct test_embed *skel;
	struct embed_args a = {};
	struct aa_heap *heap;

	if (!t_have_arena())
		cr_skip_test(AA_SKIP_REASON);
	skel = test_embed__open_and_load();
	cr_assert_not_null(skel, "test_embed load failed: %s", strerror(errno));
	heap = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(heap, "aa_heap__attach: %s", strerror(errno));
	cr_assert_eq(bpf_map__max_entries(skel->maps.flows_arena), 4096);
	cr_assert_eq(aa_heap__arena_size(heap), 16 << 20, "the heap is not in flows_arena");
	cr_assert_eq(t_run(skel->progs.embed_ops, &a, sizeof(a)), 0);
	cr_assert_eq(a.sum, 16 * 17 / 2, "objects held %llu", (unsigned long long)a.sum);
	cr_assert_eq(a.freed, 16);
	cr_assert_eq(a.page_word, 0x5eed);
	cr_assert_eq(t_user_live(heap), 0, "objects left behind");
	t_check(heap);
	aa_heap__destroy(heap);
	test_embed__destroy(skel);
}
