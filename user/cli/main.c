// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - arena-alloc: the command table, global options, help, and the
 * helpers every command shares (bpftool's main.c is the model).
 *
 *   arena-alloc [-j|--json] [-p|--pretty] [--pin DIR] COMMAND [OPTIONS]
 *
 * A heap loaded by `load` lives pinned under DIR (default
 * /sys/fs/bpf/arena-alloc); the other commands open it from there.
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

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC	0xcafe4a11
#endif

struct cli_opts cli = { .pin = AA_DEFAULT_PIN };

static const struct cmd cmds[] = {
	{ "load", cmd_load,
	  "[--arena-mb N] [--init BYTES] [--no-caches] [--deferred] [--tunable K=V ...]\n"
	  "  [--fault-pages-every N] [--fault-spans-every N]\n"
	  "  --deferred: deferred free (aa_free_deferred) on this heap\n"
	  "  --fault-*-every N: fault injection (tests): every Nth page allocation, or\n"
	  "  span/page-run request, fails (0: off)\n"
	  "  K: keep_bytes, low_watermark, defer_limit (sizes); cpu_cache_cap, batch, transfer_cap\n"
	  "  (every class, or K:SIZE=V for the class of SIZE-byte objects)",
	  "load the allocator, initialise it, pin it under --pin" },
	{ "unload", cmd_unload, "", "remove the pins (the heap goes with its last user)" },
	{ "grow", cmd_grow, "--bytes N[K|M|G]", "map more chunks into the heap" },
	{ "stats", cmd_stats, "[--watch SECS]",
	  "counters per CPU and size class, totals (from the mmap)" },
	{ "dump", cmd_dump, "", "the chunk map: occupancy, free blocks, fragmentation" },
	{ "trim", cmd_trim, "[--keep BYTES]", "return free chunks beyond --keep to the kernel" },
	{ "drain", cmd_drain, "", "flush every CPU and transfer cache into the heap" },
	{ "check", cmd_check, "", "run the validity checker" },
	{ "refill-agent", cmd_refill_agent, "[--bytes N[K|M|G]] [--interval-ms N]",
	  "grow the heap whenever its low-watermark signal is up; reclaim deferred frees" },
	{ "demo", cmd_demo, "[--arena-mb N] [--objects N] [--runs N]",
	  "load, run a small workload, check the stats (make run)" },
};
#define NR_CMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: arena-alloc [-j|--json] [-p|--pretty] [--pin DIR] COMMAND [OPTIONS]\n"
		   "       arena-alloc COMMAND --help\n\nCommands:\n");
	for (i = 0; i < NR_CMDS; i++)
		fprintf(f, "  %-13s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "  help          this text\n\n"
		   "Global options:\n"
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
	fprintf(f, "Usage: arena-alloc [-j] [-p] [--pin DIR] %s %s\n  %s\n", c->name, c->args,
		c->summary);
}

#define OPT_PIN		1000
#define OPT_MAP		1001
#define OPT_PROG_ID	1002
#define OPT_PID		1003

static int parse_id(const char *opt, const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || *s == '-' || v == 0 || v > 0x7fffffff) {
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
	struct option all[32];
	size_t n = 0, i;
	int c;

	for (i = 0; own && own[i].name && n < 27; i++)
		all[n++] = own[i];
	for (i = 0; i < sizeof(global) / sizeof(global[0]); i++)
		all[n++] = global[i];
	memset(&all[n], 0, sizeof(all[n]));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jph", all, NULL)) != -1) {
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
			cli_err("%s: unknown option '%s'", self ? self->name : "arena-alloc",
				argv[optind - 1]);
			if (self)
				cmd_usage(self, stderr);
			return -1;
		case ':':
			cli_err("%s: option '%s' needs a value", self ? self->name : "arena-alloc",
				argv[optind - 1]);
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

int cli_parse_size(const char *opt, const char *s, __u64 *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-') {
		cli_err("%s: '%s' is not a size (N, NK, NM or NG)", opt, s);
		return -1;
	}
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	}
	if (*end) {
		cli_err("%s: '%s' is not a size (N, NK, NM or NG)", opt, s);
		return -1;
	}
	if (shift && v > (~0ULL >> shift)) {
		cli_err("%s: '%s' does not fit in 64 bits", opt, s);
		return -1;
	}
	*out = v << shift;
	return 0;
}

int cli_ensure_bpffs(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		cli_err("/sys/fs/bpf is not a bpffs and mounting one failed: %s%s", strerror(errno),
			errno == EPERM ? " (run as root)" : "");
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

struct aa_heap *cli_open_heap(void)
{
	struct aa_heap *h;

	if (cli.map)
		h = aa_heap__open_map_pin(cli.map);
	else if (cli.prog_id)
		h = aa_heap__open_prog_id(cli.prog_id);
	else if (cli.pid)
		h = aa_heap__open_pid(cli.pid);
	else
		h = aa_heap__open_pinned(cli.pin);
	if (h)
		return h;
	if (cli.map || cli.prog_id || cli.pid)
		cli_err("no arena-alloc heap there (%s)%s", strerror(errno),
			errno == EPERM ? ": run as root" : "");
	else
		cli_err("no heap at %s (%s): `arena-alloc load` pins one, or give --pin DIR, "
			"--map PATH, --prog-id ID or --pid PID", cli.pin, strerror(errno));
	return h;
}

/* This process's effective capabilities (/proc/self/status), or all of
 * them for root when the file cannot be read. */
static unsigned long long cap_eff(void)
{
	unsigned long long eff = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return geteuid() == 0 ? ~0ULL : 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff;
}

#define CAP_SYS_ADMIN_BIT	21
#define CAP_BPF_BIT		39

int cli_need_root(const char *name)
{
	if (cap_eff() & (1ULL << CAP_SYS_ADMIN_BIT | 1ULL << CAP_BPF_BIT))
		return 0;
	cli_err("%s: needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, to use BPF): "
		"run it with sudo", name);
	return -1;
}

struct aa_heap *cli_begin(int argc, char **argv, const char *name, const struct option *own,
			  int (*on)(int c, const char *arg), int *status)
{
	int r = cli_parse(argc, argv, own, cli_cmd(name), on);
	struct aa_heap *h;

	if (r) {
		*status = r > 0 ? 0 : EXIT_USAGE;
		return NULL;
	}
	*status = 1;
	if (cli_need_root(name))
		return NULL;
	h = cli_open_heap();
	return h;
}

/* Messages of the library: warnings to stderr (its "arena-alloc:" prefix). */
static int print_warnings(enum aa_print_level level, const char *fmt, va_list ap)
{
	return level > AA_WARN ? 0 : vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	const struct cmd *c;
	int r;

	aa_set_print(print_warnings);
	r = cli_parse(argc, argv, NULL, NULL, NULL);	/* global options first */
	if (r)
		return r > 0 ? 0 : EXIT_USAGE;
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	c = cli_cmd(argv[0]);
	if (!c) {
		cli_err("unknown command '%s' (arena-alloc help lists them)", argv[0]);
		return EXIT_USAGE;
	}
	return c->fn(argc, argv);
}
