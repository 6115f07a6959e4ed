// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_frames.bpf.c - the frame budget (AA_API_FRAMES in arena_alloc.bpf.h)
 * and where it ends. A program has 8 call frames, its own and the
 * library's. `deepest` calls every public function, and the inline
 * macros, from frame 8 - AA_API_FRAMES: program > bpf_loop() callback >
 * a subprogram > every_api(). `one_frame_deeper` makes the same calls one frame
 * further down; Linux 6.12 must refuse it ("the call stack of 8 frames is
 * too deep !"), which shows the budget is the library's real depth, not a
 * margin (Linux 7.3 counts a global function's frames apart and takes
 * it). Not loaded by default (test_frames.c loads it on its own).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

#define EOPNOTSUPP	95

__u64 __arena frames_arr[4];

/* Every public function once, and the inline macros: 0, or the step
 * that went wrong. Deferred frees on a heap without AA_F_DEFER are
 * refused (-EOPNOTSUPP; the bulk form: nothing freed, -EINVAL) and the
 * objects freed plain. */
static __noinline int every_api(__u64 arr)
{
	__u64 p = aa_malloc_u64(64), q = aa_calloc_u64(2, 24), r = aa_aligned_alloc_u64(256, 100);
	__u64 __arena *a = (__u64 __arena *)arr;
	void __arena *i = aa_malloc(48), *j = aa_calloc(3, 8);
	int err = 0;

	if (!p || !q || !r || !i || !j)
		err = 1;
	else if (aa_usable_size_u64(p) < 64 || (r & 255) || aa_usable_size(i) < 48)
		err = 2;
	else if (aa_malloc_bulk_u64(arr, 4, 32) != 4)
		err = 3;
	else if (aa_free_bulk_u64(arr, 4) != 4)
		err = 4;
	if (aa_free_deferred_u64(p) == -EOPNOTSUPP && aa_free_u64(p))
		err = 5;
	a[0] = q;
	if (aa_free_deferred_bulk_u64(arr, 1) != 1 && aa_free_bulk_u64(arr, 1) != 1)
		err = 6;
	if (aa_free_u64(r) | aa_free(i) | aa_free(j))
		err = 7;
	/* the allocations that may map pages (the programs are sleepable) */
	p = aa_malloc_grow_u64(40);
	q = aa_calloc_grow_u64(2, 40);
	if (!p || !q)
		err = 8;
	if (aa_free_u64(p) | aa_free_u64(q))
		err = 9;
	return err;
}

/* Frame 3 of the program, the user's own call: every_api() is frame 4. */
static __noinline int frame3(__u64 arr)
{
	return every_api(arr) + 100;
}

/* One more: every_api() from frame 5. */
static __noinline int frame4_too_deep(__u64 arr)
{
	return every_api(arr) + 1000;
}

static __noinline int frame3_too_deep(__u64 arr)
{
	return frame4_too_deep(arr) + 100;
}

int deep_result = -1;

static long deep_cb(__u64 i, void *ctx)
{
	/* frame 3 adds 100: 100 is every_api()'s 0 */
	deep_result = frame3((__u64)frames_arr) - 100;
	return 1;
}

static long too_deep_cb(__u64 i, void *ctx)
{
	deep_result = frame3_too_deep((__u64)frames_arr) - 1100;
	return 1;
}

/* Frame 1 of each: a program; frame 2: its bpf_loop() callback. */
SEC("syscall")
int deepest(void *ctx)
{
	bpf_loop(1, deep_cb, NULL, 0);
	return deep_result;
}

SEC("?syscall")
int one_frame_deeper(void *ctx)
{
	bpf_loop(1, too_deep_cb, NULL, 0);
	return deep_result;
}
