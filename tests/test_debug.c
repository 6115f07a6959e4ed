// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_debug.c - debug mode (AA_F_DEBUG, bpf/debug.bpf.c) finds the memory
 * errors of tests/bpf/test_debug.bpf.c's tc programs: a write after free,
 * a one-byte overflow, a one-byte underflow, a double free; each with its
 * record (address, class, kind, CPU) in the mmap and on the ring buffer.
 * A clean workload over every call and size (classes and page runs) gets
 * no report, and the quarantine holds freed objects back from reuse.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include "common.h"
#include "test_debug.skel.h"

#define MiB		(1ULL << 20)

static struct test_debug *skel;
static struct aa_heap *h;

static void teardown(void)
{
	aa_heap__destroy(h);
	test_debug__destroy(skel);
	h = NULL;
	skel = NULL;
}

TestSuite(debug, .fini = teardown, .timeout = 300);

/* The test object with a debug heap of quarantine slots (0: none), with
 * only the library's programs (aa_*) and the test programs named in
 * `progs` (space-separated) loaded: each program verifies the allocator's
 * global functions again, which takes seconds on 6.12 under TCG. */
static void setup_heap(__u32 quarantine, __u32 flags, const char *progs)
{
	struct bpf_program *p;
	struct aa_tunables t;
	char name[64];

	t_need_arena();
	skel = test_debug__open();
	cr_assert_not_null(skel, "test_debug: %s", strerror(errno));
	bpf_object__for_each_program(p, skel->obj) {
		snprintf(name, sizeof(name), " %s ", bpf_program__name(p));
		if (strncmp(name + 1, "aa_", 3) && !strstr(progs, name))
			bpf_program__set_autoload(p, false);
	}
	cr_assert_eq(test_debug__load(skel), 0, "test_debug: %s", strerror(errno));
	cr_assert_eq(aa_tunables__default(&t), 0);
	t.quarantine = quarantine;
	AA_OPTS(aa_heap_opts, o, .init_bytes = 8 * MiB, .flags = AA_F_DEBUG | flags,
		.tunables = &t);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "aa_heap__attach: %s", strerror(errno));
}

/* The errors found so far, and the newest record of kind `kind` about
 * addr (asserts there is one). */
static __u64 errors_of(__u32 kind)
{
	return aa_heap__root(h)->debug.errors[kind];
}

static struct aa_debug_error find_record(__u32 kind, __u64 addr)
{
	struct aa_debug_error recs[AA_DEBUG_RECORDS];
	__u64 total = 0;
	int n = aa_heap__errors(h, recs, AA_DEBUG_RECORDS, &total), i;

	cr_assert_geq(n, 0);
	for (i = n - 1; i >= 0; i--)	/* the newest */
		if (recs[i].kind == kind && recs[i].addr == addr)
			return recs[i];
	cr_assert_fail("no %s record for 0x%llx among %d (%llu found)", aa_debug_kind_str(kind),
		       (unsigned long long)addr, n, (unsigned long long)total);
	return recs[0];
}

/* The next error on the ring must be this one. */
static void expect_ring(__u32 kind, __u64 addr)
{
	struct aa_debug_error e;

	cr_assert_eq(aa_heap__wait_error(h, 1000, &e), 1, "no error on the ring");
	cr_assert_eq(e.kind, kind, "ring: %s, expected %s", aa_debug_kind_str(e.kind),
		     aa_debug_kind_str(kind));
	cr_assert_eq(e.addr, addr);
}

static void print_record(const char *what, const struct aa_debug_error *r);
static void print_all(void)
{
	struct aa_debug_error recs[AA_DEBUG_RECORDS];
	int n = aa_heap__errors(h, recs, AA_DEBUG_RECORDS, NULL), i;

	for (i = 0; i < n; i++)
		print_record("record", &recs[i]);
}

static void print_record(const char *what, const struct aa_debug_error *r)
{
	cr_log_info("%s: %s at 0x%llx, class %u (%u B), asked %u, offset %d, found 0x%016llx, "
		    "cpu %u", what, aa_debug_kind_str(r->kind), (unsigned long long)r->addr,
		    r->cls, r->size, r->req, r->offset, (unsigned long long)r->found, r->cpu);
}

Test(debug, a_write_after_free_is_found_when_the_object_comes_back)
{
	struct aa_debug_error r;

	setup_heap(0, 0, " use_after_free ");
	cr_assert_eq(t_run_pkt(skel->progs.use_after_free), 0);
	cr_assert_eq(skel->bss->ret_free, 0);
	cr_assert_eq(skel->bss->victim2, skel->bss->victim, "LIFO reuse expected");
	cr_assert_eq(errors_of(AA_DBG_USE_AFTER_FREE), 1);
	r = find_record(AA_DBG_USE_AFTER_FREE, skel->bss->victim);
	print_record("use after free", &r);
	cr_assert_eq(r.offset, 16, "the write was to word 2");
	cr_assert_eq(r.found, 0x1234);
	cr_assert_eq(r.size, 56, "40 B + the 16-B tail: the 56-B class");
	cr_assert_eq(r.cls, (__u32)aa_size_class(56));
	cr_assert_lt(r.cpu, (__u32)libbpf_num_possible_cpus());
	expect_ring(AA_DBG_USE_AFTER_FREE, skel->bss->victim);
	/* nothing else was reported */
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 1);
	t_check(h);
}

Test(debug, a_one_byte_overflow_is_found_at_free)
{
	struct aa_debug_error r;
	__u32 sizes[] = { 40, 48, 100, 8000, 9000, 20000 }, i;

	setup_heap(0, 0, " overflow ");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		skel->data->req_size = sizes[i];
		cr_assert_eq(t_run_pkt(skel->progs.overflow), 0, "size %u", sizes[i]);
		cr_assert_eq(skel->bss->ret_free, 0, "the free still frees");
		cr_assert_eq(errors_of(AA_DBG_OVERFLOW), i + 1, "size %u", sizes[i]);
		r = find_record(AA_DBG_OVERFLOW, skel->bss->victim);
		print_record("overflow", &r);
		cr_assert_eq(r.offset, (int)sizes[i], "size %u: first bad byte", sizes[i]);
		cr_assert_eq(r.req, sizes[i]);
		cr_assert_eq(r.cls, sizes[i] + 16 <= 8192 ? (__u32)aa_size_class(sizes[i] + 16)
							  : AA_DEBUG_CLS_RUN);
		expect_ring(AA_DBG_OVERFLOW, skel->bss->victim);
	}
	cr_assert_eq(aa_heap__root(h)->debug.recorded, i);
	t_check(h);
}

Test(debug, a_one_byte_underflow_is_found_at_free)
{
	struct aa_debug_error r;

	setup_heap(0, 0, " underflow ");
	cr_assert_eq(t_run_pkt(skel->progs.underflow), 0);
	cr_assert_eq(skel->bss->victim - skel->bss->victim2, 56,
		     "neighbours in one span of the 56-B class (40 B + the tail)");
	cr_assert_eq(errors_of(AA_DBG_UNDERFLOW), 1);
	r = find_record(AA_DBG_UNDERFLOW, skel->bss->victim);
	print_record("underflow", &r);
	cr_assert_eq(r.offset, -8);
	/* the byte landed in the lower neighbour's trailer: its own free
	 * reports an overflow (which of the two writes it was cannot be told) */
	cr_assert_eq(errors_of(AA_DBG_OVERFLOW), 1);
	find_record(AA_DBG_OVERFLOW, skel->bss->victim2);
	t_check(h);
}

Test(debug, a_double_free_is_refused_and_recorded)
{
	setup_heap(0, 0, " double_free ");
	cr_assert_eq(t_run_pkt(skel->progs.double_free), 0);
	cr_assert_eq(skel->bss->ret_free, 0);
	cr_assert_eq(skel->bss->ret_free2, -EALREADY);
	cr_assert_eq(errors_of(AA_DBG_DOUBLE_FREE), 1);
	find_record(AA_DBG_DOUBLE_FREE, skel->bss->victim);
	cr_assert_eq(t_stats(h).err[AA_ERR_DOUBLE_FREE], 1, "counted as always too");
	t_check(h);
}

/* Keep this process on the CPU it runs on: its frees fill this CPU's
 * cache, and its allocations must empty that same cache. */
static void pin_to_this_cpu(void)
{
	cr_assert_eq(t_pin_cpu(sched_getcpu()), 0);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Allocate n objects of req bytes and keep them: no address may come
 * twice (one object, two owners). */
static void expect_no_repeats(__u64 req, int n)
{
	__u64 *p = calloc(n, sizeof(*p));
	int i;

	cr_assert_not_null(p);
	for (i = 0; i < n; i++) {
		p[i] = t_malloc(h, req);
		cr_assert_neq(p[i], 0, "allocation %d of %d", i, n);
	}
	qsort(p, n, sizeof(*p), cmp_u64);
	for (i = 1; i < n; i++)
		cr_assert_neq(p[i], p[i - 1], "0x%llx handed out twice",
			      (unsigned long long)p[i]);
	free(p);
}

Test(debug, a_double_free_after_word_0_was_overwritten_is_refused)
{
	__u32 q = 8, cls = aa_size_class(40 + AA_DEBUG_TAIL), cap;
	struct aa_debug_error r;
	__u64 p[16];
	int i;

	setup_heap(q, 0, " double_free ");
	pin_to_this_cpu();
	cap = aa_heap__root(h)->tun.cpu_cache_cap[cls];
	skel->bss->zero_word0 = 1;
	cr_assert_eq(t_run_pkt(skel->progs.double_free), 0);
	cr_assert_eq(skel->bss->ret_free, 0);
	print_all();
	/* 2q frees of the class push every entry out of quarantine into this
	 * CPU's cache; then take everything the cache and quarantine held */
	for (i = 0; i < 2 * (int)q; i++)
		cr_assert_neq(p[i] = t_malloc(h, 40), 0);
	for (i = 0; i < 2 * (int)q; i++)
		cr_assert_eq(t_free(h, p[i]), 0);
	expect_no_repeats(40, cap + 3 * q);
	cr_assert_eq(skel->bss->ret_free2, -EALREADY, "the second free was taken: %d",
		     skel->bss->ret_free2);
	find_record(AA_DBG_DOUBLE_FREE, skel->bss->victim);
	cr_assert_eq(errors_of(AA_DBG_OVERFLOW), 0, "the trailer is poison, not overwritten");
	/* and the write over word 0, when the object left quarantine */
	r = find_record(AA_DBG_USE_AFTER_FREE, skel->bss->victim);
	cr_assert_eq(r.offset, 0);
	cr_assert_eq(r.found, 0);
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 2);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).live_allocs, cap + 3 * q, "only what the test holds");
	t_check(h);
}

Test(debug, the_userspace_api_refuses_a_free_after_word_0_was_overwritten)
{
	__u64 p;

	setup_heap(AA_QUARANTINE_DEFAULT, 0, "  ");
	p = aa_heap__malloc(h, 64);
	cr_assert_neq(p, 0);
	cr_assert_eq(aa_heap__free(h, p), 0);
	*(volatile __u64 *)aa_heap__ptr(h, p) = 0;	/* through the mmap */
	cr_assert_eq(aa_heap__free(h, p), -EALREADY);
	find_record(AA_DBG_DOUBLE_FREE, p);
	cr_assert_eq(errors_of(AA_DBG_OVERFLOW), 0);
	cr_assert_geq(aa_heap__drain(h), 0);
	find_record(AA_DBG_USE_AFTER_FREE, p);	/* word 0, found at the drain */
	cr_assert_eq(t_stats(h).live_allocs, 0, "one custody: the drain gave it back");
	t_check(h);
}

Test(debug, a_clean_workload_gets_no_report)
{
	struct aa_stats st;
	int i;

	setup_heap(AA_QUARANTINE_DEFAULT, 0, " clean ");
	for (i = 0; i < 3000; i++)
		cr_assert_eq(t_run_pkt(skel->progs.clean), 0);
	cr_assert_eq(skel->bss->steps, 3000);
	cr_assert_eq(skel->bss->nulls, 0);
	cr_assert_eq(skel->bss->bad_frees, 0);
	cr_assert_eq(skel->bss->usable_wrong, 0, "usable size is the size asked for");
	cr_assert_eq(skel->bss->not_zero, 0, "calloc zeroes");
	print_all();
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 0, "a clean program got %llu reports",
		     (unsigned long long)aa_heap__root(h)->debug.recorded);
	cr_assert_gt(aa_heap__root(h)->debug.q_objs, 0, "the quarantine holds objects");
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(aa_heap__root(h)->debug.q_objs, 0, "drain empties the quarantine");
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 0);
	st = t_stats(h);
	cr_assert_eq(st.live_allocs, 0, "%llu live after drain", (unsigned long long)st.live_allocs);
	t_check(h);
}

/*
 * A span is carved under the heap lock with a few stores per object, not
 * a fill of its pages (struct aa_span_obj, bpf/internal.h): over pages a
 * user left dirty (page runs written and freed), objects of every span
 * size are handed out with their old bytes and no report, and frees that
 * reach a never-allocated neighbour (a cache hands out the highest
 * address of a refill first) find its poisoned last word.
 */
#define DC_RUNS		48
#define DC_RUN_BYTES	(64 << 10)
#define DC_DIRTY	0x5a5a5a5a5a5a5a5aULL

Test(debug, spans_carved_over_dirty_pages_are_not_filled_and_get_no_report)
{
	static const __u64 sizes[] = { 40, 200, 1000, 3000, 7000 };
	__u64 run[DC_RUNS], obj[512], dirty = 0, objs = 0, spans0 = 0, spans1 = 0;
	const struct aa_root *r;
	unsigned int s, i, n;
	__u64 *w;

	setup_heap(0, 0, "");
	pin_to_this_cpu();
	r = aa_heap__root(h);
	for (i = 0; i < DC_RUNS; i++) {
		run[i] = t_malloc(h, DC_RUN_BYTES);
		cr_assert_neq(run[i], 0);
		memset(aa_heap__ptr(h, run[i]), 0x5a, DC_RUN_BYTES);
	}
	for (i = 0; i < DC_RUNS; i++)
		cr_assert_eq(aa_heap__free(h, run[i]), 0);
	for (i = 0; i < AA_NR_CLASSES; i++)
		spans0 += r->central[i].span_allocs;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		n = (DC_RUNS * DC_RUN_BYTES / 8) / sizes[s];
		n = n < 512 ? n : 512;
		for (i = 0; i < n; i++) {
			obj[i] = t_malloc(h, sizes[s]);
			cr_assert_neq(obj[i], 0, "%llu B, object %u", (unsigned long long)sizes[s], i);
			w = aa_heap__ptr(h, obj[i]);
			dirty += w[2] == DC_DIRTY;
			objs++;
			memset(w, 0xa5, sizes[s]);
		}
		for (i = 1; i < n; i += 2)	/* odd ones first: neighbours still out */
			cr_assert_eq(aa_heap__free(h, obj[i]), 0);
		for (i = 0; i < n; i += 2)
			cr_assert_eq(aa_heap__free(h, obj[i]), 0);
	}
	for (i = 0; i < AA_NR_CLASSES; i++)
		spans1 += r->central[i].span_allocs;
	cr_log_info("%llu spans carved, %llu objects, %llu of them handed out dirty",
		    (unsigned long long)(spans1 - spans0), (unsigned long long)objs,
		    (unsigned long long)dirty);
	print_all();
	cr_assert_eq(r->debug.recorded, 0, "a clean program got %llu reports",
		     (unsigned long long)r->debug.recorded);
	cr_assert_gt(dirty, 0, "no object kept its old bytes: spans were filled when carved");
	t_check(h);
}

Test(debug, the_quarantine_delays_reuse_and_finds_writes_made_there)
{
	__u64 first, p;
	int i;

	setup_heap(8, 0, " use_after_free ");
	cr_assert_eq(t_run_pkt(skel->progs.use_after_free), 0);
	first = skel->bss->victim;
	cr_assert_neq(skel->bss->victim2, first, "quarantined: not handed out again");
	cr_assert_eq(errors_of(AA_DBG_USE_AFTER_FREE), 0, "not found yet");
	/* 8 more frees of the class push it out of quarantine: found there */
	for (i = 0; i < 8; i++) {
		p = t_malloc(h, 40);
		cr_assert_neq(p, 0);
		cr_assert_eq(t_free(h, p), 0);
	}
	cr_assert_eq(errors_of(AA_DBG_USE_AFTER_FREE), 1);
	find_record(AA_DBG_USE_AFTER_FREE, first);
	t_check(h);
}

/* The quarantine tunable is read where used (the root, writable through
 * the mmap): lowered while the quarantine is full, the slots above the new
 * value keep their objects, and a drain still releases every one. */
Test(debug, lowering_the_quarantine_strands_nothing)
{
	struct aa_root *r;
	struct aa_stats st;
	__u64 p[16];
	int i;

	setup_heap(16, 0, "");
	r = (struct aa_root *)aa_heap__root(h);
	for (i = 0; i < 16; i++)
		cr_assert_neq(p[i] = t_malloc(h, 64), 0);
	for (i = 0; i < 16; i++)
		cr_assert_eq(t_free(h, p[i]), 0);
	cr_assert_eq(r->debug.q_objs, 16, "the quarantine holds every free");
	r->tun.quarantine = 2;
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(r->debug.q_objs, 0, "%llu objects stayed in quarantine",
		     (unsigned long long)r->debug.q_objs);
	for (i = 0; i < AA_QUARANTINE_MAX; i++)
		cr_assert_eq(r->debug.quarantine[i], 0, "slot %d still holds an object", i);
	st = t_stats(h);
	cr_assert_eq(st.live_allocs, 0);
	cr_assert_eq(st.heap_live, 0, "%llu objects the heap still counts as out",
		     (unsigned long long)st.heap_live);
	t_check(h);
}

Test(debug, the_inline_api_takes_the_checked_path)
{
	struct aa_stats st;

	/* the inline hit path in users' programs never sees a cache in debug
	 * mode: a tc program's malloc/free still get the tail and poison */
	setup_heap(0, 0, " overflow ");
	cr_assert_eq(t_run_pkt(skel->progs.overflow), 0);
	cr_assert_eq(errors_of(AA_DBG_OVERFLOW), 1);
	st = t_stats(h);
	cr_assert_eq(st.bytes_in_use, 0);
	/* while the caches stay on: the freed object sits in this CPU's cache */
	cr_assert_gt(aa_heap__cached_bytes(h, NULL), 0, "caches stay on in debug mode");
}

Test(debug, bad_tunables_are_refused)
{
	struct aa_tunables t;

	cr_assert_eq(aa_tunables__default(&t), 0);
	cr_assert_eq(t.quarantine, AA_QUARANTINE_DEFAULT);
	t.quarantine = AA_QUARANTINE_MAX + 1;
	cr_assert_eq(aa_tunables__validate(&t), -EINVAL);
	setenv("ARENA_ALLOC_QUARANTINE", "5000", 1);
	cr_assert_eq(aa_tunables__default(&t), -ERANGE);
	setenv("ARENA_ALLOC_QUARANTINE", "12", 1);
	cr_assert_eq(aa_tunables__default(&t), 0);
	cr_assert_eq(t.quarantine, 12);
	unsetenv("ARENA_ALLOC_QUARANTINE");
}

/* Run `arena-alloc ARGS` (stderr too); its output into out. Returns its
 * exit status. */
static int run_cli(char *out, size_t sz, const char *args)
{
	char cli[4200], cmd[8400];

	t_cli_path(cli, sizeof(cli));
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", cli, args);
	return t_read_cmd(cmd, out, sz);
}

Test(debug, arena_alloc_errors_reports_what_a_program_did)
{
	char args[128], out[16384], addr[2][32];

	setup_heap(0, 0, " use_after_free overflow double_free ");
	cr_assert_eq(t_run_pkt(skel->progs.use_after_free), 0);
	snprintf(addr[0], sizeof(addr[0]), "0x%012llx", (unsigned long long)skel->bss->victim);
	skel->data->req_size = 100;
	cr_assert_eq(t_run_pkt(skel->progs.overflow), 0);
	snprintf(addr[1], sizeof(addr[1]), "0x%012llx", (unsigned long long)skel->bss->victim);
	/* this process holds the heap: the CLI finds it by pid */
	snprintf(args, sizeof(args), "--pid %d errors", getpid());
	cr_assert_eq(run_cli(out, sizeof(out), args), 0, "%s", out);
	cr_log_info("arena-alloc %s:\n%s", args, out);
	cr_assert(strstr(out, "debug mode: 2 errors found (use-after-free 1, overflow 1,"), "%s", out);
	cr_assert(strstr(out, addr[0]) && strstr(out, addr[1]), "%s", out);
	cr_assert(strstr(out, "use-after-free") && strstr(out, " overflow "), "%s", out);
	snprintf(args, sizeof(args), "--pid %d stats", getpid());
	cr_assert_eq(run_cli(out, sizeof(out), args), 0, "%s", out);
	cr_assert(strstr(out, "debug mode: 2 errors found"), "stats shows them: %s", out);
	/* the ring, from another process: one more error while it follows
	 * (it prints those the ring still holds first) */
	{
		char cli[4200], cmd[8400];
		FILE *p;
		size_t len;

		t_cli_path(cli, sizeof(cli));
		snprintf(cmd, sizeof(cmd), "%s --pid %d -j errors --follow 2", cli, getpid());
		p = popen(cmd, "r");
		cr_assert_not_null(p);
		usleep(500000);		/* it opened the ring */
		cr_assert_eq(t_run_pkt(skel->progs.double_free), 0);
		len = fread(out, 1, sizeof(out) - 1, p);
		out[len] = 0;
		cr_assert_eq(pclose(p), 0);
	}
	cr_log_info("--follow:\n%s", out);
	cr_assert(strstr(out, "\"seq\":1,\"kind\":\"use-after-free\""), "%s", out);
	cr_assert(strstr(out, "\"seq\":2,\"kind\":\"overflow\""), "%s", out);
	cr_assert(strstr(out, "\"seq\":3,\"kind\":\"double-free\""), "%s", out);
}

/* --- No false reports under concurrency ------------------------------------ */

#define XT_PER_CPU	3
#define XT_RUNS		4000
#define XT_IRQ_NS	100000	/* 10 kHz per CPU */

static void *exchange_thread(void *arg)
{
	int cpu = (long)arg, i;
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = 10);

	t_pin_cpu(cpu);
	for (i = 0; i < XT_RUNS / 10; i++)
		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.exchange), &o))
			return (void *)1L;
	return NULL;
}

Test(debug, no_false_reports_with_every_cpu_and_hard_irq)
{
	int ncpu = libbpf_num_possible_cpus(), online = sysconf(_SC_NPROCESSORS_ONLN);
	struct bpf_link *links[64] = {};
	pthread_t th[64 * XT_PER_CPU];
	int nth = 0, c, i, fd, nlinks = 0;
	void *ret;

	setup_heap(AA_QUARANTINE_DEFAULT, 0, " exchange exchange_irq drain_slots ");
	for (c = 0; c < online && c < 64; c++) {
		fd = t_open_cpu_clock(c, XT_IRQ_NS);
		if (fd < 0)
			continue;
		links[nlinks] = bpf_program__attach_perf_event(skel->progs.exchange_irq, fd);
		if (links[nlinks])
			nlinks++;
		else
			close(fd);
	}
	cr_assert_gt(nlinks, 0, "no perf_event program attached");
	for (c = 0; c < online && c < 64; c++)
		for (i = 0; i < XT_PER_CPU; i++)
			cr_assert_eq(pthread_create(&th[nth++], NULL, exchange_thread, (void *)(long)c), 0);
	for (i = 0; i < nth; i++) {
		cr_assert_eq(pthread_join(th[i], &ret), 0);
		cr_assert_null(ret, "a test run failed");
	}
	for (i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	cr_assert_eq(t_run(skel->progs.drain_slots, NULL, 0), 0);
	cr_log_info("%llu exchanges (%d threads, %d CPUs of %d, IRQ programs on %d), %llu bad",
		    (unsigned long long)skel->bss->x_ops, nth, online, ncpu, nlinks,
		    (unsigned long long)skel->bss->x_bad);
	cr_assert_gt(skel->bss->x_ops, (__u64)nth * XT_RUNS - 1, "every task run exchanged");
	cr_assert_eq(skel->bss->x_bad, 0, "objects kept their size and contents");
	print_all();
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 0, "false reports");
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_stats(h).live_allocs, 0);
	t_check(h);
}

/* --- With the other flags ---------------------------------------------------- */

Test(debug, caches_off_finds_the_same_errors)
{
	setup_heap(0, AA_F_NO_CACHES, " use_after_free overflow ");
	cr_assert_eq(t_run_pkt(skel->progs.use_after_free), 0);
	cr_assert_eq(skel->bss->victim2, skel->bss->victim, "the span hands it out again");
	find_record(AA_DBG_USE_AFTER_FREE, skel->bss->victim);
	cr_assert_eq(t_run_pkt(skel->progs.overflow), 0);
	find_record(AA_DBG_OVERFLOW, skel->bss->victim);
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 2);
	cr_assert_eq(t_stats(h).live_allocs, 0);
	t_check(h);
}

Test(debug, deferred_frees_are_checked_and_poisoned_at_reclaim)
{
	__u64 p[64];
	__u8 *bytes;
	int i;

	setup_heap(0, AA_F_DEFER, "  ");
	for (i = 0; i < 64; i++) {
		p[i] = t_malloc(h, 24 + i * 40);
		cr_assert_neq(p[i], 0);
		memset(aa_heap__ptr(h, p[i]), 0x5a, 24 + i * 40);	/* all it asked for */
		cr_assert_eq(t_usable(h, p[i]), 24 + i * 40);
	}
	bytes = aa_heap__ptr(h, p[7]);
	bytes[24 + 7 * 40] = 1;		/* one overflow among them */
	for (i = 0; i < 64; i++)
		cr_assert_eq(aa_heap__free_deferred(h, p[i]), 0);
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 0, "limbo leaves objects alone");
	cr_assert_geq(aa_heap__reclaim(h), 0);
	cr_assert_eq(aa_heap__root(h)->defer.pending_objs, 0);
	cr_assert_eq(aa_heap__root(h)->debug.recorded, 1, "the overflow, found at reclaim");
	find_record(AA_DBG_OVERFLOW, p[7]);
	cr_assert_geq(aa_heap__drain(h), 0);
	cr_assert_eq(t_assert_stats(h, "drained").live_allocs, 0);
	cr_assert_eq(t_stats(h).heap_live, 0, "the limbo's spare nodes went back too");
	t_check(h);
}
