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
#include "arena_alloc.h"

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

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *args;	/* its options, for the help text */
	const char *summary;
};

/* Exit statuses: 0 done, 1 the operation failed, 2 bad usage. */
#define EXIT_USAGE	2

__attribute__((format(printf, 1, 2)))
void cli_err(const char *fmt, ...);

/* Parse argv with the command's long options plus the global ones
 * (-j/--json, -p/--pretty, --pin DIR, -h/--help). Calls on(c, optarg) for
 * each of the command's own; returns 0, 1 if --help was printed (the
 * caller returns 0), or -1 after a message (the caller returns
 * EXIT_USAGE). Leaves optind after the options. */
int cli_parse(int argc, char **argv, const struct option *own, const struct cmd *self,
	      int (*on)(int c, const char *arg));
const struct cmd *cli_cmd(const char *name);

/* "N", "NK", "NM", "NG" (powers of 1024) into *out; -1 with a message. */
int cli_parse_size(const char *opt, const char *s, __u64 *out);

/* The heap pinned at cli.pin (or given by --map, --prog-id, --pid), or
 * NULL with a message naming the fix. */
struct aa_heap *cli_open_heap(void);
/* 0 if this process may use BPF (root, or CAP_BPF / CAP_SYS_ADMIN);
 * else -1 after a message that says to run command `name` as root. */
int cli_need_root(const char *name);
/* The start of every command that works on a heap: cli_parse(), then
 * cli_need_root(), cli_open_heap(). NULL when the command is over, its exit status in
 * *status (0 after --help, EXIT_USAGE, or 1: no heap). */
struct aa_heap *cli_begin(int argc, char **argv, const char *name, const struct option *own,
			  int (*on)(int c, const char *arg), int *status);
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

/* The commands (one file per group). */
int cmd_load(int argc, char **argv);
int cmd_unload(int argc, char **argv);
int cmd_grow(int argc, char **argv);
int cmd_trim(int argc, char **argv);
int cmd_drain(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_refill_agent(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_errors(int argc, char **argv);
/* Debug mode's totals (errors_cmd.c): a text line, a JSON member "debug". */
void cli_print_debug(const struct aa_heap *h);
void cli_json_debug(struct jw *w, const struct aa_heap *h);

#endif
