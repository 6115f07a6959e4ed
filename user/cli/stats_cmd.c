// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats_cmd.c - `arena-alloc stats`: the heap's counters, read from the
 * mmapped arena only (no allocator program runs): totals, every error and
 * contention counter, a per-CPU x size-class table of the CPU caches and
 * one of the user caches (userspace threads');
 * --watch SECS refreshes it in place with rates per second.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

/* A CPU cache's class, or a user cache's (a userspace thread's: cpu is
 * then the cache's index, pid and tid its owner's), as the table shows
 * it; hits are derived (no hit counter: aa_class_hits() of aa_shared.h,
 * a lower bound clamped to [0, allocs]). */
struct row {
	int cpu, cls;
	__u32 size, cached, reserve;	/* objects in the LIFO, in the reserve */
	bool user;
	__u32 pid, tid;
	const struct aa_cpu_class_stats *s;
	const struct aa_cpu_class *k;
};

static bool row_active(const struct row *r)
{
	return r->cached || r->reserve || r->s->allocs || r->s->frees || r->s->failures ||
	       r->s->nested || r->k->reserve_allocs;
}

static __u64 row_hits(const struct row *r)
{
	return aa_class_hits(r->s->allocs, r->s->failures, r->s->misses);
}

static void cache_rows(const struct aa_heap *h, const struct aa_cpu_cache *cc, struct row *r,
		       void (*fn)(const struct row *, void *), void *ctx)
{
	r->pid = cc->owner_pid;
	r->tid = cc->owner_tid;
	for (r->cls = 0; r->cls < AA_NR_CLASSES; r->cls++) {
		r->k = &cc->cls[r->cls];
		r->size = aa_class_size(r->cls);
		r->cached = r->k->count;
		r->reserve = aa_reserve_objs(&r->k->reserve, aa_heap__root(h)->cache_key);
		r->s = &r->k->stats;
		if (row_active(r))
			fn(r, ctx);
	}
}

/* Calls fn for every active (cpu, class) of the heap's CPU caches. */
static void for_each_row(const struct aa_heap *h, void (*fn)(const struct row *, void *), void *ctx)
{
	const struct aa_cpu_cache *cc;
	struct row r;

	r.user = false;
	for (r.cpu = 0; (cc = aa_heap__cpu_cache(h, r.cpu)); r.cpu++)
		cache_rows(h, cc, &r, fn, ctx);
}

/* And for every active (cache, class) of its user caches. */
static void for_each_user_row(const struct aa_heap *h, void (*fn)(const struct row *, void *),
			      void *ctx)
{
	const struct aa_cpu_cache *cc;
	struct row r;

	r.user = true;
	for (r.cpu = 0; r.cpu < AA_MAX_USER_CACHES; r.cpu++)
		if ((cc = aa_heap__user_cache(h, r.cpu)))
			cache_rows(h, cc, &r, fn, ctx);
}

static void print_row(const struct row *r, void *ctx)
{
	(void)ctx;
	printf("%4d %6u %10llu %10llu %10llu %8llu %8llu %8llu %7llu %8llu %7u %7u %9llu %9llu\n",
	       r->cpu, r->size, (unsigned long long)r->s->allocs, (unsigned long long)r->s->frees,
	       (unsigned long long)row_hits(r), (unsigned long long)r->s->misses,
	       (unsigned long long)r->s->refills, (unsigned long long)r->s->spills,
	       (unsigned long long)r->s->nested, (unsigned long long)r->s->failures, r->cached,
	       r->reserve, (unsigned long long)r->k->reserve_allocs,
	       (unsigned long long)r->k->reserve_frees);
}

static void print_user_row(const struct row *r, void *ctx)
{
	(void)ctx;
	printf("%4d %7u %7u %6u %10llu %10llu %10llu %8llu %8llu %8llu %7u\n", r->cpu, r->pid,
	       r->tid, r->size, (unsigned long long)r->s->allocs, (unsigned long long)r->s->frees,
	       (unsigned long long)row_hits(r), (unsigned long long)r->s->misses,
	       (unsigned long long)r->s->refills, (unsigned long long)r->s->spills, r->cached);
}

static void json_row(const struct row *r, void *ctx)
{
	struct jw *w = ctx;

	jw_start_object(w);
	if (r->user) {
		jw_kv_uint(w, "cache", r->cpu);
		jw_kv_uint(w, "owner_pid", r->pid);
		jw_kv_uint(w, "owner_tid", r->tid);
	} else {
		jw_kv_uint(w, "cpu", r->cpu);
	}
	jw_kv_uint(w, "class", r->cls);
	jw_kv_uint(w, "size", r->size);
	jw_kv_uint(w, "allocs", r->s->allocs);
	jw_kv_uint(w, "frees", r->s->frees);
	jw_kv_uint(w, "hits", row_hits(r));
	jw_kv_uint(w, "misses", r->s->misses);
	jw_kv_uint(w, "refills", r->s->refills);
	jw_kv_uint(w, "spills", r->s->spills);
	jw_kv_uint(w, "nested", r->s->nested);
	jw_kv_uint(w, "failures", r->s->failures);
	jw_kv_uint(w, "cached", r->cached);
	if (!r->user) {
		jw_kv_uint(w, "reserve", r->reserve);
		jw_kv_uint(w, "reserve_allocs", r->k->reserve_allocs);
		jw_kv_uint(w, "reserve_frees", r->k->reserve_frees);
	}
	jw_end_object(w);
}

static void json_class_array(struct jw *w, const char *name, const __u32 *v)
{
	int c;

	jw_name(w, name);
	jw_start_array(w);
	for (c = 0; c < AA_NR_CLASSES; c++)
		jw_uint(w, v[c]);
	jw_end_array(w);
}

/* Fault injection is shown while it is on, or once it failed a call. */
static bool fault_shown(const struct aa_fault *f)
{
	return f->pages_every || f->spans_every || f->page_faults || f->span_faults;
}

static void json_stats(const struct aa_heap *h, const char *where, const struct aa_stats *st,
		       __u64 cached_bytes, __u64 cached_objs)
{
	const struct aa_root *r = aa_heap__root(h);
	struct jw *w = jw_new(stdout, cli.pretty);
	int k;

	jw_start_object(w);
	jw_kv_string(w, "source", where);
	jw_kv_uint(w, "layout", r->version);
	jw_kv_uint(w, "page_size", AA_PAGE_SIZE);
	jw_kv_uint(w, "arena_bytes", aa_heap__arena_size(h));
	jw_kv_uint(w, "nr_cpus", r->nr_cpus);
	jw_name(w, "caches");
	jw_bool(w, !(r->flags & AA_F_NO_CACHES));
	jw_name(w, "heap");
	jw_start_object(w);
	jw_kv_uint(w, "bytes_in_use", st->bytes_in_use);
	jw_kv_uint(w, "peak_bytes_in_use", st->heap_peak_bytes);
	jw_kv_uint(w, "live_allocs", st->live_allocs);
	jw_kv_uint(w, "allocs", st->nr_allocs);
	jw_kv_uint(w, "frees", st->nr_frees);
	jw_kv_uint(w, "cached_bytes", cached_bytes);
	jw_kv_uint(w, "cached_objects", cached_objs);
	jw_kv_uint(w, "quarantined_bytes", st->quarantined_bytes);
	jw_kv_uint(w, "quarantined_objects", st->quarantined_objs);
	jw_kv_uint(w, "limbo_bytes", st->limbo_bytes);
	jw_kv_uint(w, "limbo_objects", st->limbo_objs);
	jw_kv_uint(w, "limbo_nodes", st->limbo_nodes);
	jw_kv_uint(w, "limbo_node_bytes", st->limbo_node_bytes);
	jw_kv_uint(w, "parked_objects", st->parked_objs);
	jw_kv_uint(w, "heap_bytes_in_use", st->heap_bytes);
	jw_kv_uint(w, "heap_live_objects", st->heap_live);
	jw_kv_uint(w, "heap_allocs", st->heap_allocs);
	jw_kv_uint(w, "heap_frees", st->heap_frees);
	jw_kv_uint(w, "pages_mapped", st->pages_mapped);
	jw_kv_uint(w, "peak_pages_mapped", st->peak_pages_mapped);
	jw_kv_uint(w, "chunks", st->nr_chunks);
	jw_kv_uint(w, "large_chunks", st->large_chunks);
	jw_kv_uint(w, "span_pages", st->span_pages);
	jw_kv_uint(w, "run_pages", st->run_pages);
	jw_kv_uint(w, "absent_pages", st->absent_pages);
	jw_kv_uint(w, "table_pages", r->table_pages);
	jw_kv_uint(w, "grows", st->nr_grows);
	jw_kv_uint(w, "trims", st->nr_trims);
	jw_name(w, "self_grow");
	jw_bool(w, r->flags & AA_F_SELF_GROW);
	jw_kv_uint(w, "self_grows", st->self_grows);
	jw_kv_uint(w, "self_grow_fails", st->self_grow_fails);
	jw_kv_uint(w, "self_grow_ns", st->self_grow_ns);
	jw_kv_uint(w, "self_inits", r->self_inits);
	jw_name(w, "self_init_err");
	jw_int(w, r->self_init_err);
	jw_kv_uint(w, "refill_signals", r->refill_signals);
	jw_kv_uint(w, "refill_events_lost", st->refill_events_lost);
	jw_kv_uint(w, "reader_stalls", st->reader_stalls);
	jw_name(w, "need_refill");
	jw_bool(w, r->need_refill);
	jw_name(w, "free_blocks");
	jw_start_array(w);
	for (k = 0; k < AA_NR_ORDERS; k++)
		jw_uint(w, st->free_blocks[k]);
	jw_end_array(w);
	jw_end_object(w);
	if (r->flags & AA_F_DEFER) {
		const struct aa_defer *d = &r->defer;

		jw_name(w, "deferred");
		jw_start_object(w);
		jw_kv_uint(w, "pending_objects", d->pending_objs);
		jw_kv_uint(w, "pending_bytes", d->pending_bytes);
		jw_kv_uint(w, "peak_pending_bytes", d->peak_pending_bytes);
		jw_kv_uint(w, "epoch", d->epoch);
		jw_kv_uint(w, "oldest_epoch", d->oldest_epoch);
		jw_kv_uint(w, "reclaimed_epoch", d->reclaim_epoch);
		jw_kv_uint(w, "grace_periods", d->grace_periods);
		jw_kv_uint(w, "deferred", d->deferred);
		jw_kv_uint(w, "reclaimed", d->reclaimed);
		jw_kv_uint(w, "node_failures", d->node_failures);
		jw_kv_uint(w, "nomem_in_limbo", d->nomem_in_limbo);
		jw_kv_uint(w, "limit_signals", d->limit_signals);
		jw_kv_uint(w, "limit_refusals", d->limit_refusals);
		jw_kv_uint(w, "latency_last_ns", d->latency_last_ns);
		jw_kv_uint(w, "latency_max_ns", d->latency_max_ns);
		jw_kv_uint(w, "latency_mean_ns", d->reclaimed ? d->latency_sum_ns / d->reclaimed : 0);
		jw_end_object(w);
	}
	cli_json_debug(w, h);
	if (fault_shown(&r->fault)) {
		jw_name(w, "fault_injection");
		jw_start_object(w);
		jw_kv_uint(w, "pages_every", r->fault.pages_every);
		jw_kv_uint(w, "spans_every", r->fault.spans_every);
		jw_kv_uint(w, "page_calls", r->fault.page_calls);
		jw_kv_uint(w, "page_faults", r->fault.page_faults);
		jw_kv_uint(w, "span_calls", r->fault.span_calls);
		jw_kv_uint(w, "span_faults", r->fault.span_faults);
		jw_end_object(w);
	}
	jw_name(w, "tunables");
	jw_start_object(w);
	jw_kv_uint(w, "keep_bytes", r->tun.keep_bytes);
	jw_kv_uint(w, "low_watermark", r->tun.low_watermark);
	jw_kv_uint(w, "defer_limit", r->tun.defer_limit);
	jw_kv_uint(w, "quarantine", r->tun.quarantine);
	json_class_array(w, "cpu_cache_cap", r->tun.cpu_cache_cap);
	json_class_array(w, "batch", r->tun.batch);
	json_class_array(w, "transfer_cap", r->tun.transfer_cap);
	jw_end_object(w);
	jw_name(w, "errors");
	jw_start_object(w);
	for (k = 0; k < AA_NR_ERRORS; k++)
		jw_kv_uint(w, aa_error_str(k), st->err[k]);
	jw_end_object(w);
	jw_name(w, "contention");
	jw_start_object(w);
	jw_kv_uint(w, "lock_waits", st->lock_waits);
	jw_kv_uint(w, "lock_misses", st->lock_misses);
	jw_kv_uint(w, "frees_parked", st->frees_parked);
	jw_kv_uint(w, "frees_unparked", st->frees_unparked);
	jw_kv_uint(w, "no_cache", st->no_cache);
	jw_end_object(w);
	jw_name(w, "cpu_caches");
	jw_start_array(w);
	for_each_row(h, json_row, w);
	jw_end_array(w);
	jw_name(w, "user_caches");
	jw_start_array(w);
	for_each_user_row(h, json_row, w);
	jw_end_array(w);
	jw_end_object(w);
	jw_destroy(w);
}

/* --watch: the previous refresh's counters, for rates per second. */
static __u64 prev_allocs[AA_MAX_CPUS][AA_NR_CLASSES], prev_frees[AA_MAX_CPUS][AA_NR_CLASSES];
static double watch_secs;
static volatile sig_atomic_t watch_stop;

static void on_int(int sig)
{
	(void)sig;
	watch_stop = 1;
}

static void remember_row(const struct row *r, void *ctx)
{
	(void)ctx;
	prev_allocs[r->cpu][r->cls] = r->s->allocs;
	prev_frees[r->cpu][r->cls] = r->s->frees;
}

static void print_rate_row(const struct row *r, void *ctx)
{
	double dt = *(double *)ctx;
	/* clamped: a counter that went back (a re-init) shows 0 */
	__u64 a = aa_sub_clamp(r->s->allocs, prev_allocs[r->cpu][r->cls]);
	__u64 f = aa_sub_clamp(r->s->frees, prev_frees[r->cpu][r->cls]);

	printf("%4d %6u %12.0f %12.0f %10llu %8llu %7u\n", r->cpu, r->size, a / dt, f / dt,
	       (unsigned long long)r->s->misses, (unsigned long long)r->s->failures, r->cached);
	remember_row(r, NULL);
}

/* Refresh in place every watch_secs until SIGINT/SIGTERM (top-like: the
 * screen is cleared on a terminal, else refreshes follow each other). */
static int watch(struct aa_heap *h)
{
	struct sigaction sa = { .sa_handler = on_int };
	struct timespec nap = { (time_t)watch_secs,
				(long)((watch_secs - (time_t)watch_secs) * 1e9) };
	bool tty = isatty(1);
	struct aa_stats st, prev;
	unsigned long n = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	aa_heap__stats(h, &prev);
	for_each_row(h, remember_row, NULL);
	while (!watch_stop) {
		nanosleep(&nap, NULL);
		if (watch_stop)
			break;
		aa_heap__stats(h, &st);
		if (tty)
			printf("\033[H\033[2J");
		printf("arena-alloc stats --watch %.1f (refresh %lu, ^C ends): %s\n", watch_secs, ++n,
		       cli_where());
		printf("in use %llu B in %llu allocations, %llu chunks; allocs/s %.0f frees/s %.0f; "
		       "refill signals %llu%s\n",
		       (unsigned long long)st.bytes_in_use, (unsigned long long)st.live_allocs,
		       (unsigned long long)st.nr_chunks,
		       aa_sub_clamp(st.nr_allocs, prev.nr_allocs) / watch_secs,
		       aa_sub_clamp(st.nr_frees, prev.nr_frees) / watch_secs,
		       (unsigned long long)aa_heap__root(h)->refill_signals,
		       aa_heap__root(h)->need_refill ? " (raised)" : "");
		printf("%4s %6s %12s %12s %10s %8s %7s\n", "cpu", "class", "allocs/s", "frees/s",
		       "misses", "failures", "cached");
		for_each_row(h, print_rate_row, &watch_secs);
		fflush(stdout);
		prev = st;
	}
	return 0;
}

static int stats_opt(int c, const char *arg)
{
	char *end;

	if (c != 'w')
		return -1;
	watch_secs = strtod(arg, &end);
	if (*end || !*arg || !(watch_secs >= 0.1 && watch_secs <= 3600)) {
		cli_err("stats: --watch '%s': give seconds, 0.1 .. 3600", arg);
		return -1;
	}
	return 0;
}

static void print_defer(const struct aa_defer *d, __u64 limit)
{
	printf("deferred free: %llu objects (%llu B) in limbo, peak %llu B, limit %llu B; epoch %u, "
	       "oldest waiting %u, reclaimed up to %u; %llu grace periods\n"
	       "  deferred %llu, reclaimed %llu; deferred -> freed: last %.2f ms, max %.2f ms, "
	       "mean %.2f ms; refused for want of a node %llu, allocations failed while limbo "
	       "held memory %llu, limit signals %llu, refused past twice the limit %llu\n\n",
	       (unsigned long long)d->pending_objs, (unsigned long long)d->pending_bytes,
	       (unsigned long long)d->peak_pending_bytes, (unsigned long long)limit, d->epoch,
	       d->oldest_epoch, d->reclaim_epoch, (unsigned long long)d->grace_periods,
	       (unsigned long long)d->deferred, (unsigned long long)d->reclaimed,
	       d->latency_last_ns / 1e6, d->latency_max_ns / 1e6,
	       d->reclaimed ? (double)d->latency_sum_ns / d->reclaimed / 1e6 : 0.0,
	       (unsigned long long)d->node_failures, (unsigned long long)d->nomem_in_limbo,
	       (unsigned long long)d->limit_signals, (unsigned long long)d->limit_refusals);
}

static void print_fault(const struct aa_fault *f)
{
	printf("fault injection (0: off): 1 in %u page allocations fails, %llu of %llu so far; "
	       "1 in %u span or page-run requests, %llu of %llu so far\n\n",
	       f->pages_every, (unsigned long long)f->page_faults,
	       (unsigned long long)f->page_calls, f->spans_every,
	       (unsigned long long)f->span_faults, (unsigned long long)f->span_calls);
}

void cli_print_stats(const struct aa_heap *h, const char *where)
{
	__u64 cached_objs = 0, cached;
	struct aa_stats st;

	aa_heap__stats(h, &st);
	cached = aa_heap__cached_bytes(h, &cached_objs);
	if (cli.json) {
		json_stats(h, where, &st, cached, cached_objs);
		return;
	}
	printf("heap at %s: arena %llu MiB, layout v%u%s\n", where,
	       (unsigned long long)(aa_heap__arena_size(h) >> 20), aa_heap__root(h)->version,
	       aa_heap__root(h)->self_inits ? ", initialised itself on first use" : "");
	if (aa_heap__root(h)->self_init_err)
		printf("self-init failed: %s\n", strerror(-aa_heap__root(h)->self_init_err));
	aa_stats__print(&st, stdout);
	printf("refill signals %llu%s, refill events lost %llu; returns put off by readers %llu; "
	       "low watermark %llu B, trim keeps %llu B\n\n",
	       (unsigned long long)aa_heap__root(h)->refill_signals,
	       aa_heap__root(h)->need_refill ? " (raised now)" : "",
	       (unsigned long long)st.refill_events_lost, (unsigned long long)st.reader_stalls,
	       (unsigned long long)aa_heap__root(h)->tun.low_watermark,
	       (unsigned long long)aa_heap__root(h)->tun.keep_bytes);
	if (aa_heap__root(h)->flags & AA_F_DEFER)
		print_defer(&aa_heap__root(h)->defer, aa_heap__root(h)->tun.defer_limit);
	if (aa_heap__root(h)->flags & AA_F_DEBUG) {
		cli_print_debug(h);
		printf("\n");
	}
	if (fault_shown(&aa_heap__root(h)->fault))
		print_fault(&aa_heap__root(h)->fault);
	printf("%4s %6s %10s %10s %10s %8s %8s %8s %7s %8s %7s %7s %9s %9s\n", "cpu", "class",
	       "allocs", "frees", "hits", "misses", "refills", "spills", "nested", "failures",
	       "cached", "reserve", "rsv_alloc", "rsv_free");
	for_each_row(h, print_row, NULL);
	if (aa_heap__user_cache(h, 0)) {
		printf("\nuser caches (userspace threads; owner 0: none)\n");
		printf("%4s %7s %7s %6s %10s %10s %10s %8s %8s %8s %7s\n", "uc", "pid", "tid",
		       "class", "allocs", "frees", "hits", "misses", "refills", "spills", "cached");
		for_each_user_row(h, print_user_row, NULL);
	}
}

int cmd_stats_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "watch", required_argument, NULL, 'w' },
		{},
	};

	watch_secs = 0;
	return cli_parse(argc, argv, opts, cli_cmd("stats"), stats_opt);
}

int cmd_stats(void)
{
	struct aa_heap *h;
	int r;

	h = cli_begin("stats");
	if (!h)
		return 1;
	if (watch_secs > 0) {
		if (cli.json) {
			cli_err("stats: --watch is for terminals; --json gives one snapshot");
			aa_heap__destroy(h);
			return EXIT_USAGE;
		}
		r = watch(h);
		aa_heap__destroy(h);
		return r;
	}
	cli_print_stats(h, cli_where());
	aa_heap__destroy(h);
	return 0;
}
