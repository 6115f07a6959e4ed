/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * common.h - helpers shared by the Criterion test files.
 *
 * Every test runs real BPF programs on the running kernel. Where this
 * process cannot create BPF arena maps the test is skipped with
 * aa_probe_arena()'s reason instead of failing.
 */
#ifndef __AA_TESTS_COMMON_H
#define __AA_TESTS_COMMON_H

#include <criterion/criterion.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc_internal.h"

/* libbpf prints the whole verifier log when a load fails (megabytes on
 * 6.12, in one message): keep its head and its tail ("processed N insns"). */
static int t_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg;
	va_list ap2;
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0 || !(msg = malloc(n + 1)))
		return -1;
	vsnprintf(msg, n + 1, fmt, ap);
	if (n > 16384)
		fprintf(stderr, "%.8192s\n... (%d bytes cut by tests/common.h) ...\n%s",
			msg, n - 12288, msg + n - 4096);
	else
		fputs(msg, stderr);
	free(msg);
	return n;
}

__attribute__((constructor)) static void t_quiet_libbpf(void)
{
	libbpf_set_print(t_libbpf_print);
}

/* Whether this process can create BPF arena maps (aa_probe_arena()). */
static inline bool t_have_arena(void)
{
	return aa_probe_arena(NULL, 0) == 0;
}

/* Skip the test, with aa_probe_arena()'s line as the reason, when this
 * process cannot create BPF arena maps: an old kernel, missing
 * capabilities, a policy of the host, a CPU without cmpxchg16b. */
static inline void t_need_arena(void)
{
	char why[AA_PROBE_LINE_SZ];

	if (aa_probe_arena(why, sizeof(why)))
		cr_skip_test("%s", why);
}

/* The running kernel's major version (uname). */
static inline int t_kernel_major(void)
{
	struct utsname u;

	cr_assert_eq(uname(&u), 0);
	return atoi(u.release);
}

/* An arena of `bytes` in the kernel's pages (the build's AA_PAGE_SIZE). */
#define T_PAGES(bytes)	((__u32)((bytes) / AA_PAGE_SIZE))

/* Open the library's own heap; skip the test when this process cannot
 * create an arena. flags: AA_F_NO_CACHES tests the buddy alone. */
static inline struct aa_heap *t_open_flags(__u32 arena_pages, __u64 init_bytes, __u32 flags)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = arena_pages, .init_bytes = init_bytes,
		.flags = flags);
	struct aa_heap *h;

	t_need_arena();
	h = aa_heap__open(&o);
	cr_assert_not_null(h, "aa_heap__open: %s", strerror(errno));
	return h;
}

/* The buddy tier alone, at the size it was given (no self-growth on any
 * kernel): exact accounting, LIFO reuse of blocks, exhaustion. */
static inline struct aa_heap *t_open(__u32 arena_pages, __u64 init_bytes)
{
	return t_open_flags(arena_pages, init_bytes, AA_F_NO_CACHES | AA_F_NO_SELF_GROW);
}

/* build/arena-alloc: the CLI is built next to this test binary (build/
 * or the OUTPUT dir). */
static inline void t_cli_path(char *buf, size_t sz)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	cr_assert_gt(n, 0);
	self[n] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, sz, "%s/arena-alloc", self);
	cr_assert_eq(access(buf, X_OK), 0, "%s: not built", buf);
}

/* Run cmd (popen(), sh -c); its stdout into out (up to sz - 1 bytes, the
 * rest read and dropped; out may be NULL). Returns its exit status (128:
 * killed by a signal). */
static inline int t_read_cmd(const char *cmd, char *out, size_t sz)
{
	FILE *p = popen(cmd, "r");
	size_t len;
	int st;

	cr_assert_not_null(p, "popen %s: %s", cmd, strerror(errno));
	if (out) {
		len = fread(out, 1, sz - 1, p);
		out[len] = 0;
	}
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* One allocator call through the aa__run program; asserts the program ran. */
static inline struct aa_op_args t_call(struct aa_heap *h, __u32 op, __u64 size,
				       __u64 arg, __u64 ptr, __u32 n)
{
	struct aa_op_args a = { .op = op, .size = size, .arg = arg, .ptr = ptr, .n = n };

	cr_assert_eq(aa_heap__call(h, &a), 0, "aa__run did not run: %s", strerror(errno));
	return a;
}

static inline __u64 t_malloc(struct aa_heap *h, __u64 size)
{
	return t_call(h, AA_OP_MALLOC, size, 0, 0, 0).ptr;
}

static inline int t_free(struct aa_heap *h, __u64 p)
{
	return (int)t_call(h, AA_OP_FREE, 0, 0, p, 0).ret;
}

static inline __u64 t_usable(struct aa_heap *h, __u64 p)
{
	return t_call(h, AA_OP_USABLE, 0, 0, p, 0).size;
}

static inline struct aa_stats t_stats(struct aa_heap *h)
{
	struct aa_stats st;

	cr_assert_eq(aa_heap__stats(h, &st), 0);
	return st;
}

/* The equations of struct aa_stats (aa_shared.h) on h's counters, each
 * exact, none with a term that corrects another. At rest (no call
 * running) and with no teardown since the heap's init (a teardown drops
 * live objects uncounted); the bytes one without parked frees (their
 * bytes are not counted apart). Returns the stats. */
static inline struct aa_stats t_assert_stats(struct aa_heap *h, const char *when)
{
	struct aa_stats st = t_stats(h);
	__u64 held = st.cached_objs + st.quarantined_objs + st.limbo_objs + st.limbo_nodes +
		     st.parked_objs;

	cr_assert_eq(st.nr_allocs - st.nr_frees, st.live_allocs,
		     "%s: calls: nr_allocs %llu - nr_frees %llu != live_allocs %llu", when,
		     (unsigned long long)st.nr_allocs, (unsigned long long)st.nr_frees,
		     (unsigned long long)st.live_allocs);
	cr_assert_eq(st.heap_allocs - st.heap_frees, st.heap_live,
		     "%s: heap: heap_allocs %llu - heap_frees %llu != heap_live %llu", when,
		     (unsigned long long)st.heap_allocs, (unsigned long long)st.heap_frees,
		     (unsigned long long)st.heap_live);
	cr_assert_eq(st.heap_live, st.live_allocs + held,
		     "%s: heap_live %llu != live_allocs %llu + held %llu (cached %llu, "
		     "quarantined %llu, limbo %llu, limbo nodes %llu, parked %llu)", when,
		     (unsigned long long)st.heap_live, (unsigned long long)st.live_allocs,
		     (unsigned long long)held, (unsigned long long)st.cached_objs,
		     (unsigned long long)st.quarantined_objs, (unsigned long long)st.limbo_objs,
		     (unsigned long long)st.limbo_nodes, (unsigned long long)st.parked_objs);
	if (!st.parked_objs)
		cr_assert_eq(st.heap_bytes, st.bytes_in_use + st.cached_bytes +
			     st.quarantined_bytes + st.limbo_bytes + st.limbo_node_bytes,
			     "%s: heap_bytes %llu != bytes_in_use %llu + cached %llu + quarantined "
			     "%llu + limbo %llu + limbo nodes %llu", when,
			     (unsigned long long)st.heap_bytes, (unsigned long long)st.bytes_in_use,
			     (unsigned long long)st.cached_bytes,
			     (unsigned long long)st.quarantined_bytes,
			     (unsigned long long)st.limbo_bytes,
			     (unsigned long long)st.limbo_node_bytes);
	cr_assert_geq(st.limbo_nodes, st.limbo_objs, "%s: %llu objects in limbo, %llu nodes",
		      when, (unsigned long long)st.limbo_objs, (unsigned long long)st.limbo_nodes);
	return st;
}

/* Allocations the programs hold (the heap's view also counts cached
 * objects: heap_live). */
static inline __u64 t_user_live(struct aa_heap *h)
{
	return t_stats(h).live_allocs;
}

/* CPU cpu's cache in the mmap, for tests that write it (aa_heap__cpu_cache()
 * returns a copy). */
static inline struct aa_cpu_cache *t_cpu_cache_mmap(struct aa_heap *h, int cpu)
{
	const struct aa_root *r = aa_heap__root(h);

	cr_assert(cpu < (int)r->nr_cpus && r->cpu_cache_off[cpu], "CPU %d has no cache", cpu);
	return aa_heap__ptr(h, r->arena_base + r->cpu_cache_off[cpu]);
}

/* A program inside an allocator call holds its CPU cache's claim: write
 * that claim (v: AA_CC_OWNER, AA_CC_FREE, ...) through the mmap, as a
 * preempted owner would leave it. */
static inline void t_set_claim(struct aa_heap *h, int cpu, __u32 v)
{
	*(volatile __u32 *)&t_cpu_cache_mmap(h, cpu)->busy = v;
}

/* User cache idx in the mmap, for tests that write it (aa_heap__user_cache()
 * returns a copy). */
static inline struct aa_cpu_cache *t_user_cache_mmap(struct aa_heap *h, int idx)
{
	const struct aa_root *r = aa_heap__root(h);

	cr_assert(idx >= 0 && idx < AA_MAX_USER_CACHES && r->user.off[idx],
		  "no user cache %d", idx);
	return aa_heap__ptr(h, r->arena_base + r->user.off[idx]);
}

/* The heap of h, opened again in a forked child from its arena map (fd)
 * mapped at start (read in the parent):
 * a child inherits the arena's mapping but cannot fault its pages in
 * (SIGSEGV), so the parent's handle reads nothing there; unmapped, the
 * range takes the child's own mapping (the kernel maps an arena at one
 * address in every process), where the parent's handle reads again too.
 * Exits the child (3, 4, 5) when it cannot. */
static inline struct aa_heap *t_child_heap(struct aa_heap *h, int arena_fd, void *start)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi);
	struct aa_heap *c;

	if (bpf_map_get_info_by_fd(arena_fd, &mi, &len))
		_exit(3);
	if (munmap(start, aa_heap__arena_size(h)))	/* h's fields: not the mmap */
		_exit(5);
	c = aa_heap__open_map_id(mi.id);
	if (!c)
		_exit(4);
	return c;
}

/* The pages a heap holds from the kernel at rest, by the page ledger of
 * bpf/arena.bpf.c: its chunks' and their metadata's (pages_mapped), the
 * CPU and user caches', the root's tables'. Without the tables'. */
static inline __u64 t_cache_pages(const struct aa_root *r)
{
	__u64 n = 0;
	int i;

	for (i = 0; i < AA_MAX_CPUS; i++)
		n += r->cpu_cache_off[i] ? AA_CPU_CACHE_PAGES : 0;
	for (i = 0; i < AA_MAX_USER_CACHES; i++)
		n += r->user.off[i] ? AA_CPU_CACHE_PAGES : 0;
	return n;
}

/* The ledger at rest: pages got less pages put == what r accounts for. */
static inline void t_assert_ledger(const struct aa_root *r, const char *when)
{
	__u64 held = r->fault.pages_got - r->fault.pages_put, caches = t_cache_pages(r);

	cr_assert_eq(held, r->stats.pages_mapped + caches + r->table_pages,
		     "%s: the heap holds %llu pages from the kernel, accounts for %llu mapped + "
		     "%llu in CPU and user caches + %u of the root's tables", when,
		     (unsigned long long)held, (unsigned long long)r->stats.pages_mapped,
		     (unsigned long long)caches, r->table_pages);
}

/* Slot s's entry in h's slot table, which must exist. */
static inline const struct aa_slot *t_slot(struct aa_heap *h, __u32 s)
{
	const struct aa_slot *e = aa_heap__slot(h, s);

	cr_assert_not_null(e, "slot %u: %s", s, strerror(errno));
	return e;
}

/* The page-map entry of arena offset rel in the mmap (aa_shared.h). */
static inline __u32 *t_pm(struct aa_heap *h, __u64 rel)
{
	const struct aa_root *r = aa_heap__root(h);
	__u32 *pm;

	cr_assert_lt(rel, r->arena_size, "arena offset %#llx", (unsigned long long)rel);
	pm = aa_heap__ptr(h, r->pm);
	cr_assert_not_null(pm, "no page map");
	return &pm[rel >> AA_PAGE_SHIFT];
}

/* Class c's transfer cache, which must exist (a heap with CPU caches). */
static inline const struct aa_transfer_cache *t_tc(struct aa_heap *h, int c)
{
	const struct aa_transfer_cache *t = aa_heap__transfer_cache(h, c);

	cr_assert_not_null(t, "class %d's transfer cache: %s", c, strerror(errno));
	return t;
}

/* The pages of slot s of h that are not the heap's ('x' in its map): a
 * partial chunk's absent pages, 0 for any other slot. */
static inline __u32 t_absent_pages(struct aa_heap *h, __u32 s)
{
	struct aa_chunk_info c;
	__u32 p, n = 0;

	cr_assert_eq(aa_heap__chunk(h, s, &c), 0);
	for (p = 0; p < AA_CHUNK_PAGES; p++)
		n += c.map[p] == 'x';
	return n;
}

/* Chunks of h that are partial (some page 'x': not the heap's). */
static inline __u32 t_partial_chunks(struct aa_heap *h)
{
	const struct aa_root *r = aa_heap__root(h);
	__u32 s, n = 0;

	for (s = 0; s < r->nr_slots; s++)
		n += t_absent_pages(h, s) > 0;
	return n;
}

static inline void t_check(struct aa_heap *h)
{
	cr_assert_eq(aa_heap__check(h), 0, "heap validity check failed");
}

/* Run a packet program (tc, xdp) once on a 64-byte zero packet; asserts it
 * ran, returns its retval. */
static inline int t_run_pkt(struct bpf_program *prog)
{
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt));

	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(prog), &o), 0,
		     "test run of %s: %s", bpf_program__name(prog), strerror(errno));
	return (int)o.retval;
}

/* Pin the calling thread to cpu: 0 or -errno. No assertion, so that
 * threads can call it; the raw system call, whose mask needs no
 * _GNU_SOURCE. */
static inline int t_pin_cpu(int cpu)
{
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {};

	if (cpu < 0 || cpu >= 1024)
		return -EINVAL;
	mask[cpu / (8 * sizeof(unsigned long))] |= 1UL << (cpu % (8 * sizeof(unsigned long)));
	return syscall(__NR_sched_setaffinity, 0, sizeof(mask), mask) ? -errno : 0;
}

/* Run a SEC("syscall") program of any object; returns its retval. */
static inline int t_run(struct bpf_program *prog, void *ctx, size_t ctx_sz)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = ctx_sz);

	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(prog), &o), 0,
		     "test run of %s: %s", bpf_program__name(prog), strerror(errno));
	return (int)o.retval;
}

/* A numeric environment knob (decimal, 0x.. or 0..), def when unset or
 * empty; anything else fails the test. */
static inline __u64 t_env_u64(const char *name, __u64 def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	cr_assert(!errno && !*end, "%s='%s' is not a number", name, s);
	return v;
}

/* A CPU-clock perf event on cpu firing every period_ns: an hrtimer, so a
 * perf_event program attached to it runs in hard-IRQ context. */
static inline int t_open_cpu_clock(int cpu, __u64 period_ns)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period_ns,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

#endif
