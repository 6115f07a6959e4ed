// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cpu_cache.c - the cache tiers (per-CPU caches, transfer caches):
 * cross-CPU stress with a drain-equals-initial check, reentrancy from a
 * hard-IRQ perf_event program, non-sleepable programs on an empty heap,
 * double free of a cached object, drain/trim, tunables and the off switch.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cpu_cache_fixture.h"

TestSuite(cpu_cache, .init = setup, .fini = teardown, .timeout = 600);

static int nr_cpus(void)
{
	return aa_heap__root(h)->nr_cpus;
}

/* The buddy's free state: free block counts per order and bytes in use. */
struct buddy_state {
	__u64 free_blocks[AA_NR_ORDERS];
	__u64 bytes_in_use, live_allocs, nr_chunks;
};

static struct buddy_state buddy_state(void)
{
	struct aa_stats st = t_stats(h);
	struct buddy_state b;

	memcpy(b.free_blocks, st.free_blocks, sizeof(b.free_blocks));
	b.bytes_in_use = st.bytes_in_use;
	b.live_allocs = st.live_allocs;
	b.nr_chunks = st.nr_chunks;
	return b;
}

/* --- Cross-CPU stress ----------------------------------------------------- */

struct worker {
	int cpu;
	pthread_barrier_t *start;	/* both loops start together */
	__u64 ops, errors, frees, cross;
};

#define STRESS_OPS	1000000ULL	/* per thread: allocs + frees */
#define STRESS_ITERS	20000		/* loop trips per program run */

static void *stress_worker(void *arg)
{
	struct worker *w = arg;
	int run;

	if (t_pin_cpu(w->cpu))
		w->errors++;
	if (w->start)
		pthread_barrier_wait(w->start);
	for (run = 0; w->ops < STRESS_OPS && run < 1000; run++) {
		struct stress_args a = { .iters = STRESS_ITERS, .seed = run * 7919 + w->cpu };
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.stress), &o)) {
			w->errors++;
			break;
		}
		w->ops += a.allocs + a.frees;
		w->errors += a.errors;
		w->frees += a.frees;
		w->cross += a.cross;
	}
	return NULL;
}

Test(cpu_cache, cross_cpu_stress_then_drain_equals_initial)
{
	struct worker w[2] = { { .cpu = 0 }, { .cpu = 1 } };
	struct buddy_state before, after;
	pthread_t t[2];
	__u64 cross = 0, frees = 0;
	pthread_barrier_t start;
	int i, n = nr_cpus() >= 2 ? 2 : 1;

	cr_assert_geq(aa_heap__drain(h), 0);
	before = buddy_state();
	cr_assert_eq(pthread_barrier_init(&start, NULL, n), 0);
	for (i = 0; i < n; i++) {
		w[i].start = &start;
		cr_assert_eq(pthread_create(&t[i], NULL, stress_worker, &w[i]), 0);
	}
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (i = 0; i < n; i++) {
		cr_log_info("CPU %d: %llu ops, %llu errors", w[i].cpu,
			    (unsigned long long)w[i].ops, (unsigned long long)w[i].errors);
		cr_assert_geq(w[i].ops, STRESS_OPS);
		cr_assert_eq(w[i].errors, 0);
	}
	cr_assert_eq(t_run(skel->progs.flush_slots, NULL, 0), 0, "parked objects failed to free");
	/* the slots are shared: while both loops run, about half the frees
	 * free what the other CPU allocated (each object carries its
	 * allocating CPU); on a loaded machine they overlap less, so only
	 * ask for a share that any overlap gives */
	for (i = 0; i < n; i++) {
		cross += w[i].cross;
		frees += w[i].frees;
	}
	cr_log_info("cross-CPU frees: %llu of %llu", (unsigned long long)cross,
		    (unsigned long long)frees);
	if (n == 2)
		cr_assert_geq(cross * 1000, frees, "cross-CPU frees are %llu of %llu, under 0.1%%",
			      (unsigned long long)cross, (unsigned long long)frees);
	cr_assert_eq(t_user_live(h), 0, "objects lost or duplicated");
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(aa_heap__cached_bytes(h, NULL), 0);
	after = buddy_state();
	cr_log_info("drain: %llu B in use, %llu live before; %llu B, %llu live after",
		    (unsigned long long)before.bytes_in_use, (unsigned long long)before.live_allocs,
		    (unsigned long long)after.bytes_in_use, (unsigned long long)after.live_allocs);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0,
		     "buddy free state after drain differs from before the run");
	t_check(h);
}

/* --- Reentrancy ------------------------------------------------------------- */

#define NESTED_TARGET	100000ULL

Test(cpu_cache, reentrancy_from_hard_irq)
{
	struct bpf_link *link;
	__u64 runs = 0, ok = 0, busy = 0;
	int fd, i, c;

	pin(0);
	fd = t_open_cpu_clock(0, 20000);	/* 50 kHz hrtimer, hard-IRQ context */
	cr_assert_geq(fd, 0, "perf_event_open: %s", strerror(errno));
	link = bpf_program__attach_perf_event(skel->progs.reent_irq, fd);
	cr_assert_not_null(link, "attach perf_event: %s", strerror(errno));
	/* Run the hot loop until enough IRQ programs have landed inside it.
	 * The bound is on runs, not time: slower kernels just run longer. */
	for (i = 0; i < 100000 && skel->bss->irq_nested < NESTED_TARGET; i++) {
		struct reent_args a = { .iters = 200000 };

		t_run(skel->progs.reent_outer, &a, sizeof(a));
		cr_assert_eq(a.errors, 0, "outer loop saw %llu errors", (unsigned long long)a.errors);
		cr_assert_eq(a.cpu, 0);
		runs++;
		ok += a.ok;
	}
	bpf_link__destroy(link);
	close(fd);
	for (c = 0; c < AA_NR_CLASSES; c++)
		busy += aa_heap__cpu_cache(h, 0)->cls[c].stats.nested;
	cr_log_info("reentrancy: %llu outer runs (%llu alloc/free pairs), %llu IRQ runs, "
		    "%llu nested in the outer loop, %llu found the cache busy (fallback), "
		    "%llu IRQ allocs ok, %llu NULL",
		    (unsigned long long)runs, (unsigned long long)ok,
		    (unsigned long long)skel->bss->irq_runs, (unsigned long long)skel->bss->irq_nested,
		    (unsigned long long)busy, (unsigned long long)skel->bss->irq_ok,
		    (unsigned long long)skel->bss->irq_null);
	cr_assert_geq(skel->bss->irq_nested, NESTED_TARGET);
	cr_assert_eq(skel->bss->irq_errors, 0);
	cr_assert_gt(busy, 0, "no IRQ ever landed inside a cache operation");
	cr_assert_gt(skel->bss->irq_ok, 0);
	cr_assert_eq(t_user_live(h), 0, "objects lost");
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

/* --- Non-sleepable programs on an empty heap -------------------------------- */

/* An 8-MiB arena, a 1-MiB heap that does not grow itself (on any kernel). */
static void setup_small(void)
{
	open_with(T_PAGES(8 * MiB), 1 * MiB, AA_F_NO_SELF_GROW);
}

Test(cpu_cache, empty_heap_gives_null_and_refill_signal, .init = setup_small)
{
	const struct aa_root *r = aa_heap__root(h);
	struct bpf_link *link;
	__u64 size;
	int fd;

	pin(0);
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1, "tc program got no memory after the prefill");
	/* take everything: the buddy and every cache of the sizes we use */
	for (size = 1 << 20; size >= 16; size >>= 1)
		while (t_malloc(h, size))
			;
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 2, "tc program must get NULL on an empty heap");
	cr_assert_eq(r->need_refill, 1, "no low-watermark signal");
	cr_assert_geq(r->refill_signals, 1);

	/* a perf_event program (hard IRQ) gets NULL too, without faulting */
	fd = t_open_cpu_clock(0, 100000);
	cr_assert_geq(fd, 0);
	link = bpf_program__attach_perf_event(skel->progs.reent_irq, fd);
	cr_assert_not_null(link);
	for (int i = 0; i < 100000 && skel->bss->irq_runs < 20; i++)
		usleep(100);	/* bounded: the 10-kHz timer needs ~2 ms */
	bpf_link__destroy(link);
	close(fd);
	cr_assert_eq(skel->bss->irq_ok, 0);
	cr_assert_geq(skel->bss->irq_null, 20);

	/* the loader answers the signal; programs get memory again */
	cr_assert_geq(aa_heap__refill(h, 2 * MiB), 1);
	cr_assert_eq(r->need_refill, 0);
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1);
	t_check(h);
}

/* --- Double free, drain, trim ------------------------------------------------ */

Test(cpu_cache, double_free_of_a_cached_object_is_refused)
{
	__u64 p, q;
	struct aa_stats st;

	pin(0);
	p = t_malloc(h, 64);
	q = t_malloc(h, 64);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(t_free(h, p), -EALREADY);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], 1);
	/* the cache still holds p once: two allocs give p and then another */
	cr_assert_eq(t_malloc(h, 64), p);
	cr_assert_neq(t_malloc(h, 64), p);
	cr_assert_eq(t_free(h, q + 16), -ENOENT, "interior pointers still refused");
	st = t_stats(h);
	cr_assert_eq(st.err[AA_ERR_INTERIOR], 1);
	t_check(h);
}

Test(cpu_cache, usable_size_of_a_freed_object_is_zero)
{
	__u64 p, big;

	pin(0);
	p = t_malloc(h, 64);
	big = t_malloc(h, 8192);	/* buddy-only size */
	cr_assert_eq(t_usable(h, p), 64);
	cr_assert_eq(t_free(h, p), 0);	/* now in this CPU's cache */
	cr_assert_gt(aa_heap__cached_bytes(h, NULL), 0);
	cr_assert_eq(t_usable(h, p), 0, "usable size of a cached (freed) object");
	cr_assert_eq(t_free(h, big), 0);
	cr_assert_eq(t_usable(h, big), 0, "usable size of a freed buddy block");
	t_check(h);
}

Test(cpu_cache, drain_returns_everything_and_trim_returns_chunks)
{
	__u64 arr = t_malloc(h, 256 * 8), *u = aa_heap__ptr(h, arr);
	struct aa_op_args a;
	long drained;
	int trimmed;

	pin(0);
	a = t_call(h, AA_OP_MALLOC_BULK, 64, 0, arr, 256);
	cr_assert_eq(a.ret, 256);
	a = t_call(h, AA_OP_FREE_BULK, 0, 0, arr, 256);	/* into the CPU cache */
	cr_assert_eq(a.ret, 256);
	cr_assert_eq(u[0], 0);
	cr_assert_gt(aa_heap__cached_bytes(h, NULL), 0);
	cr_assert_eq(t_free(h, arr), 0);
	drained = aa_heap__drain(h);
	cr_assert_gt(drained, 0);
	cr_assert_eq(aa_heap__cached_bytes(h, NULL), 0);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	trimmed = aa_heap__trim(h, AA_KEEP_DEFAULT);	/* keeps tun.keep_bytes = 4 MiB */
	cr_assert_eq(trimmed, 12, "16 free chunks, keep 4: trimmed %d", trimmed);
	cr_assert_eq(t_stats(h).nr_chunks, 4);
	t_check(h);
}

/* --- Drain under a cpuset ----------------------------------------------------
 * A container's cpuset keeps the process off some CPUs; drain must still
 * empty their caches (it claims them from any CPU) and must not report
 * success while objects stay cached. cpuset_only() moves this test's
 * process (Criterion forks one per test) into a cpuset of one CPU: cgroup
 * v1's cpuset hierarchy where it is mounted, else one we mount ourselves
 * (v1 cpuset, or v2 with the cpuset controller).
 */
struct cpuset {
	char base[96], dir[128];
	bool mounted;
};

static bool write_file(const char *dir, const char *name, const char *val)
{
	char path[192];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = fputs(val, f) >= 0;
	return (fclose(f) == 0) && ok;
}

static bool cpuset_only(struct cpuset *cs, int cpu)
{
	char val[16], pid[16];
	bool v2 = false;

	*cs = (struct cpuset){ 0 };
	if (!access("/sys/fs/cgroup/cpuset/cpuset.cpus", W_OK)) {
		snprintf(cs->base, sizeof(cs->base), "/sys/fs/cgroup/cpuset");
	} else {
		snprintf(cs->base, sizeof(cs->base), "/tmp/aa-cpuset-%d", getpid());
		if (mkdir(cs->base, 0755))
			return false;
		if (!mount("cgroup", cs->base, "cgroup", 0, "cpuset")) {
			cs->mounted = true;
		} else if (!mount("cgroup2", cs->base, "cgroup2", 0, NULL)) {
			cs->mounted = v2 = true;
			if (!write_file(cs->base, "cgroup.subtree_control", "+cpuset"))
				return false;
		} else {
			return false;
		}
	}
	snprintf(cs->dir, sizeof(cs->dir), "%s/aa-test-%d", cs->base, getpid());
	if (mkdir(cs->dir, 0755))
		return false;
	snprintf(val, sizeof(val), "%d", cpu);
	snprintf(pid, sizeof(pid), "%d", getpid());
	return write_file(cs->dir, "cpuset.cpus", val) &&
	       (v2 || write_file(cs->dir, "cpuset.mems", "0")) &&
	       write_file(cs->dir, "cgroup.procs", pid);
}

static void cpuset_undo(struct cpuset *cs)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (cs->dir[0]) {
		write_file(cs->base, "cgroup.procs", pid);
		rmdir(cs->dir);
	}
	if (cs->mounted)
		umount(cs->base);
	if (strncmp(cs->base, "/tmp/", 5) == 0)
		rmdir(cs->base);
}

Test(cpu_cache, drain_reaches_cpus_outside_the_cpuset)
{
	struct cpuset cs;
	bool confined;
	int i;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cr_skip_test("needs 2 online CPUs");
	pin(1);
	for (i = 0; i < 8; i++)
		cr_assert_eq(t_free(h, t_malloc(h, 64)), 0);
	cr_assert_gt(aa_heap__cpu_cache(h, 1)->cls[C64].count, 0, "nothing cached on CPU 1");
	pin(0);
	confined = cpuset_only(&cs, 0);
	if (!confined) {
		int e = errno;

		cpuset_undo(&cs);
		cr_skip_test("cannot make a cpuset of CPU 0 (%s: %s)", cs.base, strerror(e));
	}
	/* the cpuset really keeps us off CPU 1 */
	i = t_pin_cpu(1);
	cr_log_info("drain in a cpuset of CPU 0 (%s): pinning to CPU 1 gives %s", cs.dir,
		    strerror(-i));
	if (i == 0) {
		cpuset_undo(&cs);
		cr_assert_fail("the cpuset did not exclude CPU 1");
	}
	i = aa_heap__drain(h);
	cpuset_undo(&cs);
	cr_assert_geq(i, 0, "drain: %s", strerror(-i));
	cr_assert_eq(aa_heap__cpu_cache(h, 1)->cls[C64].count, 0, "CPU 1's cache was not drained");
	cr_assert_eq(aa_heap__cached_bytes(h, NULL), 0);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

/* --- Teardown and re-init ------------------------------------------------------ */

Test(cpu_cache, teardown_refuses_while_a_cache_is_claimed)
{
	struct aa_stats before, after;
	__u64 p = t_malloc(h, 64);

	cr_assert_neq(p, 0);
	before = t_stats(h);
	t_set_claim(h, 0, AA_CC_OWNER);
	cr_assert_eq(aa_heap__teardown(h), -EBUSY, "teardown went on under a running program");
	after = t_stats(h);
	cr_assert_eq(after.nr_chunks, before.nr_chunks, "a refused teardown changed the heap");
	cr_assert_eq(after.pages_mapped, before.pages_mapped);
	cr_assert_eq(aa_heap__root(h)->magic, AA_ROOT_MAGIC);
	for (int cpu = 1; cpu < nr_cpus(); cpu++)
		cr_assert_eq(aa_heap__cpu_cache(h, cpu)->busy, AA_CC_FREE,
			     "CPU %d's cache stayed claimed after the refusal", cpu);
	t_set_claim(h, 0, AA_CC_FREE);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(aa_heap__teardown(h), 16);
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->busy, AA_CC_TEARDOWN, "caches stay claimed until init");
}

Test(cpu_cache, reinit_changes_flags_and_tunables)
{
	struct aa_tunables t;

	cr_assert_eq(aa_tunables__default(&t), 0);
	AA_OPTS(aa_heap_opts, off, .init_bytes = 2 * MiB, .flags = AA_F_NO_CACHES);
	cr_assert_eq(aa_heap__reinit(h, &off), 0, "reinit: %s", strerror(errno));
	cr_assert_eq(aa_heap__flags(h) & ~AA_F_SELF_GROW, AA_F_NO_CACHES);
	cr_assert_null(aa_heap__cpu_cache(h, 0), "caches left after a re-init without them");
	cr_assert_eq(t_stats(h).nr_chunks, 2);
	cr_assert_neq(t_malloc(h, 64), 0);
	cr_assert_eq(aa_heap__cached_bytes(h, NULL), 0);

	for (int c = 0; c < AA_NR_CLASSES; c++) {
		t.cpu_cache_cap[c] = 4;
		t.batch[c] = 2;
	}
	AA_OPTS(aa_heap_opts, on, .init_bytes = 2 * MiB, .tunables = &t);
	cr_assert_eq(aa_heap__reinit(h, &on), 0, "reinit: %s", strerror(errno));
	cr_assert_eq(aa_heap__flags(h) & ~AA_F_SELF_GROW, 0);
	cr_assert_eq(aa_heap__root(h)->tun.cpu_cache_cap[1], 4);
	cr_assert_eq(t_stats(h).live_allocs, 0, "the old heap's allocation survived");
	pin(0);
	cr_assert_neq(t_malloc(h, 32), 0);
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[aa_size_class(32)].count +
		     aa_reserve_objs(&t_tc(h, aa_size_class(32))->reserve, aa_heap__root(h)->cache_key),
		     1, "batch of 2 (one to the transfer cache's reserve, if empty), one handed out");
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->busy, AA_CC_FREE);
	t_check(h);
}

/* A free that lost its cache claim to a teardown (the claim is the
 * teardown's until the next init) takes the slow path, which offers the
 * object to the transfer cache: the next heap must not find it there, or
 * it would hand out memory that one of its own spans also holds. */
Test(cpu_cache, a_free_racing_teardown_leaves_nothing_for_the_next_heap)
{
	struct free_slow_args a = { .cls = C64 };
	__u64 old[8], q;
	int i, c;

	pin(0);
	for (i = 0; i < 8; i++) {
		old[i] = t_malloc(h, 64);
		cr_assert_neq(old[i], 0);
	}
	cr_assert_eq(aa_heap__teardown(h), 16);
	a.ptr = old[3];
	cr_assert_eq(t_run(skel->progs.free_slow, &a, sizeof(a)), 0);
	cr_log_info("free of an old object after teardown: %d, transfer cache: %u", a.ret,
		    t_tc(h, C64)->count);

	AA_OPTS(aa_heap_opts, o, .init_bytes = 16 * MiB);
	cr_assert_eq(aa_heap__reinit(h, &o), 0, "reinit: %s", strerror(errno));
	for (c = 0; c < AA_NR_CLASSES; c++)
		cr_expect_eq(t_tc(h, c)->count, 0, "class %d's transfer cache survived the re-init", c);
	/* a claimed cache sends the allocation to the transfer cache first */
	t_set_claim(h, 0, AA_CC_OWNER);
	q = t_malloc(h, 64);
	t_set_claim(h, 0, AA_CC_FREE);
	cr_assert_neq(q, 0);
	cr_assert_neq(q, old[3], "the old heap's object was handed out by the new one");
	cr_assert_eq(t_stats(h).live_allocs, 1, "the allocation did not come from the heap");
	cr_assert_eq(t_free(h, q), 0);
	t_check(h);
}

/* --- CPUs beyond the cache table -------------------------------------------------- */

/* Make /sys/devices/system/cpu/possible read `list` in this test's process
 * only (a private mount namespace; Criterion runs each test in its own). */
static void fake_possible_cpus(const char *list)
{
	char path[] = "/tmp/aa_possible_XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	cr_assert_eq(write(fd, list, strlen(list)), (ssize_t)strlen(list));
	close(fd);
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare(CLONE_NEWNS): %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "%s", strerror(errno));
	cr_assert_eq(mount(path, "/sys/devices/system/cpu/possible", NULL, MS_BIND, NULL), 0,
		     "bind mount over the possible-CPU list: %s", strerror(errno));
	unlink(path);
}

/* A heap of its own (aa_heap__open()) that sees the possible CPUs `list`,
 * in place of the suite's (closed first: Criterion runs the suite's init
 * before every test's). */
static void open_fake_cpus(const char *list)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = T_PAGES(64 * MiB), .init_bytes = 4 * MiB);

	teardown();
	t_need_arena();
	fake_possible_cpus(list);
	h = aa_heap__open(&o);
	cr_assert_not_null(h, "aa_heap__open with possible CPUs %s: %s", list, strerror(errno));
}

Test(cpu_cache, more_than_256_possible_cpus_work)
{
	__u64 p;

	open_fake_cpus("0-511\n");
	cr_assert_eq(aa_heap__root(h)->nr_cpus, AA_MAX_CPUS);
	pin(0);
	p = t_malloc(h, 64);
	cr_assert_neq(p, 0);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_gt(aa_heap__cached_bytes(h, NULL), 0, "CPU 0 has a cache");
	cr_assert_geq(aa_heap__drain(h), 1);
	t_check(h);
}

/* A CPU without a cache uses the shared tiers: the transfer cache (one
 * object at a time), else the buddy; never CPU 0's cache. */
Test(cpu_cache, cpus_beyond_the_cache_table_use_the_shared_tiers)
{
	__u64 p, before;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cr_skip_test("needs 2 online CPUs");
	open_fake_cpus("0\n");	/* one possible CPU: CPU 1 is beyond the table */
	cr_assert_eq(aa_heap__root(h)->nr_cpus, 1);
	pin(1);
	before = t_stats(h).no_cache;
	p = t_malloc(h, 64);
	cr_assert_neq(p, 0, "a CPU without a cache must still allocate");
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(t_stats(h).no_cache, before + 2, "alloc and free on CPU 1 not counted");
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[C64].count, 0, "CPU 1's free went to CPU 0's cache");
	cr_assert_eq(t_tc(h, C64)->count + aa_reserve_objs(&t_tc(h, C64)->reserve,
							   aa_heap__root(h)->cache_key), 1,
		     "CPU 1's free is not in the transfer cache");
	pin(0);
	p = t_malloc(h, 64);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(t_stats(h).no_cache, before + 2, "CPU 0 has a cache");
	t_check(h);
}

/* --- Switch and tunables ------------------------------------------------------- */

static void setup_off(void)
{
	open_with(T_PAGES(32 * MiB), 2 * MiB, AA_F_NO_CACHES);
}

Test(cpu_cache, caches_off_switch_goes_straight_to_the_buddy, .init = setup_off)
{
	__u64 p = t_malloc(h, 64);

	cr_assert_neq(p, 0);
	cr_assert_eq(t_stats(h).live_allocs, 1);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_eq(t_stats(h).live_allocs, 0);
	cr_assert_null(aa_heap__cpu_cache(h, 0));
	cr_assert_eq(aa_heap__cached_bytes(h, NULL), 0);
	cr_assert_eq(aa_heap__flags(h) & ~AA_F_SELF_GROW, AA_F_NO_CACHES);
}

Test(cpu_cache, tunables_are_validated_and_used)
{
	struct aa_tunables t;
	struct aa_heap *hh;

	cr_assert_eq(aa_tunables__default(&t), 0);
	cr_assert_eq(aa_tunables__validate(&t), 0);
	t.batch[2] = t.cpu_cache_cap[2];	/* batch > cap / 2 */
	cr_assert_eq(aa_tunables__validate(&t), -EINVAL);
	cr_assert_eq(aa_tunables__default(&t), 0);
	t.cpu_cache_cap[0] = AA_CPU_CACHE_MAX + 1;
	cr_assert_eq(aa_tunables__validate(&t), -EINVAL);

	setenv("ARENA_ALLOC_BATCH", "2", 1);
	setenv("ARENA_ALLOC_CPU_CACHE_CAP", "4", 1);
	cr_assert_eq(aa_tunables__default(&t), 0);
	cr_assert_eq(t.batch[5], 2);
	cr_assert_eq(t.cpu_cache_cap[7], 4);
	setenv("ARENA_ALLOC_BATCH", "x", 1);
	cr_assert_eq(aa_tunables__default(&t), -EINVAL);
	unsetenv("ARENA_ALLOC_BATCH");
	unsetenv("ARENA_ALLOC_CPU_CACHE_CAP");

	t_need_arena();
	teardown();	/* the suite's heap: this test opens its own */
	/* a heap built with cap 4 / batch 2 refills two objects at a time */
	cr_assert_eq(aa_tunables__default(&t), 0);
	for (int c = 0; c < AA_NR_CLASSES; c++) {
		t.cpu_cache_cap[c] = 4;
		t.batch[c] = 2;
	}
	AA_OPTS(aa_heap_opts, o, .arena_pages = T_PAGES(16 * MiB), .tunables = &t);
	hh = aa_heap__open(&o);
	cr_assert_not_null(hh);
	pin(0);
	h = hh;
	t_malloc(h, 32);
	/* the first refill from the heap stocks the transfer cache's
	 * reserve, leaving one at least */
	cr_assert_eq(aa_heap__cpu_cache(h, 0)->cls[aa_size_class(32)].count +
		     aa_reserve_objs(&t_tc(h, aa_size_class(32))->reserve,
				     aa_heap__root(h)->cache_key), 1,
		     "batch of 2, one handed out: count %u, batch %u, cap %u",
		     aa_heap__cpu_cache(h, 0)->cls[aa_size_class(32)].count,
		     aa_heap__root(h)->tun.batch[aa_size_class(32)],
		     aa_heap__cpu_cache(h, 0)->cls[aa_size_class(32)].cap);
	cr_assert_eq(aa_heap__root(h)->tun.cpu_cache_cap[1], 4);
	aa_heap__destroy(hh);
	h = NULL;
}

/* Tunables, caps and counts live in the arena, which any process that maps
 * it can write: the BPF side bounds each where it uses it. Nonsense values
 * may cost speed, never a write outside a cache or another class's slots. */
Test(cpu_cache, tunables_out_of_range_in_the_arena_stay_inside_the_caches)
{
	struct aa_root *r = (struct aa_root *)aa_heap__root(h);
	struct reent_args a = { .iters = 1000 };
	__u32 c200 = aa_size_class(200);
	__u64 p[300];
	int i, c, cpu;

	pin(0);
	for (c = 0; c < AA_NR_CLASSES; c++) {
		r->tun.cpu_cache_cap[c] = 100000;
		r->tun.batch[c] = 50000;
		r->tun.transfer_cap[c] = 100000;
		for (cpu = 0; cpu < nr_cpus(); cpu++)
			t_cpu_cache_mmap(h, cpu)->cls[c].cap = 100000;
	}
	for (i = 0; i < 300; i++) {
		p[i] = t_malloc(h, 64);
		cr_expect_neq(p[i], 0, "allocation %d failed", i);
	}
	for (i = 0; i < 300; i++)
		if (p[i])
			cr_expect_eq(t_free(h, p[i]), 0, "free %d", i);
	cr_assert_eq(t_run(skel->progs.reent_outer, &a, sizeof(a)), 0);
	cr_expect_eq(a.errors, 0, "the inline API failed %llu times", a.errors);
	cr_expect_eq(a.ok, 1000);
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		for (c = 0; c < AA_NR_CLASSES; c++) {
			__u32 n = aa_heap__cpu_cache(h, cpu)->cls[c].count;

			if (cpu == 0 && (c == C64 || c == c200))
				cr_expect_leq(n, AA_CPU_CACHE_MAX, "CPU 0 class %d: count %u", c, n);
			else
				cr_expect_eq(n, 0, "CPU %d class %d, never used: count %u", cpu, c, n);
		}
	for (c = 0; c < AA_NR_CLASSES; c++)
		cr_expect_leq(t_tc(h, c)->count, AA_TRANSFER_MAX, "transfer cache %d: %u", c,
			      t_tc(h, c)->count);
	t_check(h);
}

/* The tests above name the 64-B class C64. */
Test(cpu_cache, c64_is_the_class_of_64_bytes)
{
	cr_assert_eq(aa_size_class(64), C64);
	cr_assert_eq(aa_class_size(C64), 64);
}
