// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * defer.c - deferred free from userspace: free through aa__run, and the
 * reclaim round (bpf/defer.bpf.c has the protocol and the guarantee):
 *   1. aa__run reclaim ADVANCE: the epoch e this round reclaims;
 *   2. an RCU grace period: an update of a one-slot BPF_MAP_TYPE_ARRAY_OF_MAPS
 *      map, which the kernel follows with synchronize_rcu() so that no
 *      running program still uses the old inner map (kernel/bpf/syscall.c,
 *      maybe_wait_bpf_programs(); its selftests use it the same way). Exact
 *      on every preemption model and CPU count. Fallback (when BPF map
 *      creation or update fails; ARENA_ALLOC_GP_FALLBACK=1 forces it, for
 *      tests): membarrier(MEMBARRIER_CMD_GLOBAL), which is synchronize_rcu()
 *      only while more than one CPU is online: the kernel returns at once
 *      on one (kernel/sched/membarrier.c: "if (num_online_cpus() > 1)
 *      synchronize_rcu()"), where a reader preempted inside its section
 *      (preempt=full, RT) has not finished. So the fallback counts only
 *      when more than one CPU was online both before and after the call;
 *      otherwise the round fails (-EAGAIN): its objects stay in limbo,
 *      counted (defer.pending_objs, stats.limbo_objs), for a later round
 *      that can wait. Not on nohz_full kernels (-EINVAL);
 *   3. aa__run reclaim FREE(e), again while the run's loop budget ended it.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "internal.h"

#define RECLAIM_RUNS	1024	/* FREE runs per round, at most (2^26 nodes) */

static double now_ms(void)
{
	return aa__now_ns() / 1e6;
}

void aa__heap_close_defer(struct aa_heap *h)
{
	if (h->gp_ready) {
		close(h->gp_outer_fd);
		close(h->gp_inner_fd);
	}
	h->gp_ready = false;
}

static int gp_maps(struct aa_heap *h)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);
	int inner, outer;

	if (h->gp_ready)
		return 0;
	inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "aa_gp_inner", 4, 4, 1, NULL);
	if (inner < 0)
		return -errno;
	o.inner_map_fd = inner;
	outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "aa_gp_outer", 4, 4, 1, &o);
	if (outer < 0) {
		close(inner);
		return -errno;
	}
	h->gp_inner_fd = inner;
	h->gp_outer_fd = outer;
	h->gp_ready = true;
	return 0;
}

/* membarrier(MEMBARRIER_CMD_GLOBAL) as a grace period: 0 only when more
 * than one CPU was online before and after the call (the kernel's own test
 * falls between the two reads; a CPU unplugged and plugged back in between
 * them goes unseen); -EAGAIN when one was; else membarrier's -errno. */
static int membarrier_gp(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) <= 1)
		return -EAGAIN;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		return -errno;
	return sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 0 : -EAGAIN;
}

/* Wait for an RCU grace period: every non-sleepable program running now,
 * and every bpf_rcu_read_lock() section, has ended when this returns. */
static int grace_period(struct aa_heap *h)
{
	__u64 fallback = 0;
	__u32 zero = 0;
	int err = gp_maps(h);

	aa__env_u64("ARENA_ALLOC_GP_FALLBACK", &fallback);
	if (!err && !fallback && !bpf_map_update_elem(h->gp_outer_fd, &zero, &h->gp_inner_fd, BPF_ANY))
		return 0;
	err = membarrier_gp();
	if (!err)
		return 0;
	if (err == -EAGAIN) {
		if (!h->gp_warned)
			pr_warn("no RCU grace period to wait for: the map-in-map update failed and "
				"membarrier waits for none on one online CPU; deferred frees stay in "
				"limbo\n");
		h->gp_warned = true;
		return err;
	}
	pr_warn("cannot wait for an RCU grace period (map-in-map update and membarrier failed: %s)\n",
		strerror(-err));
	return err;
}

static int run_reclaim(struct aa_heap *h, struct aa_reclaim_args *a)
{
	int err = aa__run_call(h, AA_CALL_RECLAIM, a, sizeof(*a));

	if (err)
		return err < 0 ? err : -EINVAL;
	if (a->err == -EOPNOTSUPP)
		pr_warn("this heap has no deferred free (initialise it with AA_F_DEFER)\n");
	return a->err;
}

AA_API long aa_heap__reclaim(struct aa_heap *h)
{
	struct aa_reclaim_args a = { .op = AA_RECLAIM_ADVANCE };
	long total = 0;
	double t0, t1;
	__u32 epoch;
	int err, i;

	AA_CHECK_HEAP(h, -EINVAL);
	err = run_reclaim(h, &a);
	if (err)
		return aa_err(err);
	epoch = a.epoch;
	t0 = now_ms();
	err = grace_period(h);
	if (err)
		return aa_err(err);	/* the round's frees stay in limbo: safe */
	t1 = now_ms();
	for (i = 0; i < RECLAIM_RUNS; i++) {
		memset(&a, 0, sizeof(a));
		a.op = AA_RECLAIM_FREE;
		a.epoch = epoch;
		err = run_reclaim(h, &a);
		if (err == -EBUSY) {	/* another reclaimer: its round covers ours */
			usleep(1000);
			continue;
		}
		if (err)
			return aa_err(err);
		total += a.objects;
		if (!a.more)
			break;
	}
	pr_info("reclaim: epoch %u, grace period %.2f ms, %ld objects freed in %.2f ms\n", epoch,
		t1 - t0, total, now_ms() - t1);
	return total;
}

AA_API int aa_heap__free_deferred(struct aa_heap *h, __u64 addr)
{
	struct aa_op_args a = { .op = AA_OP_FREE_DEFERRED, .ptr = addr };
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	err = aa_heap__call(h, &a);
	if (err)
		return err;
	return aa_err((int)a.ret);
}
