// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_preempt.c - the preemption stress: PS_PER_CPU threads pinned to
 * every online CPU loop ps_run (alloc, stamp, exchange through shared slots,
 * check, free; bulk calls too) while a perf_event program allocates and
 * frees in hard IRQ on every CPU. On a kernel booted with preempt=full
 * (make vmtest-preempt) the threads of one CPU preempt each other inside
 * allocator calls; with preempt=none they only meet through IRQs and other
 * CPUs. It fails on a stamp mismatch (an object with two owners, a stray
 * write), a misaligned address, a failed free, an allocation error other
 * than a lock miss, task-context NULLs of 1 in 10^6 operations or more,
 * and a heap that does not come back to its initial state after drain.
 *
 * AA_STRESS_OPS sets the number of allocator operations (allocations +
 * frees, task context; default PS_OPS_DEFAULT, quick enough for CI under
 * TCG); the acceptance runs use 100000000. AA_STRESS_IRQ_NS sets the
 * perf_event period (default PS_IRQ_NS; 0: no IRQ program).
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "test_preempt.h"
#include "test_preempt.skel.h"

#define MiB		(1ULL << 20)
#define PS_PER_CPU	3		/* task threads per CPU */
#define PS_ITERS	1024		/* steps per program run */
#define PS_OPS_DEFAULT	2000000ULL
#define PS_IRQ_NS	50000		/* perf_event period: 20 kHz per CPU */

static struct test_preempt *skel;
static struct aa_heap *h;

static void teardown(void)
{
	aa_heap__destroy(h);
	test_preempt__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(preempt, .fini = teardown, .timeout = 3600);

struct ps_thread {
	int cpu, me;
	__u64 quota;			/* allocs + frees to do */
	pthread_barrier_t *start;
	struct ps_counts c;
	__u64 runs;
	int err;			/* -errno of a failed pin or test run */
};

static void ps_add(struct ps_counts *to, const struct ps_counts *c)
{
	to->allocs += c->allocs;
	to->frees += c->frees;
	to->nulls += c->nulls;
	to->bad_stamp += c->bad_stamp;
	to->bad_free += c->bad_free;
	to->misaligned += c->misaligned;
}

static void *ps_thread_run(void *arg)
{
	struct ps_thread *t = arg;
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(t->cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		t->err = -errno;
	pthread_barrier_wait(t->start);
	while (!t->err && t->c.allocs + t->c.frees < t->quota) {
		struct ps_args a = { .iters = PS_ITERS, .seed = t->me * 7919 + t->runs * 104729,
				     .me = t->me };
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.ps_run), &o)) {
			t->err = -errno;
			break;
		}
		ps_add(&t->c, &a.c);
		t->runs++;
	}
	return NULL;
}

/* An environment knob: a number (0 allowed), def when unset. */
static __u64 env_u64(const char *name, __u64 def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	cr_assert(!errno && !*end, "%s=%s: not a number", name, s);
	return v;
}

#define U(x) ((unsigned long long)(x))

Test(preempt, stress_keeps_every_object_intact)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), nthr, i, k;
	struct ps_counts task = { 0 }, irq, fl;
	struct aa_stats before, after;
	struct bpf_link *links[PS_THREADS];
	struct ps_thread t[PS_THREADS];
	pthread_t tid[PS_THREADS];
	pthread_barrier_t start;
	int fds[PS_THREADS];
	__u64 ops = env_u64("AA_STRESS_OPS", PS_OPS_DEFAULT), nested = 0, task_ops;
	__u64 irq_ns = env_u64("AA_STRESS_IRQ_NS", PS_IRQ_NS);
	struct timespec t0, t1;
	double secs;

	if (!t_have_arena())
		cr_skip_test(AA_SKIP_REASON);
	if (ncpu > PS_THREADS / PS_PER_CPU)
		ncpu = PS_THREADS / PS_PER_CPU;
	nthr = ncpu * PS_PER_CPU;
	skel = test_preempt__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, 1 << 15), 0);
	cr_assert_eq(test_preempt__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 64 * MiB);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	cr_assert_geq(ncpu, 1);
	cr_assert_leq(ncpu, (int)aa_heap__root(h)->nr_cpus);
	cr_assert_geq(aa_heap__drain(h), 0);
	before = t_stats(h);

	/* hard-IRQ allocators on every CPU */
	for (i = 0; i < ncpu && irq_ns; i++) {
		fds[i] = t_open_cpu_clock(i, irq_ns);
		cr_assert_geq(fds[i], 0, "perf_event_open on CPU %d: %s", i, strerror(errno));
		links[i] = bpf_program__attach_perf_event(skel->progs.ps_irq, fds[i]);
		cr_assert_not_null(links[i], "attach perf_event: %s", strerror(errno));
	}
	cr_assert_eq(pthread_barrier_init(&start, NULL, nthr), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nthr; i++) {
		t[i] = (struct ps_thread){ .cpu = i % ncpu, .me = i, .quota = ops / nthr + 1,
					   .start = &start };
		cr_assert_eq(pthread_create(&tid[i], NULL, ps_thread_run, &t[i]), 0);
	}
	for (i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_barrier_destroy(&start);
	for (i = 0; i < ncpu && irq_ns; i++) {
		bpf_link__destroy(links[i]);
		close(fds[i]);
	}
	for (i = 0; i < nthr; i++) {
		cr_assert_eq(t[i].err, 0, "thread %d on CPU %d: %s", i, t[i].cpu,
			     strerror(-t[i].err));
		ps_add(&task, &t[i].c);
	}
	irq = skel->bss->irq_c;

	/* free what the slots still hold */
	{
		struct ps_args a = { .hi = (__u64)(unsigned long)aa_heap__root(h) & ~0xffffffffULL };

		t_run(skel->progs.ps_flush, &a, sizeof(a));
		fl = a.c;
	}
	after = t_stats(h);
	for (i = 0; i < ncpu; i++)
		for (k = 0; k < AA_NR_CLASSES; k++)
			nested += aa_heap__cpu_cache(h, i)->stats[k].nested;
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	task_ops = task.allocs + task.frees;
	cr_log_info("preempt stress: %d CPUs x %d threads, %.1f s: task %llu ops (%llu allocs, "
		    "%llu frees), %llu NULL; IRQ %llu runs, %llu allocs, %llu frees, %llu NULL; "
		    "%llu stamp mismatches, %llu failed frees, %llu misaligned (task+IRQ+flush)",
		    ncpu, PS_PER_CPU, secs, U(task_ops), U(task.allocs), U(task.frees),
		    U(task.nulls), U(skel->bss->irq_runs), U(irq.allocs), U(irq.frees),
		    U(irq.nulls), U(task.bad_stamp + irq.bad_stamp + fl.bad_stamp),
		    U(task.bad_free + irq.bad_free + fl.bad_free),
		    U(task.misaligned + irq.misaligned));
	cr_log_info("preempt stress: err[NOMEM] %llu, err[BUSY] %llu, err[NESTED] %llu; "
		    "lock waits %llu, lock misses %llu, frees parked %llu, unparked %llu; "
		    "cache claims that fell back %llu",
		    U(after.err[AA_ERR_NOMEM]), U(after.err[AA_ERR_BUSY]),
		    U(after.err[AA_ERR_NESTED]), U(after.lock_waits), U(after.lock_misses),
		    U(after.frees_parked), U(after.frees_unparked), U(nested));

	cr_assert_geq(task_ops, ops, "the threads stopped early");
	cr_assert_eq(task.bad_stamp + irq.bad_stamp + fl.bad_stamp, 0,
		     "objects with two owners or overwritten");
	cr_assert_eq(task.misaligned + irq.misaligned, 0, "misaligned addresses");
	cr_assert_eq(task.bad_free + irq.bad_free + fl.bad_free, 0, "frees were refused");
	cr_assert_eq(after.err[AA_ERR_NOMEM], 0, "NULL for want of memory in a 64 MiB heap");
	cr_assert_lt(task.nulls * 1000000, task_ops,
		     "task-context NULLs: %llu in %llu operations (1 in 10^6 allowed)",
		     U(task.nulls), U(task_ops));
	cr_assert_eq(task.allocs + irq.allocs, task.frees + irq.frees + fl.frees,
		     "allocations and frees do not match");

	/* every object back: the buddy's free state is the initial one */
	cr_assert_geq(aa_heap__drain(h), 0);
	after = t_stats(h);
	cr_assert_eq(after.live_allocs, 0, "%llu objects lost", U(after.live_allocs));
	cr_assert_eq(after.bytes_in_use, 0);
	cr_assert_eq(after.frees_parked, after.frees_unparked, "parked frees not completed");
	cr_assert_eq(after.nr_chunks, before.nr_chunks);
	cr_assert_eq(memcmp(after.free_blocks, before.free_blocks, sizeof(before.free_blocks)), 0,
		     "buddy free state after drain differs from before the run");
	t_check(h);
}
