// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cli_heap.c - the arena-alloc CLI's heap commands, run as the real
 * binary on a heap pinned in a test directory: load -> grow -> a workload
 * (the pinned aa__run program, through aa_heap__open_pinned) -> stats
 * --json, parsed with jansson and checked against the workload -> dump
 * --json, checked against stats -> check ->
 * drain -> trim -> unload; and bad input, each with its message and exit
 * status.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli_run.h"
#include "spawn.h"

TestSuite(cli_heap, .init = cli_setup, .fini = cli_teardown);

#define N_OBJS	100

/* dump --json, read while nothing runs, must add up to what stats said. */
static void dump_agrees_with_stats(json_t *heap)
{
	json_t *d = run_json("dump"), *chunks = json_object_get(d, "chunks"), *c, *fb;
	json_int_t free_pages = 0, span = 0, from_stats = 0, n = 0;
	size_t i, k;

	cr_assert(json_is_array(chunks));
	json_array_foreach(chunks, i, c) {
		if (strcmp(json_string_value(json_object_get(c, "state")), "chunk"))
			continue;
		n++;
		free_pages += jint(c, "free_pages");
		span += jint(c, "span_pages");
		cr_assert_eq(jint(c, "free_pages") + jint(c, "span_pages") + jint(c, "run_pages"),
			     AA_CHUNK_PAGES);
		cr_assert_eq(strlen(json_string_value(json_object_get(c, "map"))), AA_CHUNK_PAGES);
	}
	fb = json_object_get(heap, "free_blocks");
	json_array_foreach(fb, k, c)
		from_stats += json_integer_value(c) << k;
	cr_assert_eq(n, jint(heap, "chunks") - jint(heap, "large_chunks"));
	cr_assert_eq(free_pages, from_stats, "dump: %lld free pages, stats: %lld",
		     (long long)free_pages, (long long)from_stats);
	cr_assert_eq(free_pages, jint(d, "free_pages"));
	cr_assert_eq(span, jint(heap, "span_pages"));
	cr_assert_gt(span, 0, "the workload's objects live in spans");
	json_decref(d);
}

Test(cli_heap, load_grow_work_stats_check_drain_trim_unload)
{
	char out[4096], path[128];
	__u64 objs[N_OBJS];
	json_t *j, *heap, *rows, *row;
	json_int_t allocs = 0;
	struct aa_heap *h;
	struct stat st;
	size_t i;

	cr_assert_eq(run(out, sizeof(out), true, "load --arena-mb 64 --init 2M"), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/arena", pin);
	cr_assert_eq(stat(path, &st), 0, "load pinned no arena at %s", path);

	j = run_json("grow --bytes 8M");
	cr_assert_eq(jint(j, "chunks_added"), 8);
	cr_assert_eq(jint(j, "chunks"), 10);
	json_decref(j);

	/* the workload: N_OBJS allocations of 64 B by this thread, through
	 * its user cache (refilled by the pinned aa__run's user calls) */
	h = aa_heap__open_pinned(pin);
	cr_assert_not_null(h, "aa_heap__open_pinned: %s", strerror(errno));
	for (i = 0; i < N_OBJS; i++)
		cr_assert_neq(objs[i] = aa_heap__malloc(h, 64), 0);

	j = run_json("stats");
	heap = json_object_get(j, "heap");
	cr_assert_eq(jint(j, "layout"), AA_LAYOUT_VERSION);
	cr_assert_eq(jint(j, "arena_bytes"), 64 << 20);
	cr_assert_eq(jint(heap, "live_allocs"), N_OBJS, "the allocations the workload holds");
	cr_assert_eq(jint(heap, "heap_live_objects"), N_OBJS + jint(heap, "cached_objects"));
	cr_assert_eq(jint(heap, "allocs"), jint(heap, "live_allocs") + jint(heap, "frees"));
	cr_assert_eq(jint(json_object_get(j, "errors"), "nomem"), 0);
	rows = json_object_get(j, "user_caches");
	cr_assert(json_is_array(rows));
	json_array_foreach(rows, i, row)
		if (jint(row, "size") == 64 && jint(row, "owner_pid") == getpid())
			allocs += jint(row, "allocs");
	cr_assert_eq(allocs, N_OBJS, "this thread's user cache served %lld of the 64-B "
		     "allocations", (long long)allocs);
	dump_agrees_with_stats(heap);
	json_decref(j);

	cr_assert_eq(run(out, sizeof(out), true, "check"), 0, "%s", out);
	cr_assert(strstr(out, "check: ok"), "%s", out);
	for (i = 0; i < N_OBJS; i++)
		cr_assert_eq(aa_heap__free(h, objs[i]), 0);

	/* another process drains this thread's cache (it is not inside a call) */
	j = run_json("drain");
	cr_assert_geq(jint(j, "objects_flushed"), 1, "the frees sat in this thread's user cache");
	cr_assert_eq(jint(j, "bytes_in_use"), 0);
	json_decref(j);
	aa_heap__destroy(h);
	j = run_json("trim --keep 1M");
	cr_assert_eq(jint(j, "chunks_returned"), 9, "10 chunks, 1 kept");
	json_decref(j);

	cr_assert_eq(run(out, sizeof(out), true, "unload"), 0, "%s", out);
	cr_assert_neq(stat(pin, &st), 0, "unload left %s", pin);
}

/* A number that went below zero, printed as a __u64: 2^64 - n. */
#define WRAPPED		"1844674407"

/* Counters that programs and the mmap can make disagree: misses served
 * past the cache (by the fallback: more misses than allocs + failures),
 * more objects cached than out of the spans, more bytes requested than
 * the allocations hold. Every derived column stays in range, in stats
 * --json and its table and in aa_heap__print_caches(). */
Test(cli_heap, derived_counters_stay_in_range)
{
	static char out[1 << 16];
	struct aa_cpu_cache *cc = NULL, *u;
	struct aa_cpu_class_stats saved;
	int i, c = aa_size_class(64);
	json_t *j, *rows, *row;
	size_t k, len, seen = 0;
	struct aa_root *r;
	struct aa_heap *h;
	__u64 p, objs_out;
	char *buf;
	FILE *f;

	cr_assert_eq(run(out, sizeof(out), true, "load --arena-mb 16 --init 2M"), 0, "%s", out);
	h = aa_heap__open_pinned(pin);
	cr_assert_not_null(h, "aa_heap__open_pinned: %s", strerror(errno));
	cr_assert_neq(p = aa_heap__malloc(h, 64), 0);
	r = (struct aa_root *)aa_heap__root(h);
	for (i = 0; i < AA_MAX_USER_CACHES && !cc; i++) {
		if (!r->user.off[i])
			continue;
		u = aa_heap__ptr(h, r->arena_base + r->user.off[i]);
		if ((int)u->owner_pid == getpid())
			cc = u;
	}
	cr_assert_not_null(cc, "this thread opened no user cache");
	cr_assert_gt(cc->cls[c].count, 0, "the refill left objects in the cache");
	saved = cc->cls[c].stats;
	objs_out = r->central[c].objs_out;
	cc->cls[c].stats.misses = saved.allocs + saved.failures + 3;
	cc->cls[c].stats.req_bytes = saved.allocs * 64 + 100;
	r->central[c].objs_out = 0;

	j = run_json("stats");
	rows = json_object_get(j, "user_caches");
	cr_assert(json_is_array(rows));
	json_array_foreach(rows, k, row) {
		if (jint(row, "owner_pid") != getpid() || jint(row, "class") != c)
			continue;
		seen++;
		cr_assert(jint(row, "hits") >= 0 && jint(row, "hits") <= jint(row, "allocs"),
			  "hits %lld of %lld allocs", (long long)jint(row, "hits"),
			  (long long)jint(row, "allocs"));
	}
	cr_assert_eq(seen, 1, "no row for this thread's 64-B class");
	json_decref(j);
	cr_assert_eq(run(out, sizeof(out), false, "stats"), 0);
	cr_assert_null(strstr(out, WRAPPED), "stats: a negative count:\n%s", out);
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	cr_assert_eq(aa_heap__print_caches(h, f), 0);
	fclose(f);
	cr_assert_null(strstr(buf, WRAPPED), "aa_heap__print_caches: a negative count:\n%s", buf);
	free(buf);

	cc->cls[c].stats = saved;
	r->central[c].objs_out = objs_out;
	cr_assert_eq(aa_heap__free(h, p), 0);
	aa_heap__destroy(h);
	cr_assert_eq(run(out, sizeof(out), true, "unload"), 0, "%s", out);
}

/* load --tunable: the values reach the heap's root (stats --json reads
 * them back), per class by object size or for every class. */
Test(cli_heap, load_tunables_reach_the_heap)
{
	json_t *j, *t;

	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16 --tunable low_watermark=3M "
			 "--tunable keep_bytes=2M --tunable cpu_cache_cap=64 --tunable batch=8 "
			 "--tunable batch:100=5 --tunable transfer_cap:8192=40"), 0);
	j = run_json("stats");
	t = json_object_get(j, "tunables");
	cr_assert_not_null(t);
	cr_assert_eq(jint(t, "low_watermark"), 3 << 20);
	cr_assert_eq(jint(t, "keep_bytes"), 2 << 20);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(t, "cpu_cache_cap"), 0)), 64);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(t, "batch"), 0)), 8);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(t, "batch"),
						       aa_size_class(100))), 5);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(t, "transfer_cap"),
						       AA_NR_CLASSES - 1)), 40);
	json_decref(j);
}

/* load --fault-*-every reach the root; stats shows them (text and JSON)
 * while they are on, and not on a heap without them. */
Test(cli_heap, load_fault_injection_shows_in_stats)
{
	char out[1 << 16];
	json_t *j, *f;

	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16"), 0);
	j = run_json("stats");
	cr_assert_null(json_object_get(j, "fault_injection"), "shown with faults off");
	json_decref(j);
	cr_assert_eq(run(NULL, 0, false, "unload"), 0);
	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16 --init 1M --fault-pages-every 1000 "
			 "--fault-spans-every 2"), 0);
	j = run_json("stats");
	f = json_object_get(j, "fault_injection");
	cr_assert_not_null(f, "no fault_injection object");
	cr_assert_eq(jint(f, "pages_every"), 1000);
	cr_assert_eq(jint(f, "spans_every"), 2);
	cr_assert_gt(jint(f, "page_calls"), 0);
	cr_assert_eq(jint(f, "page_faults"), 0);
	json_decref(j);
	cr_assert_eq(run(out, sizeof(out), false, "stats"), 0);
	cr_assert(strstr(out, "fault injection (0: off): 1 in 1000 page allocations fails"), "%s",
		  out);
	cr_assert_eq(run(NULL, 0, false, "unload"), 0);
}

Test(cli_heap, bad_input_is_refused_clearly)
{
	char path[128];
	int fd;

	bad(2, "unknown command 'frobnicate'", "frobnicate");
	bad(2, "unknown option '--frob'", "stats --frob");
	bad(1, "no heap pinned at", "stats");
	bad(1, "nothing pinned", "unload");
	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16"), 0);
	bad(2, "'banana' is not a size", "grow --bytes banana");
	bad(2, "more than the whole arena", "grow --bytes 99999G");
	bad(2, "--bytes N[K|M|G] is required", "grow");
	bad(2, "does not fit in 64 bits", "grow --bytes 99999999999999G");
	bad(1, "unload it first", "load");
	/* load --tunable's refusals: tunables/the_cli_refuses_through_the_library */
	bad(2, "--fault-pages-every 'x': give 0 .. 4294967295", "load --fault-pages-every x");
	bad(2, "--fault-spans-every '4294967296'", "load --fault-spans-every 4294967296");
	cr_assert_eq(run(NULL, 0, false, "unload"), 0);
	/* a pin directory whose "arena" is an array map */
	cr_assert_eq(mkdir(pin, 0700), 0);
	snprintf(path, sizeof(path), "%s/arena", pin);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "not_arena", 4, 8, 1, NULL);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bpf_obj_pin(fd, path), 0);
	close(fd);
	bad(1, "not an arena map", "stats");
	unlink(path);
	rmdir(pin);
}

/* Not root: every command that touches BPF says so and exits 1, before
 * anything half-happens; help still works. The library says the same
 * when a process without the capabilities opens a heap. */
Test(cli_heap, refuses_clearly_without_root)
{
	static const char *const cmds[] = {
		"load", "unload", "stats", "dump", "grow --bytes 1M", "trim", "drain", "check",
		"refill-agent", "demo", "--pid 1 stats",
	};
	char cmd[PATH_MAX + 256], out[2048];
	pid_t child;
	size_t i;
	int st, exe;

	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16"), 0);
	/* nobody runs the binary through an fd this process opened: the
	 * directories on its path (a checkout under a 0700 mktemp -d) may be
	 * closed to nobody, which is not what is tested here */
	exe = open(cli, O_RDONLY);
	cr_assert_geq(exe, 0, "%s: %s", cli, strerror(errno));
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(cmd, sizeof(cmd), "exec /proc/self/fd/%d --pin %s %s", exe, pin, cmds[i]);
		st = t_spawn(cmd, T_NOBODY, 0, out, sizeof(out));
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "'%s' as nobody: status %d: %s",
			  cmds[i], st, out);
		cr_assert(strstr(out, "needs root"), "'%s' as nobody said: %s", cmds[i], out);
	}
	snprintf(cmd, sizeof(cmd), "exec /proc/self/fd/%d stats --help", exe);
	st = t_spawn(cmd, T_NOBODY, 0, out, sizeof(out));
	close(exe);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "help needs no root: status %d: %s", st,
		  out);
	cr_assert_eq(run(NULL, 0, false, "stats"), 0, "nobody's attempts broke the heap");

	child = fork();
	if (!child) {
		struct aa_heap *h;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		h = aa_heap__open(NULL);
		_exit(h ? 4 : errno == EPERM ? 0 : 5);
	}
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "aa_heap__open() as nobody: status %d (4: it worked, 5: errno not EPERM)", st);
}

/* The refill agent. Phase 1: a heap emptied until a tc program gets NULL
 * (the low-watermark signal up, its event queued in the ring); the agent,
 * started then and finding that heap by this pid, reads the event and
 * grows the heap; the tc program gets memory again. Phase 2: with the
 * agent asleep on the ring, allocations drive the heap below the low
 * watermark again; the event wakes the agent, which grows it again.
 * SIGTERM ends the agent with status 0 and a log of both refills. */
#include "test_cpu_cache.skel.h"

/* `arena-alloc HOW ARG refill-agent [OPT VAL]` in a child, its stdout and
 * stderr on *out. */
static pid_t start_agent(FILE **out, const char *how, const char *arg, const char *opt,
			 const char *val)
{
	int fds[2];
	pid_t child;

	cr_assert_eq(pipe(fds), 0);
	child = fork();
	if (!child) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		execl(cli, cli, how, arg, "refill-agent", opt, val, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	*out = fdopen(fds[0], "r");
	cr_assert_not_null(*out);
	return child;
}

/* Wait (bounded: 5 s) until the agent has answered signal number `signals`. */
static void await_refill(const struct aa_root *r, __u64 signals)
{
	int i;

	for (i = 0; i < 500 && (r->refill_signals < signals || r->need_refill); i++)
		usleep(10000);
	cr_assert_geq(r->refill_signals, signals, "signal %llu never raised",
		      (unsigned long long)signals);
	cr_assert_eq(r->need_refill, 0, "the agent did not answer signal %llu in 5 s",
		     (unsigned long long)signals);
}

Test(cli_heap, refill_agent_answers_the_low_watermark_signal)
{
	/* a heap that does not grow itself: the agent's (test_self_grow.c
	 * has the other) */
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 << 20, .flags = AA_F_NO_SELF_GROW);
	char pidarg[16], log[4096] = "", *p;
	int refills = 0, events = 0;
	pid_t child;
	struct test_cpu_cache *skel;
	const struct aa_root *r;
	struct aa_heap *h;
	size_t len = 0;
	__u64 size, signals, grows;
	FILE *agent;
	int i, st;

	skel = test_cpu_cache__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, T_PAGES(16 << 20)), 0);
	cr_assert_eq(test_cpu_cache__load(skel), 0);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	r = aa_heap__root(h);
	for (size = 1 << 20; size >= 16; size >>= 1)	/* take everything */
		while (aa_heap__malloc(h, size))
			;
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 2, "a tc program must get NULL on the empty heap");
	cr_assert_eq(r->need_refill, 1, "no low-watermark signal");
	signals = r->refill_signals;

	snprintf(pidarg, sizeof(pidarg), "%d", getpid());
	child = start_agent(&agent, "--pid", pidarg, "--bytes", "2M");
	cr_assert_not_null(fgets(log, sizeof(log), agent));
	cr_assert(strstr(log, "waiting on the refill event ring"), "agent: %s", log);
	await_refill(r, signals);
	cr_assert_eq(t_run_pkt(skel->progs.tc_alloc), 1, "no memory after the refill");

	/* phase 2: the agent sleeps; go below the low watermark again */
	grows = r->stats.nr_grows;
	for (i = 0; i < 64 && r->refill_signals == signals; i++)
		aa_heap__malloc(h, 64 << 10);
	cr_assert_gt(r->refill_signals, signals, "2 MiB of 64-KiB allocations raised no signal");
	await_refill(r, signals + 1);
	cr_assert_gt(r->stats.nr_grows, grows, "the second signal grew nothing");

	cr_assert_eq(kill(child, SIGTERM), 0);
	len = strlen(log);
	while (len < sizeof(log) - 1 && fgets(log + len, sizeof(log) - len, agent))
		len = strlen(log);
	fclose(agent);
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent exit status %d: %s", st, log);
	for (p = log; (p = strstr(p, "refill: +2 chunks")); p++)
		refills++;
	for (p = log; (p = strstr(p, "raised on CPU")); p++)
		events++;
	cr_assert_geq(refills, 2, "agent log: %s", log);
	cr_assert_eq(events, refills, "a refill without its ring event: %s", log);
	cr_assert(strstr(log, "stopped after"), "agent log: %s", log);
	cr_log_info("agent log (--verbose shows it; \"ms ago\": raise to memory added):\n%s", log);
	aa_heap__destroy(h);
	test_cpu_cache__destroy(skel);
}

/* A heap loaded with --deferred: objects deferred from this process show
 * in stats as limbo; the refill agent reclaims them (one agent for both)
 * and logs it; stats then counts them reclaimed. */
Test(cli_heap, the_refill_agent_reclaims_deferred_frees)
{
	char log[8192] = "";
	int i, st;
	struct aa_heap *h;
	__u64 objs[50];
	size_t len = 0;
	pid_t child;
	json_t *j, *d;
	FILE *agent;

	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16 --deferred"), 0);
	h = aa_heap__open_pinned(pin);
	cr_assert_not_null(h);
	for (i = 0; i < 50; i++) {
		objs[i] = aa_heap__malloc(h, 100);
		cr_assert_neq(objs[i], 0);
		cr_assert_eq(aa_heap__free_deferred(h, objs[i]), 0);
	}
	cr_assert_eq(aa_heap__free_deferred(h, objs[0]), -EALREADY);
	j = run_json("stats");
	d = json_object_get(j, "deferred");
	cr_assert_not_null(d, "no deferred section in stats --json");
	cr_assert_eq(jint(d, "pending_objects"), 50);
	cr_assert_eq(jint(d, "pending_bytes"), 50 * aa_class_size(aa_size_class(100)));
	json_decref(j);

	child = start_agent(&agent, "--pin", pin, NULL, NULL);
	for (i = 0; i < 500 && aa_heap__root(h)->defer.pending_objs; i++)	/* bounded: 5 s */
		usleep(10000);
	cr_assert_eq(aa_heap__root(h)->defer.pending_objs, 0, "the agent did not reclaim in 5 s");
	cr_assert_eq(kill(child, SIGTERM), 0);
	while (len < sizeof(log) - 1 && fgets(log + len, sizeof(log) - len, agent))
		len = strlen(log);
	fclose(agent);
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent: status %d: %s", st, log);
	cr_assert(strstr(log, " reclaim: "), "the agent logged no reclaim: %s", log);
	cr_log_info("agent log:\n%s", log);
	j = run_json("stats");
	d = json_object_get(j, "deferred");
	cr_assert_eq(jint(d, "reclaimed"), 50);
	cr_assert_eq(jint(d, "pending_objects"), 0);
	cr_assert_geq(jint(d, "grace_periods"), 1);
	json_decref(j);
	for (i = 0; i < 50; i++)
		cr_assert_eq(aa_heap__free(h, objs[i]), -EALREADY, "reclaimed: freed already");
	aa_heap__destroy(h);
}

/* Run `arena-alloc --pin <pin> ARGS` on a pseudo-terminal, ended by
 * SIGINT after `secs`; everything it wrote into buf. */
static void run_tty(char *buf, size_t sz, double secs, const char *args)
{
	char cmd[PATH_MAX + 512];

	snprintf(cmd, sizeof(cmd), "%s --pin %s %s", cli, pin, args);
	t_spawn(cmd, T_TTY, secs, buf, sz);
}

/* stats --watch under a pseudo-terminal: a few refreshes, each clearing
 * the screen first, with rates of a workload in between. */
Test(cli_heap, stats_watch_refreshes_in_place_on_a_terminal)
{
	int refreshes = 0, clears = 0;
	char buf[1 << 15], *p;

	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 16"), 0);
	run_tty(buf, sizeof(buf), 2.5, "stats --watch 0.3");
	for (p = buf; (p = strstr(p, "(refresh ")); p++)
		refreshes++;
	for (p = buf; (p = strstr(p, "\033[2J")); p++)
		clears++;
	cr_assert_geq(refreshes, 3, "%d refreshes in 2.5 s at 0.3 s: %.300s", refreshes, buf);
	cr_assert_eq(clears, refreshes, "every refresh clears the terminal");
	cr_assert(strstr(buf, "allocs/s"), "no rates: %.300s", buf);
}

/* grow draws a progress bar on a terminal, and only there: not into a
 * pipe, not with --json, not for a small grow. */
Test(cli_heap, grow_shows_a_progress_bar_only_on_a_terminal)
{
	char buf[1 << 14], *p;
	int bars = 0;

	cr_assert_eq(run(NULL, 0, false, "load --arena-mb 256 --init 1M"), 0);
	run_tty(buf, sizeof(buf), 20, "grow --bytes 64M");
	for (p = buf; (p = strstr(p, "\rgrow [")); p++)
		bars++;
	cr_assert_geq(bars, 10, "%d redraws of the bar: %.300s", bars, buf);
	cr_assert(strstr(buf, "] 100% 64/64 MiB"), "the bar never filled: %.300s", buf);
	cr_assert(strstr(buf, "grow: chunks_added 64;"), "no report: %.300s", buf);

	cr_assert_eq(run(buf, sizeof(buf), true, "grow --bytes 32M"), 0);
	cr_assert_null(strstr(buf, "grow ["), "a bar into a pipe: %.300s", buf);
	cr_assert(strstr(buf, "grow: chunks_added 32;"), "%s", buf);
	run_tty(buf, sizeof(buf), 20, "-j grow --bytes 32M");
	cr_assert_null(strstr(buf, "grow ["), "a bar with --json: %.300s", buf);
	cr_assert(strstr(buf, "\"chunks_added\":32"), "%s", buf);
	run_tty(buf, sizeof(buf), 20, "grow --bytes 4M");
	cr_assert_null(strstr(buf, "grow ["), "a bar for 4 MiB: %.300s", buf);
}
