// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_reserve.c - allocations past a CPU cache's LIFO: the reserves (the
 * class's on a CPU, the transfer cache's) that serve an interrupt over a
 * claimed cache and, last, a task whose heap lock is out of reach; the
 * transfer cache's stack for a refill that got no batch; and a failure
 * counted once, where the allocation finally failed.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "cpu_cache_fixture.h"

TestSuite(reserve, .init = setup, .fini = teardown, .timeout = 600);

/* --- The reserve --------------------------------------------------------------- */

/* Run cmd (rsv_irq: 1 allocate, 2 free) once in hard IRQ on CPU 0, over
 * the kernel code (rsv_spin) this thread runs there meanwhile. */
static void irq_once(__u32 cmd)
{
	struct bpf_link *link;
	struct timespec t0, now;
	int fd;

	pin(0);
	fd = t_open_cpu_clock(0, 100000);
	cr_assert_geq(fd, 0, "perf_event_open: %s", strerror(errno));
	link = bpf_program__attach_perf_event(skel->progs.rsv_irq, fd);
	cr_assert_not_null(link, "attach perf_event: %s", strerror(errno));
	__atomic_store_n(&skel->bss->rsv_cmd, cmd, __ATOMIC_SEQ_CST);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		t_run(skel->progs.rsv_spin, NULL, 0);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (__atomic_load_n(&skel->bss->rsv_cmd, __ATOMIC_SEQ_CST) && now.tv_sec - t0.tv_sec < 30);
	bpf_link__destroy(link);
	close(fd);
	cr_assert_eq(skel->bss->rsv_cmd, 0, "no IRQ ran the command in 30 s");
}

static __u32 reserve_objs(int cpu, int c)
{
	return aa_reserve_objs(&aa_heap__cpu_cache(h, cpu)->cls[c].reserve,
			       aa_heap__root(h)->cache_key);
}

/* An IRQ that finds its CPU's cache claimed (as over a preempted or
 * interrupted owner) takes from the class's reserve on its CPU, which the
 * owner's slow paths fill once an IRQ came for it; a nested free puts back
 * into it; a task in the same place leaves it alone; drain empties it; the
 * stats count its objects as cached and its calls as calls; and the
 * checker refuses a reserve that holds a live allocation (28). */
Test(reserve, the_reserve_serves_an_irq_over_a_claimed_cache)
{
	struct aa_cpu_cache *cc = t_cpu_cache_mmap(h, 0);
	__u32 want = aa_reserve_slots(64);
	__u64 p1, p2, q, w;

	pin(0);
	cr_assert_eq(want, 4);
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[C64].reserve_want, 0);
	t_set_claim(h, 0, AA_CC_OWNER);
	irq_once(1);
	p1 = skel->bss->rsv_ptr;
	cr_assert_neq(p1, 0, "an IRQ over a claimed cache got NULL with memory in the heap");
	t_set_claim(h, 0, AA_CC_FREE);
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[C64].reserve_want, 1, "the IRQ left no want");
	cr_assert_eq(reserve_objs(0, C64), 0);

	/* the owner's next miss fills it, from the batch it refills */
	cr_assert_geq(aa_heap__drain(h), 0);
	q = t_malloc(h, 64);
	cr_assert_neq(q, 0);
	cr_assert_eq(reserve_objs(0, C64), want, "the owner's miss did not fill the reserve");
	t_check(h);	/* cached objects and calls, reserve included */

	/* a task over a claimed cache leaves it to IRQs */
	t_set_claim(h, 0, AA_CC_OWNER);
	cr_assert_eq(t_free(h, q), 0);
	q = t_malloc(h, 64);
	cr_assert_neq(q, 0);
	cr_assert_eq(reserve_objs(0, C64), want, "a task took from the reserve");
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[C64].reserve_allocs, 0);

	/* an IRQ takes one, and its free puts it back */
	irq_once(1);
	p2 = skel->bss->rsv_ptr;
	cr_assert_neq(p2, 0);
	cr_assert_eq(reserve_objs(0, C64), want - 1, "the IRQ did not take from the reserve");
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[C64].reserve_allocs, 1);
	irq_once(2);
	cr_assert_eq(skel->bss->rsv_ret, 0);
	cr_assert_eq(reserve_objs(0, C64), want, "the IRQ's free did not go back to the reserve");
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[C64].reserve_frees, 1);
	t_set_claim(h, 0, AA_CC_FREE);
	t_check(h);

	/* a reserve holding a live allocation: the checker says 28 */
	w = cc->cls[C64].reserve.slot[0];
	cc->cls[C64].reserve.slot[0] = AA_RESERVE_WORD(aa_heap__root(h)->cache_key,
						       p1 - aa_heap__root(h)->arena_base);
	cr_assert_eq(aa_heap__check(h), 28);
	cc->cls[C64].reserve.slot[0] = w;
	cr_assert_eq(aa_heap__check(h), 0);

	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(reserve_objs(0, C64), 0, "drain left objects in the reserve");
	cr_assert_eq(t_free(h, p1), 0);
	cr_assert_eq(t_free(h, q), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(aa_heap__cached_bytes(h, NULL), 0);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

/* A task that finds its CPU's cache claimed (as over a preempted owner)
 * and the heap lock out of reach (held on another CPU past its wait
 * budget) takes what the transfer cache's stack holds, then, last, the
 * transfer cache's reserve; it leaves its CPU's reserve to interrupts.
 * Only then does it get NULL, and that failure is counted once
 * (err[BUSY]); the allocations that got memory count none. */
Test(reserve, a_task_past_a_held_heap_lock_takes_the_reserves_last)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u32 want = aa_reserve_slots(64), n = 0, tc_rsv, tc_n;
	__u64 keep[AA_TRANSFER_MAX + 2 * AA_RESERVE_SLOTS], p, q, busy;

	pin(0);
	/* an IRQ over the claimed cache wants the CPU's reserve; after a
	 * drain, the owner's next miss fills it, and its refill from the heap
	 * stocks the transfer cache's reserve */
	t_set_claim(h, 0, AA_CC_OWNER);
	irq_once(1);
	p = skel->bss->rsv_ptr;
	cr_assert_neq(p, 0);
	t_set_claim(h, 0, AA_CC_FREE);
	cr_assert_geq(aa_heap__drain(h), 0);
	q = t_malloc(h, 64);
	cr_assert_neq(q, 0);
	cr_assert_eq(reserve_objs(0, C64), want, "the owner's miss did not fill the reserve");
	tc_rsv = aa_reserve_objs(&t_tc(h, C64)->reserve, r->cache_key);
	tc_n = t_tc(h, C64)->count;
	cr_assert_gt(tc_rsv, 0, "the refill from the heap did not stock the transfer cache's reserve");

	/* a preempted owner, the heap lock held as by CPU 1: every call waits
	 * out its budget once the transfer cache's stack is empty */
	t_set_claim(h, 0, AA_CC_OWNER);
	busy = t_stats(h).err[AA_ERR_BUSY];
	__atomic_store_n(&r->lock, 2, __ATOMIC_SEQ_CST);
	while (n < sizeof(keep) / sizeof(keep[0]) && (keep[n] = t_malloc(h, 64)))
		n++;
	__atomic_store_n(&r->lock, 0, __ATOMIC_SEQ_CST);
	t_set_claim(h, 0, AA_CC_FREE);
	cr_assert_eq(n, tc_n + tc_rsv, "a task past the held heap lock got %u objects; the "
		     "transfer cache held %u in its stack and %u in its reserve", n, tc_n, tc_rsv);
	cr_assert_eq(aa_reserve_objs(&t_tc(h, C64)->reserve, r->cache_key), 0);
	cr_assert_eq(reserve_objs(0, C64), want, "a task took from its CPU's reserve");
	cr_assert_eq(t_stats(h).err[AA_ERR_BUSY], busy + 1, "one NULL, %llu failures counted",
		     (unsigned long long)(t_stats(h).err[AA_ERR_BUSY] - busy));
	t_check(h);	/* the tc_allocs that the calls counted, in the stats' equations */
	while (n)
		cr_assert_eq(t_free(h, keep[--n]), 0);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(t_free(h, q), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

/* A refill that gets no batch (the transfer cache holds less than one, the
 * heap lock is held elsewhere past the wait budget) must still hand out
 * what the transfer cache holds, as a call that finds its cache claimed
 * does: NULL only when no tier has memory within reach. */
Test(reserve, a_refill_without_the_heap_lock_takes_one_from_the_transfer_cache)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	__u64 p[16], q, keep[AA_CPU_CACHE_MAX];
	__u32 tcn, k = 0;
	int i;

	pin(0);
	r->tun.cpu_cache_cap[C64] = 4;	/* read where used: spills come soon */
	r->tun.batch[C64] = 2;
	t_cpu_cache_mmap(h, 0)->cls[C64].cap = 4;
	for (i = 0; i < 16; i++)
		cr_assert_neq(p[i] = t_malloc(h, 64), 0);
	for (i = 0; i < 16; i++)
		cr_assert_eq(t_free(h, p[i]), 0);
	tcn = t_tc(h, C64)->count;	/* past its reserve, which the spills fill first */
	cr_assert_gt(tcn, 0, "no spill reached the transfer cache");
	while (aa_heap__cpu_cache(h, 0)->cls[C64].count && k < AA_CPU_CACHE_MAX)
		cr_assert_neq(keep[k++] = t_malloc(h, 64), 0);
	cr_assert_eq(t_tc(h, C64)->count, tcn, "emptying the CPU cache took from the transfer cache");
	r->tun.batch[C64] = tcn + 1;	/* more than the transfer cache has */
	__atomic_store_n(&r->lock, 2, __ATOMIC_SEQ_CST);	/* held, as by CPU 1 */
	q = t_malloc(h, 64);
	__atomic_store_n(&r->lock, 0, __ATOMIC_SEQ_CST);
	cr_assert_neq(q, 0, "NULL with %u objects in the transfer cache", tcn);
	cr_assert_eq(t_tc(h, C64)->count, tcn - 1);
	cr_assert_eq(t_free(h, q), 0);
	while (k)
		cr_assert_eq(t_free(h, keep[--k]), 0);
	t_check(h);
}
