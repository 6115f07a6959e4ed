/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cli.h - what the arena-alloc CLI's files share: the global options, the
 * command table's entry type, size parsing, finding the pinned heap, and
 * the JSON writer (json.c).
 */
#ifndef __AA_CLI_H
#define __AA_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include "arena_alloc_internal.h"

#define AA_DEFAULT_PIN	"/sys/fs/bpf/arena-alloc"

/* Global options (main.c): accepted before the command and after it. */
struct cli_opts {
	bool json, pretty;
	const char *pin;	/* bpffs directory of the heap */
	/* or another program's heap (stats, dump, trim, drain, check, grow) */
	const char *map;	/* --map PATH: its pinned arena map */
	unsigned int prog_id;	/* --prog-id ID */
	int pid;		/* --pid PID */
};
extern struct cli_opts cli;

/* A command runs in two steps. parse() resets the command's settings to
 * their defaults and reads its argv (cli_parse()) and checks the values:
 * 0 to run, 1 after --help (exit 0), -1 after a message (EXIT_USAGE). It
 * touches nothing outside the process (no BPF, no pins, no files): the
 * fuzz target tests/fuzz/cli_argv.c calls it on hostile argv. run() does
 * the work and returns the exit status. */
struct cmd {
	const char *name;
	int (*parse)(int argc, char **argv);
	int (*run)(void);
	const char *args;	/* its options, for the help text */
	const char *summary;
};

/* Exit statuses: 0 done, 1 the operation failed, 2 bad usage. */
#define EXIT_USAGE	2

__attribute__((format(printf, 1, 2)))
void cli_err(const char *fmt, ...);

/* Parse argv with the command's long options plus the global ones
 * (-j/--json, -p/--pretty, --pin DIR, --map PATH, --prog-id ID, --pid PID,
 * -h/--help). Calls on(c, optarg) for each of the command's own; returns
 * 0, 1 if --help was printed (the caller returns 0), or -1 after a message
 * (the caller returns EXIT_USAGE). Leaves optind after the options. */
int cli_parse(int argc, char **argv, const struct option *own, const struct cmd *self,
	      int (*on)(int c, const char *arg));
/* parse() of the commands that have no options of their own (argv[0] is
 * the command's name). */
int cli_parse_plain(int argc, char **argv);
const struct cmd *cli_cmd(const char *name);
/* Everything main() does before a command runs: the global options (reset
 * to their defaults first), the command's name, its parse(). The command
 * to run, or NULL when there is none, with the exit status in *status (0
 * after help, EXIT_USAGE). argv as main() gets it. */
const struct cmd *cli_parse_args(int argc, char **argv, int *status);

/* s as a whole number in base (0: 0x and 0 prefixes too; white space and
 * '+' first taken, no '-') into *out: 0, or -1 (no message). */
int cli_parse_number(const char *s, int base, unsigned long long *out);
/* "N", "NK", "NM", "NG" (powers of 1024) into *out; -1 with a message. */
int cli_parse_size(const char *opt, const char *s, __u64 *out);
/* load's --tunable K=V or K:SIZE=V (heap_cmds.c) into *t: 0, or -1 with a
 * message. t is not validated as a whole (aa_tunables__validate()). */
int cli_parse_tunable(const char *arg, struct aa_tunables *t);

/* The heap pinned at cli.pin (or given by --map, --prog-id, --pid), or
 * NULL with a message naming the fix. */
struct aa_heap *cli_open_heap(void);
/* 0 if this process may use BPF (root, or CAP_BPF / CAP_SYS_ADMIN);
 * else -1 after a message that says to run command `name` as root. */
int cli_need_root(const char *name);
/* Whether this process has capability bit (CAP_*_BIT) in effect. */
#define CAP_SYS_ADMIN_BIT	21
#define CAP_BPF_BIT		39
bool cli_has_cap(int bit);
/* 0 if this process can create BPF arena maps (aa_probe_arena()); else
 * -1 after "name: <the probe's line>". */
int cli_need_arena(const char *name);
/* The start of run() of every command that works on a heap:
 * cli_need_root(), then cli_open_heap(). NULL (exit status 1) after a
 * message. */
struct aa_heap *cli_begin(const char *name);
/* Where the heap came from, for output: the pin dir, "arena map PATH",
 * "program ID" or "process PID". */
const char *cli_where(void);
/* The stats and dump reports of heap h (stats_cmd.c, dump_cmd.c), text or
 * JSON as cli.json says; where names the heap. The demo prints them too. */
void cli_print_stats(const struct aa_heap *h, const char *where);
void cli_print_dump(const struct aa_heap *h, const char *where);
/* Mount bpffs on /sys/fs/bpf if it is not there (as bpftool does). */
int cli_ensure_bpffs(void);

/* --- JSON writer (json.c): one document on a FILE, bpftool style --------- */
struct jw;
struct jw *jw_new(FILE *f, bool pretty);
void jw_destroy(struct jw *w);	/* ends the line */
void jw_start_object(struct jw *w);
void jw_end_object(struct jw *w);
void jw_start_array(struct jw *w);
void jw_end_array(struct jw *w);
void jw_name(struct jw *w, const char *name);
void jw_uint(struct jw *w, unsigned long long v);
void jw_int(struct jw *w, long long v);
void jw_string(struct jw *w, const char *s);
void jw_bool(struct jw *w, bool v);
void jw_double(struct jw *w, double v);
void jw_kv_uint(struct jw *w, const char *name, unsigned long long v);
void jw_kv_string(struct jw *w, const char *name, const char *s);

/* The commands (one file per group): their parse() and run(). */
int cmd_load_parse(int argc, char **argv);
int cmd_load(void);
int cmd_unload(void);
int cmd_grow_parse(int argc, char **argv);
int cmd_grow(void);
int cmd_trim_parse(int argc, char **argv);
int cmd_trim(void);
int cmd_drain(void);
int cmd_check(void);
int cmd_stats_parse(int argc, char **argv);
int cmd_stats(void);
int cmd_dump(void);
int cmd_refill_agent_parse(int argc, char **argv);
int cmd_refill_agent(void);
int cmd_demo_parse(int argc, char **argv);
int cmd_demo(void);
int cmd_errors_parse(int argc, char **argv);
int cmd_errors(void);
int cmd_probe(void);
/* Debug mode's totals (errors_cmd.c): a text line, a JSON member "debug". */
void cli_print_debug(const struct aa_heap *h);
void cli_json_debug(struct jw *w, const struct aa_heap *h);

#endif
