// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_concurrency.c - races that must have exactly one winner:
 *  - two CPUs free the same objects at the same time (double frees in
 *    lockstep, caches on and off): one free of each pointer succeeds, the
 *    other gets -EALREADY, and the heap comes back to its initial state;
 *  - trim racing grow: every chunk stays usable;
 *  - stale frees racing trim and grow: all refused;
 *  - readers of the mmap racing trim, grow and re-init: no page faulted in;
 *  - publication: whoever sees the root's magic sees the whole heap.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include "common.h"
#include "test_concurrency.h"
#include "test_concurrency.skel.h"

#define MiB (1ULL << 20)

static struct test_concurrency *skel;
static struct aa_heap *h;

static void open_sized(__u32 flags, __u64 init_bytes)
{
	t_need_arena();
	skel = test_concurrency__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(128 * MiB)), 0);
	cr_assert_eq(test_concurrency__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = init_bytes, .flags = flags);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
}

static void open_with(__u32 flags)
{
	open_sized(flags, 32 * MiB);
}

static void teardown(void)
{
	aa_heap__destroy(h);
	test_concurrency__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(concurrency, .fini = teardown, .timeout = 900);

static void pin(int cpu)
{
	cr_assert_eq(t_pin_cpu(cpu), 0, "pin to CPU %d", cpu);
}

static void need_cpus(int n)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < n)
		cr_skip_test("needs %d online CPUs, this machine has %ld", n,
			     sysconf(_SC_NPROCESSORS_ONLN));
}

/* --- Racing double frees ------------------------------------------------------ */

#define DF_ROUNDS	25	/* x DF_MAX = 102400 pairs */

struct df_thread {
	int cpu;
	struct df_args a;
	pthread_barrier_t *start;
	int err;
};

static void *df_run(void *arg)
{
	struct df_thread *t = arg;
	/* a syscall program's ctx is copied back into ctx_in */
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &t->a, .ctx_size_in = sizeof(t->a));

	t->err = t_pin_cpu(t->cpu);
	pthread_barrier_wait(t->start);
	if (!t->err && bpf_prog_test_run_opts(bpf_program__fd(skel->progs.df_free), &o))
		t->err = -errno;
	return NULL;
}

static void racing_double_frees(__u32 flags)
{
	__u64 arr, res[2], pairs = 0, both = 0, neither = 0, other = 0, timeouts = 0;
	struct df_thread t[2];
	pthread_barrier_t start;
	pthread_t tid[2];
	__s64 *r[2];
	int round, i, k;

	need_cpus(2);
	open_with(flags);
	arr = t_malloc(h, DF_MAX * sizeof(__u64));
	res[0] = t_malloc(h, DF_MAX * sizeof(__s64));
	res[1] = t_malloc(h, DF_MAX * sizeof(__s64));
	cr_assert(arr && res[0] && res[1]);
	r[0] = aa_heap__ptr(h, res[0]);
	r[1] = aa_heap__ptr(h, res[1]);
	for (round = 0; round < DF_ROUNDS; round++) {
		/* classes up to 2 KiB, a different one each round: 4096
		 * objects of the 8-KiB class would not fit the 32-MiB heap */
		__u64 size = aa_class_size((round * 7) % (aa_size_class(2048) + 1));
		struct aa_op_args a = t_call(h, AA_OP_MALLOC_BULK, size, 0, arr, DF_MAX);

		cr_assert_eq(a.ret, DF_MAX, "round %d: bulk alloc of %d x %llu B: %lld", round,
			     DF_MAX, (unsigned long long)size, (long long)a.ret);
		skel->arena->df_progress[0] = 0;
		skel->arena->df_progress[1] = 0;
		cr_assert_eq(pthread_barrier_init(&start, NULL, 2), 0);
		for (k = 0; k < 2; k++) {
			t[k] = (struct df_thread){
				.cpu = k, .start = &start,
				.a = { .arr = arr, .res = res[k], .n = DF_MAX, .me = k },
			};
			cr_assert_eq(pthread_create(&tid[k], NULL, df_run, &t[k]), 0);
		}
		for (k = 0; k < 2; k++) {
			pthread_join(tid[k], NULL);
			cr_assert_eq(t[k].err, 0, "thread %d: %s", k, strerror(-t[k].err));
			timeouts += t[k].a.waits_timed_out;
		}
		pthread_barrier_destroy(&start);
		for (i = 0; i < DF_MAX; i++) {
			int wins = (r[0][i] == 0) + (r[1][i] == 0);

			pairs++;
			if (wins == 2)
				both++;
			else if (wins == 0)
				neither++;
			else if (r[0][i] + r[1][i] != -EALREADY)
				other++;
		}
	}
	cr_log_info("%s: %llu simultaneous double frees (%llu steps out of lockstep): "
		    "%llu with two winners, %llu with none, %llu with another error",
		    flags & AA_F_NO_CACHES ? "caches off" : "caches on",
		    (unsigned long long)pairs, (unsigned long long)timeouts,
		    (unsigned long long)both, (unsigned long long)neither,
		    (unsigned long long)other);
	cr_assert_eq(both, 0, "%llu pointers were freed twice", (unsigned long long)both);
	cr_assert_eq(neither, 0, "%llu pointers were not freed at all", (unsigned long long)neither);
	cr_assert_eq(other, 0, "%llu losers got something else than -EALREADY",
		     (unsigned long long)other);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], pairs);
	cr_assert_eq(t_free(h, arr) | t_free(h, res[0]) | t_free(h, res[1]), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).live_allocs, 0, "objects lost or duplicated");
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

Test(concurrency, racing_double_frees_have_one_winner)
{
	racing_double_frees(0);
}

Test(concurrency, racing_double_frees_have_one_winner_caches_off)
{
	racing_double_frees(AA_F_NO_CACHES);
}

/* --- Trim racing grow ----------------------------------------------------------
 * A trim returns a chunk's pages, then its metadata pages; a grow on another
 * CPU maps chunks into free slots. Before the slot went through RELEASING, a
 * grower could map the slot between the two and have its new metadata freed
 * by the trim (the chunk then failed the check and its frees). The window
 * is widened with the library's fault-injection delay (bpf/arena.bpf.c).
 * Afterwards every chunk must still work: each is allocated whole and freed.
 */

#define TG_ROUNDS	500

struct tg_thread {
	int cpu, trim;
	pthread_barrier_t *start;
	__u64 calls, chunks;
	int err;		/* first unexpected error */
};

static void *tg_run(void *arg)
{
	struct tg_thread *t = arg;
	int i, ret;

	t->err = t_pin_cpu(t->cpu);
	pthread_barrier_wait(t->start);
	for (i = 0; i < TG_ROUNDS && !t->err; i++) {
		ret = t->trim ? aa_heap__trim(h, 0) : aa_heap__grow(h, 2 * MiB);
		if (ret >= 0)
			t->chunks += ret;
		else if (ret != -ENOMEM)	/* a full arena is fine */
			t->err = ret;
		t->calls++;
	}
	return NULL;
}

Test(concurrency, trim_racing_grow_keeps_every_chunk_usable)
{
	struct tg_thread t[2] = { { .cpu = 0, .trim = 0 }, { .cpu = 1, .trim = 1 } };
	pthread_barrier_t start;
	pthread_t tid[2];
	__u64 n = 0, p, chunks;
	aa_print_fn_t quiet;
	__u64 *blocks;
	int k;

	need_cpus(2);
	/* the chunks counted below are the heap's own: no self-growth */
	open_with(AA_F_NO_CACHES | AA_F_NO_SELF_GROW);
	skel->bss->aa__fault_trim_delay_ns = 200000;
	quiet = aa_set_print(NULL);	/* a full arena: hundreds of "grow failed" */
	cr_assert_eq(pthread_barrier_init(&start, NULL, 2), 0);
	for (k = 0; k < 2; k++) {
		t[k].start = &start;
		cr_assert_eq(pthread_create(&tid[k], NULL, tg_run, &t[k]), 0);
	}
	for (k = 0; k < 2; k++)
		pthread_join(tid[k], NULL);
	pthread_barrier_destroy(&start);
	skel->bss->aa__fault_trim_delay_ns = 0;
	aa_set_print(quiet);
	cr_log_info("trim vs grow: %llu grows added %llu chunks, %llu trims returned %llu",
		    (unsigned long long)t[0].calls, (unsigned long long)t[0].chunks,
		    (unsigned long long)t[1].calls, (unsigned long long)t[1].chunks);
	for (k = 0; k < 2; k++)
		cr_assert_eq(t[k].err, 0, "%s: %s", k ? "trim" : "grow", strerror(-t[k].err));
	cr_assert_gt(t[1].chunks, 0, "the trims never returned a chunk");
	t_check(h);

	/* every whole chunk the heap has must work: take each whole, write,
	 * free (a partial chunk, some of whose pages are not the heap's, is
	 * never whole) */
	chunks = t_stats(h).nr_chunks - t_partial_chunks(h);
	blocks = calloc(chunks + 1, sizeof(*blocks));
	cr_assert_not_null(blocks);
	while (n <= chunks && (p = t_malloc(h, AA_CHUNK_SIZE))) {	/* 256 pages: a chunk */
		memset(aa_heap__ptr(h, p), 0x5a, AA_CHUNK_SIZE);
		blocks[n++] = p;
	}
	cr_assert_eq(n, chunks, "%llu of %llu whole chunks could be allocated whole",
		     (unsigned long long)n, (unsigned long long)chunks);
	for (k = 0; k < (int)n; k++)
		cr_assert_eq(t_free(h, blocks[k]), 0, "free of chunk %d", k);
	free(blocks);
	cr_assert_eq(t_stats(h).err[AA_ERR_CORRUPT], 0);
	cr_assert_eq(t_stats(h).bytes_in_use, 0);
	t_check(h);
}

/* --- Stale frees racing trim and grow -------------------------------------------
 * A free finds its page's entry in the page map at an address the pointer
 * alone gives. A trim zeroes a chunk's entries before it lets the slot go
 * (the checker's code 29 holds it to that, checked right after the trim)
 * and a grow writes them only once it took the slot, so a free of a
 * pointer whose chunk was trimmed never finds a span there, however it
 * races a grow that maps the slot again: the test holds a grow inside its
 * publication of the slot (aa__fault_publish_delay_ns) and frees the stale
 * pointer from the other CPU meanwhile. Then trim/grow cycles race the
 * stale frees with no delay. Every free must be refused, and the heap
 * must pass its checker.
 */

#define SF_DELAY_NS	(300 * 1000000ULL)
#define SF_CYCLES	100

struct sf_thread {
	int cpu, cycles, err;
	volatile int done;
};

static void *sf_grow(void *arg)
{
	struct sf_thread *t = arg;
	int i, ret;

	t->err = t_pin_cpu(t->cpu);
	for (i = 0; i < t->cycles && !t->err; i++) {
		if (t->cycles > 1 && (ret = aa_heap__trim(h, 0)) < 0)
			t->err = ret;
		else if ((ret = aa_heap__grow(h, MiB)) < 0)
			t->err = ret;
	}
	t->done = 1;
	return NULL;
}

/* Free p from this thread's CPU until t is done; returns the accepted. */
static __u64 sf_free_until(struct sf_thread *t, __u64 p, __u64 *tries)
{
	struct sf_args a;
	__u64 accepted = 0;

	do {
		a = (struct sf_args){ .ptr = p, .n = 256 };
		t_run(skel->progs.sf_free, &a, sizeof(a));
		accepted += a.accepted;
		*tries += a.accepted + a.refused;
	} while (!t->done);
	return accepted;
}

Test(concurrency, stale_frees_racing_trim_and_grow_are_refused)
{
	struct sf_thread t = { .cpu = 1, .cycles = 1 };
	const struct aa_root *r;
	__u64 p, rel, tries = 0, accepted;
	__u32 slot, e;
	pthread_t tid;

	need_cpus(2);
	open_sized(0, MiB);
	r = aa_heap__root(h);
	pin(0);
	p = t_malloc(h, 64);
	cr_assert_neq(p, 0);
	rel = p - r->arena_base;
	slot = rel >> AA_CHUNK_SHIFT;
	e = *t_pm(h, rel);
	cr_assert_eq(AA_PM_KIND(e), AA_PM_SPAN, "page-map entry %#x", e);
	cr_assert_eq(t_free(h, p), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_geq(aa_heap__trim(h, 0), 1);
	cr_assert_eq(t_slot(h, slot)->state, AA_SLOT_UNMAPPED, "the trim kept slot %u", slot);
	cr_assert_eq(*t_pm(h, rel), 0, "the trim left page-map entry %#x", *t_pm(h, rel));
	t_check(h);

	skel->bss->aa__fault_publish_delay_ns = SF_DELAY_NS;
	cr_assert_eq(pthread_create(&tid, NULL, sf_grow, &t), 0);
	accepted = sf_free_until(&t, p, &tries);
	pthread_join(tid, NULL);
	skel->bss->aa__fault_publish_delay_ns = 0;
	cr_assert_eq(t.err, 0, "grow: %s", strerror(-t.err));
	cr_assert_eq(t_slot(h, slot)->state, AA_SLOT_CHUNK, "the grow did not map slot %u", slot);
	cr_log_info("stale frees during a held publication: %llu tries, %llu accepted",
		    (unsigned long long)tries, (unsigned long long)accepted);
	cr_assert_eq(accepted, 0, "%llu stale frees of %#llx were accepted while slot %u was "
		     "being published", (unsigned long long)accepted, (unsigned long long)p, slot);
	t_check(h);

	t = (struct sf_thread){ .cpu = 1, .cycles = SF_CYCLES };
	tries = 0;
	cr_assert_eq(pthread_create(&tid, NULL, sf_grow, &t), 0);
	accepted = sf_free_until(&t, p, &tries);
	pthread_join(tid, NULL);
	cr_assert_eq(t.err, 0, "trim/grow: %s", strerror(-t.err));
	cr_log_info("stale frees against %d trim/grow cycles: %llu tries, %llu accepted",
		    SF_CYCLES, (unsigned long long)tries, (unsigned long long)accepted);
	cr_assert_eq(accepted, 0, "%llu stale frees of %#llx were accepted against trim/grow",
		     (unsigned long long)accepted, (unsigned long long)p);
	t_check(h);
}

/* --- Readers of the mmap racing trim, grow and re-init ------------------------
 * dump's reader (aa_heap__chunk()) and the CPU-cache reader loop on one CPU
 * while the other trims, grows, and re-initialises the heap with and
 * without CPU caches, returning chunk metadata and cache pages. A read of
 * a returned page maps a fresh page into the arena. Afterwards every page
 * resident in the mapping must be one the heap holds: the arena globals,
 * its chunks and their metadata, its CPU caches.
 */

#define RD_CYCLES	150

struct rd_thread {
	int cpu, err;
	volatile int done;
	__u64 reads, busy;
};

static void *rd_read(void *arg)
{
	const struct aa_root *r = aa_heap__root(h);
	struct rd_thread *t = arg;
	struct aa_chunk_info c;
	__u32 s;
	int cpu, ret;

	t->err = t_pin_cpu(t->cpu);
	while (!t->done && !t->err) {
		for (s = 0; s < r->nr_slots; s++) {
			ret = aa_heap__chunk(h, s, &c);
			if (ret == -EBUSY)
				t->busy++;
			else if (ret)
				t->err = ret;
			else
				t->reads++;
		}
		for (cpu = 0; aa_heap__cpu_cache(h, cpu); cpu++)
			t->reads++;
	}
	return NULL;
}

/* Is arena page pg (from the arena's start) in [off, off + pages)? */
static bool rd_in(__u64 pg, __u32 off, __u32 pages)
{
	return off && pg >= off / AA_PAGE_SIZE && pg < off / AA_PAGE_SIZE + pages;
}

/* Is arena page pg (from the arena's start) one the heap holds at rest? */
static bool rd_held(const struct aa_root *r, __u64 pg, __u64 globals)
{
	__u32 meta = r->flags & AA_F_DEFER ? AA_META_PAGES_DEFER : AA_META_PAGES;
	__u32 s, cpu;
	__u64 off;

	if (pg < globals || t_slot(h, pg / AA_CHUNK_PAGES)->state != AA_SLOT_UNMAPPED ||
	    rd_in(pg, r->slots - r->arena_base, AA_ROOT_TABLE_PAGES(r->nr_slots)) ||
	    rd_in(pg, r->tc_off, AA_TC_TABLE_PAGES))
		return true;
	for (s = 0; s < r->nr_slots; s++) {
		off = t_slot(h, s)->meta_off / AA_PAGE_SIZE;
		if (t_slot(h, s)->state != AA_SLOT_UNMAPPED && pg >= off && pg < off + meta)
			return true;
	}
	for (cpu = 0; cpu < AA_MAX_CPUS; cpu++) {
		off = r->cpu_cache_off[cpu] / AA_PAGE_SIZE;
		if (off && pg >= off && pg < off + AA_CPU_CACHE_PAGES)
			return true;
	}
	return false;
}

Test(concurrency, readers_of_the_mmap_never_fault_returned_pages_in)
{
	struct rd_thread t = { .cpu = 1 };
	__u64 pg, pages, globals, stray = 0, trims = 0, busy = 0;
	const struct aa_root *r;
	unsigned char *vec;
	pthread_t tid;
	int i, ret;

	need_cpus(2);
	open_sized(0, 2 * MiB);
	r = aa_heap__root(h);
	pin(0);
	cr_assert_eq(pthread_create(&tid, NULL, rd_read, &t), 0);
	for (i = 0; i < RD_CYCLES && !t.err; i++) {
		if (i % 10 == 9) {
			AA_OPTS(aa_heap_opts, o, .init_bytes = 2 * MiB,
				.flags = i % 20 == 9 ? AA_F_NO_CACHES : 0);

			ret = aa_heap__reinit(h, &o);
			cr_assert(ret >= 0 || ret == -EBUSY, "re-init: %s", strerror(-ret));
			busy += ret == -EBUSY;
			continue;
		}
		ret = aa_heap__trim(h, 0);
		cr_assert(ret >= 0 || ret == -EBUSY, "trim: %s", strerror(-ret));
		trims += ret > 0 ? ret : 0;
		busy += ret == -EBUSY;
		cr_assert_geq(aa_heap__grow(h, 2 * MiB), 0);
	}
	t.done = 1;
	pthread_join(tid, NULL);
	cr_assert_eq(t.err, 0, "reader: %s", strerror(-t.err));
	cr_log_info("readers vs trim/grow/re-init: %llu reads (%llu put off), %llu chunks "
		    "trimmed, %llu returns put off by a reader", (unsigned long long)t.reads,
		    (unsigned long long)t.busy, (unsigned long long)trims,
		    (unsigned long long)busy);
	cr_assert_gt(trims, 0, "no trim returned a chunk");
	cr_assert_eq(r->magic, AA_ROOT_MAGIC, "the last re-init failed");

	pages = aa_heap__arena_size(h) / AA_PAGE_SIZE;
	globals = (sizeof(*skel->arena) + AA_PAGE_SIZE - 1) / AA_PAGE_SIZE;
	vec = calloc(pages, 1);
	cr_assert_not_null(vec);
	cr_assert_eq(mincore(aa_heap__ptr(h, r->arena_base), pages * AA_PAGE_SIZE, vec), 0,
		     "mincore: %s", strerror(errno));
	for (pg = 0; pg < pages; pg++) {
		if (!(vec[pg] & 1) || rd_held(r, pg, globals))
			continue;
		if (stray++ < 8)
			cr_log_error("page %llu (arena offset %#llx) is resident, the heap does "
				     "not hold it", (unsigned long long)pg,
				     (unsigned long long)pg * AA_PAGE_SIZE);
	}
	free(vec);
	cr_assert_eq(stray, 0, "%llu pages faulted into the arena by readers", 
		     (unsigned long long)stray);
	t_check(h);
}

/* --- Publication ---------------------------------------------------------------
 * A program may run while the heap is initialised. Whoever sees the magic
 * must see everything it guards: an observer thread on another CPU spins on
 * the root's magic through the mmap and, the moment it appears, copies what
 * a program would use next (flags, CPU count, cache key, CPU 0's cache,
 * base). Each must already have its final value. (x86 keeps stores in
 * order, so this catches program order; the atomic exchange that publishes
 * orders them on arm64 too.)
 */

#define PUB_ROUNDS	20

struct pub_seen {
	__u64 magic, base, key;
	__u32 flags, nr_cpus, cc0, pad;	/* no padding: compared with memcmp() */
};

struct pub_thread {
	const struct aa_root *root;
	struct pub_seen seen;
	int cpu, err;
};

static struct pub_seen pub_read(const struct aa_root *r)
{
	return (struct pub_seen){
		.magic = __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE),
		.base = r->arena_base, .key = r->cache_key,
		.flags = r->flags, .nr_cpus = r->nr_cpus, .cc0 = r->cpu_cache_off[0],
	};
}

static void *pub_watch(void *arg)
{
	struct pub_thread *t = arg;
	struct timespec t0, now;
	long n;

	t->err = t_pin_cpu(t->cpu);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0;; n++) {
		if (__atomic_load_n(&t->root->magic, __ATOMIC_ACQUIRE)) {
			t->seen = pub_read(t->root);
			return NULL;
		}
		if ((n & 0xffff) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > 60) {
				t->err = -ETIMEDOUT;
				return NULL;
			}
		}
	}
}

Test(concurrency, whoever_sees_the_magic_sees_the_whole_heap)
{
	const struct aa_root *root;
	struct pub_seen final;
	struct pub_thread t;
	pthread_t tid;
	int round, bad = 0;

	need_cpus(2);
	t_need_arena();
	skel = test_concurrency__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(128 * MiB)), 0);
	cr_assert_eq(test_concurrency__load(skel), 0, "load: %s", strerror(errno));
	root = &skel->arena->aa__root;
	pin(0);
	for (round = 0; round < PUB_ROUNDS; round++) {
		t = (struct pub_thread){ .root = root, .cpu = 1 };
		cr_assert_eq(__atomic_load_n(&root->magic, __ATOMIC_ACQUIRE), 0);
		cr_assert_eq(pthread_create(&tid, NULL, pub_watch, &t), 0);
		usleep(1000);	/* let it spin */
		if (!round) {	/* the first init: attach */
			AA_OPTS(aa_heap_opts, o, .init_bytes = 4 * MiB);

			h = aa_heap__attach(skel->obj, &o);
			cr_assert_not_null(h, "attach: %s", strerror(errno));
		} else {
			cr_assert_eq(aa_heap__init(h, 4 * MiB), 0);
		}
		pthread_join(tid, NULL);
		cr_assert_eq(t.err, 0, "observer: %s", strerror(-t.err));
		final = pub_read(root);
		if (memcmp(&t.seen, &final, sizeof(final))) {
			cr_log_error("round %d: at publication flags %u, nr_cpus %u, key %#llx, "
				     "CPU 0 cache %#x, base %#llx; then flags %u, nr_cpus %u, "
				     "key %#llx, CPU 0 cache %#x, base %#llx", round, t.seen.flags,
				     t.seen.nr_cpus, (unsigned long long)t.seen.key, t.seen.cc0,
				     (unsigned long long)t.seen.base, final.flags, final.nr_cpus,
				     (unsigned long long)final.key, final.cc0,
				     (unsigned long long)final.base);
			bad++;
		}
		cr_assert_geq(aa_heap__teardown(h), 0);
	}
	cr_assert_eq(bad, 0, "%d of %d publications showed a heap still being written", bad,
		     PUB_ROUNDS);
}
