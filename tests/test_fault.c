// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_fault.c - fault injection (struct aa_fault): page allocations of
 * init and grow that fail, spans and page runs that the page heap
 * refuses, from a syscall program and a tc program, and the recovery once
 * aa_heap__set_fault() turns the faults off. After every step the heap
 * must pass its checker and hold exactly the pages it accounts for (the
 * page ledger of aa_shared.h):
 *   pages_got - pages_put == pages_mapped + (CPU and user caches) * AA_CPU_CACHE_PAGES
 *                            + table_pages (the root's tables)
 *   pages_mapped == nr_chunks * (AA_CHUNK_PAGES + AA_META_PAGES)
 */
#include <stdlib.h>
#include "common.h"
#include "test_fault.h"
#include "test_fault.skel.h"

#define MiB (1ULL << 20)
#define U(x) ((unsigned long long)(x))

/* The faults the every-Nth rule injects while a counter goes from
 * `before` to `after`. */
static __u64 faults_between(__u64 before, __u64 after, __u32 every)
{
	return every ? after / every - before / every : 0;
}

/* Caches with pages: CPU caches and user caches. */
static __u32 cache_cpus(const struct aa_root *r)
{
	return t_cache_pages(r) / AA_CPU_CACHE_PAGES;
}

/* The page ledger and the checker, at rest. */
static void check_pages(struct aa_heap *h, const struct aa_root *r, const char *when)
{
	t_assert_ledger(r, when);
	cr_assert_eq(r->stats.pages_mapped, r->stats.nr_chunks * (AA_CHUNK_PAGES + AA_META_PAGES),
		     "%s: pages_mapped %llu for %llu chunks", when, U(r->stats.pages_mapped),
		     U(r->stats.nr_chunks));
	if (h)
		cr_assert_eq(aa_heap__check(h), 0, "%s: heap check failed", when);
}

static struct test_fault *load_skel(void)
{
	struct test_fault *s;

	t_need_arena();
	s = test_fault__open();
	cr_assert_not_null(s);
	cr_assert_eq(bpf_map__set_max_entries(s->maps.arena, T_PAGES(64 * MiB)), 0);	/* 64 MiB */
	cr_assert_eq(test_fault__load(s), 0);
	return s;
}

/* --- (a) init ---------------------------------------------------------------- */

/* Every init of a fresh object with every N-th page allocation failing,
 * N = 1 .. (the page allocations of a clean init) + 1: each attempt fails
 * with -ENOMEM leaving nothing mapped and nothing published, or succeeds;
 * retried on the same object until it succeeds (which it must once N is
 * larger than one init's page allocations), at most calls + 2 times. */
Test(fault, init_fails_cleanly_or_succeeds)
{
	struct test_fault *s = load_skel();
	const struct aa_root *r = &s->arena->aa__root;
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 * MiB);
	struct aa_heap *h;
	__u64 calls;
	__u32 every, tries, failed = 0;

	h = aa_heap__attach(s->obj, &o);
	cr_assert_not_null(h, "clean init: %s", strerror(errno));
	calls = r->fault.page_calls;
	cr_assert_gt(calls, 2, "init's page allocations: %llu", U(calls));
	cr_log_info("a clean init of 2 MiB on %u CPUs made %llu page allocations", cache_cpus(r),
		    U(calls));
	check_pages(h, r, "clean init");
	aa_heap__destroy(h);
	test_fault__destroy(s);

	for (every = 1; every <= calls + 1; every++) {
		s = load_skel();
		r = &s->arena->aa__root;
		o.fault_pages_every = every;
		for (tries = 0; tries < calls + 2; tries++) {
			__u64 faults = r->fault.page_faults;

			h = aa_heap__attach(s->obj, &o);
			if (h)
				break;
			cr_assert_eq(errno, ENOMEM, "every %u: init failed with %s", every,
				     strerror(errno));
			cr_assert_gt(r->fault.page_faults, faults,
				     "every %u: init failed without an injected fault", every);
			cr_assert_neq(r->magic, AA_ROOT_MAGIC, "every %u: a failed init published", every);
			cr_assert_eq(r->fault.pages_got - r->fault.pages_put, r->table_pages,
				     "every %u, try %u: a failed init left %llu pages mapped "
				     "(the root's tables: %u)", every, tries,
				     U(r->fault.pages_got - r->fault.pages_put), r->table_pages);
			cr_assert_eq(cache_cpus(r), 0, "every %u: a failed init kept CPU caches", every);
			cr_assert_eq(r->stats.nr_chunks, 0);
			cr_assert_eq(r->stats.pages_mapped, 0);
			failed++;
		}
		if (every > calls)
			cr_assert_not_null(h, "every %u > %llu page allocations per init: still "
					   "failing after %u tries", every, U(calls), tries);
		if (h) {
			cr_assert_eq(r->magic, AA_ROOT_MAGIC);
			check_pages(h, r, "init after faults");
			cr_assert_neq(aa_heap__malloc(h, 100), 0);
			aa_heap__destroy(h);
		}
		test_fault__destroy(s);
	}
	cr_assert_geq(failed, calls, "faults hit init %u times", failed);
}

/* --- (b) grow ---------------------------------------------------------------- */

/* Grow by 4 chunks at a time with every N-th page allocation failing: each
 * grow adds some chunks or fails with -ENOMEM, adding none; the injected
 * faults are exactly the every-N-th calls; the heap holds exactly what it
 * accounts for after every step; trim and teardown give it all back. */
Test(fault, grow_fails_cleanly_or_partly)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = T_PAGES(64 * MiB), .init_bytes = MiB);
	struct aa_heap *h;
	const struct aa_root *r;
	__u32 every, i, partial = 0, failed = 0, full = 0;
	char when[64];

	t_need_arena();
	h = aa_heap__open(&o);
	cr_assert_not_null(h, "%s", strerror(errno));
	r = aa_heap__root(h);
	for (every = 1; every <= 6; every++) {
		cr_assert_eq(aa_heap__set_fault(h, every, 0), 0);
		for (i = 0; i < 4; i++) {
			__u64 chunks = r->stats.nr_chunks, calls = r->fault.page_calls;
			__u64 faults = r->fault.page_faults;
			int ret = aa_heap__grow(h, 4 * MiB);

			snprintf(when, sizeof(when), "every %u, grow %u (%d)", every, i, ret);
			cr_assert(ret == -ENOMEM || (ret > 0 && ret <= 4), "%s", when);
			cr_assert_eq(r->stats.nr_chunks, chunks + (ret > 0 ? ret : 0), "%s", when);
			cr_assert_eq(r->fault.page_faults - faults,
				     faults_between(calls, r->fault.page_calls, every), "%s", when);
			check_pages(h, r, when);
			failed += ret < 0;
			partial += ret > 0 && ret < 4;
			full += ret == 4;
			if (r->stats.nr_chunks > 40)
				cr_assert_geq(aa_heap__trim(h, 0), 0);
		}
	}
	cr_log_info("grows: %u failed, %u partial, %u whole", failed, partial, full);
	cr_assert_gt(failed, 0);
	cr_assert_gt(partial, 0);
	cr_assert_eq(aa_heap__set_fault(h, 0, 0), 0);
	cr_assert_eq(aa_heap__grow(h, 4 * MiB), 4, "faults off: a whole grow");
	check_pages(h, r, "faults off");
	cr_assert_gt(aa_heap__trim(h, 0), 0);
	check_pages(h, r, "trim");
	cr_assert_geq(aa_heap__teardown(h), 0);
	cr_assert_eq(r->stats.pages_mapped, 0);
	check_pages(NULL, r, "teardown");
	aa_heap__destroy(h);
}

/* --- (c) + (d) spans and page runs --------------------------------------------- */

struct held {
	__u64 addr, size;
};

struct span_run {
	struct test_fault *s;
	struct aa_heap *h;
	const struct aa_root *r;
	struct held *objs;
	__u32 n, cap;
	__u64 nulls;		/* NULLs the test saw, syscall and tc */
};

static void keep(struct span_run *t, __u64 p)
{
	__u64 *w = aa_heap__ptr(t->h, p);

	cr_assert_not_null(w);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->objs = realloc(t->objs, t->cap * sizeof(*t->objs));
		cr_assert_not_null(t->objs);
	}
	t->objs[t->n].addr = p;
	t->objs[t->n].size = 0;		/* check_objects() asks */
	t->n++;
}

/* n allocations of size from a syscall program (the library's aa__run). */
static void alloc_syscall(struct span_run *t, __u64 size, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		struct aa_op_args a = t_call(t->h, AA_OP_MALLOC, size, 0, 0, 0);
		__u64 *w;

		if (!a.ptr) {
			cr_assert_eq(a.ret, -ENOMEM, "malloc(%llu): %lld", U(size), (long long)a.ret);
			t->nulls++;
			continue;
		}
		w = aa_heap__ptr(t->h, a.ptr);
		w[0] = a.ptr ^ TF_STAMP;
		w[1] = ~0ULL;	/* not a tc slot */
		keep(t, a.ptr);
	}
}

/* n runs of the tc program, one allocation of size each. */
static void alloc_tc(struct span_run *t, __u64 size, __u32 n)
{
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = n);
	__u32 first = t->s->bss->tf_next, i;
	__u64 nulls = t->s->bss->tf_nulls;

	cr_assert_leq(first + n, TF_SLOTS);
	t->s->bss->tf_size = size;
	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(t->s->progs.tf_alloc), &o), 0,
		     "tc test run: %s", strerror(errno));
	cr_assert_eq(t->s->bss->tf_next, first + n);
	cr_assert_eq(t->s->bss->tf_full, 0);
	for (i = first; i < first + n; i++)
		if (t->s->arena->tf_held[i])
			keep(t, t->s->arena->tf_held[i]);
	t->nulls += t->s->bss->tf_nulls - nulls;
}

static int by_addr(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* No object handed out twice: the live objects' [addr, addr + usable)
 * do not overlap, and each still carries its stamp. */
static void check_objects(struct span_run *t)
{
	__u32 i;

	for (i = 0; i < t->n; i++) {
		__u64 *w = aa_heap__ptr(t->h, t->objs[i].addr);

		t->objs[i].size = t_usable(t->h, t->objs[i].addr);
		cr_assert_gt(t->objs[i].size, 0, "object 0x%llx is not live", U(t->objs[i].addr));
		cr_assert_eq(w[0], t->objs[i].addr ^ TF_STAMP, "object 0x%llx lost its stamp",
			     U(t->objs[i].addr));
	}
	qsort(t->objs, t->n, sizeof(*t->objs), by_addr);
	for (i = 1; i < t->n; i++)
		cr_assert_geq(t->objs[i].addr, t->objs[i - 1].addr + t->objs[i - 1].size,
			      "objects 0x%llx (%llu B) and 0x%llx overlap: handed out twice",
			      U(t->objs[i - 1].addr), U(t->objs[i - 1].size), U(t->objs[i].addr));
}

static const __u64 class_sizes[] = { 16, 48, 200, 1000, 3000, 8192 };
static const __u64 run_sizes[] = { 12 << 10, 64 << 10, 300 << 10, 1536 << 10 };
#define NCLS	(sizeof(class_sizes) / sizeof(class_sizes[0]))
#define NRUNS	(sizeof(run_sizes) / sizeof(run_sizes[0]))

/* One round of allocations: every class size and page run, from both
 * program types. The page runs go straight to the page heap, one request
 * each: their NULLs must be exactly the faults injected meanwhile. */
static void round_of_allocs(struct span_run *t, __u32 per_class, __u32 per_run)
{
	__u64 nulls, calls, faults;
	__u32 i, every = t->r->fault.spans_every;

	for (i = 0; i < NCLS; i++) {
		alloc_syscall(t, class_sizes[i], per_class);
		alloc_tc(t, class_sizes[i], per_class);
	}
	nulls = t->nulls;
	calls = t->r->fault.span_calls;
	faults = t->r->fault.span_faults;
	for (i = 0; i < NRUNS; i++) {
		alloc_syscall(t, run_sizes[i], per_run);
		alloc_tc(t, run_sizes[i], per_run);
	}
	cr_assert_eq(t->r->fault.span_calls - calls, 2 * NRUNS * per_run,
		     "one page-heap request per page run");
	cr_assert_eq(t->nulls - nulls, t->r->fault.span_faults - faults,
		     "page runs: %llu NULLs, %llu injected faults", U(t->nulls - nulls),
		     U(t->r->fault.span_faults - faults));
	cr_assert_eq(t->r->fault.span_faults - faults,
		     faults_between(calls, t->r->fault.span_calls, every));
}

/* Spans and page runs refused every 3rd time, from syscall and tc
 * programs: each NULL is counted once in err[NOMEM], the injected faults
 * are exactly every 3rd request, each page-run NULL is one of them, and
 * no object is handed out twice. Then faults off: everything succeeds
 * again, all is freed and drained, and teardown returns every page. */
Test(fault, span_faults_give_null_counted_once_and_recover)
{
	/* no self-growth: an injected fault is an empty heap, which would
	 * grow and try again */
	AA_OPTS(aa_heap_opts, o, .init_bytes = 48 * MiB, .fault_spans_every = 3,
		.flags = AA_F_NO_SELF_GROW);
	struct span_run t = {};
	struct aa_stats st;
	__u64 nomem, calls, faults, chunks;
	__u32 i;

	t.s = load_skel();
	t.h = aa_heap__attach(t.s->obj, &o);
	cr_assert_not_null(t.h, "%s", strerror(errno));
	t.r = aa_heap__root(t.h);
	cr_assert_eq(t.r->fault.spans_every, 3);
	nomem = t_stats(t.h).err[AA_ERR_NOMEM];
	calls = t.r->fault.span_calls;
	faults = t.r->fault.span_faults;

	round_of_allocs(&t, 300, 4);

	st = t_stats(t.h);
	cr_log_info("span faults: %llu of %llu requests failed; %llu NULLs, %u objects held",
		    U(t.r->fault.span_faults - faults), U(t.r->fault.span_calls - calls),
		    U(t.nulls), t.n);
	cr_assert_gt(t.nulls, 0, "no allocation got NULL");
	cr_assert_eq(st.err[AA_ERR_NOMEM] - nomem, t.nulls,
		     "err[NOMEM] grew by %llu for %llu NULLs", U(st.err[AA_ERR_NOMEM] - nomem),
		     U(t.nulls));
	cr_assert_eq(t.r->fault.span_faults - faults,
		     faults_between(calls, t.r->fault.span_calls, 3));
	cr_assert_geq(t.r->fault.span_faults - faults, t.nulls,
		      "a NULL without an injected fault (the heap had room)");
	check_objects(&t);
	check_pages(t.h, t.r, "span faults");

	/* (d) faults off: no NULL, no fault, the same objects still live */
	cr_assert_eq(aa_heap__set_fault(t.h, 0, 0), 0);
	faults = t.r->fault.span_faults;
	nomem = t_stats(t.h).err[AA_ERR_NOMEM];
	t.nulls = 0;
	round_of_allocs(&t, 100, 2);
	cr_assert_eq(t.nulls, 0, "faults off: %llu NULLs", U(t.nulls));
	cr_assert_eq(t.r->fault.span_faults, faults);
	cr_assert_eq(t_stats(t.h).err[AA_ERR_NOMEM], nomem);
	check_objects(&t);

	for (i = 0; i < t.n; i++)
		cr_assert_eq(t_free(t.h, t.objs[i].addr), 0, "free 0x%llx", U(t.objs[i].addr));
	cr_assert_geq(aa_heap__drain(t.h), 0);
	st = t_stats(t.h);
	cr_assert_eq(st.live_allocs, 0, "%llu allocations left after freeing all and a drain",
		     U(st.live_allocs));
	cr_assert_eq(st.bytes_in_use, 0);
	check_pages(t.h, t.r, "all freed");
	chunks = st.nr_chunks;
	cr_assert_eq(aa_heap__teardown(t.h), (int)chunks, "teardown returns every chunk");
	cr_assert_eq(t.r->stats.pages_mapped, 0);
	check_pages(NULL, t.r, "teardown");
	free(t.objs);
	aa_heap__destroy(t.h);
	test_fault__destroy(t.s);
}

/* --- options -------------------------------------------------------------- */

Test(fault, options_come_from_opts_or_the_environment)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = T_PAGES(8 * MiB), .fault_pages_every = 1000);
	struct aa_heap *h;

	t_need_arena();
	setenv("ARENA_ALLOC_FAULT_SPANS_EVERY", "7", 1);
	setenv("ARENA_ALLOC_FAULT_PAGES_EVERY", "5", 1);
	h = aa_heap__open(&o);
	cr_assert_not_null(h, "%s", strerror(errno));
	cr_assert_eq(aa_heap__root(h)->fault.pages_every, 1000, "opts win over the environment");
	cr_assert_eq(aa_heap__root(h)->fault.spans_every, 7, "the environment fills a 0");
	aa_heap__destroy(h);
	setenv("ARENA_ALLOC_FAULT_SPANS_EVERY", "often", 1);
	cr_assert_null(aa_heap__open(&o));
	cr_assert_eq(errno, EINVAL);
	setenv("ARENA_ALLOC_FAULT_SPANS_EVERY", "4294967296", 1);
	cr_assert_null(aa_heap__open(&o));
	cr_assert_eq(errno, EINVAL);
	unsetenv("ARENA_ALLOC_FAULT_SPANS_EVERY");
	unsetenv("ARENA_ALLOC_FAULT_PAGES_EVERY");
	cr_assert_eq(aa_heap__set_fault(NULL, 1, 1), -EINVAL);
}
