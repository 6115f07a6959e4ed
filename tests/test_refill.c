// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_refill.c - the low-watermark signal from userspace: its event ring
 * (aa_refill_rb), aa_heap__wait_refill() and aa_heap__refill(). The
 * signal is raised by real allocations: syscall programs and a tc program.
 */
#include <pthread.h>
#include <time.h>
#include "common.h"
#include "test_cpu_cache.skel.h"

#define MiB (1ULL << 20)

static struct test_cpu_cache *skel;
static struct aa_heap *h;
static const struct aa_root *r;

/* A 16-MiB arena that also holds a tc program, a 1-MiB heap that does
 * not grow itself (AA_F_NO_SELF_GROW: the signal's heap on every kernel;
 * test_self_grow.c has the other). */
static void setup(void)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = MiB, .flags = AA_F_NO_SELF_GROW);

	t_need_arena();
	skel = test_cpu_cache__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(16 * MiB)), 0);
	cr_assert_eq(test_cpu_cache__load(skel), 0);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	r = aa_heap__root(h);
}

static void teardown(void)
{
	aa_heap__destroy(h);
	test_cpu_cache__destroy(skel);
}

TestSuite(refill, .init = setup, .fini = teardown);

static void take_everything(void)
{
	__u64 size;

	for (size = MiB; size >= 16; size >>= 1)
		while (aa_heap__malloc(h, size))
			;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

Test(refill, wait_times_out_without_a_signal)
{
	struct aa_refill_event ev;
	double t0 = now_ms();

	cr_assert_eq(r->need_refill, 0);
	cr_assert_geq(aa_heap__refill_fd(h), 0, "the heap has no refill event ring");
	cr_assert_eq(aa_heap__wait_refill(h, 50, &ev), 0);
	cr_assert_geq(now_ms() - t0, 49.0, "returned before its timeout");
	cr_assert_eq(aa_heap__wait_refill(h, 0, NULL), 0);
	cr_assert_eq(aa_heap__refill(h, MiB), 0, "refilled without a signal");
}

Test(refill, bad_arguments_are_einval)
{
	cr_assert_eq(aa_heap__wait_refill(h, -2, NULL), -EINVAL);
	cr_assert_eq(aa_heap__wait_refill(NULL, 0, NULL), -EINVAL);
	cr_assert_eq(aa_heap__refill_fd(NULL), -EINVAL);
}

Test(refill, each_raise_queues_one_event_and_refill_clears_it)
{
	struct aa_refill_event ev;
	__u64 signals = r->refill_signals;

	take_everything();
	cr_assert_eq(r->need_refill, 1);
	cr_assert_eq(r->refill_signals, signals + 1, "one raise until it is answered");
	cr_assert_eq(aa_heap__wait_refill(h, 0, &ev), 1);
	cr_assert_neq(ev.ts_ns, 0, "the raise left no event in the ring");
	cr_assert_leq(ev.bytes_in_use, ev.bytes_mapped);
	cr_assert_eq(ev.bytes_mapped, MiB);
	cr_assert_eq(aa_heap__refill(h, 2 * MiB), 2);
	cr_assert_eq(r->need_refill, 0);
	cr_assert_eq(aa_heap__wait_refill(h, 0, &ev), 0, "still signalled after the refill");

	take_everything();	/* the next raise, the next event */
	cr_assert_eq(r->refill_signals, signals + 2);
	cr_assert_eq(aa_heap__wait_refill(h, 0, &ev), 1);
	cr_assert_neq(ev.ts_ns, 0);
	cr_assert_eq(ev.bytes_mapped, 3 * MiB);
	cr_assert_eq(r->stats.refill_events_lost, 0);
}

struct waiter {
	int ret;
	struct aa_refill_event ev;
	double woke_ms;
	volatile int started;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->started = 1;
	w->ret = aa_heap__wait_refill(h, 5000, &w->ev);
	w->woke_ms = now_ms();
	return NULL;
}

/* A waiter asleep in epoll wakes when a tc program (non-sleepable) finds
 * the heap empty; the event it reads is that tc program's. */
Test(refill, a_tc_program_that_finds_the_heap_empty_wakes_the_waiter)
{
	struct waiter w = {};
	pthread_t t;
	double raised;

	take_everything();
	cr_assert_eq(aa_heap__refill(h, MiB), 1);	/* answer the syscall raise */
	take_everything();
	aa_heap__wait_refill(h, 0, NULL);		/* drop its event */
	*(volatile __u32 *)&r->need_refill = 0;		/* as a refill would */

	cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	while (!w.started)
		usleep(1000);
	usleep(50000);		/* let it sleep in epoll */
	cr_assert_eq(w.woke_ms, 0, "the waiter returned with no signal up: %d", w.ret);
	raised = now_ms();
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 2, "the tc program got memory on an empty heap");
	pthread_join(t, NULL);
	cr_assert_eq(w.ret, 1, "wait: %d", w.ret);
	cr_assert_eq(w.ev.reason, AA_EV_NOMEM, "the tc program's allocation failed: that is the event");
	cr_assert_geq(w.ev.ts_ns / 1e6, raised - 1, "the event is older than the tc run");
	cr_log_info("woke %.3f ms after the tc run began\n", w.woke_ms - raised);
	cr_assert_eq(aa_heap__refill(h, MiB), 1);
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1, "no memory after the refill");
}

/* Nobody reading: the ring (a page: libbpf rounds its 4 KiB up to the
 * kernel's page) fills; further raises are counted as lost events, the
 * flag still comes up, and a reader then drains what the ring kept. */
Test(refill, raises_with_no_reader_count_lost_events)
{
	__u32 ring = bpf_map__max_entries(skel->maps.aa_refill_rb), n;
	__u64 signals = r->refill_signals, lost;
	struct aa_refill_event ev;
	int i;

	/* a record is an 8-byte header and the event: n raises overflow it */
	n = ring / (8 + sizeof(ev)) + 100;
	for (i = 0; i < n; i++) {	/* a valid size the heap cannot give */
		cr_assert_eq(aa_heap__malloc(h, 8 * MiB), 0);
		cr_assert_eq(r->need_refill, 1);
		*(volatile __u32 *)&r->need_refill = 0;
	}
	cr_assert_eq(r->refill_signals, signals + n);
	lost = r->stats.refill_events_lost;
	cr_assert_gt(lost, 0, "%u events fit in a %u-byte ring?", n, ring);
	cr_assert_lt(lost, n, "the ring kept nothing");
	cr_assert_eq(aa_heap__malloc(h, 8 * MiB), 0);	/* one more raise */
	cr_assert_eq(aa_heap__wait_refill(h, 0, &ev), 1, "the flag is the truth");
	cr_log_info("%llu of %u events lost in a %u-byte ring\n", (unsigned long long)lost, n, ring);
}

struct taker {
	volatile int go, stop, done;
	__u64 got;		/* the grown chunk, taken whole */
};

/* Spin on 1-MiB allocations; once one succeeds (the refill's chunk), the
 * next failure is an allocation failing after the grow: done. */
static void *take_the_grow(void *arg)
{
	struct taker *t = arg;
	__u64 p;

	while (!t->stop) {
		while (!t->go && !t->stop)
			;
		if (t->stop)
			break;
		t->got = 0;
		for (;;) {
			p = aa_heap__malloc(h, MiB);
			if (p && !t->got)
				t->got = p;
			else if (!p && t->got)
				break;
		}
		t->go = 0;
		t->done = 1;
	}
	return NULL;
}

/* A raise while aa_heap__refill() grows is not lost: a thread takes the
 * refill's new chunk as soon as it is there and fails its next
 * allocation, before the refill has returned. That failure came after
 * the grow, so the flag must be up when both are done. */
Test(refill, a_raise_during_the_grow_is_kept, .timeout = 120)
{
	struct taker t = {};
	pthread_t th;
	int i, n, lost = 0;

	take_everything();
	cr_assert_eq(r->need_refill, 1);
	cr_assert_eq(pthread_create(&th, NULL, take_the_grow, &t), 0);
	for (i = 0; i < 100; i++) {
		t.done = 0;
		t.go = 1;
		n = aa_heap__refill(h, MiB);
		if (n == 0) {	/* the flag was down: the last raise was lost */
			lost++;
			*(volatile __u32 *)&r->need_refill = 1;
			n = aa_heap__refill(h, MiB);
		}
		while (!t.done)
			;
		cr_assert_eq(n, 1, "refill: %d", n);
		if (!r->need_refill)
			lost++;
		cr_assert_eq(aa_heap__free(h, t.got), 0);
		cr_assert_geq(aa_heap__trim(h, 0), 0);
		if (!r->need_refill)	/* the next refill needs a signal */
			cr_assert_eq(aa_heap__malloc(h, 2 * MiB), 0);
	}
	t.stop = 1;
	pthread_join(th, NULL);
	cr_assert_eq(lost, 0, "%d of 100 raises during a grow were lost", lost);
}
