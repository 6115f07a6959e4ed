// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * agent.c - `arena-alloc refill-agent`: stays in the foreground and grows
 * the heap whenever the low-watermark signal (aa_root.need_refill, raised
 * by an allocation that found the heap short) is up, logging each refill
 * with a timestamp; on heaps with deferred free it also runs the reclaim
 * rounds (aa_heap__reclaim()) while limbo holds objects, and reclaims
 * before it grows; once a second it reaps the user caches of processes
 * that died (aa_heap__reap()). Exits 0 on SIGINT/SIGTERM.
 *
 * How it learns of the signal: it sleeps in epoll on the heap's refill
 * event ring (aa_heap__wait_refill(): BPF writes one event per raise), so
 * it reacts within the wake-up plus the grow and costs nothing idle; it
 * re-reads the flag once a second in case an event was lost (counted in
 * refill_events_lost). A heap without the ring (an object built with an
 * older library) is read every --interval-ms instead (default 200).
 * Each refill's log line gives the reaction time: from the event's
 * bpf_ktime_get_ns() stamp to the end of the grow, same clock.
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

static __u64 agent_bytes, agent_interval;

static int agent_opt(int c, const char *arg)
{
	if (c == 'b')
		return cli_parse_size("--bytes", arg, &agent_bytes) || !agent_bytes ? -1 : 0;
	if (c == 'i') {
		if (cli_parse_number(arg, 10, &agent_interval) || agent_interval < 10 ||
		    agent_interval > 60000) {
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

/* Milliseconds since the raise stamped in ev (CLOCK_MONOTONIC), or -1. */
static double since_raise(const struct aa_refill_event *ev)
{
	return ev->ts_ns ? now_ms() - ev->ts_ns / 1e6 : -1;
}

/* Deferred frees: rounds are logged once a second at most. */
struct reclaim_log {
	unsigned long rounds, objects;
	double since;
};

static void reclaim_log(struct aa_heap *h, struct reclaim_log *r, bool last)
{
	const struct aa_defer *d = &aa_heap__root(h)->defer;
	char ts[40];

	if (!r->rounds || (!last && now_ms() - r->since < 1000))
		return;
	stamp(ts, sizeof(ts));
	printf("%s reclaim: %lu rounds freed %lu objects in %.1f s; deferred -> freed: last "
	       "%.2f ms, max %.2f ms, mean %.2f ms; %llu objects in limbo\n", ts, r->rounds,
	       r->objects, (now_ms() - r->since) / 1e3, d->latency_last_ns / 1e6,
	       d->latency_max_ns / 1e6,
	       d->reclaimed ? (double)d->latency_sum_ns / d->reclaimed / 1e6 : 0.0,
	       (unsigned long long)d->pending_objs);
	r->rounds = r->objects = 0;
	r->since = now_ms();
}

static long reclaim_round(struct aa_heap *h, struct reclaim_log *r)
{
	long n;

	if (!r->rounds)
		r->since = now_ms();
	n = aa_heap__reclaim(h);
	if (n < 0) {
		cli_err("refill-agent: reclaim failed: %s", strerror(-n));
		return n;
	}
	r->rounds++;
	r->objects += n;
	reclaim_log(h, r, false);
	return n;
}

static const char *const reasons[] = {
	[AA_EV_LOW_WATERMARK] = "below the low watermark",
	[AA_EV_NOMEM] = "an allocation failed",
	[AA_EV_LIMBO_LIMIT] = "limbo over its limit",
	[AA_EV_LIMBO_START] = "limbo started",
};

/* Answer need_refill (limbo first on heaps with deferred free); log it.
 * Returns whether the signal was answered. */
static bool refill(struct aa_heap *h, const struct aa_refill_event *ev)
{
	double t0 = now_ms();
	char ts[40];
	int n;

	n = aa_heap__refill(h, agent_bytes);
	stamp(ts, sizeof(ts));
	if (n < 0) {
		printf("%s refill: could not grow: %s; retrying\n", ts, strerror(-n));
		return false;
	}
	if (n > 0)
		printf("%s refill: +%d chunks in %.1f ms", ts, n, now_ms() - t0);
	else
		printf("%s refill: answered by a reclaim in %.1f ms, no growth needed", ts,
		       now_ms() - t0);
	if (ev->ts_ns)
		printf("; raised on CPU %u (%s, %llu KiB in use of %llu KiB), %.2f ms ago", ev->cpu,
		       ev->reason < 4 ? reasons[ev->reason] : "?",
		       (unsigned long long)ev->bytes_in_use >> 10,
		       (unsigned long long)ev->bytes_mapped >> 10, since_raise(ev));
	printf(" (refill signals so far %llu)\n",
	       (unsigned long long)aa_heap__root(h)->refill_signals);
	return true;
}

/* The user caches of processes that died: closed, and said, once a
 * second at most. */
static void reap(struct aa_heap *h)
{
	static time_t last;
	time_t now = time(NULL);
	char ts[40];
	int n;

	if (now == last)
		return;
	last = now;
	n = aa_heap__reap(h);
	if (n <= 0)
		return;
	stamp(ts, sizeof(ts));
	printf("%s refill-agent: reaped the caches of %d userspace thread(s) whose process died\n",
	       ts, n);
}

int cmd_refill_agent_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{},
	};

	agent_bytes = AA_GROW_BYTES_DEFAULT;
	agent_interval = 200;
	return cli_parse(argc, argv, opts, cli_cmd("refill-agent"), agent_opt);
}

int cmd_refill_agent(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct reclaim_log rec = {};
	struct aa_refill_event ev;
	unsigned long refills = 0;
	struct timespec nap;
	struct aa_heap *h;
	int n;
	bool ring;
	char ts[40];

	h = cli_begin("refill-agent");
	if (!h)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGINT, &sa, NULL);	/* no SA_RESTART: the wait ends */
	sigaction(SIGTERM, &sa, NULL);
	ring = aa_heap__refill_fd(h) >= 0;
	nap.tv_sec = agent_interval / 1000;
	nap.tv_nsec = (agent_interval % 1000) * 1000000L;
	stamp(ts, sizeof(ts));
	if (ring)
		printf("%s refill-agent: waiting on the refill event ring, %llu bytes per refill\n",
		       ts, (unsigned long long)agent_bytes);
	else
		printf("%s refill-agent: this heap has no refill event ring: reading the flag every %llu ms, %llu bytes per refill\n",
		       ts, (unsigned long long)agent_interval, (unsigned long long)agent_bytes);
	while (!stop) {
		n = aa_heap__wait_refill(h, ring ? 1000 : 0, &ev);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			cli_err("refill-agent: waiting for the signal failed: %s", strerror(-n));
			aa_heap__destroy(h);
			return 1;
		}
		if (n == 2) {		/* deferred frees in limbo */
			if (reclaim_round(h, &rec) < 0)
				nanosleep(&nap, NULL);
			continue;
		}
		if (n == 0) {
			if (!ring)
				nanosleep(&nap, NULL);	/* a signal ends it early */
			reap(h);
			continue;
		}
		if (refill(h, &ev))
			refills++;
		else
			nanosleep(&nap, NULL);
	}
	reclaim_log(h, &rec, true);
	stamp(ts, sizeof(ts));
	printf("%s refill-agent: stopped after %lu refills\n", ts, refills);
	aa_heap__destroy(h);
	return 0;
}
