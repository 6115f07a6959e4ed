// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * burst.c - build/aa_bench_burst: a burst that empties the heap's reserve
 * with nothing growing it from userspace beforehand.
 *
 * A tc program (tests/bpf/test_self_grow.bpf.c, non-sleepable) keeps
 * --allocs objects of --size bytes (default 2^20 x 64 B: 64 MiB), 4096 per
 * run, runs back to back, from a fresh 1-MiB heap in a 256-MiB arena. Each
 * allocation is timed in BPF (bpf_ktime_get_ns() around aa_malloc) into a
 * histogram of quarter-octave buckets: a percentile is its bucket's lower
 * bound (at most 25% below the true value). Modes:
 *   fixed          AA_F_NO_SELF_GROW, no agent: NULLs once the heap is empty
 *   fixed+agent    AA_F_NO_SELF_GROW and a refill agent (a thread asleep in
 *                  aa_heap__wait_refill(), 4 MiB per aa_heap__refill()):
 *                  the way of kernels without self-growth
 *   self-grow      the default, no agent: allocations map chunks themselves
 *                  (Linux >= 7.0; elsewhere "fixed" again, so not run)
 *   self-grow+agent  both
 * Per mode: NULLs per 10^6 allocations, p50 / p99 / max latency, chunks
 * the allocations mapped and their mean cost (stats.self_grow_ns over
 * stats.self_grows), chunks the agent added.
 *
 * Usage: aa_bench_burst [--allocs N] [--size B] [--out FILE]
 *          measure on this kernel, print its table, append its rows to FILE
 *        aa_bench_burst --table FILE
 *          print the rows of FILE (several kernels: make bench-burst) as one
 *          table
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include "arena_alloc_internal.h"
#include "where.h"
#include "test_self_grow.h"
#include "test_self_grow.skel.h"

#define MiB		(1ULL << 20)
#define ARENA_PAGES	(1U << 16)	/* 256 MiB */
#define PER_RUN		4096

struct mode {
	const char *name;
	__u32 flags;
	bool agent;
	bool needs_self_grow;
};

static const struct mode modes[] = {
	{ "fixed", AA_F_NO_SELF_GROW, false, false },
	{ "fixed+agent", AA_F_NO_SELF_GROW, true, false },
	{ "self-grow", 0, false, true },
	{ "self-grow+agent", 0, true, true },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

struct row {
	char kernel[sizeof(((struct utsname *)0)->release)], mode[32];
	unsigned long long allocs, nulls, p50, p99, max, self_grows, grow_ns, agent_chunks, ms;
};

struct agent {
	struct aa_heap *h;
	volatile bool stop;
	unsigned long long chunks;
	int err;
};

static void *agent_main(void *arg)
{
	struct agent *a = arg;
	int rc;

	while (!a->stop) {
		rc = aa_heap__wait_refill(a->h, 20, NULL);
		if (rc < 0) {
			a->err = rc;
			break;
		}
		if (rc == 0)
			continue;
		rc = aa_heap__refill(a->h, 4 * MiB);
		if (rc > 0)
			a->chunks += rc;
	}
	return NULL;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The lower bound of the bucket that holds the rank-th sample (0-based). */
static unsigned long long percentile(const struct burst_out *o, double q)
{
	unsigned long long n = 0, rank, seen = 0;
	unsigned int b;

	for (b = 0; b < BURST_BUCKETS; b++)
		n += o->hist[b];
	if (!n)
		return 0;
	rank = (unsigned long long)(q * (n - 1));
	for (b = 0; b < BURST_BUCKETS; b++) {
		seen += o->hist[b];
		if (seen > rank)
			return burst_bucket_ns(b);
	}
	return 0;
}

/* One mode on this kernel: 0 and *out, or -errno (said). */
static int run_mode(const struct mode *m, __u64 allocs, __u64 size, struct row *out)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = MiB, .flags = m->flags);
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = pkt, .data_size_in = sizeof(pkt));
	struct agent a = {};
	struct test_self_grow *s;
	const struct aa_root *r;
	struct burst_out *res;
	pthread_t th;
	__u64 done = 0;
	double t0;
	int err = 0;

	s = test_self_grow__open();
	if (!s)
		return -errno;
	if ((err = bpf_map__set_max_entries(s->maps.arena, ARENA_PAGES)) ||
	    (err = test_self_grow__load(s))) {
		fprintf(stderr, "burst: load: %s\n", strerror(-err));
		test_self_grow__destroy(s);
		return err;
	}
	a.h = aa_heap__attach(s->obj, &o);
	if (!a.h) {
		err = -errno;
		fprintf(stderr, "burst: attach: %s\n", strerror(errno));
		test_self_grow__destroy(s);
		return err;
	}
	r = aa_heap__root(a.h);
	if (m->agent && pthread_create(&th, NULL, agent_main, &a)) {
		err = -EAGAIN;
		goto out;
	}
	s->bss->cfg.size = size;
	s->bss->cfg.keep = 1;
	t0 = now_ms();
	while (done < allocs) {
		s->bss->cfg.per_run = allocs - done < PER_RUN ? allocs - done : PER_RUN;
		if (bpf_prog_test_run_opts(bpf_program__fd(s->progs.burst), &t)) {
			err = -errno;
			fprintf(stderr, "burst: test run: %s\n", strerror(errno));
			break;
		}
		done += s->bss->cfg.per_run;
	}
	out->ms = now_ms() - t0;
	if (m->agent) {
		a.stop = true;
		pthread_join(th, NULL);
		if (a.err && !err)
			err = a.err;
	}
	res = &s->bss->out;
	snprintf(out->mode, sizeof(out->mode), "%s", m->name);
	out->allocs = res->ok + res->nulls;
	out->nulls = res->nulls;
	out->p50 = percentile(res, 0.50);
	out->p99 = percentile(res, 0.99);
	out->max = res->max_ns;
	out->self_grows = r->stats.self_grows;
	out->grow_ns = r->stats.self_grows ? r->stats.self_grow_ns / r->stats.self_grows : 0;
	out->agent_chunks = a.chunks;
out:
	aa_heap__destroy(a.h);
	test_self_grow__destroy(s);
	return err;
}

static void print_header(void)
{
	printf("%-34s %-16s %10s %12s %9s %9s %10s %8s %10s %7s %8s\n", "kernel", "mode",
	       "allocs", "NULL/10^6", "p50 ns", "p99 ns", "max ns", "grown", "ns/chunk",
	       "agent", "ms");
}

static void print_row(const struct row *w)
{
	printf("%-34s %-16s %10llu %12.0f %9llu %9llu %10llu %8llu %10llu %7llu %8llu\n",
	       w->kernel, w->mode, w->allocs, w->allocs ? 1e6 * w->nulls / w->allocs : 0.0,
	       w->p50, w->p99, w->max, w->self_grows, w->grow_ns, w->agent_chunks, w->ms);
}

static int write_row(FILE *f, const struct row *w)
{
	return fprintf(f, "%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
		       w->kernel, w->mode, w->allocs, w->nulls, w->p50, w->p99, w->max,
		       w->self_grows, w->grow_ns, w->agent_chunks, w->ms) < 0 ? -EIO : 0;
}

static int print_table(const char *path)
{
	char line[512];
	struct row w;
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f) {
		fprintf(stderr, "burst: %s: %s\n", path, strerror(errno));
		return 1;
	}
	print_header();
	while (fgets(line, sizeof(line), f)) {
		memset(&w, 0, sizeof(w));
		if (sscanf(line, "%64[^\t]\t%31[^\t]\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu",
			   w.kernel, w.mode, &w.allocs, &w.nulls, &w.p50, &w.p99, &w.max,
			   &w.self_grows, &w.grow_ns, &w.agent_chunks, &w.ms) != 11) {
			fprintf(stderr, "burst: %s: not a row: %s", path, line);
			fclose(f);
			return 1;
		}
		print_row(&w);
		n++;
	}
	fclose(f);
	if (!n) {
		fprintf(stderr, "burst: %s has no rows\n", path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "allocs", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "table", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	__u64 allocs = 1ULL << 20, size = 64;
	const char *out_path = NULL;
	bool self_grow;
	struct utsname u;
	FILE *out = NULL;
	struct row w;
	int c, err, runs = 0;
	unsigned int i;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': allocs = strtoull(optarg, NULL, 0); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'o': out_path = optarg; break;
		case 't': return print_table(optarg);
		default:
			fprintf(stderr, "usage: aa_bench_burst [--allocs N] [--size B] [--out FILE] | --table FILE\n");
			return 2;
		}
	}
	if (!allocs || !size || size > MiB) {
		fprintf(stderr, "burst: --allocs must be > 0 and --size in 1 .. 1 MiB\n");
		return 2;
	}
	if (out_path && !(out = fopen(out_path, "a"))) {
		fprintf(stderr, "burst: %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	uname(&u);
	self_grow = atoi(u.release) >= 7;
	printf("Burst: %llu x %llu B kept from a tc program, a 1-MiB heap, no grow beforehand\n",
	       (unsigned long long)allocs, (unsigned long long)size);
	printf("  measured on: %s\n", where_str());
	if (where_tcg())
		printf("  %s\n", where_caution());
	print_header();
	for (i = 0; i < NMODES; i++) {
		if (modes[i].needs_self_grow && !self_grow)
			continue;
		memset(&w, 0, sizeof(w));
		snprintf(w.kernel, sizeof(w.kernel), "%s", u.release);
		err = run_mode(&modes[i], allocs, size, &w);
		if (err) {
			fprintf(stderr, "burst: mode %s: %s\n", modes[i].name, strerror(-err));
			if (out)
				fclose(out);
			return 1;
		}
		print_row(&w);
		if (out && write_row(out, &w)) {
			fclose(out);
			return 1;
		}
		runs++;
	}
	if (out)
		fclose(out);
	return runs ? 0 : 1;
}
