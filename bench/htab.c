// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* htab.c - aa_bench: table 4: htab-mem cells (arena hash table against BPF_MAP_TYPE_HASH). */
#include "harness.h"

/* --- 4: htab-mem -------------------------------------------------------------- */

const char *const htab_impl_name[BENCH_NR_HTAB_IMPLS] = {
	"arena-alloc", "htab prealloc", "htab no-prealloc", "arena-alloc deferred",
};
const char *const htab_case_name[BENCH_NR_HTAB_CASES] = {
	"overwrite", "batch_add_batch_del", "add_del_on_diff_cpu", "lookup_mostly",
};


struct hcell htab[BENCH_NR_HTAB_CASES][BENCH_NR_HTAB_IMPLS][BENCH_MAX_WORKERS + 1];

/* memlock of a map as the kernel reports it (fdinfo, as bpftool shows) */
__u64 map_memlock(int fd)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}


static bool is_arena(int impl)
{
	return impl == BENCH_HTAB_ARENA || impl == BENCH_HTAB_ARENA_DEFER;
}

__u64 htab_mem_now(struct mem_poll *m)
{
	if (is_arena(m->impl))
		return aa_heap__root(m->in->h)->stats.pages_mapped * (__u64)AA_PAGE_SIZE;
	return map_memlock(m->map_fd);
}

void htab_poll(void *data, bool measuring)
{
	struct mem_poll *m = data;
	double v;

	/* answer the heap's low-watermark signal, as a loader would */
	if (m->impl == BENCH_HTAB_ARENA && aa_heap__root(m->in->h)->need_refill) {
		/* (the deferred table's agent thread answers it there) */
		if (aa_heap__refill(m->in->h, MiB) > 0)
			m->grows++;
	}
	if (!measuring)
		return;
	v = htab_mem_now(m);
	m->sum += v;
	m->samples++;
	if (is_arena(m->impl))
		m->used_sum += aa_heap__root(m->in->h)->stats.heap_bytes;
	if (v > m->peak)
		m->peak = v;
}

void htab_setup(struct inst *in, int impl, bool destroy)
{
	struct bench_htab_setup_args a = { .impl = impl, .destroy = destroy };
	int tries;

	for (tries = 0; tries < 16; tries++) {
		if (run_prog(in->skel->progs.bench_htab_setup, &a, sizeof(a)))
			die("bench_htab_setup failed");
		if (a.err != -ENOMEM)
			break;
		if (aa_heap__grow(in->h, MiB) <= 0)
			die("cannot grow the heap for the hash table");
	}
	if (a.err)
		die("bench_htab_setup: %s", strerror(-a.err));
}

/* The deferred table's agent, as `arena-alloc refill-agent` runs it: asleep
 * on the event ring, reclaim rounds while limbo holds objects, refills. */
static volatile int agent_stop;

static void *agent_main(void *arg)
{
	struct inst *in = arg;
	int n;

	while (!agent_stop) {
		n = aa_heap__wait_refill(in->h, 50, NULL);
		if (n == 2)
			aa_heap__reclaim(in->h);
		else if (n == 1 && aa_heap__refill(in->h, 8 * MiB) < 0)
			usleep(1000);
	}
	return NULL;
}

/* One pass of a cell: set the table up, warm up, measure, tear down. */
void htab_cell_run(struct inst *in, int impl, int uc, int P, struct hcell *c, int ms)
{
	static struct job j;
	struct mem_poll m = { .in = in, .impl = impl };
	pthread_t agent;
	size_t k;
	int i;

	memset(&j, 0, sizeof(j));
	if (impl == BENCH_HTAB_ARENA_DEFER) {
		agent_stop = 0;
		if (pthread_create(&agent, NULL, agent_main, in))
			die("agent thread: %s", strerror(errno));
	}
	if (is_arena(impl)) {
		/* start from an empty heap: what it maps is what the table needs */
		if (aa_heap__drain(in->h) < 0 || aa_heap__trim(in->h, 0) < 0)
			die("drain/trim: %s", strerror(errno));
	}
	m.map_fd = impl == BENCH_HTAB_PREALLOC ? bpf_map__fd(in->skel->maps.bench_htab_prealloc)
					       : bpf_map__fd(in->skel->maps.bench_htab_no_prealloc);
	htab_setup(in, impl, false);
	j.kind = JOB_HTAB;
	j.nworkers = P;
	j.in = in;
	j.htab.impl = impl;
	j.htab.use_case = uc;
	job_run(&j, opt.htab_warm_ms, ms, htab_poll, &m);
	htab_setup(in, impl, true);
	if (impl == BENCH_HTAB_ARENA_DEFER) {
		agent_stop = 1;
		pthread_join(agent, NULL);
		while (aa_heap__root(in->h)->defer.pending_objs && aa_heap__reclaim(in->h) >= 0)
			;
	}

	for (i = 0; i < P; i++) {
		struct worker *w = &j.w[i];

		if (w->bad_cpu)
			die("a worker pinned to CPU %d ran elsewhere", w->cpu);
		for (k = 0; k < w->n; k++) {
			if (c->n == c->cap) {
				c->cap = c->cap ? 2 * c->cap : 1024;
				c->v = realloc(c->v, c->cap * sizeof(*c->v));
				if (!c->v)
					die("out of memory");
			}
			c->v[c->n++] = w->s[k].alloc;
		}
		c->ops += w->ops;
		c->ok += w->ok;
		c->nomem += w->nomem;
		c->runs += w->runs;
	}
	c->min_share = job_cpu(&j, &c->cpu_ns, &c->wall_ns);
	c->mem_sum += m.sum;
	c->used_sum += m.used_sum;
	c->mem_samples += m.samples;
	if (m.peak > c->mem_peak)
		c->mem_peak = m.peak;
	c->grows += m.grows;
	job_free(&j);
}

void hcell_merge(struct hcell *dst, struct hcell *src)
{
	size_t k;

	for (k = 0; k < src->n; k++) {
		if (dst->n == dst->cap) {
			dst->cap = dst->cap ? 2 * dst->cap : 1024;
			dst->v = realloc(dst->v, dst->cap * sizeof(*dst->v));
			if (!dst->v)
				die("out of memory");
		}
		dst->v[dst->n++] = src->v[k];
	}
	dst->ops += src->ops;
	dst->ok += src->ok;
	dst->nomem += src->nomem;
	dst->runs += src->runs;
	dst->grows += src->grows;
	dst->mem_sum += src->mem_sum;
	dst->used_sum += src->used_sum;
	dst->mem_samples += src->mem_samples;
	if (src->mem_peak > dst->mem_peak)
		dst->mem_peak = src->mem_peak;
	dst->cpu_ns += src->cpu_ns;
	dst->wall_ns += src->wall_ns;
	free(src->v);
	memset(src, 0, sizeof(*src));
}

/* The baseline's arena-alloc rows (its --json-out file): before_ops and
 * before_mem of each cell, NAN where it has none. */
void read_htab_before(const char *path)
{
	char line[512], uc_name[64], table[64];
	int uc, impl, P;
	double ops, mem;
	FILE *f;

	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
			for (P = 0; P <= BENCH_MAX_WORKERS; P++)
				htab[uc][impl][P].before_ops = htab[uc][impl][P].before_mem = NAN;
	if (!path || !(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "{\"use_case\":\"%63[^\"]\",\"table\":\"%63[^\"]\",\"producers\":%d,"
			   "\"ops_per_s_per_producer\":%lf,\"mem_avg_bytes\":%lf", uc_name, table,
			   &P, &ops, &mem) != 5 || P < 1 || P > BENCH_MAX_WORKERS)
			continue;
		for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
			for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
				if (!strcmp(uc_name, htab_case_name[uc]) &&
				    !strcmp(table, htab_impl_name[impl])) {
					htab[uc][impl][P].before_ops = ops;
					htab[uc][impl][P].before_mem = mem;
				}
	}
	fclose(f);
}

/* Passes as for latency: the three tables of one (use case, producers)
 * run back to back, each cell is measured in opt.passes slices, and a
 * multi-producer slice where a producer lost its CPU is redone. */
void run_htab(void)
{
	int pass, uc, impl, P, attempt, done = 0, total = opt.passes * BENCH_NR_HTAB_CASES * nproc;
	int ms = (opt.htab_ms + opt.passes - 1) / opt.passes;
	struct hcell tmp[BENCH_NR_HTAB_IMPLS];
	double min;

	for (pass = 0; pass < opt.passes; pass++)
		for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
			for (P = 1; P <= nproc; P++) {
				progress("htab %d/%d: pass %d, %s, %d producer%s", ++done, total,
					 pass + 1, htab_case_name[uc], P, P > 1 ? "s" : "");
				/* pairs of producers: an adder and a deleter */
				if (uc == BENCH_HTAB_ADD_DEL_DIFF_CPU && (P & 1))
					continue;
				for (attempt = 1;; attempt++) {
					memset(tmp, 0, sizeof(tmp));
					min = 1;
					for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++) {
						htab_cell_run(impl == BENCH_HTAB_ARENA_DEFER ?
							      &inst_defer : &inst_on,
							      impl, uc, P, &tmp[impl], ms);
						if (tmp[impl].min_share < min)
							min = tmp[impl].min_share;
					}
					if (P == 1 || min >= opt.min_share || attempt >= opt.attempts)
						break;
					for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
						free(tmp[impl].v);
					slices_redone++;
				}
				slices += P > 1;
				for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
					hcell_merge(&htab[uc][impl][P], &tmp[impl]);
			}
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
			for (P = 1; P <= nproc; P++) {
				struct hcell *c = &htab[uc][impl][P];

				if (!c->runs)
					continue;
				c->ops_per_prod = median(c->v, c->n);
				c->mem_avg = c->mem_samples ? c->mem_sum / c->mem_samples : NAN;
				c->used_avg = c->mem_samples && is_arena(impl) ?
					      c->used_sum / c->mem_samples : NAN;
				c->share = c->wall_ns ? c->cpu_ns / c->wall_ns : NAN;
				c->valid = true;
			}
}
