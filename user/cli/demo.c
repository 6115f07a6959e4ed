// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * demo.c - `arena-alloc demo` (what `make run` runs):
 *
 *   arena-alloc demo [--arena-mb N] [--objects N] [--runs N]
 *       load the demo's BPF object (a tc program linked with the
 *       allocator, bpf/demo.bpf.c), initialise the heap, then run a mixed
 *       workload and check the heap's own counters against it after each
 *       step:
 *         1. a syscall program allocates --objects objects of mixed sizes
 *            in one run; userspace writes and verifies each through the
 *            mmap, and frees every other one (another run);
 *         2. the tc program (not sleepable) runs --runs times, each run
 *            replacing one object of its slot table; userspace then checks
 *            every live object's stamp through the mmap;
 *         3. drain the caches, run the checker;
 *       and ends with `arena-alloc stats` and `arena-alloc dump` of it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "demo.h"
#include "demo.skel.h"

/* Object i's size: small classes, 4 KiB, and a page run above
 * the largest class (20000 B: 5 pages of 4 KiB, 2 of 16). */
static __u64 batch_size(unsigned int i)
{
	static const __u64 sizes[] = { 16, 24, 64, 100, 256, 1000, 4096, 20000 };

	return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* What the heap gives a request of n bytes: its size class's objects up
 * to AA_MAX_CLASS_SIZE, whole pages above. */
static __u64 usable_of(__u64 n)
{
	if (n <= AA_MAX_CLASS_SIZE)
		return aa_class_size(aa_size_class(n));
	return (n + AA_PAGE_SIZE - 1) & ~(__u64)(AA_PAGE_SIZE - 1);
}

/* The totals (the calls the workload made) against what it holds; the
 * caches' share of the heap shown apart. */
static int check_stats(struct aa_heap *h, const char *when, __u64 want_bytes, __u64 want_live)
{
	struct aa_stats st;
	bool ok;

	aa_heap__stats(h, &st);
	ok = st.bytes_in_use == want_bytes && st.live_allocs == want_live;
	printf("%s:\n  workload holds %llu B in %llu objects; stats: %llu B in %llu allocations "
	       "(and %llu B in %llu objects cached) -> %s\n", when, (unsigned long long)want_bytes,
	       (unsigned long long)want_live, (unsigned long long)st.bytes_in_use,
	       (unsigned long long)st.live_allocs, (unsigned long long)st.cached_bytes,
	       (unsigned long long)st.cached_objs, ok ? "match" : "MISMATCH");
	if (!ok)
		cli_err("demo: stats do not match the workload %s", when);
	return !ok;
}

static unsigned long demo_arena_mb, demo_objects, demo_runs;

static int demo_opt(int c, const char *arg)
{
	unsigned long *v = c == 'a' ? &demo_arena_mb : c == 'n' ? &demo_objects : &demo_runs;
	unsigned long long n;

	if (cli_parse_number(arg, 0, &n) || n > ULONG_MAX) {
		cli_err("demo: bad number '%s'", arg);
		return -1;
	}
	*v = n;
	return 0;
}

/* Step 1: the syscall program's batch. Leaves every other object live;
 * adds what it holds to *bytes, *live. */
static int batch_step(struct aa_heap *h, __u64 *bytes, __u64 *live)
{
	__u64 ops_addr = aa_heap__malloc(h, demo_objects * sizeof(struct aa_batch_op));
	struct aa_batch_op *ops = aa_heap__ptr(h, ops_addr);
	__u64 b;
	unsigned int i;
	int n;

	if (!ops) {
		cli_err("demo: op array allocation failed: %s", strerror(errno));
		return 1;
	}
	*bytes += usable_of(demo_objects * sizeof(*ops));
	*live += 1;
	memset(ops, 0, demo_objects * sizeof(*ops));
	for (i = 0; i < demo_objects; i++)
		ops[i].size = batch_size(i);
	n = aa_heap__batch(h, ops_addr, demo_objects);
	if (n != (int)demo_objects) {
		cli_err("demo: the batch ran %d of %lu ops", n, demo_objects);
		return 1;
	}
	for (i = 0; i < demo_objects; i++) {	/* write every object, then verify */
		unsigned char *p = aa_heap__ptr(h, ops[i].ptr);

		if (!p || ops[i].ret) {
			cli_err("demo: allocation %u failed: %lld", i, (long long)ops[i].ret);
			return 1;
		}
		memset(p, (unsigned char)i, batch_size(i));
		*bytes += usable_of(batch_size(i));
	}
	for (i = 0; i < demo_objects; i++) {
		unsigned char *p = aa_heap__ptr(h, ops[i].ptr);

		for (b = 0; b < batch_size(i); b++)
			if (p[b] != (unsigned char)i) {
				cli_err("demo: object %u corrupted", i);
				return 1;
			}
	}
	*live += demo_objects;
	if (check_stats(h, "1. a syscall program allocated the objects", *bytes, *live))
		return 1;
	/* free the even ones, compacted to the front, in one run */
	for (i = 0, n = 0; i < demo_objects; i += 2, n++) {
		*bytes -= usable_of(batch_size(i));
		ops[n] = (struct aa_batch_op){ .ptr = ops[i].ptr };
	}
	n = aa_heap__batch(h, ops_addr, n);
	*live -= n;
	for (i = 0; i < (unsigned int)n; i++)
		if (ops[i].ret) {
			cli_err("demo: free %u failed: %lld", i, (long long)ops[i].ret);
			return 1;
		}
	return check_stats(h, "   ... and freed every other one", *bytes, *live);
}

/* Step 2: the tc program, demo_runs times in one BPF_PROG_TEST_RUN; then
 * every object in its slot table is checked from userspace. */
static int tc_step(struct demo_bpf *skel, struct aa_heap *h, __u64 *bytes, __u64 *live)
{
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = demo_runs);
	const struct demo_counts *k = &skel->bss->counts;
	__u64 slots = 0, bad = 0;
	unsigned int s;
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.demo_tc), &o);
	if (err) {
		cli_err("demo: running the tc program failed: %s", strerror(-err));
		return 1;
	}
	for (s = 0; s < DEMO_SLOTS; s++) {
		const __u64 *p = aa_heap__ptr(h, skel->arena->demo_slots[s]);

		if (!skel->arena->demo_slots[s])
			continue;
		slots++;
		if (!p || !demo_stamp_ok(p[0], p[1]))
			bad++;
		else
			*bytes += usable_of(p[1]);
	}
	*live += slots;
	printf("2. a tc program ran %llu times: %llu allocations, %llu frees, %llu NULLs, "
	       "%llu refused frees, %llu bad stamps; %llu objects live in its table, "
	       "%llu bad from userspace\n", (unsigned long long)k->runs,
	       (unsigned long long)k->allocs, (unsigned long long)k->frees,
	       (unsigned long long)k->nulls, (unsigned long long)k->free_errors,
	       (unsigned long long)k->corrupt, (unsigned long long)slots,
	       (unsigned long long)bad);
	if (k->runs != demo_runs || k->nulls || k->free_errors || k->corrupt || bad ||
	    k->allocs - k->frees != slots) {
		cli_err("demo: the tc program's objects are not what it did");
		return 1;
	}
	return check_stats(h, "   the heap after the tc program", *bytes, *live);
}

int cmd_demo_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "arena-mb", required_argument, NULL, 'a' },
		{ "objects", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'r' },
		{},
	};
	int r;

	demo_arena_mb = 256;
	demo_objects = 1000;
	demo_runs = 20000;
	r = cli_parse(argc, argv, opts, cli_cmd("demo"), demo_opt);
	if (r)
		return r;
	if (cli.json) {
		cli_err("demo: no --json: it is a walk-through; `arena-alloc -j stats` reads a pinned heap");
		return -1;
	}
	if (demo_objects == 0 || demo_objects > 100000 || demo_arena_mb < 16 ||
	    demo_arena_mb > 4096 || demo_runs == 0 || demo_runs > 10000000) {
		cli_err("demo: --objects must be 1..100000, --arena-mb 16..4096, --runs 1..10^7");
		return -1;
	}
	return 0;
}

int cmd_demo(void)
{
	struct demo_bpf *skel;
	struct aa_heap *h = NULL;
	__u64 bytes = 0, live = 0;
	int r, err;

	/* before libbpf loads anything: its messages guess at the cause */
	if (cli_need_root("demo") || cli_need_arena("demo"))
		return 1;
	skel = demo_bpf__open();
	if (!skel || bpf_map__set_max_entries(skel->maps.arena, (demo_arena_mb << 20) / AA_PAGE_SIZE) ||
	    demo_bpf__load(skel)) {
		cli_err("demo: loading the demo's BPF object failed: %s", strerror(errno));
		demo_bpf__destroy(skel);
		return 1;
	}
	AA_OPTS(aa_heap_opts, hopts, .init_bytes = 16 << 20);
	h = aa_heap__attach(skel->obj, &hopts);
	if (!h) {
		cli_err("demo: cannot initialise the heap: %s", strerror(errno));
		demo_bpf__destroy(skel);
		return 1;
	}
	printf("loaded: the demo's object (a tc program + arena-alloc), arena %lu MiB, "
	       "heap root at %p, layout v%u\n\n", demo_arena_mb, (void *)aa_heap__root(h),
	       aa_heap__root(h)->version);

	err = batch_step(h, &bytes, &live);
	if (!err)
		err = tc_step(skel, h, &bytes, &live);
	if (!err) {
		if (aa_heap__drain(h) < 0 || aa_heap__cached_bytes(h, NULL))
			err = 1;	/* the heap alone must now match */
		err |= check_stats(h, "3. after draining the caches", bytes, live);
		r = aa_heap__check(h);
		printf("   heap check: %s\n", r == 0 ? "ok" : "FAILED");
		err |= r != 0;
	}
	printf("\n$ arena-alloc stats\n");
	cli_print_stats(h, "demo");
	printf("\n$ arena-alloc dump\n");
	cli_print_dump(h, "demo");
	printf("\n%s\n", err ? "demo: FAILED" : "demo: stats match the workload");
	aa_heap__destroy(h);
	demo_bpf__destroy(skel);
	return err;
}
