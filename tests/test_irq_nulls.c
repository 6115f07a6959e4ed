// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_irq_nulls.c - an allocation in hard-IRQ context gets memory while
 * the heap has it, whatever another CPU does with the heap lock. A
 * perf_event program allocates 64 B at 10 kHz on CPU 0 (hrtimer, hard
 * IRQ) while CPU 1 frees those objects, makes 2-MiB allocations and bulk
 * calls in a loop, and runs the checker every IN_CHECK_EVERY rounds (it
 * holds the lock one chunk or span at a time, but in every round it was
 * most of CPU 1's work): with the CPU caches on, and off (every IRQ
 * allocation then takes the heap lock). A caller in IRQ context
 * waits at most AA_WAIT_IRQ_NS for the heap lock, so each hold must be
 * shorter than that: NULLs must stay below 1 in IN_PER runs. The heap
 * never runs short (64 MiB for a few MiB of load). With the caches on the
 * target holds everywhere. With them off every IRQ allocation takes the
 * heap lock, and under QEMU's TCG the same holds take several times longer
 * than on a CPU while the budget stays 5 us: there the figure is reported
 * and the test skipped, saying so (every time: CI counts the tests run).
 * Each NULL is filed by the hold behind it (judge_null() of the BPF
 * side): under TCG a vCPU is at times not run for milliseconds, holding
 * the lock or not, and the NULLs behind a hold of IN_STALL_NS or more are
 * left out there (reported); on a CPU every NULL counts.
 */
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "test_irq_nulls.h"
#include "test_irq_nulls.skel.h"

#define MiB		(1ULL << 20)
#define IN_RUNS		200000ULL	/* IRQ runs per configuration */
#define IN_PER		100000ULL	/* at most 1 NULL in this many runs */
#define IN_TIMEOUT_S	300
#define IN_CHECK_EVERY	16	/* worker rounds per run of the checker */

static struct test_irq_nulls *skel;
static struct aa_heap *h;

static void teardown(void)
{
	aa_heap__destroy(h);
	test_irq_nulls__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(irq_nulls, .fini = teardown, .timeout = 900);

#define IN_WAIT_IRQ_US	5	/* AA_WAIT_IRQ_NS, bpf/internal.h */

/* Emulated by QEMU's TCG (scripts/vmtest.sh says so in the guest)? */
static bool tcg(void)
{
	const char *a = getenv("AA_VMTEST_ACCEL");

	return a && !strcmp(a, "tcg");
}

struct in_thread {
	volatile int done;
	int err, check;
	__u64 rounds, freed, big, bulk, errors;
};

/* CPU 1: the worker program and the checker, until told to stop. */
static void *in_work(void *arg)
{
	struct in_thread *t = arg;
	struct in_worker_args a;
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

	t->err = t_pin_cpu(1);
	while (!t->done && !t->err && !t->check) {
		a = (struct in_worker_args){ .rounds = 1 };
		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.in_worker), &o)) {
			t->err = -errno;
			break;
		}
		t->rounds++;
		t->freed += a.freed;
		t->big += a.big;
		t->bulk += a.bulk;
		t->errors += a.errors;
		if (t->rounds % IN_CHECK_EVERY == 0) {
			t->check = aa_heap__check(h);
			if (t->check == 2)	/* no verdict: the heap lock not had */
				t->check = 0;	/* within the checker's wait */
		}
	}
	return NULL;
}

/* Where the IRQ CPU's allocations went past its cache: what a reader of a
 * failure needs to tell a long heap-lock hold from an empty tier. */
static void why_nulls(const char *what)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc = aa_heap__cpu_cache(h, 0);
	const struct aa_transfer_cache *tc;
	__u64 misses = 0, refills = 0, fails = 0, tc_fails = 0, past_tc = 0;
	int c;

	for (c = 0; cc && c < AA_NR_CLASSES; c++) {
		misses += cc->cls[c].stats.misses;
		refills += cc->cls[c].stats.refills;
		fails += cc->cls[c].stats.failures;
	}
	for (c = 0; c < AA_NR_CLASSES && (tc = aa_heap__transfer_cache(h, c)); c++) {
		tc_fails += tc->lock_fails;	/* none without CPU caches */
		past_tc += tc->remove_misses;
	}
	cr_log_info("caches %s: CPU 0's cache %llu misses, %llu refills, %llu NULLs; transfer "
		    "caches: %llu refills went past them (too few), %llu lock misses; heap lock: "
		    "%llu busy, %llu nested; self-grown chunks %llu", what, (unsigned long long)misses,
		    (unsigned long long)refills, (unsigned long long)fails,
		    (unsigned long long)past_tc, (unsigned long long)tc_fails,
		    (unsigned long long)r->stats.err[AA_ERR_BUSY],
		    (unsigned long long)r->stats.err[AA_ERR_NESTED],
		    (unsigned long long)r->stats.self_grows);
}

static void run(__u32 flags, const char *what, bool strict)
{
	struct in_thread t = {};
	struct timespec t0, now;
	struct bpf_link *link;
	__u64 runs, nulls, *held;
	pthread_t tid;
	int fd;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cr_skip_test("needs 2 online CPUs, this machine has %ld",
			     sysconf(_SC_NPROCESSORS_ONLN));
	t_need_arena();
	skel = test_irq_nulls__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, 1 << 15), 0);
	cr_assert_eq(test_irq_nulls__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 64 * MiB, .flags = flags);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	cr_assert_eq(t_pin_cpu(0), 0);
	skel->bss->in_cpu = 0;
	fd = t_open_cpu_clock(0, 100000);	/* 10 kHz hrtimer, hard-IRQ context */
	cr_assert_geq(fd, 0, "perf_event_open: %s", strerror(errno));
	link = bpf_program__attach_perf_event(skel->progs.in_irq, fd);
	cr_assert_not_null(link, "attach perf_event: %s", strerror(errno));
	cr_assert_eq(pthread_create(&tid, NULL, in_work, &t), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {	/* keep CPU 0 busy: the IRQs land in this loop */
		clock_gettime(CLOCK_MONOTONIC, &now);
		runs = *(volatile __u64 *)&skel->bss->in_runs;
	} while (runs < IN_RUNS && now.tv_sec - t0.tv_sec < IN_TIMEOUT_S && !t.err && !t.check);
	bpf_link__destroy(link);
	close(fd);
	t.done = 1;
	pthread_join(tid, NULL);
	nulls = skel->bss->in_nulls;
	cr_log_info("IRQ allocations, caches %s: %llu runs, %llu NULL (%.1f in 10^5), in %lld s; "
		    "the other CPU: %llu rounds, %llu frees, %llu 2-MiB allocations, %llu bulk "
		    "objects", what, (unsigned long long)runs, (unsigned long long)nulls,
		    runs ? 1e5 * nulls / runs : 0.0, (long long)(now.tv_sec - t0.tv_sec),
		    (unsigned long long)t.rounds, (unsigned long long)t.freed,
		    (unsigned long long)t.big, (unsigned long long)t.bulk);
	cr_assert_eq(t.err, 0, "worker: %s", strerror(-t.err));
	cr_assert_eq(t.check, 0, "the checker failed: %d", t.check);
	cr_assert_eq(t.errors, 0, "%llu frees failed", (unsigned long long)t.errors);
	cr_assert_geq(runs, IN_RUNS, "only %llu IRQ runs in %d s", (unsigned long long)runs,
		      IN_TIMEOUT_S);
	cr_assert_gt(t.big, 0, "the other CPU made no 2-MiB allocation");
	t_check(h);
	why_nulls(what);
	held = skel->bss->in_held;
	cr_log_info("caches %s: the NULLs by the heap-lock hold behind them: %llu no one hold, "
		    "%llu shorter than %llu us, %llu longer, %llu of %llu us or more (a stopped "
		    "CPU); the longest %llu us", what, (unsigned long long)held[IN_HELD_NONE],
		    (unsigned long long)held[IN_HELD_SHORT], IN_LONG_NS / 1000,
		    (unsigned long long)held[IN_HELD_LONG], (unsigned long long)held[IN_HELD_STALL],
		    IN_STALL_NS / 1000, (unsigned long long)skel->bss->in_held_max / 1000);
	/* under TCG a vCPU may not run for milliseconds (descheduled by the
	 * host, say), lock held or not: NULLs behind such a hold are the
	 * emulator's, and left out there; on a CPU every NULL counts */
	if (tcg())
		nulls -= held[IN_HELD_STALL];
	if (!strict && tcg())	/* the same outcome on every run: skipped */
		cr_skip_test("%llu NULLs in %llu IRQ allocations with free memory (%.1f in 10^5; "
			     "stopped CPUs' left out), measured; below 1 in 10^5 is asserted on a "
			     "real CPU only: under TCG holds take longer than the %u-us IRQ budget, "
			     "which is sized for one", (unsigned long long)nulls,
			     (unsigned long long)runs, 1e5 * nulls / runs, IN_WAIT_IRQ_US);
	cr_assert_leq(nulls * IN_PER, runs, "%llu NULLs in %llu IRQ allocations with free memory%s",
		      (unsigned long long)nulls, (unsigned long long)runs,
		      tcg() ? " (stopped CPUs' left out)" : "");
}

Test(irq_nulls, with_caches)
{
	run(0, "on", true);
}

Test(irq_nulls, without_caches)
{
	run(AA_F_NO_CACHES, "off", false);
}
