// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_bpf_api.c - runs tests/bpf/test_alloc.bpf.c: the BPF API called from
 * an embedder's own syscall, tc and xdp programs (linked with the library,
 * heap set up by aa_heap__attach()).
 */
#include <unistd.h>
#include "common.h"
#include "test_alloc.skel.h"

static struct test_alloc *skel;
static struct aa_heap *heap;

static void setup(void)
{
	t_need_arena();
	skel = test_alloc__open();
	cr_assert_not_null(skel);
	/* attached by hand in its test */
	bpf_program__set_autoattach(skel->progs.tp_btf_alloc, false);
	if (test_alloc__load(skel)) {
		test_alloc__destroy(skel);
		skel = NULL;
	}
	cr_assert_not_null(skel, "test_alloc load failed: %s (verifier rejected a "
			   "non-sleepable program?)",
			   strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);
	heap = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(heap, "aa_heap__attach: %s", strerror(errno));
}

static void teardown(void)
{
	aa_heap__destroy(heap);
	test_alloc__destroy(skel);
}

TestSuite(bpf, .init = setup, .fini = teardown);

Test(bpf, api_subtests)
{
	int ret = t_run(skel->progs.test_bpf_api, NULL, 0);

	cr_assert_eq(ret, 0, "BPF subtest %d failed with code %d", ret / 100, ret % 100);
	t_check(heap);
	/* everything the subtests allocated was freed */
	cr_assert_eq(t_user_live(heap), 0);
}

Test(bpf, tc_and_xdp_alloc_after_prefill)
{
	int i;

	for (i = 0; i < 10; i++) {
		cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1, "tc program got no memory");
		cr_assert_eq(t_run_pkt(skel->progs.xdp_alloc), 1, "xdp program got no memory");
	}
	cr_assert_eq(skel->bss->tc_allocs, 20);
	cr_assert_eq(t_user_live(heap), 0);
	t_check(heap);
}

Test(bpf, tc_gets_null_when_heap_is_empty)
{
	/* Empty the heap: tear it down. Non-sleepable programs cannot grow it,
	 * so they must get NULL (counted), never fault or sleep. */
	cr_assert_geq(aa_heap__teardown(heap), 1);
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 2);
	cr_assert_eq(t_run_pkt(skel->progs.xdp_alloc), 2);
	cr_assert_eq(skel->bss->tc_nulls, 2);
	/* grown again from userspace, they get memory again */
	cr_assert_eq(aa_heap__init(heap, 1 << 20), 0);
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1);
}

Test(bpf, raw_tp_and_tp_btf_alloc)
{
	__u64 args[1] = { 0 };
	struct bpf_link *link;
	struct aa_stats st;
	int i;

	for (i = 0; i < 5; i++)
		cr_assert_eq(t_run(skel->progs.raw_tp_alloc, args, sizeof(args)), 1,
			     "raw_tp program got no memory");
	link = bpf_program__attach(skel->progs.tp_btf_alloc);
	cr_assert_not_null(link, "attach tp_btf/hrtimer_expire_entry: %s", strerror(errno));
	/* hrtimers expire all the time (the scheduler tick); wait for 20 */
	for (i = 0; i < 100000 && skel->bss->tp_btf_runs < 20; i++)
		usleep(100);
	bpf_link__destroy(link);
	cr_assert_geq(skel->bss->tp_btf_runs, 20);
	/* In hard IRQ a wait for the heap lock is capped at a few us (a
	 * refill on the other CPU, slow under emulation, can hold it longer):
	 * such a NULL is counted as a lock failure. Any other NULL is a bug. */
	st = t_stats(heap);
	cr_log_info("tp_btf: %llu runs, %llu allocs; lock failures: busy %llu, nested %llu",
		    (unsigned long long)skel->bss->tp_btf_runs,
		    (unsigned long long)skel->bss->tp_btf_allocs,
		    (unsigned long long)st.err[AA_ERR_BUSY], (unsigned long long)st.err[AA_ERR_NESTED]);
	cr_assert_gt(skel->bss->tp_btf_allocs, 0, "no hard-IRQ tp_btf program got memory");
	cr_assert_leq(skel->bss->tp_btf_runs - skel->bss->tp_btf_allocs,
		      st.err[AA_ERR_BUSY] + st.err[AA_ERR_NESTED],
		      "a hard-IRQ tp_btf program got NULL without a lock failure");
	cr_assert_eq(st.err[AA_ERR_NOMEM], 0);
	cr_assert_eq(t_user_live(heap), 0);
	t_check(heap);
}

Test(bpf, sleepable_caller_grows_inline)
{
	struct aa_op_args a = { .op = AA_OP_MALLOC_GROW, .size = 8 << 20 };
	__u64 chunks = t_stats(heap).nr_chunks;

	cr_assert_eq(aa_heap__call(heap, &a), 0);
	cr_assert_eq(a.ret, 0, "syscall program could not grow the heap inline");
	cr_assert_neq(a.ptr, 0);
	cr_assert_gt(t_stats(heap).nr_chunks, chunks);
	cr_assert_eq(aa_heap__free(heap, a.ptr), 0);
}

/* Deferred free from every non-sleepable program type the API supports:
 * tc, xdp, raw_tp and tp_btf (hard IRQ) each defer an object; limbo holds
 * them until aa_heap__reclaim(). */
Test(bpf, deferred_free_from_tc_xdp_raw_tp_and_tp_btf)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20, .flags = AA_F_DEFER);
	__u64 args[1] = { 0 }, want;
	struct bpf_link *link;
	struct aa_stats st;
	int i;

	/* its own object and heap, with AA_F_DEFER, in place of the suite's */
	teardown();
	skel = test_alloc__open();
	cr_assert_not_null(skel);
	bpf_program__set_autoattach(skel->progs.tp_btf_alloc, false);
	cr_assert_eq(test_alloc__load(skel), 0);
	heap = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(heap);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1);
		cr_assert_eq(t_run_pkt(skel->progs.xdp_alloc), 1);
		cr_assert_eq(t_run(skel->progs.raw_tp_alloc, args, sizeof(args)), 1);
	}
	cr_assert_eq(skel->bss->deferred, 15);
	link = bpf_program__attach(skel->progs.tp_btf_alloc);
	cr_assert_not_null(link, "attach tp_btf/hrtimer_expire_entry: %s", strerror(errno));
	for (i = 0; i < 200 && skel->bss->tp_btf_allocs < 5; i++)
		usleep(10000);	/* bounded: 2 s of timer interrupts */
	/* no run may still be allocating when the heap is counted */
	__atomic_store_n(&skel->bss->tp_btf_stop, 1, __ATOMIC_SEQ_CST);
	bpf_link__destroy(link);
	for (i = 0; i < 1000 && __atomic_load_n(&skel->bss->tp_btf_inflight, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	cr_assert_eq(skel->bss->tp_btf_inflight, 0, "a tp_btf run did not finish in 1 s");
	cr_assert_geq(skel->bss->tp_btf_allocs, 5, "tp_btf ran %llu times",
		      (unsigned long long)skel->bss->tp_btf_runs);
	want = skel->bss->deferred;
	cr_assert_geq(want, 20);
	cr_assert_eq(aa_heap__root(heap)->defer.pending_objs, want);
	cr_assert_eq(aa_heap__reclaim(heap) + aa_heap__reclaim(heap), (long)want);
	st = t_stats(heap);
	cr_assert_eq(st.live_allocs, 0, "a deferred object was lost or leaked: %llu live (heap %llu, "
		     "cached %llu, limbo %llu, parked %llu)", (unsigned long long)st.live_allocs,
		     (unsigned long long)st.heap_live, (unsigned long long)st.cached_objs,
		     (unsigned long long)st.limbo_objs, (unsigned long long)st.parked_objs);
	t_check(heap);	/* the suite's teardown destroys this object and heap */
}
