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
 * than a lock miss, a task-context NULL that came back before the task's
 * lock budget ran out (PS_WAIT_TASK_NS: only a holder stopped that long,
 * a descheduled vCPU, may cost a task an object), task-context NULLs of 1
 * in 10^5 operations or more, and a heap that does not come back to its
 * initial state after drain.
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
	to->quick_nulls += c->quick_nulls;
	to->bad_stamp += c->bad_stamp;
	to->bad_free += c->bad_free;
	to->misaligned += c->misaligned;
}

static void *ps_thread_run(void *arg)
{
	struct ps_thread *t = arg;

	t->err = t_pin_cpu(t->cpu);
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

#define U(x) ((unsigned long long)(x))

/* One stress run and what it saw. */
struct ps_cfg {
	int ncpu, per_cpu;	/* CPUs 0 .. ncpu-1, threads per CPU */
	__u32 flags;		/* heap flags (AA_F_NO_CACHES) */
	__u64 ops, irq_ns;	/* task-context operations; perf_event period, 0: none */
};

struct ps_result {
	struct ps_counts task, irq, flush;
	struct aa_stats after;	/* before the final drain */
	__u64 task_ops, irq_runs, nested;
};

/*
 * Run the stress and check what every run must satisfy: no stamp mismatch,
 * misaligned address or refused free anywhere, no NULL for want of memory,
 * as many frees as allocations, and after drain the buddy's initial free
 * state, every parked free completed, a valid heap. The callers judge the
 * NULLs.
 */
static void run_stress(const struct ps_cfg *cfg, struct ps_result *r)
{
	int nthr = cfg->ncpu * cfg->per_cpu, i, k;
	struct bpf_link *links[PS_THREADS];
	struct ps_thread t[PS_THREADS];
	pthread_t tid[PS_THREADS];
	struct aa_stats before, after;
	pthread_barrier_t start;
	int fds[PS_THREADS];
	struct timespec t0, t1;
	double secs;

	t_need_arena();
	cr_assert(cfg->ncpu >= 1 && nthr <= PS_THREADS);
	*r = (struct ps_result){ 0 };
	skel = test_preempt__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(128 * MiB)), 0);
	cr_assert_eq(test_preempt__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 64 * MiB, .flags = cfg->flags);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	if (!(cfg->flags & AA_F_NO_CACHES))
		cr_assert_leq(cfg->ncpu, (int)aa_heap__root(h)->nr_cpus);
	cr_assert_geq(aa_heap__drain(h), 0);
	before = t_stats(h);

	/* hard-IRQ allocators on every CPU */
	skel->bss->ps_hi = (__u64)(unsigned long)aa_heap__root(h) & ~0xffffffffULL;
	for (i = 0; i < cfg->ncpu && cfg->irq_ns; i++) {
		fds[i] = t_open_cpu_clock(i, cfg->irq_ns);
		cr_assert_geq(fds[i], 0, "perf_event_open on CPU %d: %s", i, strerror(errno));
		links[i] = bpf_program__attach_perf_event(skel->progs.ps_irq, fds[i]);
		cr_assert_not_null(links[i], "attach perf_event: %s", strerror(errno));
	}
	cr_assert_eq(pthread_barrier_init(&start, NULL, nthr), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nthr; i++) {
		t[i] = (struct ps_thread){ .cpu = i % cfg->ncpu, .me = i,
					   .quota = cfg->ops / nthr + 1, .start = &start };
		cr_assert_eq(pthread_create(&tid[i], NULL, ps_thread_run, &t[i]), 0);
	}
	for (i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_barrier_destroy(&start);
	for (i = 0; i < cfg->ncpu && cfg->irq_ns; i++) {
		bpf_link__destroy(links[i]);
		close(fds[i]);
	}
	for (i = 0; i < nthr; i++) {
		cr_assert_eq(t[i].err, 0, "thread %d on CPU %d: %s", i, t[i].cpu,
			     strerror(-t[i].err));
		ps_add(&r->task, &t[i].c);
	}
	r->irq = skel->bss->irq_c;
	r->irq_runs = skel->bss->irq_runs;

	/* free what the slots still hold */
	{
		struct ps_args a = { .hi = skel->bss->ps_hi };

		t_run(skel->progs.ps_flush, &a, sizeof(a));
		r->flush = a.c;
	}
	r->after = after = t_stats(h);
	for (i = 0; i < cfg->ncpu; i++)
		for (k = 0; k < AA_NR_CLASSES && aa_heap__cpu_cache(h, i); k++)
			r->nested += aa_heap__cpu_cache(h, i)->cls[k].stats.nested;
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	r->task_ops = r->task.allocs + r->task.frees;
	cr_log_info("preempt stress%s: %d CPUs x %d threads, %.1f s: task %llu ops (%llu allocs, "
		    "%llu frees), %llu NULL (%llu quick); IRQ %llu runs, %llu allocs, %llu frees, %llu NULL; "
		    "%llu stamp mismatches, %llu failed frees, %llu misaligned (task+IRQ+flush)",
		    cfg->flags & AA_F_NO_CACHES ? " (caches off)" : "", cfg->ncpu, cfg->per_cpu,
		    secs, U(r->task_ops), U(r->task.allocs), U(r->task.frees), U(r->task.nulls),
		    U(r->task.quick_nulls),
		    U(r->irq_runs), U(r->irq.allocs), U(r->irq.frees), U(r->irq.nulls),
		    U(r->task.bad_stamp + r->irq.bad_stamp + r->flush.bad_stamp),
		    U(r->task.bad_free + r->irq.bad_free + r->flush.bad_free),
		    U(r->task.misaligned + r->irq.misaligned));
	cr_log_info("preempt stress: err[NOMEM] %llu, err[BUSY] %llu, err[NESTED] %llu; "
		    "lock waits %llu, lock misses %llu, frees parked %llu, unparked %llu; "
		    "cache claims that fell back %llu",
		    U(after.err[AA_ERR_NOMEM]), U(after.err[AA_ERR_BUSY]),
		    U(after.err[AA_ERR_NESTED]), U(after.lock_waits), U(after.lock_misses),
		    U(after.frees_parked), U(after.frees_unparked), U(r->nested));

	cr_assert_geq(r->task_ops, cfg->ops, "the threads stopped early");
	cr_assert_eq(r->task.bad_stamp + r->irq.bad_stamp + r->flush.bad_stamp, 0,
		     "objects with two owners or overwritten");
	cr_assert_eq(r->task.misaligned + r->irq.misaligned, 0, "misaligned addresses");
	cr_assert_eq(r->task.bad_free + r->irq.bad_free + r->flush.bad_free, 0,
		     "frees were refused");
	cr_assert_eq(after.err[AA_ERR_NOMEM], 0, "NULL for want of memory in a 64 MiB heap");
	cr_assert_eq(r->task.allocs + r->irq.allocs, r->task.frees + r->irq.frees + r->flush.frees,
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

Test(preempt, stress_keeps_every_object_intact)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct ps_cfg cfg = {
		.ncpu = ncpu > PS_THREADS / PS_PER_CPU ? PS_THREADS / PS_PER_CPU : ncpu,
		.per_cpu = PS_PER_CPU,
		.ops = t_env_u64("AA_STRESS_OPS", PS_OPS_DEFAULT),
		.irq_ns = t_env_u64("AA_STRESS_IRQ_NS", PS_IRQ_NS),
	};
	struct ps_result r;

	run_stress(&cfg, &r);
	cr_assert_eq(r.task.quick_nulls, 0,
		     "%llu task-context NULLs came back within the task's lock budget",
		     U(r.task.quick_nulls));
	cr_assert_lt(r.task.nulls * 100000, r.task_ops,
		     "task-context NULLs: %llu in %llu operations (1 in 10^5 allowed)",
		     U(r.task.nulls), U(r.task_ops));
}

/*
 * One CPU, caches off: every task call takes the heap lock, and the IRQ
 * program lands inside those sections. Its frees must be parked and
 * completed (never refused), and its allocations must fail at once as
 * NESTED: with the holder's CPU in the lock word itself nobody on this CPU
 * ever waits for it (a waiter would time out as BUSY: the owner gaps).
 */
Test(preempt, irq_over_a_heap_lock_holder_parks_its_frees)
{
	struct ps_cfg cfg = { .ncpu = 1, .per_cpu = 1, .flags = AA_F_NO_CACHES,
			      .ops = PS_OPS_DEFAULT / 4, .irq_ns = 20000 };
	struct ps_result r;

	run_stress(&cfg, &r);
	cr_assert_gt(r.irq_runs, 0, "the perf_event program never ran");
	cr_assert_gt(r.after.frees_parked, 0, "no IRQ free ever landed over the lock holder");
	cr_assert_eq(r.after.err[AA_ERR_BUSY], 0, "%llu callers waited for their own CPU",
		     U(r.after.err[AA_ERR_BUSY]));
	cr_assert_eq(r.task.nulls, 0, "task NULLs on a CPU of its own");
	cr_assert_eq(r.irq.nulls, r.after.err[AA_ERR_NESTED], "IRQ NULLs that were not NESTED");
}
