// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * agent.c - `arena-alloc refill-agent`: stays in the foreground and grows
 * the heap whenever the low-watermark signal (aa_root.need_refill, raised
 * by an allocation that found the heap short) is up, logging each refill
 * with a timestamp; exits 0 on SIGINT/SIGTERM.
 *
 * How it learns of the signal: a timed read of need_refill in the mmapped
 * root, every --interval-ms (default 200: 5 reads a second, no syscall and
 * no allocator program run per read). Reaction latency is at most the
 * interval plus the grow; an event mechanism (a ring buffer the
 * allocator writes) is still to come.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static __u64 agent_bytes = 4 << 20, agent_interval = 200;

static int agent_opt(int c, const char *arg)
{
	char *end;

	if (c == 'b')
		return cli_parse_size("--bytes", arg, &agent_bytes) || !agent_bytes ? -1 : 0;
	if (c == 'i') {
		errno = 0;
		agent_interval = strtoull(arg, &end, 10);
		if (errno || *end || !*arg || agent_interval < 10 || agent_interval > 60000) {
			cli_err("refill-agent: --interval-ms '%s': give 10 .. 60000", arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void stamp(char *buf, size_t sz)
{
	struct timespec t;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &t);
	localtime_r(&t.tv_sec, &tm);
	n = strftime(buf, sz, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sz - n, ".%03ld", t.tv_nsec / 1000000);
}

int cmd_refill_agent(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{},
	};
	struct timespec nap;
	struct sigaction sa = { .sa_handler = on_signal };
	const volatile __u32 *flag;
	unsigned long refills = 0;
	struct aa_heap *h;
	char ts[40];
	double t0;
	int n, status;

	h = cli_begin(argc, argv, "refill-agent", opts, agent_opt, &status);
	if (!h)
		return status;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	flag = (const volatile __u32 *)&aa_heap__root(h)->need_refill;
	stamp(ts, sizeof(ts));
	printf("%s refill-agent: watching, %llu bytes per refill, every %llu ms\n", ts,
	       (unsigned long long)agent_bytes, (unsigned long long)agent_interval);
	nap.tv_sec = agent_interval / 1000;
	nap.tv_nsec = (agent_interval % 1000) * 1000000L;
	while (!stop) {
		if (!*flag) {
			nanosleep(&nap, NULL);	/* a signal ends it early */
			continue;
		}
		t0 = now_ms();
		n = aa_heap__refill(h, agent_bytes);
		stamp(ts, sizeof(ts));
		if (n > 0) {
			refills++;
			printf("%s refill: +%d chunks in %.1f ms (refill signals so far %llu)\n", ts,
			       n, now_ms() - t0,
			       (unsigned long long)aa_heap__root(h)->refill_signals);
		} else {
			printf("%s refill: could not grow: %s; retrying\n", ts,
			       n ? strerror(-n) : "nothing to do");
			nanosleep(&nap, NULL);
		}
	}
	stamp(ts, sizeof(ts));
	printf("%s refill-agent: stopped after %lu refills\n", ts, refills);
	aa_heap__destroy(h);
	return 0;
}
