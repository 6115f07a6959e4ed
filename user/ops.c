// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ops.c - the operations on an initialised heap that each run one of the
 * library's SEC("syscall") programs over the whole heap: grow, trim,
 * teardown, check, batch, and drain (the CPU and user caches back to the
 * shared tiers, the dead processes' user caches reaped first). Calls down
 * only: prog.c to run, addr.c to check addresses, user_cache.c to reap.
 */
#include <stdio.h>
#include <unistd.h>
#include "internal.h"

AA_API int aa_heap__grow(struct aa_heap *h, __u64 bytes)
{
	struct aa_grow_args args = { .bytes = bytes };
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	err = aa__run_prog(h, AA_PROG_GROW, &args, sizeof(args));

	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	if (args.err) {
		pr_warn("grow by %llu bytes failed: %s\n", (unsigned long long)bytes,
			strerror(-args.err));
		return aa_err(args.err);
	}
	return (int)args.chunks;
}

static int trim_like(struct aa_heap *h, enum aa_prog p, __u64 keep)
{
	struct aa_trim_args args = { .keep_bytes = keep };
	int err = aa__run_prog(h, p, &args, sizeof(args));

	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	if (args.err) {
		pr_warn("%s failed: %s\n", aa__prog_names[p], strerror(-args.err));
		return aa_err(args.err);
	}
	return (int)args.chunks;
}

AA_API int aa_heap__trim(struct aa_heap *h, __u64 keep_bytes)
{
	AA_CHECK_HEAP(h, -EINVAL);
	return trim_like(h, AA_PROG_TRIM, keep_bytes);
}

AA_API int aa_heap__teardown(struct aa_heap *h)
{
	AA_CHECK_HEAP(h, -EINVAL);
	return trim_like(h, AA_PROG_TEARDOWN, 0);
}

AA_API int aa_heap__check(struct aa_heap *h)
{
	int ret;

	AA_CHECK_HEAP(h, -EINVAL);
	ret = aa__run_call(h, AA_CALL_CHECK, NULL, 0);

	if (ret > 0)
		pr_warn("heap check failed with code %d\n", ret);
	return ret < 0 ? aa_err(ret) : ret;
}

AA_API int aa_heap__batch(struct aa_heap *h, __u64 ops, __u32 n)
{
	struct aa_batch_args a = { .ops = ops, .n = n };
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!aa_heap__ptr(h, ops) || !aa_heap__ptr(h, ops + (__u64)n * sizeof(struct aa_batch_op) - 1))
		return aa_err(-EFAULT);
	err = aa__run_call(h, AA_CALL_BATCH, &a, sizeof(a));
	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	return (int)a.done;
}

/* Drain tries: a cache is claimed only while a program is inside an
 * allocator call (microseconds), or while its owner task is preempted there
 * (until the scheduler runs it again). */
#define DRAIN_TRIES	200
#define DRAIN_WAIT_US	500

AA_API long aa_heap__drain(struct aa_heap *h)
{
	struct aa_drain_args a;
	long total = 0;
	char cpus[256];
	int tries, err, cpu, len;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!h->root)
		return aa_err(-EINVAL);
	aa_heap__reap(h);	/* dead processes' caches, before they count as busy */
	for (tries = 0; tries < DRAIN_TRIES; tries++) {
		memset(&a, 0, sizeof(a));
		err = aa__run_call(h, AA_CALL_DRAIN, &a, sizeof(a));
		if (err)
			return aa_err(err < 0 ? err : -EINVAL);
		total += a.objects;
		if (a.err) {
			pr_warn("drain failed: %s\n", strerror(-a.err));
			return aa_err(a.err);
		}
		if (!a.nr_busy && !a.user_busy)
			return total;
		usleep(DRAIN_WAIT_US);
	}
	if (!a.nr_busy) {
		pr_warn("drain: %u user cache(s) stayed in use for %d ms (a thread inside a call, "
			"or stopped there): not drained\n", a.user_busy,
			DRAIN_TRIES * DRAIN_WAIT_US / 1000);
		return aa_err(-EBUSY);
	}
	for (cpu = 0, len = 0; cpu < AA_MAX_CPUS && len < (int)sizeof(cpus) - 8; cpu++)
		if (a.busy[cpu / 64] & (1ULL << (cpu % 64)))
			len += snprintf(cpus + len, sizeof(cpus) - len, "%s%d", len ? "," : "", cpu);
	pr_warn("drain: the caches of %u CPU(s) (%s) stayed in use for %d ms: not drained\n",
		a.nr_busy, cpus, DRAIN_TRIES * DRAIN_WAIT_US / 1000);
	return aa_err(-EBUSY);
}
