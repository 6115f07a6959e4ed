// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * prog.c - the library's SEC("syscall") programs (bpf/entry.bpf.c) as a
 * handle runs them: aa__prog_names[], the one list of their names (the BPF
 * object's, a pin directory's, the kernel's program info), aa__run_prog()
 * (one bpf_prog_test_run_opts() on the handle's fd, the ctx copied in and
 * out), and aa_heap__call(), the one-operation program that every module's
 * fallback runs. Calls nothing of the library but messages.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "internal.h"

const char *const aa__prog_names[AA_NR_PROGS] = {
	[AA_PROG_INIT] = "aa__init",		[AA_PROG_GROW] = "aa__grow",
	[AA_PROG_TRIM] = "aa__trim",		[AA_PROG_TEARDOWN] = "aa__teardown",
	[AA_PROG_CHECK] = "aa__check",		[AA_PROG_CALL] = "aa__call",
	[AA_PROG_BATCH] = "aa__batch",		[AA_PROG_DRAIN] = "aa__drain",
	[AA_PROG_RECLAIM] = "aa__reclaim",	[AA_PROG_USER] = "aa__user",
};

int aa__run_prog(struct aa_heap *h, enum aa_prog p, void *ctx, size_t ctx_sz)
{
	LIBBPF_OPTS(bpf_test_run_opts, topts, .ctx_in = ctx, .ctx_size_in = ctx_sz);
	const char *name = aa__prog_names[p];
	int err, fd = h->prog[p];

	if (fd < 0) {
		pr_warn("program %s is missing from the BPF object\n", name);
		return -ENOENT;
	}
	err = bpf_prog_test_run_opts(fd, &topts);
	if (err) {
		err = -errno;
		pr_warn("running %s failed: %s\n", name, strerror(-err));
		return err;
	}
	return (int)topts.retval;
}

AA_API int aa_heap__call(struct aa_heap *h, struct aa_op_args *args)
{
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!args)
		return aa_err(-EINVAL);
	err = aa__run_prog(h, AA_PROG_CALL, args, sizeof(*args));
	return aa_err(err > 0 ? -EINVAL : err);
}
