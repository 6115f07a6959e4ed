// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_mixed.c - one heap in the order a project outside this tree uses it
 * (tests/bpf/test_mixed.bpf.c has the programs), then a drain, and the
 * books must balance:
 *  1. allocations before the heap is attached (NULL, counted as uninit);
 *  2. attach with one chunk, then aa_heap__grow() to 4 and to 8;
 *  3. a page of the arena taken by the project's own syscall program;
 *  4. a thread per CPU sends UDP packets of MX_FLOWS flows through the tc
 *     program (a record per flow) and runs mx_churn (page runs, bulk
 *     calls: heap-lock holds), while a perf_event program on every CPU
 *     (hard IRQ, 10 kHz) allocates nodes onto a list and, past
 *     MX_LIST_MAX, nodes and page runs into rings that free what they
 *     displace (a page run's free takes the heap lock, or is parked); the
 *     checker runs meanwhile; the first MX_ENDED_FIRST flows end;
 *  5. the IRQs stop; a syscall program frees the list, the rest of the
 *     flows end, the rings and the page are given back;
 *  6. aa_heap__drain(), aa_heap__stats(), aa_heap__check().
 * Every free must have been completed exactly once (frees_parked ==
 * frees_unparked, nothing corrupt), nothing may stay live and the checker
 * must be clean, with the CPU caches and in debug mode.
 */
#include <pthread.h>
#include <time.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <arpa/inet.h>
#include "common.h"
#include "test_mixed.h"
#include "test_mixed.skel.h"

#define MiB		(1ULL << 20)
#define MX_PERIOD_NS	100000	/* 10 kHz per CPU */
#define MX_TIMEOUT_S	120	/* for the IRQs to fill the list and MX_RUNG runs more */
#define MX_RUNG		2000	/* IRQ runs past the list: the rings' turn */
#define MX_MIN_S	5	/* phase 1 lasts at least this long */
#define MX_PACKETS	3	/* data packets per flow before it may end */

static struct test_mixed *skel;
static struct aa_heap *h;

static void teardown(void)
{
	aa_heap__destroy(h);
	test_mixed__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(mixed, .fini = teardown, .timeout = 600);

struct mx_thread {
	pthread_t tid;
	int cpu, ncpu;
	int phase;		/* 1: data, end the first flows, churn; 2: end the rest */
	volatile int *stop;
	int err;
	__u64 packets, churns;
	struct mx_churn_args sum;
};

/* Send one packet of flow `flow` (op: MX_OP_*) through mx_tc. */
static int send_pkt(__u32 flow, __u32 op)
{
	struct {
		struct ethhdr eth;
		struct iphdr ip;
		struct udphdr udp;
		struct mx_pkt m;
		char pad[14];
	} __attribute__((packed)) pkt = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = &pkt, .data_size_in = sizeof(pkt));

	pkt.eth.h_proto = htons(ETH_P_IP);
	pkt.ip.version = 4;
	pkt.ip.ihl = 5;
	pkt.ip.ttl = 64;
	pkt.ip.protocol = IPPROTO_UDP;
	pkt.ip.tot_len = htons(sizeof(pkt) - sizeof(pkt.eth));
	pkt.ip.saddr = htonl(0x0a000001 + flow);
	pkt.ip.daddr = htonl(0x0a000002);
	pkt.udp.source = htons(1024 + flow);
	pkt.udp.dest = htons(53);
	pkt.udp.len = htons(sizeof(pkt.udp) + sizeof(pkt.m) + sizeof(pkt.pad));
	pkt.m.flow = flow;
	pkt.m.op = op;
	return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mx_tc), &o) ? -errno : 0;
}

static int churn(struct mx_thread *t)
{
	struct mx_churn_args a = { .rounds = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mx_churn), &o))
		return -errno;
	t->churns++;
	t->sum.big += a.big;
	t->sum.bulk += a.bulk;
	t->sum.errors += a.errors;
	return 0;
}

/* The flows of this thread's CPU: those equal to cpu modulo ncpu. */
static void *mx_work(void *arg)
{
	struct mx_thread *t = arg;
	__u32 f;
	int k;

	t->err = t_pin_cpu(t->cpu);
	if (t->phase == 2) {
		for (f = MX_ENDED_FIRST + t->cpu; !t->err && f < MX_FLOWS; f += t->ncpu)
			t->err = send_pkt(f, MX_OP_END);
		return NULL;
	}
	for (k = 0; k < MX_PACKETS && !t->err; k++) {
		for (f = t->cpu; !t->err && f < MX_FLOWS; f += t->ncpu) {
			t->err = send_pkt(f, MX_OP_DATA);
			t->packets++;
		}
		if (!t->err)
			t->err = churn(t);
	}
	for (f = t->cpu; !t->err && f < MX_ENDED_FIRST; f += t->ncpu)
		t->err = send_pkt(f, MX_OP_END);
	while (!t->err && !*t->stop)
		t->err = churn(t);
	return NULL;
}

/* Run phase `phase` on a thread per CPU; for phase 1, until the IRQs filled
 * their list (or MX_TIMEOUT_S). */
static void run_threads(int ncpu, int phase)
{
	struct mx_thread t[MX_CPUS] = {};
	struct timespec t0, now;
	volatile int stop = 0;
	int i, c, check = 0, checks = 0, busy = 0;

	for (i = 0; i < ncpu; i++) {
		t[i] = (struct mx_thread){ .cpu = i, .ncpu = ncpu, .phase = phase, .stop = &stop };
		cr_assert_eq(pthread_create(&t[i].tid, NULL, mx_work, &t[i]), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {	/* the checker meanwhile: the parked list while frees park;
		 * code 2 is no verdict (the heap lock not had within the
		 * checker's wait: tasks hold it in turn here) */
		if (!check) {
			c = aa_heap__check(h);
			if (c == 2) {
				busy++;
			} else {
				checks++;
				check = c;
			}
		}
		usleep(10000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (phase == 1 && (*(volatile __u64 *)&skel->bss->mx_listed < MX_LIST_MAX + MX_RUNG ||
				now.tv_sec - t0.tv_sec < MX_MIN_S) &&
		 now.tv_sec - t0.tv_sec < MX_TIMEOUT_S);
	stop = 1;
	for (i = 0; i < ncpu; i++) {
		pthread_join(t[i].tid, NULL);
		cr_assert_eq(t[i].err, 0, "CPU %d's thread: %s", i, strerror(-t[i].err));
		cr_assert_eq(t[i].sum.errors, 0, "CPU %d: %llu frees of mx_churn failed", i,
			     (unsigned long long)t[i].sum.errors);
		if (phase == 1)
			cr_log_info("CPU %d: %llu packets, %llu churn runs (%llu page runs, %llu bulk "
				    "objects)", i, (unsigned long long)t[i].packets,
				    (unsigned long long)t[i].churns, (unsigned long long)t[i].sum.big,
				    (unsigned long long)t[i].sum.bulk);
	}
	cr_assert_eq(check, 0, "the checker failed with code %d while the programs ran", check);
	cr_assert(phase != 1 || checks > 0, "no run of the checker got the heap lock (%d tried)",
		  busy);
	cr_log_info("phase %d: %d checker runs, %d without the heap lock", phase, checks, busy);
}

static void run(__u32 flags)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 * MiB, .flags = flags);
	struct bpf_link *links[MX_CPUS] = {};
	struct mx_walk_args walk = {}, ring = {};
	int fds[MX_CPUS], ncpu, i;
	struct aa_stats st;
	long drained;

	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 2)
		cr_skip_test("needs 2 online CPUs, this machine has %d", ncpu);
	if (ncpu > MX_CPUS)
		ncpu = MX_CPUS;
	t_need_arena();
	skel = test_mixed__open_and_load();
	cr_assert_not_null(skel, "load: %s", strerror(errno));

	/* 1-2: before the heap, then attach and grow. The root says the
	 * arena was initialised before (a heap its loader tore down), so
	 * Linux >= 7.0 does not initialise it on this first use either
	 * (aa__arena_self_init()): the allocations meet the root as it is
	 * before any init (the parked list's head 0, not AA_NIL) */
	((struct aa_root *)&skel->arena->aa__root)->init_state = AA_INIT_DONE;
	cr_assert_eq(t_run(skel->progs.mx_early, NULL, 0), 0, "an allocation before attach got memory");
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	t_check(h);
	st = t_stats(h);
	cr_assert_eq(st.err[AA_ERR_UNINIT], 2, "uninit counted %llu times, 2 expected",
		     (unsigned long long)st.err[AA_ERR_UNINIT]);
	cr_assert_eq(st.frees_unparked, 0, "%llu parked frees completed before any was parked",
		     (unsigned long long)st.frees_unparked);
	cr_assert_eq(st.err[AA_ERR_CORRUPT], 0, "%llu blocks refused as corrupt before any free",
		     (unsigned long long)st.err[AA_ERR_CORRUPT]);
	cr_assert_eq(aa_heap__grow(h, 3 * MiB), 3, "grow to 4 chunks: %s", strerror(errno));
	cr_assert_eq(aa_heap__grow(h, 4 * MiB), 4, "grow to 8 chunks: %s", strerror(errno));
	t_check(h);

	/* 3: the project's own page */
	cr_assert_eq(t_run(skel->progs.mx_page, NULL, 0), 0, "the page kfunc gave no page");

	/* 4: tc traffic and churn on every CPU under IRQs that allocate */
	for (i = 0; i < ncpu; i++) {
		fds[i] = t_open_cpu_clock(i, MX_PERIOD_NS);
		cr_assert_geq(fds[i], 0, "perf_event_open on CPU %d: %s", i, strerror(errno));
		links[i] = bpf_program__attach_perf_event(skel->progs.mx_irq, fds[i]);
		cr_assert_not_null(links[i], "attach perf_event on CPU %d: %s", i, strerror(errno));
	}
	run_threads(ncpu, 1);
	for (i = 0; i < ncpu; i++) {
		bpf_link__destroy(links[i]);
		close(fds[i]);
	}
	usleep(20000);	/* an IRQ program that was running has finished */
	cr_log_info("IRQs: %llu runs, %llu NULL nodes, %llu NULL page runs, %llu nodes listed, "
		    "%llu freed by the rings; flows: %llu started, %llu ended so far",
		    (unsigned long long)skel->bss->mx_irq_runs,
		    (unsigned long long)skel->bss->mx_irq_nulls,
		    (unsigned long long)skel->bss->mx_irq_run_nulls,
		    (unsigned long long)skel->bss->mx_pushed,
		    (unsigned long long)skel->bss->mx_irq_frees,
		    (unsigned long long)skel->bss->mx_flows_started,
		    (unsigned long long)skel->bss->mx_flows_freed);
	cr_assert_geq(skel->bss->mx_listed, MX_LIST_MAX + MX_RUNG, "only %llu IRQ runs in %d s",
		      (unsigned long long)skel->bss->mx_listed, MX_TIMEOUT_S);

	/* 5: free the list, end the other flows, empty the rings, the page */
	cr_assert_eq(t_run(skel->progs.mx_walk, &walk, sizeof(walk)), 0);
	cr_assert_eq(walk.errors, 0, "%llu list frees failed", (unsigned long long)walk.errors);
	cr_assert_eq(walk.bad, 0, "%llu list nodes were not as written", (unsigned long long)walk.bad);
	cr_assert_eq(walk.freed, skel->bss->mx_pushed, "freed %llu of %llu listed nodes",
		     (unsigned long long)walk.freed, (unsigned long long)skel->bss->mx_pushed);
	run_threads(ncpu, 2);
	cr_assert_eq(t_run(skel->progs.mx_ring_clear, &ring, sizeof(ring)), 0);
	cr_assert_eq(ring.errors, 0, "%llu ring frees failed", (unsigned long long)ring.errors);
	cr_assert_eq(t_run(skel->progs.mx_page_free, NULL, 0), 0, "the project's page changed");
	cr_assert_eq(skel->bss->mx_irq_errors, 0, "%llu IRQ frees failed",
		     (unsigned long long)skel->bss->mx_irq_errors);
	cr_assert_eq(skel->bss->mx_irq_bad, 0, "%llu calloc()ed nodes were not zero",
		     (unsigned long long)skel->bss->mx_irq_bad);
	cr_assert_eq(skel->bss->mx_tc_errors, 0, "%llu flow-end frees failed",
		     (unsigned long long)skel->bss->mx_tc_errors);
	cr_assert_eq(skel->bss->mx_flows_freed, skel->bss->mx_flows_started,
		     "%llu flows started, %llu records freed",
		     (unsigned long long)skel->bss->mx_flows_started,
		     (unsigned long long)skel->bss->mx_flows_freed);

	/* 6: drain, and the books */
	drained = aa_heap__drain(h);
	cr_assert_geq(drained, 0, "drain: %s", strerror((int)-drained));
	st = t_stats(h);
	aa_stats__print(&st, stderr);
	cr_log_info("parked frees: %llu parked, %llu completed; errors: busy %llu, nested %llu, "
		    "uninit %llu", (unsigned long long)st.frees_parked,
		    (unsigned long long)st.frees_unparked, (unsigned long long)st.err[AA_ERR_BUSY],
		    (unsigned long long)st.err[AA_ERR_NESTED], (unsigned long long)st.err[AA_ERR_UNINIT]);
	cr_assert_eq(st.err[AA_ERR_CORRUPT], 0, "%llu blocks refused as corrupt",
		     (unsigned long long)st.err[AA_ERR_CORRUPT]);
	cr_assert_eq(st.frees_unparked, st.frees_parked, "%llu frees parked, %llu completed",
		     (unsigned long long)st.frees_parked, (unsigned long long)st.frees_unparked);
	cr_assert_eq(st.err[AA_ERR_DOUBLE_FREE] + st.err[AA_ERR_FOREIGN] + st.err[AA_ERR_INTERIOR] +
		     st.err[AA_ERR_MISALIGNED], 0, "a free was refused");
	cr_assert_eq(st.err[AA_ERR_UNINIT], 2);
	cr_assert_eq(st.live_allocs, 0, "%llu allocations (%llu bytes) still live",
		     (unsigned long long)st.live_allocs, (unsigned long long)st.bytes_in_use);
	cr_assert_eq(st.heap_live, 0, "the heap holds %llu blocks after the drain",
		     (unsigned long long)st.heap_live);
	t_check(h);
}

Test(mixed, programs_of_every_type_then_a_drain_balance_the_books)
{
	run(0);
}

/* Debug mode: its own routes (quarantine, checks on every call), the same
 * books. */
Test(mixed, the_same_in_debug_mode)
{
	run(AA_F_DEBUG);
}
