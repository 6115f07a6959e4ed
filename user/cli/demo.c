// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * demo.c - `arena-alloc demo` (what `make run` runs):
 *
 *   arena-alloc demo [--arena-mb N] [--objects N]
 *       load the allocator, initialise it, run a small workload (allocate
 *       objects of mixed sizes from BPF, write and verify them from
 *       userspace through the mmap, free half, trim) and print the stats
 *       next to what the workload expects them to be.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static __u64 demo_size(unsigned int i)
{
	static const __u64 sizes[] = { 16, 24, 64, 100, 256, 1000, 4096, 3000 };

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

/* The program's view: the heap counts cached objects as in use. */
static int check_stats(struct aa_heap *h, const char *when, __u64 want_bytes, __u64 want_live)
{
	__u64 cached_objs, cached = aa_heap__cached_bytes(h, &cached_objs);
	struct aa_stats st;

	aa_heap__stats(h, &st);
	printf("\n%s: expected %llu B in %llu live allocations\n", when,
	       (unsigned long long)want_bytes, (unsigned long long)want_live);
	aa_stats__print(&st, stdout);
	printf("cached: %llu B in %llu objects -> in use by the program: %llu B in %llu\n",
	       (unsigned long long)cached, (unsigned long long)cached_objs,
	       (unsigned long long)(st.bytes_in_use - cached),
	       (unsigned long long)(st.live_allocs - cached_objs));
	if (st.bytes_in_use - cached != want_bytes || st.live_allocs - cached_objs != want_live) {
		fprintf(stderr, "arena-alloc: stats do not match the workload\n");
		return 1;
	}
	return 0;
}

int cmd_demo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "arena-mb", required_argument, NULL, 'a' },
		{ "objects", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	unsigned long arena_mb = 256, nobj = 1000;
	struct aa_batch_op *ops;
	struct aa_heap *h;
	__u64 ops_addr, expect = 0, expect_after = 0, live_after = 0;
	unsigned int i;
	int c, n, err = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'a':
		case 'n':
			errno = 0;
			*(c == 'a' ? &arena_mb : &nobj) = strtoul(optarg, &end, 0);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "arena-alloc: bad number '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: arena-alloc demo [--arena-mb N] [--objects N]\n"
			       "  load the allocator, run a small workload, check the stats\n");
			return 0;
		default:
			cli_err("demo: unknown option (arena-alloc demo --help)");
			return EXIT_USAGE;
		}
	}
	if (nobj == 0 || nobj > 100000 || arena_mb < 8 || arena_mb > 4096) {
		fprintf(stderr, "arena-alloc: --objects must be 1..100000, --arena-mb 8..4096\n");
		return 2;
	}

	AA_OPTS(aa_heap_opts, hopts, .arena_pages = arena_mb * 256, .init_bytes = 4 << 20);
	h = aa_heap__open(&hopts);
	if (!h) {
		fprintf(stderr, "arena-alloc: cannot open the heap: %s\n", strerror(errno));
		return 1;
	}
	printf("loaded: arena %lu MiB, heap root at %p, layout v%u\n", arena_mb,
	       (void *)aa_heap__root(h), aa_heap__root(h)->version);

	ops_addr = aa_heap__malloc(h, nobj * sizeof(*ops));
	ops = aa_heap__ptr(h, ops_addr);
	if (!ops) {
		fprintf(stderr, "arena-alloc: op array allocation failed: %s\n", strerror(errno));
		err = 1;
		goto out;
	}
	expect = usable_of(nobj * sizeof(*ops));
	/* 1. allocate nobj objects in one BPF program run */
	memset(ops, 0, nobj * sizeof(*ops));
	for (i = 0; i < nobj; i++) {
		ops[i].size = demo_size(i);
		expect += usable_of(ops[i].size);
	}
	n = aa_heap__batch(h, ops_addr, nobj);
	if (n != (int)nobj) {
		fprintf(stderr, "arena-alloc: batch ran %d of %lu ops\n", n, nobj);
		err = 1;
		goto out;
	}
	/* 2. write every object from userspace, then verify */
	for (i = 0; i < nobj; i++) {
		unsigned char *p = aa_heap__ptr(h, ops[i].ptr);

		if (!p || ops[i].ret) {
			fprintf(stderr, "arena-alloc: allocation %u failed: %lld\n", i,
				(long long)ops[i].ret);
			err = 1;
			goto out;
		}
		memset(p, (unsigned char)i, demo_size(i));
	}
	for (i = 0; i < nobj; i++) {
		unsigned char *p = aa_heap__ptr(h, ops[i].ptr);
		__u64 b;

		for (b = 0; b < demo_size(i); b++)
			if (p[b] != (unsigned char)i) {
				fprintf(stderr, "arena-alloc: object %u corrupted\n", i);
				err = 1;
				goto out;
			}
	}
	err |= check_stats(h, "after allocating the objects and the op array", expect, nobj + 1);

	/* 3. free every other object, in one run */
	expect_after = expect;
	for (i = 0; i < nobj; i++) {
		if (i % 2) {
			ops[i].ptr = 0;	/* skip: op with ptr 0 and size 0 fails */
			continue;
		}
		expect_after -= usable_of(demo_size(i));
	}
	/* compact the free list to the front */
	for (i = 0, n = 0; i < nobj; i += 2, n++)
		ops[n] = (struct aa_batch_op){ .ptr = ops[i].ptr };
	n = aa_heap__batch(h, ops_addr, n);
	live_after = nobj - n + 1;
	for (i = 0; i < (unsigned)n; i++)
		if (ops[i].ret) {
			fprintf(stderr, "arena-alloc: free %u failed: %lld\n", i,
				(long long)ops[i].ret);
			err = 1;
		}
	err |= check_stats(h, "after freeing every other object", expect_after, live_after);
	printf("\nper-CPU caches (class = object size in bytes):\n");
	aa_heap__print_caches(h, stdout);

	/* 4. drain the caches: the heap alone must now match the workload */
	if (aa_heap__drain(h) < 0)
		err = 1;
	err |= check_stats(h, "after draining the caches", expect_after, live_after);
	if (aa_heap__cached_bytes(h, NULL))	/* the heap alone matched */
		err = 1;
	c = aa_heap__check(h);
	printf("\nheap check: %s\n", c == 0 ? "ok" : "FAILED");
	if (c)
		err = 1;
	printf("%s\n", err ? "demo: FAILED" : "demo: stats match the workload");
out:
	aa_heap__destroy(h);
	return err;
}
