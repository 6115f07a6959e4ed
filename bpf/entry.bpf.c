// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * entry.bpf.c - SEC("syscall") programs userspace runs with
 * bpf_prog_test_run_opts(): the lifecycle's aa__init, aa__grow, aa__trim
 * and aa__teardown, and aa__run for every other call (enum aa_call_kind):
 * single or batched allocator calls (the loader, the CLI, the tests), the
 * user calls (the slow paths of userspace threads' caches), drain,
 * deferred-free reclaim and check. Those six are one program because each
 * program a load verifies verifies every global function it reaches again:
 * as six programs they cost a load 1.6 to 1.8 times the instructions.
 *
 * These are sleepable: they reach the page kfuncs (lifecycle.bpf.c,
 * grow.bpf.c) that other programs only reach where the kernel allows it
 * (self_grow.bpf.c).
 * Each reports its results in its ctx (copied back to the caller) and
 * returns 0, so that a verifier-level failure and an allocator error
 * differ; the check call returns the first failing check's code (0: the
 * heap is consistent).
 */
#include "internal.h"
#include "arena_alloc.bpf.h"
#include "grow.h"
#include "heap.h"
#include "check.h"
#include "transfer_cache.h"
#include "cpu_cache.h"
#include "user_cache.h"
#include "debug.h"
#include "defer.h"
#include "lifecycle.h"

/* No license section here: the embeddable object has none, so that it
 * links with an embedder's object whatever its license string (libbpf's
 * linker refuses two that differ); the embedder's must be GPL-compatible
 * (kfuncs). The library's own loadable object adds own.bpf.c. */

/* Field by field: a struct assignment into the arena is a memcpy, whose
 * BPF lowering loses the arena address cast (verifier: "invalid mem
 * access 'scalar'"). */
static __always_inline void set_tunables(struct aa_tunables *t)
{
	__u32 c;

	/* unrolled: the verifier takes ctx fields at constant offsets only */
#pragma clang loop unroll(full)
	for (c = 0; c < AA_NR_CLASSES; c++) {
		aa__root.tun.cpu_cache_cap[c] = t->cpu_cache_cap[c];
		aa__root.tun.batch[c] = t->batch[c];
		aa__root.tun.transfer_cap[c] = t->transfer_cap[c];
	}
	aa__root.tun.keep_bytes = t->keep_bytes;
	aa__root.tun.low_watermark = t->low_watermark;
	aa__root.tun.defer_limit = t->defer_limit;
	aa__root.tun.quarantine = t->quarantine <= AA_QUARANTINE_MAX ? t->quarantine
								    : AA_QUARANTINE_MAX;
}

/* Initialise the heap, grow it by grow_bytes and publish it (idempotent
 * while it is ready: tear it down first to change flags, tunables or the
 * fault injection it starts with). */
SEC("syscall")
int aa__init(struct aa_init_args *args)
{
	int ret;

	args->root_addr = (__u64)&aa__root;
	if (!aa_heap_ready()) {		/* before publication */
		set_tunables(&args->tun);
		WRITE_ONCE_ARENA(aa__root.fault.pages_every, args->fault_pages_every);
		WRITE_ONCE_ARENA(aa__root.fault.spans_every, args->fault_spans_every);
	}
	ret = aa__arena_init(args->arena_base, args->arena_size, args->nr_cpus, args->flags,
			    args->grow_bytes);
	args->err = ret < 0 ? ret : 0;
	return 0;
}

SEC("syscall")
int aa__grow(struct aa_grow_args *args)
{
	int ret = aa__arena_grow(args->bytes);

	args->chunks = ret > 0 ? ret : 0;
	args->err = ret < 0 ? ret : 0;
	return 0;
}

SEC("syscall")
int aa__trim(struct aa_trim_args *args)
{
	int ret = aa__arena_trim(args->keep_bytes);

	args->chunks = ret > 0 ? ret : 0;
	args->err = ret < 0 ? ret : 0;
	return 0;
}

SEC("syscall")
int aa__teardown(struct aa_trim_args *args)
{
	int ret = aa__arena_teardown();

	args->chunks = ret > 0 ? ret : 0;
	args->err = ret < 0 ? ret : 0;
	return 0;
}

/* Return every cached, quarantined and parked object to the heap: debug
 * mode's quarantine, each user cache and CPU cache it can claim (from
 * whatever CPU it runs on, so CPUs outside the caller's cpuset or offline
 * are reached too), the transfer caches, the limbo's spare nodes, then
 * the parked frees.
 * Caches claimed by someone else are reported in busy[] and user_busy:
 * try again. */
static int call_drain(struct aa_drain_args *args)
{
	__u32 nr = aa__root.nr_cpus;
	__u64 objects = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0, bit;
	int cpu, i, n, err = 0;

	if (!aa_heap_ready()) {
		args->err = -ENODEV;
		return 0;
	}
	if (aa__root.flags & AA_F_DEBUG)	/* the quarantine, to the heap */
		objects += aa__debug_flush();
	aa_for(i, 0, AA_MAX_USER_CACHES) {
		n = aa__user_cache_drain(i);
		if (n == -EBUSY)
			args->user_busy++;
		else if (n > 0)
			objects += n;
	}
	aa_for(cpu, 0, nr < AA_MAX_CPUS ? nr : AA_MAX_CPUS) {
		n = aa__cpu_cache_drain(cpu);
		if (n == -EBUSY) {
			/* constant ctx offsets only (verifier) */
			bit = 1ULL << ((__u32)cpu % 64);
			if (cpu < 64)
				b0 |= bit;
			else if (cpu < 128)
				b1 |= bit;
			else if (cpu < 192)
				b2 |= bit;
			else
				b3 |= bit;
			args->nr_busy++;
		} else if (n > 0) {
			objects += n;
		}
	}
	n = aa__transfer_cache_drain();
	if (n < 0)
		err = n;
	else
		objects += n;
	if (aa__root.flags & AA_F_DEFER)	/* parked, completed below */
		objects += aa__defer_drain_nodes();
	/* complete the parked frees (the transfer caches' objects among them) */
	aa_repeat(AA_MAX_LOOPS) {
		n = aa__heap_unpark();
		if (n < 0)
			err = err ? err : n;
		if (n <= 0)
			break;
	}
	/* and the empty spans the central lists kept, to the page heap */
	n = aa__heap_release_empty();
	if (n < 0)
		err = err ? err : n;
	args->busy[0] = b0;
	args->busy[1] = b1;
	args->busy[2] = b2;
	args->busy[3] = b3;
	args->objects = objects;
	args->err = err;
	return 0;
}

/* A reclaim round of deferred frees, in two runs with an RCU grace period
 * between them (defer.bpf.c has the protocol): ADVANCE, then FREE of the
 * epoch ADVANCE gave, again while `more`. */
static int call_reclaim(struct aa_reclaim_args *a)
{
	if (!aa_heap_ready() || !(aa__root.flags & AA_F_DEFER)) {
		a->err = aa_heap_ready() ? -EOPNOTSUPP : -ENODEV;
		return 0;
	}
	if (a->op == AA_RECLAIM_ADVANCE) {
		a->epoch = aa__defer_advance();
		a->err = 0;
	} else if (a->op == AA_RECLAIM_FREE) {
		a->objects = 0;
		a->bytes = 0;
		a->kept = 0;
		a->err = aa_defer_reclaim(a);
	} else {
		a->err = -EINVAL;
	}
	return 0;
}

/* Why an allocation got NULL, for the allocator call's ret: the argument
 * checks of alloc.bpf.c first (deterministic), else an uninitialised or
 * exhausted heap; -ENOMEM also covers a lock that could not be taken
 * (counted in err[BUSY] / err[NESTED]). */
static int alloc_errno(__u32 op, __u64 size, __u64 arg)
{
	if (op == AA_OP_CALLOC) {
		if (!aa_calloc_ok(arg, size))
			return -EINVAL;
		size *= arg;
	}
	if ((op == AA_OP_ALIGNED && !aa_align_ok(arg)) || !aa_size_ok(size))
		return -EINVAL;
	if (!aa_heap_ready())
		return -ENODEV;
	return -ENOMEM;
}

static int call_op(struct aa_op_args *a)
{
	__u64 p;

	switch (a->op) {
	case AA_OP_MALLOC:
	case AA_OP_CALLOC:
	case AA_OP_ALIGNED:
		/* the inline API, as users' programs call it */
		if (a->op == AA_OP_MALLOC)
			p = aa_malloc_inline(a->size);
		else if (a->op == AA_OP_CALLOC)
			p = aa_calloc_u64(a->arg, a->size);	/* sizes not constant */
		else
			p = aa_aligned_alloc_u64(a->arg, a->size);
		a->ptr = p;
		a->ret = p ? 0 : alloc_errno(a->op, a->size, a->arg);
		break;
	case AA_OP_MALLOC_GROW:
		/* sleepable callers may grow the heap inline, for a valid size */
		p = aa_malloc_u64(a->size);
		if (!p && alloc_errno(AA_OP_MALLOC, a->size, 0) == -ENOMEM &&
		    aa__arena_grow(a->size + AA_CHUNK_SIZE) > 0)	/* size <= 2^30 */
			p = aa_malloc_u64(a->size);
		a->ptr = p;
		a->ret = p ? 0 : alloc_errno(AA_OP_MALLOC, a->size, 0);
		break;
	case AA_OP_FREE:
		a->ret = aa_free_inline(a->ptr);
		break;
	case AA_OP_USABLE:
		a->size = aa_usable_size_u64(a->ptr);
		a->ret = 0;
		break;
	case AA_OP_MALLOC_BULK:
		a->ret = aa_malloc_bulk_u64(a->ptr, a->n, a->size);
		break;
	case AA_OP_FREE_BULK:
		a->ret = aa_free_bulk_u64(a->ptr, a->n);
		break;
	case AA_OP_FREE_DEFERRED:
		a->ret = aa_free_deferred_u64(a->ptr);
		break;
	case AA_OP_FREE_DEFERRED_BULK:
		a->ret = aa_free_deferred_bulk_u64(a->ptr, a->n);
		break;
	default:
		a->ret = -EINVAL;
	}
	return 0;
}

/* Run n ops from an arena array in one program run (the differential test
 * and the demo workload): ptr != 0 frees it, ptr == 0 allocates size.
 * Through the inline API, as users' programs call it. */
static int call_batch(struct aa_batch_args *a)
{
	struct aa_batch_op __arena *ops = (struct aa_batch_op __arena *)a->ops;
	__u32 n = a->n, done = AA_ZERO;
	int i;

	aa_for(i, 0, n) {
		struct aa_batch_op __arena *op = &ops[i];
		__u64 p = op->ptr;

		if (p) {
			op->ret = aa_free_inline(p);
		} else {
			p = aa_malloc_inline(op->size);
			op->ptr = p;
			op->ret = p ? 0 : -ENOMEM;
			op->size = p ? aa_usable_size_u64(p) : 0;
		}
		done++;
	}
	a->done = done;
	return 0;
}

/* A userspace thread's cache (user_cache.bpf.c): open, the slow halves of
 * its hits, close and reap. A miss that the cache's refill cannot serve
 * (heap locked, or empty) takes the front door, as the allocator call
 * would. */
static int call_user(struct aa_user_args *a)
{
	__u64 p;

	switch (a->op) {
	case AA_USER_OPEN:
		a->ret = user_open(a);
		break;
	case AA_USER_ALLOC:
		p = aa__user_cache_alloc(a->idx, a->cls, a->size);
		if (!p || p == AA_DRY)
			p = aa_malloc_u64(a->size);
		a->ptr = p;
		a->ret = p ? 0 : alloc_errno(AA_OP_MALLOC, a->size, 0);
		break;
	case AA_USER_FREE:
		a->ret = aa__user_cache_free(a->idx, a->ptr, a->cls);
		break;
	case AA_USER_CLOSE:
		a->ret = user_close(a);
		break;
	case AA_USER_REAP:
		a->ret = user_reap(a);
		break;
	default:
		a->ret = -EINVAL;
	}
	return 0;
}

/* Every call but the lifecycle's, by c->kind (aa_syscall.h): the callee
 * reads its arguments at the ctx itself. Returns 0, or for AA_CALL_CHECK
 * the first failing check's code (0: the heap is consistent); an unknown
 * kind is -EINVAL. */
SEC("syscall")
int aa__run(struct aa_call_args *c)
{
	switch (c->kind) {
	case AA_CALL_OP:
		return call_op((struct aa_op_args *)c);
	case AA_CALL_BATCH:
		return call_batch((struct aa_batch_args *)c);
	case AA_CALL_USER:
		return call_user((struct aa_user_args *)c);
	case AA_CALL_DRAIN:
		return call_drain((struct aa_drain_args *)c);
	case AA_CALL_RECLAIM:
		return call_reclaim((struct aa_reclaim_args *)c);
	case AA_CALL_CHECK:
		return aa__heap_check();
	default:
		return -EINVAL;
	}
}
