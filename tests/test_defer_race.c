// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_defer_race.c - the reason for deferred free: a lock-free reader
 * (tc program, on one CPU) checks the stamps of elements that a writer
 * (tc program, on another CPU) unlinks and frees
 * (tests/bpf/test_defer_race.bpf.c).
 *  - plain aa_free(): the freed element is reused at once (the writer's
 *    CPU cache is LIFO) and the reader sees it change: must happen;
 *  - aa_free_deferred() with an agent thread reclaiming (as `arena-alloc
 *    refill-agent` does: aa_heap__wait_refill(), aa_heap__reclaim()):
 *    over AA_DEFER_RACE_OPS operations (default 10^6) the reader never
 *    sees a change; limbo stays under its bound; after the agent stops
 *    and starts again nothing is lost.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include "common.h"
#include "test_defer_race.skel.h"

#define MiB		(1ULL << 20)
#define REPEAT		100
#define DEFER_LIMIT	(4ULL << 20)

static struct test_defer_race *skel;
static struct aa_heap *h;
static volatile int stop_reader, stop_agent;
static int reader_nice;	/* > 0: the reader yields its CPU for long stretches */
static int cpu_a = -1, cpu_b = -1;

static void pin_to(int cpu)
{
	t_pin_cpu(cpu);
}

static int run(struct bpf_program *p, int repeat)
{
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = repeat);

	return bpf_prog_test_run_opts(bpf_program__fd(p), &o);
}

static void *reader_thread(void *arg)
{
	(void)arg;
	pin_to(cpu_a);
	if (reader_nice)
		setpriority(PRIO_PROCESS, 0, reader_nice);	/* this thread */
	while (!stop_reader)
		if (run(skel->progs.reader, REPEAT))
			break;
	return NULL;
}

/* The agent: sleeps on the event ring, reclaims while limbo holds
 * objects, answers the refill signal. */
static void *agent_thread(void *arg)
{
	long *rounds = arg;
	int n;

	while (!stop_agent) {
		n = aa_heap__wait_refill(h, 100, NULL);
		if (n == 2 && aa_heap__reclaim(h) >= 0)
			(*rounds)++;
		else if (n == 1)
			aa_heap__refill(h, 4 * MiB);
	}
	return NULL;
}

/* AA_VERBOSE=1: the library's info messages too (each reclaim round). */
static int print_all(enum aa_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/* mode: the writer's free (0 plain, 1 deferred); one_cpu: reader, writer
 * and agent all on the first CPU of this process. */
static void setup_on(__u32 mode, bool one_cpu)
{
	struct aa_tunables t;
	cpu_set_t set;
	int c;

	t_need_arena();
	if (getenv("AA_VERBOSE"))
		aa_set_print(print_all);
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (c = 0; c < CPU_SETSIZE && cpu_b < 0; c++)
		if (CPU_ISSET(c, &set)) {
			if (cpu_a < 0)
				cpu_a = c;
			else
				cpu_b = c;
		}
	if (one_cpu)
		cpu_b = cpu_a;
	if (cpu_b < 0)
		cr_skip_test("the reader and the writer need two CPUs; this process has one");
	cr_assert_eq(aa_tunables__default(&t), 0);
	t.defer_limit = DEFER_LIMIT;
	AA_OPTS(aa_heap_opts, o, .init_bytes = 16 * MiB, .flags = AA_F_DEFER, .tunables = &t);
	skel = test_defer_race__open();
	cr_assert_not_null(skel);
	skel->bss->mode = mode;
	cr_assert_eq(test_defer_race__load(skel), 0);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	stop_reader = stop_agent = 0;
}

static void setup(__u32 mode)
{
	setup_on(mode, false);
}

static void teardown(void)
{
	aa_heap__destroy(h);
	test_defer_race__destroy(skel);
	h = NULL;
	skel = NULL;
}

static __u64 ops_target(void)
{
	const char *s = getenv("AA_DEFER_RACE_OPS");

	return s ? strtoull(s, NULL, 0) : 1000000;
}

/* Run the writer on cpu_b until `ops` operations (or, with stop_early,
 * until the reader saw a recycled element), the reader on cpu_a. The
 * writer starts once the reader has run (a reader at nice 19 on a loaded
 * machine may otherwise wait for its first slice until the writer is
 * done), or after RACE_WAIT_S seconds; and until the reader has read an
 * element (r_reads: it counts only slots the writer filled), the writer
 * sleeps 1 ms after each batch, which lets a reader that shares its CPU
 * in. */
#define RACE_WAIT_S	120

static void race(__u64 ops, bool stop_early)
{
	time_t until = time(NULL) + RACE_WAIT_S;
	pthread_t rt;

	cr_assert_eq(pthread_create(&rt, NULL, reader_thread, NULL), 0);
	pin_to(cpu_b);
	while (!(skel->bss->r_reads + skel->bss->r_empty) && time(NULL) < until)
		usleep(1000);
	while (skel->bss->w_ops < ops && !(stop_early && skel->bss->r_recycled)) {
		cr_assert_eq(run(skel->progs.writer, REPEAT), 0);
		if (!skel->bss->r_reads)
			usleep(1000);
		/* a well-behaved writer: while memory is short (the signal
		 * is up: limbo over its limit), give the agent time */
		while (aa_heap__root(h)->need_refill && !stop_early)
			usleep(100);
	}
	stop_reader = 1;
	pthread_join(rt, NULL);
}

Test(defer_race, plain_free_lets_the_reader_see_a_recycled_element)
{
	setup(0);
	race(ops_target(), true);
	cr_log_info("plain free: %llu writer ops, %llu reads, %llu recycled elements seen\n",
		    (unsigned long long)skel->bss->w_ops, (unsigned long long)skel->bss->r_reads,
		    (unsigned long long)skel->bss->r_recycled);
	cr_assert_gt(skel->bss->r_recycled, 0,
		     "the reader never saw a recycled element in %llu ops: the test cannot fail",
		     (unsigned long long)skel->bss->w_ops);
	teardown();
}

Test(defer_race, deferred_free_never_lets_the_reader_see_one)
{
	const struct aa_root *r;
	long rounds = 0, got;
	pthread_t at;
	struct aa_stats st;
	__u64 live = 0, objs;
	int i;

	setup(1);
	r = aa_heap__root(h);
	cr_assert_eq(pthread_create(&at, NULL, agent_thread, &rounds), 0);
	race(ops_target(), false);
	stop_agent = 1;
	pthread_join(at, NULL);
	cr_log_info("deferred free: %llu writer ops, %llu reads, %llu recycled; %ld reclaim rounds, "
		    "%llu reclaimed, peak limbo %llu KiB (limit %llu KiB), latency max %.2f ms "
		    "mean %.2f ms\n",
		    (unsigned long long)skel->bss->w_ops, (unsigned long long)skel->bss->r_reads,
		    (unsigned long long)skel->bss->r_recycled, rounds,
		    (unsigned long long)r->defer.reclaimed,
		    (unsigned long long)r->defer.peak_pending_bytes >> 10,
		    (unsigned long long)DEFER_LIMIT >> 10, r->defer.latency_max_ns / 1e6,
		    r->defer.reclaimed ? (double)r->defer.latency_sum_ns / r->defer.reclaimed / 1e6 : 0);
	aa_heap__stats(h, &st);
	cr_log_info("errors: nomem %llu double_free %llu corrupt %llu; node failures %llu, nomem in limbo %llu\n",
		    (unsigned long long)st.err[AA_ERR_NOMEM], (unsigned long long)st.err[AA_ERR_DOUBLE_FREE],
		    (unsigned long long)st.err[AA_ERR_CORRUPT], (unsigned long long)r->defer.node_failures,
		    (unsigned long long)r->defer.nomem_in_limbo);
	cr_assert_geq(skel->bss->w_ops, ops_target());
	cr_assert_gt(skel->bss->r_reads, 0);
	cr_assert_eq(skel->bss->r_recycled, 0, "the reader saw %llu recycled elements",
		     (unsigned long long)skel->bss->r_recycled);
	cr_assert_eq(skel->bss->w_free_errors, 0);
	cr_assert_eq(skel->bss->w_nulls, 0, "the writer ran out of memory: limbo not reclaimed");
	cr_assert_gt(rounds, 0);
	cr_assert_lt(r->defer.peak_pending_bytes, 8 * DEFER_LIMIT, "limbo grew past its bound");

	/* the agent stopped: limbo keeps what came after; a new agent frees it */
	for (i = 0; i < 100; i++)
		cr_assert_eq(run(skel->progs.writer, 1), 0);
	objs = r->defer.pending_objs;
	cr_assert_gt(objs, 0);
	got = aa_heap__reclaim(h);
	got += aa_heap__reclaim(h);
	cr_assert_eq(got, (long)objs, "a restarted agent freed %ld of %llu", got,
		     (unsigned long long)objs);
	cr_assert_eq(r->defer.pending_objs, 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	for (i = 0; i < 16; i++)
		live += skel->arena->slots[i] != 0;
	aa_heap__stats(h, &st);
	cr_assert_eq(st.live_allocs, live, "%llu allocations for %llu live elements: lost or leaked",
		     (unsigned long long)st.live_allocs, (unsigned long long)live);
	cr_assert_eq(aa_heap__check(h), 0);
	teardown();
}

/*
 * The grace period's fallback (membarrier(MEMBARRIER_CMD_GLOBAL), forced
 * here by ARENA_ALLOC_GP_FALLBACK=1) with everything on one CPU. In a
 * 1-vCPU guest booted preempt=full, the reader's program (an RCU
 * read-side section) is preempted while it holds an element, and the
 * writer and the agent run in the meantime: membarrier returns at once on
 * one online CPU, so a reclaim must not count it as a grace period. Either
 * the reader never sees its element reused, or the objects stay in limbo.
 */
Test(defer_race, one_cpu_fallback_never_lets_a_preempted_reader_see_reuse, .timeout = 600)
{
	const struct aa_root *r;
	long rounds = 0;
	pthread_t at;

	setenv("ARENA_ALLOC_GP_FALLBACK", "1", 1);
	reader_nice = 19;	/* preempted, it stays off the CPU for ms */
	setup_on(1, true);
	r = aa_heap__root(h);
	cr_assert_eq(pthread_create(&at, NULL, agent_thread, &rounds), 0);
	race(ops_target() / 4, true);
	stop_agent = 1;
	pthread_join(at, NULL);
	unsetenv("ARENA_ALLOC_GP_FALLBACK");
	reader_nice = 0;
	cr_log_info("one CPU (%ld online), fallback: %llu writer ops, %llu reads, %llu recycled; "
		    "%ld reclaim rounds, %llu reclaimed, %llu in limbo\n", sysconf(_SC_NPROCESSORS_ONLN),
		    (unsigned long long)skel->bss->w_ops, (unsigned long long)skel->bss->r_reads,
		    (unsigned long long)skel->bss->r_recycled, rounds,
		    (unsigned long long)r->defer.reclaimed, (unsigned long long)r->defer.pending_objs);
	cr_assert_gt(skel->bss->r_reads, 0);
	cr_assert_eq(skel->bss->r_recycled, 0,
		     "a preempted reader saw %llu recycled elements after %ld reclaim rounds",
		     (unsigned long long)skel->bss->r_recycled, rounds);
	if (sysconf(_SC_NPROCESSORS_ONLN) == 1)	/* membarrier waited for nothing */
		cr_assert_eq(r->defer.reclaimed, 0,
			     "%llu objects reclaimed after membarrier on one online CPU, which "
			     "is no grace period", (unsigned long long)r->defer.reclaimed);
	cr_assert_eq(skel->bss->w_free_errors, 0);
	/* limbo kept them all: the map-in-map grace period frees them */
	cr_assert_geq(aa_heap__reclaim(h), 0);
	cr_assert_geq(aa_heap__reclaim(h), 0);
	cr_assert_eq(r->defer.pending_objs, 0);
	cr_assert_eq(aa_heap__check(h), 0);
	teardown();
}
