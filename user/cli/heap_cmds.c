// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap_cmds.c - the commands that change a heap: load, unload, grow, trim,
 * drain, and check. Each runs the library's SEC("syscall") program through
 * libarena_alloc on the heap pinned at --pin (load creates it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

/* "cmd: what n; heap now ..." (text) or {"command": cmd, what: n, ...}
 * (JSON) for a command's result. */
static void report(const char *cmd, const char *what, long long n, const struct aa_heap *h)
{
	struct aa_stats st = {};

	aa_heap__stats(h, &st);
	if (cli.json) {
		struct jw *w = jw_new(stdout, cli.pretty);

		jw_start_object(w);
		jw_kv_string(w, "command", cmd);
		jw_name(w, what);
		jw_int(w, n);
		jw_kv_uint(w, "chunks", st.nr_chunks);
		jw_kv_uint(w, "pages_mapped", st.pages_mapped);
		jw_kv_uint(w, "bytes_in_use", st.bytes_in_use);
		jw_end_object(w);
		jw_destroy(w);
		return;
	}
	printf("%s: %s %lld; heap now %llu chunks, %llu pages mapped, %llu B in use\n", cmd,
	       what, n, (unsigned long long)st.nr_chunks, (unsigned long long)st.pages_mapped,
	       (unsigned long long)st.bytes_in_use);
}

static unsigned long load_arena_mb;
static __u64 load_init;
static bool load_no_caches, load_defer, load_debug;
static struct aa_tunables load_tun;
static bool load_tun_set;
static __u32 load_fault_pages, load_fault_spans;

/* --fault-*-every N: a 32-bit count, 0 = off. */
static int fault_opt(const char *opt, const char *arg, __u32 *out)
{
	unsigned long long v;

	if (cli_parse_number(arg, 10, &v) || v > 0xffffffffULL) {
		cli_err("load: %s '%s': give 0 .. 4294967295 (0: off)", opt, arg);
		return -1;
	}
	*out = v;
	return 0;
}

/* --tunable KEY=VALUE: aa_tunables__set(), which says what it refuses
 * (KEY:SIZE=V sets the class that serves SIZE bytes, the class column of
 * `stats`). Checked as a whole by aa_tunables__validate() once all are
 * read. */
int cli_parse_tunable(const char *arg, struct aa_tunables *t)
{
	const char *eq = strchr(arg, '=');
	char *key;
	int err;

	if (!eq || eq == arg) {
		cli_err("load: --tunable '%s': give KEY=VALUE", arg);
		return -1;
	}
	key = strndup(arg, eq - arg);
	if (!key) {
		cli_err("load: --tunable '%s': out of memory", arg);
		return -1;
	}
	err = aa_tunables__set(t, key, eq + 1);
	free(key);
	if (err) {
		cli_err("load: --tunable '%s' refused (above)", arg);
		return -1;
	}
	return 0;
}

/* The first --tunable starts from the defaults (and the environment). */
static int tunable_opt(const char *arg)
{
	if (!load_tun_set && aa_tunables__default(&load_tun))
		return -1;
	load_tun_set = true;
	return cli_parse_tunable(arg, &load_tun);
}

static int load_opt(int c, const char *arg)
{
	unsigned long long v;

	switch (c) {
	case 'a':
		if (cli_parse_number(arg, 10, &v) || v < 8 || v > 4096) {
			cli_err("load: --arena-mb '%s': give 8 .. 4096", arg);
			return -1;
		}
		load_arena_mb = v;
		return 0;
	case 'i':
		return cli_parse_size("--init", arg, &load_init);
	case 'n':
		load_no_caches = true;
		return 0;
	case 'd':
		load_defer = true;
		return 0;
	case 'D':
		load_debug = true;
		return 0;
	case 't':
		return tunable_opt(arg);
	case 'P':
		return fault_opt("--fault-pages-every", arg, &load_fault_pages);
	case 'S':
		return fault_opt("--fault-spans-every", arg, &load_fault_spans);
	}
	return -1;
}

int cmd_load_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "arena-mb", required_argument, NULL, 'a' },
		{ "init", required_argument, NULL, 'i' },
		{ "no-caches", no_argument, NULL, 'n' },
		{ "deferred", no_argument, NULL, 'd' },
		{ "debug", no_argument, NULL, 'D' },
		{ "tunable", required_argument, NULL, 't' },
		{ "fault-pages-every", required_argument, NULL, 'P' },
		{ "fault-spans-every", required_argument, NULL, 'S' },
		{},
	};
	int r;

	load_arena_mb = 256;
	load_init = AA_GROW_BYTES_DEFAULT;
	load_no_caches = load_defer = load_debug = load_tun_set = false;
	load_fault_pages = load_fault_spans = 0;
	r = cli_parse(argc, argv, opts, cli_cmd("load"), load_opt);
	if (r)
		return r;
	if (load_init > (__u64)load_arena_mb << 20) {
		cli_err("load: --init %llu is more than the arena (%lu MiB)",
			(unsigned long long)load_init, load_arena_mb);
		return -1;
	}
	if (load_tun_set && aa_tunables__validate(&load_tun)) {
		cli_err("load: the --tunable values do not fit together (above)");
		return -1;
	}
	return 0;
}

int cmd_load(void)
{
	struct aa_heap *h;
	int err;

	if (cli_need_root("load") || cli_ensure_bpffs())
		return 1;
	AA_OPTS(aa_heap_opts, o, .arena_pages = (load_arena_mb << 20) / AA_PAGE_SIZE,
		.init_bytes = load_init ? load_init : 1,
		.flags = (load_no_caches ? AA_F_NO_CACHES : 0) | (load_defer ? AA_F_DEFER : 0) |
			 (load_debug ? AA_F_DEBUG : 0),
		.tunables = load_tun_set ? &load_tun : NULL,
		.fault_pages_every = load_fault_pages, .fault_spans_every = load_fault_spans);
	h = aa_heap__open(&o);
	if (!h) {
		/* aa_heap__open() said why (aa_probe_arena()'s line) */
		cli_err("load: the allocator did not load: %s", strerror(errno));
		return 1;
	}
	err = aa_heap__pin(h, cli.pin);
	if (err) {
		cli_err("load: cannot pin the heap at %s: %s", cli.pin, strerror(-err));
		aa_heap__destroy(h);
		return 1;
	}
	report("load", "arena_mb", load_arena_mb, h);
	aa_heap__destroy(h);	/* the pins keep it */
	return 0;
}

int cmd_unload(void)
{
	if (cli_need_root("unload"))
		return 1;
	if (aa_heap__unpin(cli.pin)) {
		cli_err("unload: nothing pinned at %s", cli.pin);
		return 1;
	}
	if (!cli.json)
		printf("unload: removed the pins at %s\n", cli.pin);
	return 0;
}

static __u64 size_arg;
static bool size_set;

static int size_opt(int c, const char *arg)
{
	size_set = true;
	return c == 'b' ? cli_parse_size("--bytes", arg, &size_arg) :
	       c == 'k' ? cli_parse_size("--keep", arg, &size_arg) : -1;
}

/* parse() of grow and trim: the one size option of opts. */
static int size_parse(int argc, char **argv, const struct option *opts)
{
	size_arg = 0;
	size_set = false;
	return cli_parse(argc, argv, opts, cli_cmd(argv[0]), size_opt);
}

#define OP_USAGE	(-1000)	/* an op's "bad input, said": exit 2 */

/* The shape of run() of grow, trim and drain: the pinned heap, one library
 * call (op: a count or -errno, said by the library or by op), the report. */
static int heap_op(const char *name, long (*op)(struct aa_heap *h), const char *what)
{
	struct aa_heap *h;
	long n;

	h = cli_begin(name);
	if (!h)
		return 1;
	n = op(h);
	if (n >= 0)
		report(name, what, n, h);
	else if (n != OP_USAGE)
		cli_err("%s: %s%s", name, strerror(-n), n == -ENOMEM ? " (the arena is full)" : "");
	aa_heap__destroy(h);
	return n >= 0 ? 0 : n == OP_USAGE ? EXIT_USAGE : 1;
}

#define BAR_MIN_BYTES	(16ULL << 20)	/* smaller grows are too quick for a bar */
#define BAR_STEPS	40
#define BAR_WIDTH	40

/* grow --bytes N on a terminal: N in BAR_STEPS calls, a bar on stderr
 * redrawn after each; erased at the end, so the report stands alone. A
 * failure after some steps says what was added before it. */
static long grow_with_bar(struct aa_heap *h, __u64 bytes)
{
	__u64 step = (bytes / BAR_STEPS + (1 << 20) - 1) & ~((1ULL << 20) - 1), done = 0, now;
	long total = 0, n;
	int fill;

	while (done < bytes) {
		now = bytes - done < step ? bytes - done : step;
		n = aa_heap__grow(h, now);
		if (n < 0) {
			fprintf(stderr, "\r\033[K");
			if (total)
				cli_err("grow: added %ld chunks (%llu MiB), then failed", total,
					(unsigned long long)(done >> 20));
			return n;
		}
		total += n;
		done += now;
		fill = done * BAR_WIDTH / bytes;
		fprintf(stderr, "\rgrow [%.*s%*s] %3llu%% %llu/%llu MiB", fill,
			"########################################", BAR_WIDTH - fill, "",
			(unsigned long long)(done * 100 / bytes), (unsigned long long)(done >> 20),
			(unsigned long long)(bytes >> 20));
	}
	fprintf(stderr, "\r\033[K");
	return total;
}

static long grow_op(struct aa_heap *h)
{
	if (!size_set || !size_arg) {
		cli_err("grow: --bytes N[K|M|G] is required (and more than 0)");
		return OP_USAGE;
	}
	if (size_arg > aa_heap__arena_size(h)) {
		cli_err("grow: --bytes %llu is more than the whole arena (%llu MiB)",
			(unsigned long long)size_arg,
			(unsigned long long)(aa_heap__arena_size(h) >> 20));
		return OP_USAGE;
	}
	if (size_arg >= BAR_MIN_BYTES && !cli.json && isatty(STDERR_FILENO))
		return grow_with_bar(h, size_arg);
	return aa_heap__grow(h, size_arg);
}

static long trim_op(struct aa_heap *h)
{
	return aa_heap__trim(h, size_arg);
}

static long drain_op(struct aa_heap *h)
{
	return aa_heap__drain(h);	/* names the CPUs it could not reach */
}

int cmd_grow_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{},
	};

	return size_parse(argc, argv, opts);
}

int cmd_grow(void)
{
	return heap_op("grow", grow_op, "chunks_added");
}

int cmd_trim_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "keep", required_argument, NULL, 'k' },
		{},
	};

	return size_parse(argc, argv, opts);
}

int cmd_trim(void)
{
	return heap_op("trim", trim_op, "chunks_returned");
}

int cmd_drain(void)
{
	return heap_op("drain", drain_op, "objects_flushed");
}

int cmd_check(void)
{
	struct aa_heap *h;
	int code;

	h = cli_begin("check");
	if (!h)
		return 1;
	code = aa_heap__check(h);
	if (cli.json) {
		struct jw *w = jw_new(stdout, cli.pretty);

		jw_start_object(w);
		jw_kv_string(w, "command", "check");
		jw_name(w, "ok");
		jw_bool(w, code == 0);
		jw_name(w, "code");
		jw_int(w, code);
		jw_end_object(w);
		jw_destroy(w);
	} else if (code >= 0) {
		printf(code ? "check: FAILED (checker code %d)\n" : "check: ok\n", code);
	}
	aa_heap__destroy(h);
	return code != 0;
}
