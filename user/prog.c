// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * prog.c - the library's SEC("syscall") programs (bpf/entry.bpf.c) as a
 * handle runs them: aa__prog_names[], the one list of their names (the BPF
 * object's, a pin directory's, the kernel's program info), aa__run_prog()
 * (one bpf_prog_test_run_opts() on the handle's fd, the ctx copied in and
 * out), aa__run_call() (one call of aa__run, enum aa_call_kind) and
 * aa_heap__call(), the one-operation call that every module's fallback
 * runs. Calls nothing of the library but messages.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "internal.h"

const char *const aa__prog_names[AA_NR_PROGS] = {
	[AA_PROG_INIT] = "aa__init",		[AA_PROG_GROW] = "aa__grow",
	[AA_PROG_TRIM] = "aa__trim",		[AA_PROG_TEARDOWN] = "aa__teardown",
	[AA_PROG_RUN] = "aa__run",
};

static const char *const call_names[AA_NR_CALLS] = {
	[AA_CALL_OP] = "call",		[AA_CALL_BATCH] = "batch",
	[AA_CALL_USER] = "user",	[AA_CALL_DRAIN] = "drain",
	[AA_CALL_RECLAIM] = "reclaim",	[AA_CALL_CHECK] = "check",
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

/* One run of aa__run for call k: args (args_sz bytes, the member of struct
 * aa_call_args that k names) copied in and back. The ctx is always the
 * whole struct: the kernel refuses a ctx shorter than the farthest offset
 * the program reads, whichever call it runs. */
int aa__run_call(struct aa_heap *h, enum aa_call_kind k, void *args, size_t args_sz)
{
	struct aa_call_args c = { .kind = k };
	int ret;

	if (k >= AA_NR_CALLS || args_sz > offsetof(struct aa_call_args, kind)) {
		pr_warn("aa__run: no call %u of %zu bytes\n", k, args_sz);
		return -EINVAL;
	}
	if (args_sz)
		memcpy(&c, args, args_sz);
	ret = aa__run_prog(h, AA_PROG_RUN, &c, sizeof(c));
	if (args_sz)
		memcpy(args, &c, args_sz);
	if (ret == -EINVAL)
		pr_warn("aa__run refused call %s: a BPF object of another release?\n",
			call_names[k]);
	return ret;
}

AA_API int aa_heap__call(struct aa_heap *h, struct aa_op_args *args)
{
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!args)
		return aa_err(-EINVAL);
	err = aa__run_call(h, AA_CALL_OP, args, sizeof(*args));
	return aa_err(err > 0 ? -EINVAL : err);
}
