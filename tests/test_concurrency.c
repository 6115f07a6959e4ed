// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_concurrency.c - races that must have exactly one winner:
 *  - two CPUs free the same objects at the same time (double frees in
 *    lockstep, caches on and off): one free of each pointer succeeds, the
 *    other gets -EALREADY, and the heap comes back to its initial state.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "common.h"
#include "test_concurrency.h"
#include "test_concurrency.skel.h"

#define MiB (1ULL << 20)

static struct test_concurrency *skel;
static struct aa_heap *h;

static void open_with(__u32 flags)
{
	if (!t_have_arena())
		cr_skip_test(AA_SKIP_REASON);
	skel = test_concurrency__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, 1 << 15), 0);
	cr_assert_eq(test_concurrency__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 32 * MiB, .flags = flags);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
}

static void teardown(void)
{
	aa_heap__destroy(h);
	test_concurrency__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(concurrency, .fini = teardown, .timeout = 900);

static void need_cpus(int n)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < n)
		cr_skip_test("needs %d online CPUs, this machine has %ld", n,
			     sysconf(_SC_NPROCESSORS_ONLN));
}

/* --- Racing double frees ------------------------------------------------------ */

#define DF_ROUNDS	25	/* x DF_MAX = 102400 pairs */

struct df_thread {
	int cpu;
	struct df_args a;
	pthread_barrier_t *start;
	int err;
};

static void *df_run(void *arg)
{
	struct df_thread *t = arg;
	/* a syscall program's ctx is copied back into ctx_in */
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &t->a, .ctx_size_in = sizeof(t->a));
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(t->cpu, &s);
	t->err = sched_setaffinity(0, sizeof(s), &s) ? -errno : 0;
	pthread_barrier_wait(t->start);
	if (!t->err && bpf_prog_test_run_opts(bpf_program__fd(skel->progs.df_free), &o))
		t->err = -errno;
	return NULL;
}

static void racing_double_frees(__u32 flags)
{
	__u64 arr, res[2], pairs = 0, both = 0, neither = 0, other = 0, timeouts = 0;
	struct df_thread t[2];
	pthread_barrier_t start;
	pthread_t tid[2];
	__s64 *r[2];
	int round, i, k;

	need_cpus(2);
	open_with(flags);
	arr = t_malloc(h, DF_MAX * sizeof(__u64));
	res[0] = t_malloc(h, DF_MAX * sizeof(__s64));
	res[1] = t_malloc(h, DF_MAX * sizeof(__s64));
	cr_assert(arr && res[0] && res[1]);
	r[0] = aa_heap__ptr(h, res[0]);
	r[1] = aa_heap__ptr(h, res[1]);
	for (round = 0; round < DF_ROUNDS; round++) {
		__u64 size = 16ULL << (round % AA_NR_CLASSES);
		struct aa_op_args a = t_call(h, AA_OP_MALLOC_BULK, size, 0, arr, DF_MAX);

		cr_assert_eq(a.ret, DF_MAX, "round %d: bulk alloc of %d x %llu B: %lld", round,
			     DF_MAX, (unsigned long long)size, (long long)a.ret);
		skel->arena->df_progress[0] = 0;
		skel->arena->df_progress[1] = 0;
		cr_assert_eq(pthread_barrier_init(&start, NULL, 2), 0);
		for (k = 0; k < 2; k++) {
			t[k] = (struct df_thread){
				.cpu = k, .start = &start,
				.a = { .arr = arr, .res = res[k], .n = DF_MAX, .me = k },
			};
			cr_assert_eq(pthread_create(&tid[k], NULL, df_run, &t[k]), 0);
		}
		for (k = 0; k < 2; k++) {
			pthread_join(tid[k], NULL);
			cr_assert_eq(t[k].err, 0, "thread %d: %s", k, strerror(-t[k].err));
			timeouts += t[k].a.waits_timed_out;
		}
		pthread_barrier_destroy(&start);
		for (i = 0; i < DF_MAX; i++) {
			int wins = (r[0][i] == 0) + (r[1][i] == 0);

			pairs++;
			if (wins == 2)
				both++;
			else if (wins == 0)
				neither++;
			else if (r[0][i] + r[1][i] != -EALREADY)
				other++;
		}
	}
	cr_log_info("%s: %llu simultaneous double frees (%llu steps out of lockstep): "
		    "%llu with two winners, %llu with none, %llu with another error",
		    flags & AA_F_NO_CACHES ? "caches off" : "caches on",
		    (unsigned long long)pairs, (unsigned long long)timeouts,
		    (unsigned long long)both, (unsigned long long)neither,
		    (unsigned long long)other);
	cr_assert_eq(both, 0, "%llu pointers were freed twice", (unsigned long long)both);
	cr_assert_eq(neither, 0, "%llu pointers were not freed at all", (unsigned long long)neither);
	cr_assert_eq(other, 0, "%llu losers got something else than -EALREADY",
		     (unsigned long long)other);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], pairs);
	cr_assert_eq(t_free(h, arr) | t_free(h, res[0]) | t_free(h, res[1]), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).live_allocs, 0, "objects lost or duplicated");
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

Test(concurrency, racing_double_frees_have_one_winner)
{
	racing_double_frees(0);
}

Test(concurrency, racing_double_frees_have_one_winner_caches_off)
{
	racing_double_frees(AA_F_NO_CACHES);
}
