// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_frames.c - runs tests/bpf/test_frames.bpf.c: every public BPF
 * function called from the deepest frame AA_API_FRAMES leaves a program,
 * and the verifier refusing the same calls one frame deeper.
 */
#include "common.h"
#include "arena_alloc.bpf.h"	/* AA_API_FRAMES */
#include "test_frames.skel.h"

static struct test_frames *skel;
static struct aa_heap *heap;

static void teardown(void)
{
	aa_heap__destroy(heap);
	test_frames__destroy(skel);
	heap = NULL;
	skel = NULL;
}

TestSuite(frames, .fini = teardown);

Test(frames, every_api_from_the_deepest_frame_the_budget_allows)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);
	static char log[1 << 16];
	char *depth;
	int ret;

	t_need_arena();
	skel = test_frames__open();
	cr_assert_not_null(skel);
	/* level 4: the verifier's statistics, with each subprogram's stack */
	cr_assert_eq(bpf_program__set_log_buf(skel->progs.deepest, log, sizeof(log)), 0);
	cr_assert_eq(bpf_program__set_log_level(skel->progs.deepest, 4), 0);
	cr_assert_eq(test_frames__load(skel), 0,
		     "a call from frame %d verifies no longer: the library needs more than "
		     "AA_API_FRAMES (%d) frames (%s)", 8 - AA_API_FRAMES, AA_API_FRAMES,
		     strerror(errno));
	depth = strstr(log, "stack depth");
	cr_log_info("deepest: %.200s", depth ? depth : log);
	heap = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(heap, "aa_heap__attach: %s", strerror(errno));
	ret = t_run(skel->progs.deepest, NULL, 0);
	cr_assert_eq(ret, 0, "every_api() failed at step %d", ret);
	cr_assert_eq(t_user_live(heap), 0, "everything allocated was freed");
	t_check(heap);
}

/* Linux 6.12 adds a global function's frames to its caller's chain, and
 * refuses the calls one frame deeper; Linux 7.3 counts them apart (each
 * global function is a chain of its own) and takes them from any frame. */
Test(frames, one_frame_deeper_is_refused_where_frames_add_up)
{
	static char log[1 << 20];
	bool apart = t_kernel_major() >= 7;
	int err;

	t_need_arena();
	skel = test_frames__open();
	cr_assert_not_null(skel);
	bpf_program__set_autoload(skel->progs.deepest, false);
	bpf_program__set_autoload(skel->progs.one_frame_deeper, true);
	cr_assert_eq(bpf_program__set_log_buf(skel->progs.one_frame_deeper, log, sizeof(log)), 0);
	cr_assert_eq(bpf_program__set_log_level(skel->progs.one_frame_deeper, 1), 0);
	err = test_frames__load(skel);
	if (apart) {
		cr_assert_eq(err, 0, "Linux >= 7.0 refused a call from frame %d: %s",
			     9 - AA_API_FRAMES, log + (strlen(log) > 300 ? strlen(log) - 300 : 0));
		cr_log_info("one_frame_deeper: verified (this kernel counts a global "
			    "function's frames apart from its caller's)");
		return;
	}
	cr_assert_neq(err, 0, "a call from frame %d verified: AA_API_FRAMES (%d) is more than "
		      "the library needs", 9 - AA_API_FRAMES, AA_API_FRAMES);
	cr_log_info("one_frame_deeper: %.80s", strstr(log, "the call stack") ?: "(no message)");
	cr_assert_not_null(strstr(log, "frames is too deep"),
			   "refused for another reason: %s",
			   log + (strlen(log) > 300 ? strlen(log) - 300 : 0));
}
