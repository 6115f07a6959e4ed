// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_stress.c - the long stress (make stress): everything at once on every
 * CPU, then every invariant and a teardown that returns every page.
 *  - ST_PER_CPU task threads pinned to each online CPU loop st_run
 *    (tests/bpf/test_stress.bpf.c: random sizes over every size class and
 *    page runs, calloc, aligned_alloc, usable size, bulk calls, plain and
 *    deferred frees, objects exchanged through shared slots so that most
 *    frees happen on another CPU), every object stamped and checked;
 *  - a userspace thread pinned to each CPU doing the same through the
 *    library's userspace calls (aa_heap__malloc(), aa_heap__calloc(),
 *    aa_heap__free(), aa_heap__free_deferred(): its own user cache, the
 *    aa__run's user and allocator calls), same stamps, same slots: objects
 *    cross between BPF and userspace both ways;
 *  - a perf_event program allocating and freeing in hard IRQ on every CPU
 *    (10 kHz; its NULLs reported per 10^5 allocations of the size
 *    classes, page runs apart: those take the heap lock);
 *  - an agent thread (as `arena-alloc refill-agent`): refill when
 *    need_refill is up, reclaim while limbo holds objects;
 *  - a control thread, meanwhile: drain, trim, grow and the validity
 *    checker (which takes the heap lock, so it runs while everything
 *    runs); every second a pause: task threads, agent and IRQ program
 *    stopped, limbo reclaimed, drain, then the heap's live allocations
 *    must be exactly the objects in the slots, as the BPF counters say,
 *    and the checker must pass;
 *  - at the end: the slots emptied, drain, reclaim, then no live bytes,
 *    no error but lock misses, BPF and heap counters in agreement, no
 *    stamp ever wrong, and teardown leaves no page mapped.
 *
 * AA_STRESS_ALL_OPS: allocator operations (allocations + frees) of the
 * task threads, default ST_OPS_DEFAULT (make test); `make stress` runs
 * 10^9. AA_STRESS_PROGRESS=N prints a progress line every N seconds and the
 * totals on stderr. AA_STRESS_IRQ_NS: the perf_event period (0: none).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <time.h>
#include "common.h"
#include "test_stress.h"
#include "test_stress.skel.h"

#define MiB		(1ULL << 20)
#define ST_PER_CPU	3		/* task threads per CPU */
#define ST_USER_PER_CPU	1		/* userspace threads per CPU */
#define ST_USER_STEPS	256		/* steps between pause checks */
#define ST_ITERS	1024		/* steps per program run */
#define ST_OPS_DEFAULT	10000000ULL
#define ST_IRQ_NS	100000		/* perf_event period: 10 kHz per CPU */
#define ST_INIT_BYTES	(32 * MiB)
#define ST_MAX_CHUNKS	160		/* the control thread grows up to this */
#define U(x)		((unsigned long long)(x))

static struct test_stress *skel;
static struct aa_heap *h;

static void teardown(void)
{
	aa_heap__destroy(h);
	test_stress__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(stress, .fini = teardown, .timeout = 14400);

/* --- Shared state of one run ------------------------------------------------ */

struct st_thread {
	pthread_t tid;
	int cpu, me, err;	/* err: -errno of a failed pin or test run */
};

/* What the control thread did, and the first thing it found wrong. */
struct st_ctl {
	__u64 refills, refill_chunks, reclaims, reclaimed, drains, drain_busy;
	__u64 trims, trimmed, grows, grown, checks, check_busy, pauses;
	char fail[512];
};

static struct {
	int nthr, progress_s;	/* nthr: threads a pause waits for (tasks, agent) */
	__u64 target;
	volatile int stop, stop_ctl;
	__u64 done_ops;			/* task ops so far (atomic) */
	pthread_mutex_t mu, fail_mu;
	pthread_cond_t cv;
	int pause_req, npaused;
	struct st_thread t[ST_THREADS];
	struct st_ctl ctl;
	struct timespec t0;
} S;

static double st_secs(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - S.t0.tv_sec) + (t.tv_nsec - S.t0.tv_nsec) / 1e9;
}

static __u64 st_allocs(const struct st_counts *c)
{
	__u64 n = 0;
	int k;

	for (k = 0; k < ST_NR_ALLOC; k++)
		n += c->alloc[k];
	return n;
}

static __u64 st_frees(const struct st_counts *c)
{
	__u64 n = 0;
	int k;

	for (k = 0; k < ST_NR_FREE; k++)
		n += c->free[k];
	return n;
}

/* Sum of the counters of owners from .. end-1 (struct st_counts is all
 * __u64; exact once the programs stopped, a snapshot while they run). */
static void st_sum(struct st_counts *to, int from, int end)
{
	const size_t n = sizeof(*to) / sizeof(__u64);
	__u64 *t = (__u64 *)to;
	size_t k;
	int o;

	memset(to, 0, sizeof(*to));
	for (o = from; o < end; o++)
		for (k = 0; k < n; k++)
			t[k] += ((const __u64 *)&skel->bss->st_cnt[o])[k];
}

static __u64 st_bad(const struct st_counts *c)
{
	return c->bad_stamp + c->bad_free + c->bad_align + c->bad_zero + c->bad_usable;
}

/* Totals on stderr with AA_STRESS_PROGRESS (make stress), else in the log. */
static void st_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (S.progress_s)
		fprintf(stderr, "stress: %s\n", buf);
	else
		cr_log_info("stress: %s", buf);
}

/* --- Task threads ------------------------------------------------------------ */

static void st_wait_if_paused(void)
{
	pthread_mutex_lock(&S.mu);
	if (S.pause_req) {
		S.npaused++;
		pthread_cond_broadcast(&S.cv);
		while (S.pause_req)
			pthread_cond_wait(&S.cv, &S.mu);
		S.npaused--;
	}
	pthread_mutex_unlock(&S.mu);
}

/* Count what a thread did since its ops were `before`; stop at the target. */
static void st_add_ops(const struct st_counts *c, __u64 before)
{
	if (__atomic_add_fetch(&S.done_ops, st_allocs(c) + st_frees(c) - before,
			       __ATOMIC_RELAXED) >= S.target)
		S.stop = 1;
}

static void st_thread_exit(void)
{
	pthread_mutex_lock(&S.mu);	/* a pause waits for running threads only */
	S.nthr--;
	pthread_cond_broadcast(&S.cv);
	pthread_mutex_unlock(&S.mu);
}

static void *st_thread_run(void *arg)
{
	struct st_thread *t = arg;
	const struct st_counts *c = &skel->bss->st_cnt[t->me];
	__u64 runs = 0, before;

	t->err = t_pin_cpu(t->cpu);
	while (!t->err && !S.stop) {
		struct st_args a = { .iters = ST_ITERS, .me = t->me,
				     .seed = (t->me + 1) * 2654435761u ^ (__u32)(runs++ * 40503) };
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

		st_wait_if_paused();
		before = st_allocs(c) + st_frees(c);
		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.st_run), &o)) {
			t->err = -errno;
			break;
		}
		st_add_ops(c, before);
	}
	st_thread_exit();
	return NULL;
}

/* --- Userspace threads --------------------------------------------------------- */

static __u32 st_rand(__u32 *seed)
{
	__u32 x = *seed;	/* xorshift32, as the BPF programs' */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *seed = x;
}

/* Check a slot value's object and free it (1 in 128 deferred), counting
 * into c as the BPF programs' st_release() does. */
static void st_user_release(struct st_counts *c, int cpu, __u64 v, __u32 r)
{
	__u64 p = skel->bss->st_hi | v >> 32;
	__u32 stamp = (__u32)v, owner = ST_OWNER(stamp);
	__u64 size = ST_KIND(stamp) == ST_K_RUN ? (__u64)ST_CODE(stamp) * 4096 + 1 + (stamp & 0xfff)
					      : aa_class_size(ST_CODE(stamp)) - (stamp & 3);
	int err;

	if (!st_intact_size(p, stamp, size))
		c->bad_stamp++;
	if ((int)skel->bss->st_cpu_of[owner] != cpu)
		c->xcpu++;
	if (owner < skel->bss->st_user_first || owner >= skel->bss->st_user_end)
		c->xside++;
	if ((r & 127) == 0) {
		err = aa_heap__free_deferred(h, p);
		if (!err) {
			c->free[ST_DEFER]++;
			return;
		}
		if (err != -ENOMEM) {
			c->bad_free++;
			return;
		}
		c->defer_nomem++;
	}
	if (aa_heap__free(h, p))
		c->bad_free++;
	else
		c->free[ST_FREE]++;
}

/* One step: a new object (malloc or calloc over the classes, now and
 * then a page run), stamped, swapped into a random slot; what was there
 * checked and freed. */
static void st_user_step(struct st_counts *c, int cpu, __u32 me, __u32 seq, __u32 *seed)
{
	__u32 r = st_rand(seed), r2 = st_rand(seed), kind = ST_K_CLASS, code, stamp;
	__u64 size, p, v, old;
	int k = ST_MALLOC;

	code = r & 1 ? (r >> 8) & 15 : (((r >> 8) & 0xffff) * AA_NR_CLASSES) >> 16;
	if ((r2 & 63) == 0) {
		kind = ST_K_RUN;
		k = ST_RUN;
		code = 2 + ((r >> 24) & 3);
	} else if ((r2 & 7) == 1) {
		k = ST_CALLOC;
	}
	stamp = ST_STAMP(kind, code, me, seq);
	size = kind == ST_K_RUN ? (__u64)code * 4096 + 1 + (stamp & 0xfff)
				: aa_class_size(code) - (stamp & 3);
	p = k == ST_CALLOC ? aa_heap__calloc(h, 1, size) : aa_heap__malloc(h, size);
	if (!p) {
		c->nulls++;
		return;
	}
	c->alloc[k]++;
	/* the alignment rule (aa_shared.h), debug mode too */
	if (p & (kind == ST_K_RUN ? AA_PAGE_SIZE - 1 : AA_OBJ_ALIGN(size) - 1)) {
		c->bad_align++;
		return;	/* not ours to touch: leaked, and the end shows it */
	}
	if (k == ST_CALLOC && !st_zeroed(p, size))
		c->bad_zero++;
	st_stamp_size(p, stamp, size);
	v = p << 32 | stamp;
	old = __atomic_exchange_n(&skel->arena->st_slots[(r2 >> 16) & (ST_SLOTS - 1)], v,
				  __ATOMIC_SEQ_CST);
	if (old)
		st_user_release(c, cpu, old, r2 >> 6);
}

static void *st_user_run(void *arg)
{
	struct st_thread *t = arg;
	struct st_counts *c = &skel->bss->st_cnt[t->me];
	__u32 seed = (t->me + 1) * 2654435761u | 1, seq = 0;
	__u64 before;
	int i;

	t->err = t_pin_cpu(t->cpu);
	while (!t->err && !S.stop) {
		st_wait_if_paused();
		before = st_allocs(c) + st_frees(c);
		for (i = 0; i < ST_USER_STEPS; i++)
			st_user_step(c, t->cpu, t->me, ++seq, &seed);
		c->runs++;
		st_add_ops(c, before);
	}
	st_thread_exit();
	return NULL;
}

/* --- Control thread ---------------------------------------------------------- */

/* The first failure of the control or agent thread (the test thread
 * asserts on it). */
#define CTL_FAIL(...) do {							\
	pthread_mutex_lock(&S.fail_mu);						\
	if (!S.ctl.fail[0])							\
		snprintf(S.ctl.fail, sizeof(S.ctl.fail), __VA_ARGS__);	\
	pthread_mutex_unlock(&S.fail_mu);					\
} while (0)

static void st_reclaim(void)
{
	long n = aa_heap__reclaim(h);

	if (n < 0)
		CTL_FAIL("aa_heap__reclaim: %s", strerror((int)-n));
	else {
		S.ctl.reclaims++;
		S.ctl.reclaimed += n;
	}
}

/*
 * Everything stopped: task threads between runs, the perf_event programs
 * idle. After drain and reclaim, the heap's live allocations are exactly
 * the objects in the slots, which is also what the BPF counters say is
 * still allocated; the checker passes.
 */
static void st_pause_check(void)
{
	const struct aa_root *r = aa_heap__root(h);
	struct st_counts c;
	struct aa_stats st;
	__u64 in_slots = 0;
	long n;
	int i, err;

	pthread_mutex_lock(&S.mu);
	S.pause_req = 1;
	while (S.npaused < S.nthr)
		pthread_cond_wait(&S.cv, &S.mu);
	pthread_mutex_unlock(&S.mu);
	__atomic_store_n(&skel->bss->st_pause, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&skel->bss->st_irq_inflight, __ATOMIC_SEQ_CST))
		sched_yield();

	S.ctl.pauses++;
	/* reclaim first: it frees limbo's nodes into this CPU's cache */
	for (i = 0; i < 10 && r->defer.pending_objs; i++)
		st_reclaim();
	n = aa_heap__drain(h);
	if (n < 0)
		CTL_FAIL("pause %llu: drain: %s", U(S.ctl.pauses), strerror((int)-n));
	for (i = 0; i < ST_SLOTS; i++)
		in_slots += skel->arena->st_slots[i] != 0;
	st_sum(&c, 0, ST_OWNERS);
	aa_heap__stats(h, &st);
	if (r->defer.pending_objs)
		CTL_FAIL("pause %llu: %llu objects still in limbo after 10 reclaims",
			 U(S.ctl.pauses), U(r->defer.pending_objs));
	else if (st_allocs(&c) - st_frees(&c) != in_slots)
		CTL_FAIL("pause %llu: BPF counted %llu allocs - %llu frees, the slots hold %llu",
			 U(S.ctl.pauses), U(st_allocs(&c)), U(st_frees(&c)), U(in_slots));
	else if (st.live_allocs != in_slots) {
		__u64 cached_objs;

		aa_heap__cached_bytes(h, &cached_objs);
		CTL_FAIL("pause %llu: the heap has %llu live allocations, the slots hold %llu "
			 "(cached %llu, parked %llu - unparked %llu, limbo %llu)",
			 U(S.ctl.pauses), U(st.live_allocs), U(in_slots), U(cached_objs),
			 U(st.frees_parked), U(st.frees_unparked), U(r->defer.pending_objs));
	}
	else if (st.nr_allocs - st.nr_frees != st.live_allocs)
		CTL_FAIL("pause %llu: heap nr_allocs %llu - nr_frees %llu != live %llu",
			 U(S.ctl.pauses), U(st.nr_allocs), U(st.nr_frees), U(st.live_allocs));
	else if ((err = aa_heap__check(h)))
		CTL_FAIL("pause %llu: aa_heap__check: %d", U(S.ctl.pauses), err);

	__atomic_store_n(&skel->bss->st_pause, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&S.mu);
	S.pause_req = 0;
	pthread_cond_broadcast(&S.cv);
	pthread_mutex_unlock(&S.mu);
}

/* The agent, as `arena-alloc refill-agent` runs it: asleep on the refill
 * event ring, it grows the heap when the signal is up and reclaims while
 * limbo holds objects. Paused with the task threads. */
static void *st_agent_run(void *arg)
{
	long n;

	(void)arg;
	while (!S.stop_ctl) {
		st_wait_if_paused();
		n = aa_heap__wait_refill(h, 20, NULL);
		if (n == 1) {
			n = aa_heap__refill(h, 16 * MiB);
			if (n < 0)
				CTL_FAIL("aa_heap__refill: %s", strerror((int)-n));
			S.ctl.refills++;
			S.ctl.refill_chunks += n > 0 ? n : 0;
		} else if (n == 2) {
			st_reclaim();
		} else if (n < 0 && n != -EINTR) {
			CTL_FAIL("aa_heap__wait_refill: %s", strerror((int)-n));
		}
	}
	pthread_mutex_lock(&S.mu);
	S.nthr--;
	pthread_cond_broadcast(&S.cv);
	pthread_mutex_unlock(&S.mu);
	return NULL;
}

static void st_progress(double secs)
{
	struct st_counts c;
	__u64 ops;

	st_sum(&c, 0, ST_OWNERS);
	ops = st_allocs(&c) + st_frees(&c);
	fprintf(stderr, "stress: %7.1f s  %12llu ops (%.1f%% of the task target)  %.2f M ops/s  "
		"%llu pauses  %llu reclaims  %llu refills  bad %llu\n", secs, U(ops),
		100.0 * S.done_ops / S.target, ops / secs / 1e6, U(S.ctl.pauses),
		U(S.ctl.reclaims), U(S.ctl.refills), U(st_bad(&c)));
}

/* One heap operation per round: of 20 rounds one trims, one grows, five
 * drain, the others check (a round is 1 ms of sleep plus the operation;
 * a trim is slow, its page frees wait for the other CPUs' TLB flush); a
 * pause check every second. */
static void *st_ctl_run(void *arg)
{
	const struct aa_root *r = aa_heap__root(h);
	double next_pause = 1.0, next_progress = S.progress_s, now;
	__u64 i;
	long n;

	(void)arg;
	for (i = 0; !S.stop_ctl; i++) {
		usleep(1000);
		switch (i % 20 == 10 ? 2 : i % 20 == 5 ? 4 : i % 4 ? 1 : 0) {
		case 0:
			n = aa_heap__drain(h);
			S.ctl.drains++;
			if (n == -EBUSY)
				S.ctl.drain_busy++;	/* a program held a cache 100 ms */
			else if (n < 0)
				CTL_FAIL("aa_heap__drain: %s", strerror((int)-n));
			break;
		case 2:
			n = aa_heap__trim(h, AA_KEEP_DEFAULT);
			if (n < 0)
				CTL_FAIL("aa_heap__trim: %s", strerror((int)-n));
			S.ctl.trims++;
			S.ctl.trimmed += n > 0 ? n : 0;
			break;
		case 4:
			if (r->stats.nr_chunks >= ST_MAX_CHUNKS)
				break;
			n = aa_heap__grow(h, 2 * MiB);
			if (n < 0)
				CTL_FAIL("aa_heap__grow: %s", strerror((int)-n));
			S.ctl.grows++;
			S.ctl.grown += n > 0 ? n : 0;
			break;
		default:
			n = aa_heap__check(h);
			S.ctl.checks++;
			if (n == 2)
				S.ctl.check_busy++;	/* it could not take the heap lock */
			else if (n)
				CTL_FAIL("aa_heap__check while running: %ld", n);
		}
		now = st_secs();
		if (now >= next_pause) {
			st_pause_check();
			next_pause = st_secs() + 1.0;
		}
		if (S.progress_s && now >= next_progress) {
			st_progress(now);
			next_progress = now + S.progress_s;
		}
	}
	return NULL;
}

/* --- The run ----------------------------------------------------------------- */

static void st_setup(void)
{
	struct aa_tunables tun;

	t_need_arena();
	skel = test_stress__open();
	cr_assert_not_null(skel);
	cr_assert_eq(test_stress__load(skel), 0, "load: %s", strerror(errno));
	/* trim keeps 8 MiB free and the low watermark is above it, so that
	 * trims raise the refill signal and the control thread answers it */
	cr_assert_eq(aa_tunables__default(&tun), 0);
	tun.keep_bytes = 8 * MiB;
	tun.low_watermark = 12 * MiB;
	/* limbo's bound, twice this (bpf/defer.bpf.c): a quarter of the
	 * initial heap, so that an agent starved of CPU (a loaded host) costs
	 * refused deferred frees, never NULLs; at the default 16 MiB limbo
	 * could hold as much as the live objects and the caches left free */
	tun.defer_limit = 4 * MiB;
	AA_OPTS(aa_heap_opts, o, .init_bytes = ST_INIT_BYTES, .flags = AA_F_DEFER, .tunables = &tun);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
	skel->bss->st_hi = (__u64)(unsigned long)aa_heap__root(h) & ~0xffffffffULL;
	/* ARENA_ALLOC_DEBUG=1 runs it all in debug mode (which must then
	 * report nothing: checked at the end) */
	skel->bss->st_debug = !!(aa_heap__root(h)->flags & AA_F_DEBUG);
}

static void st_report(const struct st_counts *task, const struct st_counts *irq,
		      const struct st_counts *flush, double secs, int ncpu)
{
	const struct aa_root *r = aa_heap__root(h);
	__u64 ops = st_allocs(task) + st_frees(task) + st_allocs(irq) + st_frees(irq) +
		    st_frees(flush);

	st_log("%d CPUs x %d threads + hard IRQ, %.1f s: %llu operations, %.2f M ops/s",
	       ncpu, ST_PER_CPU, secs, U(ops), ops / secs / 1e6);
	st_log("task: %llu allocs (malloc %llu, page run %llu, calloc %llu, aligned %llu, "
	       "bulk %llu), %llu frees (free %llu, bulk %llu, deferred %llu, deferred bulk %llu), "
	       "%llu usable-size checks, %llu NULL, %llu runs",
	       U(st_allocs(task)), U(task->alloc[ST_MALLOC]), U(task->alloc[ST_RUN]),
	       U(task->alloc[ST_CALLOC]), U(task->alloc[ST_ALIGNED]), U(task->alloc[ST_BULK_ALLOC]),
	       U(st_frees(task)), U(task->free[ST_FREE]), U(task->free[ST_FREE_BULK]),
	       U(task->free[ST_DEFER]), U(task->free[ST_DEFER_BULK]), U(task->usable),
	       U(task->nulls), U(task->runs));
	st_log("hard IRQ: %llu runs, %llu allocs, %llu frees (%llu deferred), %llu NULL (%llu of "
	       "them page runs, which take the heap lock; size classes: %.1f NULLs in 10^5 "
	       "allocations); flush: %llu frees; frees on another CPU: %llu; deferred frees "
	       "refused (-ENOMEM): %llu",
	       U(irq->runs), U(st_allocs(irq)), U(st_frees(irq)), U(irq->free[ST_DEFER]),
	       U(irq->nulls), U(irq->nulls_run),
	       1e5 * (irq->nulls - irq->nulls_run) /
		       (st_allocs(irq) - irq->alloc[ST_RUN] + irq->nulls - irq->nulls_run + 1e-9),
	       U(st_frees(flush)), U(task->xcpu + irq->xcpu),
	       U(task->defer_nomem + irq->defer_nomem));
	st_log("bad: %llu stamps, %llu frees, %llu alignments, %llu calloc zeroes, %llu usable sizes",
	       U(task->bad_stamp + irq->bad_stamp + flush->bad_stamp),
	       U(task->bad_free + irq->bad_free + flush->bad_free),
	       U(task->bad_align + irq->bad_align), U(task->bad_zero + irq->bad_zero),
	       U(task->bad_usable + irq->bad_usable + flush->bad_usable));
	st_log("control: %llu refills (+%llu chunks), %llu reclaims (%llu objects), %llu drains "
	       "(%llu busy), %llu trims (-%llu chunks), %llu grows (+%llu chunks), %llu checks "
	       "(%llu lock misses), %llu pauses checked",
	       U(S.ctl.refills), U(S.ctl.refill_chunks), U(S.ctl.reclaims), U(S.ctl.reclaimed),
	       U(S.ctl.drains), U(S.ctl.drain_busy), U(S.ctl.trims), U(S.ctl.trimmed),
	       U(S.ctl.grows), U(S.ctl.grown), U(S.ctl.checks), U(S.ctl.check_busy),
	       U(S.ctl.pauses));
	st_log("heap: err[BUSY] %llu, err[NESTED] %llu, err[NOMEM] %llu; lock waits %llu, "
	       "misses %llu; frees parked %llu; refill signals %llu; self-growth %s: %llu chunks "
	       "(%llu failed); deferred %llu, reclaimed %llu, peak limbo %llu KiB, %llu refused at "
	       "its bound; peak %llu pages mapped",
	       U(r->stats.err[AA_ERR_BUSY]), U(r->stats.err[AA_ERR_NESTED]),
	       U(r->stats.err[AA_ERR_NOMEM]), U(r->stats.lock_waits), U(r->stats.lock_misses),
	       U(r->stats.frees_parked), U(r->refill_signals),
	       r->flags & AA_F_SELF_GROW ? "on" : "off", U(r->stats.self_grows),
	       U(r->stats.self_grow_fails), U(r->defer.deferred),
	       U(r->defer.reclaimed), U(r->defer.peak_pending_bytes >> 10),
	       U(r->defer.limit_refusals), U(r->stats.peak_pages_mapped));
}

Test(stress, everything_at_once_then_every_invariant_and_every_page_back)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), nthr, nuser, i, k, fds[ST_THREADS];
	__u64 irq_ns = t_env_u64("AA_STRESS_IRQ_NS", ST_IRQ_NS), task_ops;
	struct bpf_link *links[ST_THREADS];
	struct st_counts task, irq, flush, user;
	const struct aa_root *r;
	struct aa_stats st;
	pthread_t ctl, agent;
	double secs;
	long n;

	if (ncpu > ST_THREADS / (ST_PER_CPU + ST_USER_PER_CPU))
		ncpu = ST_THREADS / (ST_PER_CPU + ST_USER_PER_CPU);
	nthr = ncpu * ST_PER_CPU;
	nuser = ncpu * ST_USER_PER_CPU;
	memset(&S, 0, sizeof(S));
	S.target = t_env_u64("AA_STRESS_ALL_OPS", ST_OPS_DEFAULT);
	S.progress_s = (int)t_env_u64("AA_STRESS_PROGRESS", 0);
	cr_assert_gt(S.target, 0, "AA_STRESS_ALL_OPS must be > 0");
	pthread_mutex_init(&S.mu, NULL);
	pthread_mutex_init(&S.fail_mu, NULL);
	pthread_cond_init(&S.cv, NULL);
	st_setup();
	r = aa_heap__root(h);
	cr_assert_leq(ncpu, (int)r->nr_cpus);
	for (i = 0; i < ST_THREADS; i++)
		skel->bss->st_cpu_of[i] = i % ncpu;
	for (i = 0; i < ST_IRQ_OWNER - 1; i++)
		skel->bss->st_cpu_of[ST_IRQ_OWNER + i] = i;
	skel->bss->st_cpu_of[ST_FLUSH_OWNER] = ~0U;
	skel->bss->st_user_first = nthr;	/* owners nthr .. : userspace threads */
	skel->bss->st_user_end = nthr + nuser;

	for (i = 0; i < ncpu && irq_ns; i++) {
		fds[i] = t_open_cpu_clock(i, irq_ns);
		cr_assert_geq(fds[i], 0, "perf_event_open on CPU %d: %s", i, strerror(errno));
		links[i] = bpf_program__attach_perf_event(skel->progs.st_irq, fds[i]);
		cr_assert_not_null(links[i], "attach perf_event: %s", strerror(errno));
	}
	clock_gettime(CLOCK_MONOTONIC, &S.t0);
	S.nthr = nthr + nuser + 1;
	for (i = 0; i < nthr + nuser; i++) {
		S.t[i] = (struct st_thread){ .cpu = i % ncpu, .me = i };
		cr_assert_eq(pthread_create(&S.t[i].tid, NULL, i < nthr ? st_thread_run : st_user_run,
					    &S.t[i]), 0);
	}
	cr_assert_eq(pthread_create(&agent, NULL, st_agent_run, NULL), 0);
	cr_assert_eq(pthread_create(&ctl, NULL, st_ctl_run, NULL), 0);
	for (i = 0; i < nthr + nuser; i++)
		pthread_join(S.t[i].tid, NULL);
	S.stop_ctl = 1;
	pthread_join(ctl, NULL);
	pthread_join(agent, NULL);
	for (i = 0; i < ncpu && irq_ns; i++) {
		bpf_link__destroy(links[i]);
		close(fds[i]);
	}
	secs = st_secs();
	for (i = 0; i < nthr + nuser; i++)
		cr_assert_eq(S.t[i].err, 0, "thread %d on CPU %d: %s", i, S.t[i].cpu,
			     strerror(-S.t[i].err));

	/* empty the slots, drain, reclaim limbo */
	{
		struct st_args a = {};

		cr_assert_eq(t_run(skel->progs.st_flush, &a, sizeof(a)), 0);
	}
	for (i = 0; i < 10 && r->defer.pending_objs; i++)
		cr_assert_geq(aa_heap__reclaim(h), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	st_sum(&task, 0, ST_THREADS);	/* userspace threads' counts in task too */
	st_sum(&user, nthr, nthr + nuser);
	st_sum(&irq, ST_IRQ_OWNER, ST_FLUSH_OWNER);
	st_sum(&flush, ST_FLUSH_OWNER, ST_OWNERS);
	st_report(&task, &irq, &flush, secs, ncpu);
	st_log("userspace threads (%d, in task above): %llu allocs (malloc %llu, calloc %llu, "
	       "page run %llu), %llu frees (%llu deferred), %llu NULL; frees of the other "
	       "side's objects: %llu by userspace, %llu by BPF",
	       nuser, U(st_allocs(&user)), U(user.alloc[ST_MALLOC]), U(user.alloc[ST_CALLOC]),
	       U(user.alloc[ST_RUN]), U(st_frees(&user)), U(user.free[ST_DEFER]), U(user.nulls),
	       U(user.xside), U(task.xside - user.xside + irq.xside + flush.xside));
	st = t_stats(h);
	cr_assert_eq(S.ctl.fail[0], 0, "control thread: %s", S.ctl.fail);

	/* what the programs saw */
	task_ops = st_allocs(&task) + st_frees(&task);
	cr_assert_geq(task_ops, S.target, "the threads stopped early: %llu ops", U(task_ops));
	cr_assert_eq(task.bad_stamp + irq.bad_stamp + flush.bad_stamp, 0,
		     "objects with two owners or overwritten");
	cr_assert_eq(task.bad_free + irq.bad_free + flush.bad_free, 0, "frees were refused");
	cr_assert_eq(task.bad_align + irq.bad_align, 0, "misaligned addresses");
	cr_assert_eq(task.bad_zero + irq.bad_zero, 0, "calloc objects not zeroed");
	cr_assert_eq(task.bad_usable + irq.bad_usable + flush.bad_usable, 0,
		     "aa_usable_size() off the object's size");
	for (k = 0; k < ST_NR_ALLOC; k++)
		cr_assert_gt(task.alloc[k], 0, "allocation kind %d never ran", k);
	for (k = 0; k < ST_NR_FREE; k++)
		cr_assert_gt(task.free[k], 0, "free kind %d never ran", k);
	cr_assert_gt(user.xside, 0, "userspace freed no object BPF allocated");
	cr_assert_gt(task.xside - user.xside + irq.xside + flush.xside, 0,
		     "BPF freed no object userspace allocated");
	if (ncpu > 1)
		cr_assert_gt(task.xcpu + irq.xcpu, 0, "no free on another CPU than its alloc");
	if (irq_ns)
		cr_assert_gt(irq.runs, 0, "the perf_event program never ran");
	cr_assert_lt(task.nulls * 10000, task_ops, "task NULLs: %llu in %llu operations",
		     U(task.nulls), U(task_ops));

	/* BPF counters and the heap's agree; nothing left; no error but lock misses */
	cr_assert_eq(st_allocs(&task) + st_allocs(&irq),
		     st_frees(&task) + st_frees(&irq) + st_frees(&flush),
		     "allocations and frees do not match");
	cr_assert_eq(r->defer.deferred, task.free[ST_DEFER] + task.free[ST_DEFER_BULK] +
		     irq.free[ST_DEFER], "deferred frees: heap %llu, programs %llu",
		     U(r->defer.deferred), U(task.free[ST_DEFER] + task.free[ST_DEFER_BULK] +
					     irq.free[ST_DEFER]));
	/* -ENOMEM from a deferred free: no node, or limbo at its bound */
	cr_assert_eq(r->defer.node_failures + r->defer.limit_refusals,
		     task.defer_nomem + irq.defer_nomem, "deferred frees refused: heap %llu + %llu, "
		     "programs %llu", U(r->defer.node_failures), U(r->defer.limit_refusals),
		     U(task.defer_nomem + irq.defer_nomem));
	cr_assert_eq(r->defer.reclaimed, r->defer.deferred, "limbo kept %llu objects",
		     U(r->defer.deferred - r->defer.reclaimed));
	cr_assert_eq(r->defer.pending_objs, 0);
	cr_assert_eq(st.live_allocs, 0, "%llu objects lost", U(st.live_allocs));
	cr_assert_eq(st.bytes_in_use, 0, "%llu bytes still in use", U(st.bytes_in_use));
	cr_assert_eq(st.nr_allocs, st.nr_frees);
	cr_assert_eq(st.frees_parked, st.frees_unparked, "parked frees not completed");
	for (k = 0; k < AA_NR_ERRORS; k++)
		if (k != AA_ERR_BUSY && k != AA_ERR_NESTED)
			cr_assert_eq(st.err[k], 0, "err[%s] = %llu", aa_error_str(k), U(st.err[k]));
	/* with ARENA_ALLOC_DEBUG=1: a correct workload gets no debug report */
	cr_assert_eq(r->debug.recorded, 0, "debug mode reported %llu errors (%s first)",
		     U(r->debug.recorded), aa_debug_kind_str(r->debug.rec[0].kind));
	t_check(h);

	/* teardown returns every page */
	n = aa_heap__teardown(h);
	cr_assert_eq(n, (long)st.nr_chunks, "teardown returned %ld of %llu chunks", n,
		     U(st.nr_chunks));
	st = t_stats(h);
	cr_assert_eq(st.pages_mapped, 0, "%llu pages still mapped after teardown",
		     U(st.pages_mapped));
	cr_assert_eq(st.nr_chunks, 0);
	st_log("passed: every invariant held; teardown returned all %ld chunks", n);
}
