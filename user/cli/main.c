// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - arena-alloc: the command table, global options, help, and the
 * helpers every command shares (bpftool's main.c is the model).
 *
 *   arena-alloc [-j|--json] [-p|--pretty] [HEAP] COMMAND [OPTIONS]
 *   HEAP: --pin DIR | --map PATH | --prog-id ID | --pid PID
 *
 * A heap loaded by `load` lives pinned under DIR (default
 * /sys/fs/bpf/arena-alloc); the other commands open it from there, or
 * another program's heap by its arena map, one of its programs or a
 * process that holds its arena.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include "cli.h"
#include "../internal.h"	/* aa__parse_u64(): the CLI links the static library */

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC	0xcafe4a11
#endif

struct cli_opts cli = { .pin = AA_DEFAULT_PIN };

static const struct cmd cmds[] = {
	{ "load", cmd_load_parse, cmd_load,
	  "[--arena-mb N] [--init BYTES] [--no-caches] [--deferred] [--debug] [--tunable K=V ...]\n"
	  "  [--fault-pages-every N] [--fault-spans-every N]\n"
	  "  --deferred: deferred free (aa_free_deferred) on this heap\n"
	  "  --debug: debug mode: poison, redzones, error records (arena-alloc errors)\n"
	  "  --fault-*-every N: fault injection (tests): every Nth page allocation, or\n"
	  "  span/page-run request, fails (0: off)\n"
	  "  K: keep_bytes, low_watermark, defer_limit (sizes); quarantine (debug: slots, <= 1024);\n"
	  "  cpu_cache_cap, batch, transfer_cap\n"
	  "  (every class, or K:SIZE=V for the class of SIZE-byte objects)",
	  "load the allocator, initialise it, pin it under --pin" },
	{ "unload", cli_parse_plain, cmd_unload, "", "remove the pins (the heap goes with its last user)" },
	{ "grow", cmd_grow_parse, cmd_grow, "--bytes N[K|M|G]", "map more chunks into the heap" },
	{ "stats", cmd_stats_parse, cmd_stats, "[--watch SECS]",
	  "counters per CPU and size class, totals (from the mmap)" },
	{ "dump", cli_parse_plain, cmd_dump, "", "the chunk map: occupancy, free blocks, fragmentation" },
	{ "trim", cmd_trim_parse, cmd_trim, "[--keep BYTES]", "return free chunks beyond --keep to the kernel" },
	{ "drain", cli_parse_plain, cmd_drain, "", "flush every CPU and transfer cache into the heap" },
	{ "check", cli_parse_plain, cmd_check, "", "run the validity checker" },
	{ "errors", cmd_errors_parse, cmd_errors, "[--follow SECS]",
	  "memory errors debug mode found (load --debug); --follow: as they happen" },
	{ "refill-agent", cmd_refill_agent_parse, cmd_refill_agent, "[--bytes N[K|M|G]] [--interval-ms N]",
	  "grow the heap whenever its low-watermark signal is up; reclaim deferred frees" },
	{ "demo", cmd_demo_parse, cmd_demo, "[--arena-mb N] [--objects N] [--runs N]",
	  "load, run a small workload, check the stats (make run)" },
	{ "probe", cli_parse_plain, cmd_probe, "",
	  "can this process create BPF arena maps (one line; exit 0 yes, 1 no, and why)" },
};
#define NR_CMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: arena-alloc [-j|--json] [-p|--pretty] [HEAP] COMMAND [OPTIONS]\n"
		   "       arena-alloc COMMAND --help\n\nCommands:\n");
	for (i = 0; i < NR_CMDS; i++)
		fprintf(f, "  %-13s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "  help          this text\n\n"
		   "Global options (HEAP: one of --pin, --map, --prog-id, --pid):\n"
		   "  -j, --json     JSON output (stats, and what each command did)\n"
		   "  -p, --pretty   indented JSON (implies --json)\n"
		   "  --pin DIR      bpffs directory of the heap (default %s)\n"
		   "  --map PATH     another program's heap, by its pinned arena map\n"
		   "  --prog-id ID   ... by one of its programs\n"
		   "  --pid PID      ... by a process that holds its arena\n"
		   "Sizes: N, NK, NM or NG (powers of 1024).\n"
		   "Exit status: 0 done, 1 the operation failed, 2 bad usage.\n", AA_DEFAULT_PIN);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("arena-alloc: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const struct cmd *cli_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NR_CMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void cmd_usage(const struct cmd *c, FILE *f)
{
	fprintf(f, "Usage: arena-alloc [-j] [-p] [HEAP] %s %s\n  %s\n", c->name, c->args,
		c->summary);
}

#define OPT_PIN		1000
#define OPT_MAP		1001
#define OPT_PROG_ID	1002
#define OPT_PID		1003

int cli_parse_number(const char *s, int base, unsigned long long *out)
{
	__u64 v;

	if (aa__parse_u64(s, base, false, &v))
		return -1;
	*out = v;
	return 0;
}

static int parse_id(const char *opt, const char *s, unsigned int *out)
{
	unsigned long long v;

	if (cli_parse_number(s, 10, &v) || v == 0 || v > 0x7fffffff) {
		cli_err("%s: '%s' is not a positive number", opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse(int argc, char **argv, const struct option *own, const struct cmd *self,
	      int (*on)(int c, const char *arg))
{
	static const struct option global[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "pin", required_argument, NULL, OPT_PIN },
		{ "map", required_argument, NULL, OPT_MAP },
		{ "prog-id", required_argument, NULL, OPT_PROG_ID },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "help", no_argument, NULL, 'h' },
	};
	const char *who = self ? self->name : "", *sep = self ? ": " : "", *bad;
	struct option all[32];
	size_t n = 0, i;
	int c, at;

	for (i = 0; own && own[i].name && n < 27; i++)
		all[n++] = own[i];
	for (i = 0; i < sizeof(global) / sizeof(global[0]); i++)
		all[n++] = global[i];
	memset(&all[n], 0, sizeof(all[n]));
	optind = 0;	/* glibc: 0 also drops the rest of a half-read option group */
	opterr = 0;
	/* ":": a missing value is ':', not '?'; at: where getopt stands */
	while ((at = optind ? optind : 1, c = getopt_long(argc, argv, "+:jph", all, NULL)) != -1) {
		/* the argument it complains about: the one it moved past, or the
		 * group it is still in ("-xj") */
		bad = optind > at ? argv[optind - 1] : argv[optind];
		switch (c) {
		case 'j':
			cli.json = true;
			break;
		case 'p':
			cli.json = cli.pretty = true;
			break;
		case OPT_PIN:
			cli.pin = optarg;
			break;
		case OPT_MAP:
			cli.map = optarg;
			break;
		case OPT_PROG_ID:
			if (parse_id("--prog-id", optarg, &cli.prog_id))
				return -1;
			break;
		case OPT_PID:
			if (parse_id("--pid", optarg, (unsigned int *)&cli.pid))
				return -1;
			break;
		case 'h':
			if (self)
				cmd_usage(self, stdout);
			else
				usage(stdout);
			return 1;
		case '?':
			if (strncmp(bad, "--", 2))
				cli_err("%s%sunknown option '-%c'", who, sep, optopt);
			else if (optopt)	/* a known long option given =VALUE */
				cli_err("%s%soption '%.*s' takes no value", who, sep,
					(int)strcspn(bad, "="), bad);
			else
				cli_err("%s%sunknown option '%s'", who, sep, bad);
			if (self)
				cmd_usage(self, stderr);
			return -1;
		case ':':
			cli_err("%s%soption '%s' needs a value", who, sep, bad);
			return -1;
		default:
			if (!on || on(c, optarg))
				return -1;
		}
	}
	if (self && optind < argc) {
		cli_err("%s: unexpected argument '%s'", self->name, argv[optind]);
		cmd_usage(self, stderr);
		return -1;
	}
	return 0;
}

int cli_parse_plain(int argc, char **argv)
{
	return cli_parse(argc, argv, NULL, cli_cmd(argv[0]), NULL);
}

int cli_parse_size(const char *opt, const char *s, __u64 *out)
{
	int err = aa__parse_u64(s, 10, true, out);

	if (err == -ERANGE)
		cli_err("%s: '%s' does not fit in 64 bits", opt, s);
	else if (err)
		cli_err("%s: '%s' is not a size (N, NK, NM or NG)", opt, s);
	return err ? -1 : 0;
}

int cli_ensure_bpffs(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		cli_err("/sys/fs/bpf is not a bpffs and mounting one failed: %s%s", strerror(errno),
			errno == EPERM && !cli_has_cap(CAP_SYS_ADMIN_BIT) ? " (run as root)" : "");
		return -1;
	}
	return 0;
}

const char *cli_where(void)
{
	static char buf[PATH_MAX + 32];

	if (cli.map)
		snprintf(buf, sizeof(buf), "arena map %s", cli.map);
	else if (cli.prog_id)
		snprintf(buf, sizeof(buf), "program %u", cli.prog_id);
	else if (cli.pid)
		snprintf(buf, sizeof(buf), "process %d", cli.pid);
	else
		snprintf(buf, sizeof(buf), "%s", cli.pin);
	return buf;
}

/*
 * An arena has one address in every process that maps it: where the
 * kernel put it in the process that mapped it first. In this process
 * that range may already hold a library or a stack (EEXIST), likelier on
 * arm64, whose mmap base moves within 1 GiB where x86-64's moves within
 * 1 TiB. Every exec lays the process out afresh, so the CLI runs itself
 * again, up to CLI_MAP_TRIES times in all, before it gives up. Nothing
 * has been written or changed when a command opens its heap.
 */
#define CLI_MAP_TRIES	8
#define CLI_MAP_TRY_ENV	"ARENA_ALLOC_CLI_MAP_TRY"

static char **cli_argv;
/* The library's warnings while a heap opens, held until it is known
 * whether another try follows (then they are moot). */
static char cli_held[4096];
static size_t cli_held_len;
static bool cli_hold;

/* The tries so far, this one included (1 in a first run). */
static int cli_map_tried(void)
{
	const char *env = getenv(CLI_MAP_TRY_ENV);
	int tried = env ? atoi(env) : 1;

	return tried < 1 ? 1 : tried > CLI_MAP_TRIES ? CLI_MAP_TRIES : tried;
}

static void cli_map_retry(void)
{
	int tried = cli_map_tried();
	char next[16];

	if (tried >= CLI_MAP_TRIES || !cli_argv)
		return;
	snprintf(next, sizeof(next), "%d", tried + 1);
	if (setenv(CLI_MAP_TRY_ENV, next, 1))
		return;
	fflush(NULL);
	execv("/proc/self/exe", cli_argv);
	snprintf(next, sizeof(next), "%d", tried);	/* it did not run: as it was */
	setenv(CLI_MAP_TRY_ENV, next, 1);
}

static struct aa_heap *cli_open_heap_once(void)
{
	if (cli.map)
		return aa_heap__open_map_pin(cli.map);
	if (cli.prog_id)
		return aa_heap__open_prog_id(cli.prog_id);
	if (cli.pid)
		return aa_heap__open_pid(cli.pid);
	return aa_heap__open_pinned(cli.pin);
}

struct aa_heap *cli_open_heap(void)
{
	struct aa_heap *h;
	int err;

	cli_hold = true;
	h = cli_open_heap_once();
	err = errno;
	cli_hold = false;
	if (!h && err == EEXIST)
		cli_map_retry();	/* returns when the tries are spent */
	fputs(cli_held, stderr);
	cli_held_len = 0;
	cli_held[0] = 0;
	errno = err;
	if (h)
		return h;
	if (err == EEXIST)
		cli_err("the arena's address range was taken here in each of %d tries, each "
			"with a new layout: give the arena a fixed address where it is created "
			"(bpf_map__set_map_extra())", cli_map_tried());
	else if (cli.map || cli.prog_id || cli.pid)	/* the library said why */
		cli_err("no arena-alloc heap there (%s)", strerror(errno));
	else
		cli_err("no heap at %s (%s): `arena-alloc load` pins one, or give --pin DIR, "
			"--map PATH, --prog-id ID or --pid PID", cli.pin, strerror(errno));
	return h;
}

/* The library's probe reads this process's capabilities (aa__cap_eff()). */
bool cli_has_cap(int bit)
{
	return aa__cap_eff() & (1ULL << bit);
}

int cli_need_root(const char *name)
{
	if (cli_has_cap(CAP_SYS_ADMIN_BIT) || cli_has_cap(CAP_BPF_BIT))
		return 0;
	cli_err("%s: needs root (CAP_BPF or CAP_SYS_ADMIN, to use BPF): "
		"run it with sudo", name);
	return -1;
}

int cli_need_arena(const char *name)
{
	char why[AA_PROBE_LINE_SZ];

	if (!aa_probe_arena(why, sizeof(why)))
		return 0;
	cli_err("%s: %s", name, why);
	return -1;
}

struct aa_heap *cli_begin(const char *name)
{
	return cli_need_root(name) ? NULL : cli_open_heap();
}

/* Messages of the library: warnings to stderr (its "arena-alloc:" prefix). */
static int print_warnings(enum aa_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level > AA_WARN)
		return 0;
	if (!cli_hold)
		return vfprintf(stderr, fmt, ap);
	n = vsnprintf(cli_held + cli_held_len, sizeof(cli_held) - cli_held_len, fmt, ap);
	if (n > 0)
		cli_held_len += (size_t)n < sizeof(cli_held) - cli_held_len ?
				(size_t)n : sizeof(cli_held) - 1 - cli_held_len;
	return n;
}

const struct cmd *cli_parse_args(int argc, char **argv, int *status)
{
	const struct cmd *c;
	int r;

	cli = (struct cli_opts){ .pin = AA_DEFAULT_PIN };
	*status = EXIT_USAGE;
	r = cli_parse(argc, argv, NULL, NULL, NULL);	/* global options first */
	if (r) {
		*status = r > 0 ? 0 : EXIT_USAGE;
		return NULL;
	}
	if (optind >= argc) {
		usage(stderr);
		return NULL;
	}
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help")) {
		usage(stdout);
		*status = 0;
		return NULL;
	}
	c = cli_cmd(argv[0]);
	if (!c) {
		cli_err("unknown command '%s' (arena-alloc help lists them)", argv[0]);
		return NULL;
	}
	r = c->parse(argc, argv);
	if (r) {
		*status = r > 0 ? 0 : EXIT_USAGE;
		return NULL;
	}
	return c;
}

int main(int argc, char **argv)
{
	const struct cmd *c;
	int status;

	cli_argv = argv;
	aa_set_print(print_warnings);
	c = cli_parse_args(argc, argv, &status);
	return c ? c->run() : status;
}
