// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * errors_cmd.c - `arena-alloc errors`: what debug mode (load --debug,
 * AA_F_DEBUG) found in a heap: the counts per kind and the first
 * AA_DEBUG_RECORDS errors, from the mmap (any heap: pinned, --map,
 * --prog-id, --pid); with --follow, every new error from the ring buffer
 * aa_debug_rb as it happens. Also the summary lines `stats` prints.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

static double follow_secs = -1;	/* < 0: no --follow; 0: until SIGINT */
static volatile sig_atomic_t stop;

static void on_int(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *class_name(__u32 cls, char *buf, size_t sz)
{
	if (cls < AA_NR_CLASSES)
		snprintf(buf, sz, "%u", aa_class_size(cls));
	else
		snprintf(buf, sz, "%s", cls == AA_DEBUG_CLS_RUN ? "run" : "-");
	return buf;
}

/* One error, as a table row or a JSON object. */
static void print_error(struct jw *w, const struct aa_debug_error *e, __u64 now_ns)
{
	char cls[16];

	class_name(e->cls, cls, sizeof(cls));
	if (w) {
		jw_start_object(w);
		jw_kv_uint(w, "seq", e->seq);
		jw_kv_string(w, "kind", aa_debug_kind_str(e->kind));
		jw_kv_uint(w, "addr", e->addr);
		jw_kv_string(w, "class", cls);
		jw_kv_uint(w, "size", e->size);
		jw_kv_uint(w, "requested", e->req);
		jw_name(w, "offset");
		jw_int(w, e->offset);
		jw_kv_uint(w, "found", e->found);
		jw_kv_uint(w, "cpu", e->cpu);
		jw_kv_uint(w, "ts_ns", e->ts_ns);
		jw_end_object(w);
		return;
	}
	printf("%5u %-14s 0x%012llx %5s %6u %6u %6d  0x%016llx %3u %9.3f s ago\n", e->seq,
	       aa_debug_kind_str(e->kind), (unsigned long long)e->addr, cls, e->size, e->req,
	       e->offset, (unsigned long long)e->found, e->cpu,
	       now_ns > e->ts_ns ? (now_ns - e->ts_ns) / 1e9 : 0.0);
}

static void print_header(void)
{
	printf("%5s %-14s %-14s %5s %6s %6s %6s  %-18s %3s %s\n", "#", "kind", "address",
	       "class", "size", "asked", "offset", "found", "cpu", "when");
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One line of totals (stats and errors share it). */
void cli_print_debug(const struct aa_heap *h)
{
	const struct aa_debug *d = &aa_heap__root(h)->debug;
	int k;

	if (!(aa_heap__root(h)->flags & AA_F_DEBUG)) {
		printf("debug mode: off (arena-alloc load --debug, or ARENA_ALLOC_DEBUG=1)\n");
		return;
	}
	printf("debug mode: %llu errors found (", (unsigned long long)d->recorded);
	for (k = 0; k < AA_DBG_NR_KINDS; k++)
		printf("%s%s %llu", k ? ", " : "", aa_debug_kind_str(k),
		       (unsigned long long)d->errors[k]);
	printf("); ring events lost %llu\n"
	       "quarantine: %u slots, %llu objects (%llu B) held\n",
	       (unsigned long long)d->events_lost, aa_heap__root(h)->tun.quarantine,
	       (unsigned long long)d->q_objs, (unsigned long long)d->q_bytes);
}

/* The same as a JSON member "debug" of an object being written. */
void cli_json_debug(struct jw *w, const struct aa_heap *h)
{
	const struct aa_root *r = aa_heap__root(h);
	int k;

	jw_name(w, "debug");
	jw_start_object(w);
	jw_name(w, "enabled");
	jw_bool(w, r->flags & AA_F_DEBUG);
	jw_kv_uint(w, "errors_found", r->debug.recorded);
	for (k = 0; k < AA_DBG_NR_KINDS; k++)
		jw_kv_uint(w, aa_debug_kind_str(k), r->debug.errors[k]);
	jw_kv_uint(w, "events_lost", r->debug.events_lost);
	jw_kv_uint(w, "quarantine_slots", r->tun.quarantine);
	jw_kv_uint(w, "quarantine_objects", r->debug.q_objs);
	jw_kv_uint(w, "quarantine_bytes", r->debug.q_bytes);
	jw_end_object(w);
}

/* --follow: every new error from the ring until the time is up. */
static int follow(struct aa_heap *h)
{
	double end = now_ns() / 1e9 + follow_secs;
	struct aa_debug_error e;
	struct jw *w;
	int r, n = 0, wait;

	signal(SIGINT, on_int);
	signal(SIGTERM, on_int);
	if (!cli.json)
		print_header();
	fflush(stdout);
	while (!stop) {
		wait = 200;
		if (follow_secs > 0 && end - now_ns() / 1e9 < 0.2)
			wait = end > now_ns() / 1e9 ? (end - now_ns() / 1e9) * 1000 : 0;
		r = aa_heap__wait_error(h, wait, &e);
		if (r < 0 && r != -EINTR) {
			cli_err("errors: --follow: %s", strerror(-r));
			return 1;
		}
		if (r == 1) {
			w = cli.json ? jw_new(stdout, false) : NULL;	/* one object a line */
			print_error(w, &e, now_ns());
			if (w)
				jw_destroy(w);
			fflush(stdout);
			n++;
		}
		if (follow_secs > 0 && now_ns() / 1e9 >= end)
			break;
	}
	if (!cli.json)
		printf("errors: --follow saw %d new errors\n", n);
	return 0;
}

static int errors_opt(int c, const char *arg)
{
	char *end;

	if (c != 'f')
		return -1;
	follow_secs = strtod(arg, &end);
	if (*end || !*arg || !(follow_secs >= 0 && follow_secs <= 86400)) {
		cli_err("errors: --follow '%s': give seconds, 0 (until Ctrl-C) .. 86400", arg);
		return -1;
	}
	return 0;
}

int cmd_errors_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", required_argument, NULL, 'f' },
		{},
	};

	follow_secs = -1;
	return cli_parse(argc, argv, opts, cli_cmd("errors"), errors_opt);
}

int cmd_errors(void)
{
	struct aa_debug_error recs[AA_DEBUG_RECORDS];
	__u64 total = 0, now = now_ns();
	struct aa_heap *h;
	int status, n, i;
	struct jw *w;

	h = cli_begin("errors");
	if (!h)
		return 1;
	if (follow_secs >= 0) {
		status = follow(h);
		aa_heap__destroy(h);
		return status;
	}
	n = aa_heap__errors(h, recs, AA_DEBUG_RECORDS, &total);
	if (n < 0) {
		cli_err("errors: %s", strerror(-n));
		aa_heap__destroy(h);
		return 1;
	}
	if (cli.json) {
		w = jw_new(stdout, cli.pretty);
		jw_start_object(w);
		jw_kv_string(w, "source", cli_where());
		cli_json_debug(w, h);
		jw_name(w, "records");
		jw_start_array(w);
		for (i = 0; i < n; i++)
			print_error(w, &recs[i], now);
		jw_end_array(w);
		jw_end_object(w);
		jw_destroy(w);
	} else {
		printf("heap at %s\n", cli_where());
		cli_print_debug(h);
		if (n) {
			printf("\n");
			print_header();
			for (i = 0; i < n; i++)
				print_error(NULL, &recs[i], now);
		}
		if (total > (__u64)n)
			printf("(%llu more not kept: the first %u are; --follow shows each as it "
			       "happens)\n", (unsigned long long)(total - n), AA_DEBUG_RECORDS);
	}
	aa_heap__destroy(h);
	return 0;
}
