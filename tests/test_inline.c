// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_inline.c - runs tests/bpf/test_inline.bpf.c: the inline API's hit
 * path and its fallbacks in an embedder's own object (linked with the
 * library, heap set up by aa_heap__attach()), before init and with caches
 * off, and what each inline call site costs the verifier.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "arena_alloc.skel.h"
#include "test_inline.skel.h"
#include "test_noinline.skel.h"

struct inline_args {
	__u64 size;
	__u32 cpu;
	__u32 pad;
	__u64 first;
};

static struct test_inline *skel;
static struct aa_heap *heap;

/* Load the object with only the programs a test needs: each program
 * verifies the library's global functions it reaches again (~50K
 * instructions on 6.18, ~70K on 6.12, and 13-21x slower there under QEMU).
 * only: the programs whose name starts with it; NULL: all but cost_*. */
static void load_skel_lib(const char *only, bool lib)
{
	struct bpf_program *p;
	const char *name;

	t_need_arena();
	skel = test_inline__open();
	cr_assert_not_null(skel, "test_inline open failed: %s", strerror(errno));
	bpf_object__for_each_program(p, skel->obj) {
		name = bpf_program__name(p);
		bpf_program__set_autoload(p, only ? !strncmp(name, only, strlen(only)) ||
						    (lib && !strncmp(name, "aa__", 4)) :
					  strncmp(name, "cost_", 5) != 0);
	}
	if (test_inline__load(skel)) {
		test_inline__destroy(skel);
		skel = NULL;
	}
	cr_assert_not_null(skel, "test_inline load failed: %s", strerror(errno));
}

static void load_skel(const char *only)
{
	load_skel_lib(only, false);
}

static void open_skel(void)
{
	load_skel(NULL);
}

/* inline_one and the library's programs, never attached */
static void open_one_lib_skel(void)
{
	load_skel_lib("inline_one", true);
}

static void open_cost_skel(void)
{
	load_skel("cost_");
}

static void setup(void)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);

	open_skel();
	heap = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(heap, "aa_heap__attach: %s", strerror(errno));
}

static void teardown(void)
{
	aa_heap__destroy(heap);
	heap = NULL;
	test_inline__destroy(skel);
	skel = NULL;
}

static int run(struct bpf_program *prog, struct inline_args *a)
{
	return t_run(prog, a, sizeof(*a));
}

TestSuite(inline, .init = setup, .fini = teardown);

Test(inline, hit_path_and_every_fallback)
{
	struct inline_args a = { .size = 64 };
	struct aa_stats st0 = t_stats(heap), st1;
	const struct aa_cpu_cache *cc;
	__u64 allocs, frees;
	int ret, c64 = aa_size_class(64);

	/* the inline API found the caches that attach set up */
	cr_assert_neq(skel->data_aa_fast->aa_fast.arena_size, 0, "aa_fast not published by init");
	ret = run(skel->progs.inline_ops, &a);
	cr_assert_eq(ret, 0, "step %d failed with code %d", ret / 100, ret % 100);
	cc = aa_heap__cpu_cache(heap, a.cpu);
	cr_assert_not_null(cc);
	allocs = cc->cls[c64].stats.allocs;
	frees = cc->cls[c64].stats.frees;
	st1 = t_stats(heap);
	/* each bad pointer refused once, by the global path, and counted */
	cr_assert_eq(st1.err[AA_ERR_DOUBLE_FREE] - st0.err[AA_ERR_DOUBLE_FREE], 1);
	cr_assert_eq(st1.err[AA_ERR_INTERIOR] - st0.err[AA_ERR_INTERIOR], 1);
	cr_assert_eq(st1.err[AA_ERR_MISALIGNED] - st0.err[AA_ERR_MISALIGNED], 1);
	cr_assert_eq(st1.err[AA_ERR_FOREIGN] - st0.err[AA_ERR_FOREIGN], 1);
	cr_assert_eq(st1.err[AA_ERR_SIZE] - st0.err[AA_ERR_SIZE], 1, "aa_malloc(0)");
	/* 64-B class: step_hit 2, bad_pointers 1, calloc 2 allocs and frees */
	cr_assert_eq(allocs, 5, "CPU %u class %d allocs %llu", a.cpu, c64,
		     (unsigned long long)allocs);
	cr_assert_eq(frees, 5, "CPU %u class %d frees %llu", a.cpu, c64,
		     (unsigned long long)frees);
	cr_assert_eq(t_user_live(heap), 0);
	t_check(heap);
}

Test(inline, refused_before_init_and_after_teardown)
{
	struct inline_args a = { .size = 64 };

	cr_assert_geq(aa_heap__teardown(heap), 1);
	cr_assert_eq(skel->data_aa_fast->aa_fast.arena_size, 0, "teardown left aa_fast published");
	cr_assert_eq(skel->data_aa_fast->aa_fast.free_size, 0, "teardown left the inline free on");
	cr_assert_eq(run(skel->progs.inline_one, &a), 0, "memory from a torn-down heap");
	cr_assert_eq(t_stats(heap).err[AA_ERR_UNINIT], 1);
	cr_assert_eq(aa_heap__init(heap, 2 << 20), 0);
	cr_assert_eq(run(skel->progs.inline_one, &a), 1);
	t_check(heap);
}

/* Objects loaded but never attached. */
TestSuite(self_init, .init = open_one_lib_skel, .fini = teardown);
TestSuite(inline_cost, .init = open_cost_skel, .fini = teardown);

/* An object nobody attached: before Linux 7.0 every allocation gets NULL
 * (counted UNINIT); from 7.0 the first initialises the heap itself (once,
 * with the defaults and no CPU caches), and a loader that attaches later
 * finds it and checks it. */
Test(self_init, never_initialised_object_gets_null_or_initialises_itself)
{
	struct inline_args a = { .size = 64 };
	struct aa_root *r = (struct aa_root *)&skel->arena->aa__root;

	cr_assert_eq(skel->data_aa_fast->aa_fast.arena_size, 0);
	if (t_kernel_major() < 7) {
		cr_assert_eq(run(skel->progs.inline_one, &a), 0, "memory before init");
		a.size = 100000;
		cr_assert_eq(run(skel->progs.inline_one, &a), 0, "memory before init");
		/* both refused by the global path, counted in the (zeroed) root */
		cr_assert_eq(r->stats.err[AA_ERR_UNINIT], 2);
		cr_assert_eq(r->init_state, AA_INIT_NEVER);
		cr_assert_eq(r->self_inits, 0);
		return;
	}
	cr_assert_eq(run(skel->progs.inline_one, &a), 1, "no memory: self-init failed (%d)",
		     r->self_init_err);
	cr_assert_eq(r->magic, AA_ROOT_MAGIC);
	cr_assert_eq(r->self_inits, 1);
	cr_assert_eq(r->self_init_err, 0);
	cr_assert_eq(r->init_state, AA_INIT_DONE);
	cr_assert_eq(r->flags & AA_F_NO_CACHES, AA_F_NO_CACHES);
	cr_assert_eq(r->arena_size, (__u64)bpf_map__max_entries(skel->maps.arena) * AA_PAGE_SIZE);
	a.size = 100000;
	cr_assert_eq(run(skel->progs.inline_one, &a), 1, "a page run after self-init");
	cr_assert_eq(r->stats.err[AA_ERR_UNINIT], 0);
	cr_assert_eq(r->self_inits, 1, "initialised twice");
	heap = aa_heap__attach(skel->obj, NULL);
	cr_assert_not_null(heap, "attach to a self-initialised heap: %s", strerror(errno));
	cr_assert_eq(aa_heap__flags(heap) & ~AA_F_SELF_GROW, AA_F_NO_CACHES,
		     "attach did not keep the self-init's flags: 0x%x", aa_heap__flags(heap));
	cr_assert_eq(t_stats(heap).live_allocs, 0);
	t_check(heap);
}

/* Linux >= 7.0: every CPU's first allocation at once, on an object nobody
 * attached: one of them initialises the heap, the others wait for it;
 * all get memory, and the heap initialised itself once. */
struct si_thread {
	pthread_barrier_t *go;
	struct inline_args a;
	int cpu, ret;
};

static void *si_run(void *arg)
{
	struct si_thread *t = arg;

	t->ret = t_pin_cpu(t->cpu);
	pthread_barrier_wait(t->go);
	if (!t->ret)
		t->ret = run(skel->progs.inline_one, &t->a);
	return NULL;
}

Test(self_init, every_cpu_at_once_initialises_once)
{
	struct aa_root *r = (struct aa_root *)&skel->arena->aa__root;
	struct si_thread t[8];
	pthread_barrier_t go;
	pthread_t tid[8];
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), n, i;

	if (t_kernel_major() < 7)
		cr_skip_test("Linux < 7.0: no program but a sleepable one maps arena pages");
	n = ncpu < 2 ? 4 : ncpu > 4 ? 8 : 2 * ncpu;	/* two threads per CPU */
	cr_assert_eq(pthread_barrier_init(&go, NULL, n), 0);
	for (i = 0; i < n; i++) {
		t[i] = (struct si_thread){ .go = &go, .a = { .size = 64 }, .cpu = i % (n / 2) };
		cr_assert_eq(pthread_create(&tid[i], NULL, si_run, &t[i]), 0);
	}
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&go);
	for (i = 0; i < n; i++)
		cr_assert_eq(t[i].ret, 1, "thread %d on CPU %d got %d (self-init error %d)", i,
			     t[i].a.cpu, t[i].ret, r->self_init_err);
	cr_assert_eq(r->self_inits, 1, "the heap initialised itself %llu times",
		     (unsigned long long)r->self_inits);
	cr_assert_eq(r->stats.err[AA_ERR_UNINIT], 0);
	heap = aa_heap__attach(skel->obj, NULL);
	cr_assert_not_null(heap, "attach: %s", strerror(errno));
	t_check(heap);
}

/* A heap that defers frees publishes no bound for the inline free: every
 * inline free takes the global function, whose claim sees the pending
 * bit of an object in limbo. */
Test(inline, a_deferred_free_heap_frees_through_the_global_function)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20, .flags = AA_F_DEFER);
	struct inline_args a = { .size = 64 };
	__u64 dbl;
	int ret;

	cr_assert_neq(skel->data_aa_fast->aa_fast.free_size, 0, "the inline free is off");
	cr_assert_eq(skel->data_aa_fast->aa_fast.free_size, skel->data_aa_fast->aa_fast.arena_size);
	cr_assert_eq(aa_heap__reinit(heap, &o), 0);
	cr_assert_neq(skel->data_aa_fast->aa_fast.arena_size, 0, "caches stay on");
	cr_assert_eq(skel->data_aa_fast->aa_fast.free_size, 0, "the inline free is on");
	dbl = t_stats(heap).err[AA_ERR_DOUBLE_FREE];
	ret = run(skel->progs.inline_after_deferred, &a);
	cr_assert_eq(ret, 0, "step %d failed", ret);
	cr_assert_eq(t_stats(heap).err[AA_ERR_DOUBLE_FREE] - dbl, 1);
	cr_assert_geq(aa_heap__reclaim(heap), 0);
	t_check(heap);
}

Test(inline, caches_off_serves_from_the_heap)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20, .flags = AA_F_NO_CACHES);
	struct inline_args a = { .size = 64 };

	cr_assert_eq(aa_heap__reinit(heap, &o), 0);
	cr_assert_eq(skel->data_aa_fast->aa_fast.arena_size, 0, "aa_fast published without caches");
	cr_assert_eq(skel->data_aa_fast->aa_fast.free_size, 0);
	cr_assert_eq(run(skel->progs.inline_one, &a), 1);
	cr_assert_eq(t_stats(heap).nr_allocs, 1, "not served by the heap");
	cr_assert_eq(t_stats(heap).nr_frees, 1);
	t_check(heap);
}

/* --- Verifier cost ----------------------------------------------------------- */

static __u32 verified(struct bpf_program *p)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	cr_assert_eq(bpf_prog_get_info_by_fd(bpf_program__fd(p), &info, &len), 0);
	return info.verified_insns;
}

/* AA_NO_INLINE turns the macros into the global calls: the program is the
 * same as cost_call_1, instruction for instruction. */
static void no_inline_is_the_global_calls(__u32 call1)
{
	struct test_noinline *ni = test_noinline__open();
	struct bpf_program *p;
	__u32 ni1;

	cr_assert_not_null(ni, "test_noinline open failed: %s", strerror(errno));
	bpf_object__for_each_program(p, ni->obj)	/* its cost program alone */
		bpf_program__set_autoload(p, p == ni->progs.cost_noinline_1);
	cr_assert_eq(test_noinline__load(ni), 0, "test_noinline load failed: %s", strerror(errno));
	ni1 = verified(ni->progs.cost_noinline_1);
	test_noinline__destroy(ni);
	cr_assert_eq(ni1, call1, "AA_NO_INLINE program: %u verified insns, the global calls: %u",
		     ni1, call1);
}

/*
 * Reported: the verified instructions of each cost_* program (the global
 * functions they reach are verified as part of each). Asserted: an inline
 * site of aa_malloc + aa_free costs at most AA_TEST_SITE_MAX verified
 * instructions, eight of each still load, and AA_NO_INLINE gives the
 * global calls exactly.
 */
#define AA_TEST_SITE_MAX	1500

Test(inline_cost, verifier_cost_per_call_site)
{
	__u32 none = verified(skel->progs.cost_none);
	__u32 call1 = verified(skel->progs.cost_call_1);
	__u32 inl1 = verified(skel->progs.cost_inline_1);
	__u32 inl8 = verified(skel->progs.cost_inline_8);
	double site = (inl8 - inl1) / 7.0;

	fprintf(stderr, "inline: verified insns: empty tc program %u, aa_malloc_u64 + aa_free_u64 %u, "
		"one inline aa_malloc + aa_free %u (+%d), eight of each %u: %.0f per inline site\n",
		none, call1, inl1, (int)inl1 - (int)call1, inl8, site);
	cr_assert_gt(call1, none);
	cr_assert_gt(inl1, call1, "the inline site verified no instructions of its own");
	cr_assert_leq(site, AA_TEST_SITE_MAX, "%.0f verified insns per inline site", site);
	cr_assert_leq((int)inl1 - (int)call1, 2 * AA_TEST_SITE_MAX,
		      "one inline site over the global calls: %d", (int)inl1 - (int)call1);
	no_inline_is_the_global_calls(call1);
}

/* --- Verifier budget -----------------------------------------------------------
 * An embedder's minimal tc program calling aa_malloc() and aa_free() must
 * verify in at most AA_TEST_VERIFY_MAX instructions on every kernel we
 * support: each of its programs that allocates pays that much. Reported
 * (not asserted: the machine is shared): every program of the library and
 * the minimal users, each loaded alone, with its verified instructions and
 * load time.
 */
#define AA_TEST_VERIFY_MAX	150000

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Load obj with only its program named `name`; returns its verified insns
 * (prints them and the load time under `what`). */
static __u32 load_alone(struct bpf_object *obj, const char *name, const char *what)
{
	struct bpf_program *p, *only = NULL;
	struct timespec t0;
	double ms;
	__u32 insns;

	bpf_object__for_each_program(p, obj) {
		bpf_program__set_autoload(p, !strcmp(bpf_program__name(p), name));
		if (!strcmp(bpf_program__name(p), name))
			only = p;
	}
	cr_assert_not_null(only, "no program %s", name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(bpf_object__load(obj), 0, "%s: %s failed to load: %s", what, name,
		     strerror(errno));
	ms = ms_since(&t0);
	insns = verified(only);
	fprintf(stderr, "verifier: %-8s %-16s %7u insns %8.1f ms\n", what, name, insns, ms);
	return insns;
}

static __u32 user_alone(const char *name)
{
	struct test_inline *t = test_inline__open();
	__u32 insns;

	cr_assert_not_null(t, "test_inline open failed: %s", strerror(errno));
	insns = load_alone(t->obj, name, "user");
	test_inline__destroy(t);
	return insns;
}

Test(verifier_budget, a_minimal_user_verifies_in_150k_insns)
{
	struct arena_alloc *lib = arena_alloc__open();
	struct bpf_program *p;
	__u32 call1, inl1, total = 0;
	int n = 0;

	t_need_arena();
	cr_assert_not_null(lib, "arena_alloc open failed: %s", strerror(errno));
	bpf_object__for_each_program(p, lib->obj)
		n++;
	arena_alloc__destroy(lib);
	for (int i = 0; i < n; i++) {	/* a fresh object per load */
		const char *name;
		int j = 0;

		lib = arena_alloc__open();
		cr_assert_not_null(lib);
		bpf_object__for_each_program(p, lib->obj)
			if (j++ == i)
				break;
		name = bpf_program__name(p);
		total += load_alone(lib->obj, name, "library");
		arena_alloc__destroy(lib);
	}
	fprintf(stderr, "verifier: library  %d programs %9u insns\n", n, total);
	call1 = user_alone("cost_call_1");
	inl1 = user_alone("cost_inline_1");
	cr_assert_leq(call1, AA_TEST_VERIFY_MAX, "aa_malloc_u64 + aa_free_u64 in a tc program: "
		      "%u verified insns", call1);
	cr_assert_leq(inl1, AA_TEST_VERIFY_MAX, "aa_malloc + aa_free (inline) in a tc program: "
		      "%u verified insns", inl1);
}
