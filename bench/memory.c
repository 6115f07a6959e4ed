// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memory.c - build/aa_bench_mem: what size mixes cost in memory.
 *
 * For each mix: a fresh heap (caches on, as users run it), N allocations
 * drawn from the mix with a fixed seed, made by aa__run batch calls and kept
 * live; then
 *   internal waste  1 - requested / usable bytes (rounding to a class);
 *   mapped          pages the heap holds (chunks + their metadata), MiB,
 *                   and mapped / requested;
 *   metadata        metadata pages / mapped pages;
 * and after freeing everything and a drain and trim, the pages left.
 * Then debug mode's cost (AA_F_DEBUG: a 16-B tail per allocation): the
 * mixes of small objects again on a heap in debug mode, their object
 * bytes and mapped pages next to the normal heap's.
 *
 * Only the userspace API that every release has is used, so `make bench`
 * builds this same file against the release before the size classes
 * (BENCH_BASE_REV) and passes its results in with --before FILE: the
 * table then has before and after columns and their ratio.
 *
 * Each table says where it ran under its title (where.h).
 *
 * Usage: aa_bench_mem [--n N] [--out FILE] [--before FILE]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* aa_heap__batch() and aa_heap__call(): arena_alloc_internal.h here, the
 * public header in releases before 0.3.0 (the baseline's). */
#if __has_include("arena_alloc_internal.h")
#include "arena_alloc_internal.h"
#else
#include "arena_alloc.h"
#endif
#include "where.h"

#define MIB		(1024.0 * 1024.0)
#define BATCH		1000U
#define ARENA_PAGES	(1U << 18)	/* 1 GiB of address space */

struct mix {
	const char *name;
	__u64 lo, hi;			/* uniform in [lo, hi] ... */
	const unsigned int *set;	/* ... or one of these, equally likely */
	unsigned int nset;
	bool debug;			/* also in debug mode (the mixes of small
					 * objects, where its tail shows) */
};

static const unsigned int bpf_structs[] = { 24, 40, 48, 72, 96, 136, 200 };

static const struct mix mixes[] = {
	{ "uniform 16B-2KiB", 16, 2048, NULL, 0, true },
	{ "uniform 16B-8KiB", 16, 8192, NULL, 0, false },
	{ "BPF structs", 0, 0, bpf_structs, sizeof(bpf_structs) / sizeof(bpf_structs[0]), true },
};
#define NMIX (sizeof(mixes) / sizeof(mixes[0]))

struct result {
	__u64 n, requested, usable, mapped_pages, meta_pages, left_pages;
	double obj_waste;	/* sum over the objects of 1 - requested / usable
				 * (this run only: not in the "before" file) */
};

static __u64 rng = 0x243f6a8885a308d3ULL;
static __u64 seeds[NMIX];	/* rng at the start of each mix */

static __u64 next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static __u64 draw(const struct mix *m)
{
	if (m->set)
		return m->set[next_rand() % m->nset];
	return m->lo + next_rand() % (m->hi - m->lo + 1);
}

static int die(const char *what, int err)
{
	fprintf(stderr, "aa_bench_mem: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void run_mix(const struct mix *m, __u64 n, struct result *r, __u32 flags)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = ARENA_PAGES, .init_bytes = 1 << 20,
		.flags = flags);
	struct aa_batch_op *ops;
	struct aa_heap *h;
	struct aa_stats st;
	__u64 ops_addr, *live, done = 0, i, sizes[BATCH];
	int ret;

	memset(r, 0, sizeof(*r));
	h = aa_heap__open(&o);
	if (!h)
		die("aa_heap__open", errno);
	live = calloc(n, sizeof(*live));
	ops_addr = aa_heap__malloc(h, BATCH * sizeof(*ops));
	if (!live || !ops_addr)
		die("op array", ENOMEM);
	ops = aa_heap__ptr(h, ops_addr);
	while (done < n) {
		__u32 k = n - done < BATCH ? n - done : BATCH;

		for (i = 0; i < k; i++) {
			sizes[i] = draw(m);
			ops[i] = (struct aa_batch_op){ .ptr = 0, .size = sizes[i] };
			r->requested += sizes[i];
		}
		ret = aa_heap__batch(h, ops_addr, k);
		if (ret != (int)k)
			die("aa_heap__batch", ret < 0 ? ret : EIO);
		for (i = 0; i < k; i++) {
			if (ops[i].ret == -ENOMEM) {
				/* the heap grows only when asked: a malloc that
				 * grows it as much as this request needs */
				struct aa_op_args a = { .op = AA_OP_MALLOC_GROW, .size = sizes[i] };

				if (aa_heap__call(h, &a) || !a.ptr)
					die("malloc with grow", a.ret ? (int)a.ret : ENOMEM);
				ops[i].ptr = a.ptr;
				a = (struct aa_op_args){ .op = AA_OP_USABLE, .ptr = ops[i].ptr };
				if (aa_heap__call(h, &a))
					die("usable size", errno);
				ops[i].size = a.size;
				ops[i].ret = 0;
			}
			if (ops[i].ret)
				die("allocation", (int)ops[i].ret);
			live[done + i] = ops[i].ptr;
			r->usable += ops[i].size;
			if (ops[i].size)
				r->obj_waste += (double)(ops[i].size - sizes[i]) / ops[i].size;
		}
		done += k;
	}
	if (aa_heap__stats(h, &st))
		die("stats", errno);
	r->n = n;
	r->mapped_pages = st.pages_mapped;
	r->meta_pages = st.pages_mapped - st.nr_chunks * AA_CHUNK_PAGES;
	for (i = 0; i < n; i++)
		if (aa_heap__free(h, live[i]))
			die("free", errno);
	aa_heap__free(h, ops_addr);
	aa_heap__drain(h);
	aa_heap__trim(h, 0);
	aa_heap__stats(h, &st);
	r->left_pages = st.pages_mapped;
	free(live);
	aa_heap__destroy(h);
}

static double waste(const struct result *r)
{
	return r->usable ? 100.0 * (r->usable - r->requested) / r->usable : 0;
}

/* The memory targets of the size classes (only this tree has them: the
 * baseline build skips them). */
static void print_targets(const struct result *r)
{
#ifdef AA_PM_KIND_SHIFT
	const struct result *b = &r[NMIX - 1];
	double worst = 0, w, meta = 0, bpf = b->n ? 100.0 * b->obj_waste / b->n : 0;
	__u64 s, worst_s = 0;
	unsigned int i;
	bool ok;

	for (s = 128; s <= AA_MAX_CLASS_SIZE; s++) {
		w = 100.0 * (aa_class_size(aa_size_class(s)) - s) / aa_class_size(aa_size_class(s));
		if (w > worst) {
			worst = w;
			worst_s = s;
		}
	}
	for (i = 0; i < NMIX; i++)
		if (r[i].mapped_pages && 100.0 * r[i].meta_pages / r[i].mapped_pages > meta)
			meta = 100.0 * r[i].meta_pages / r[i].mapped_pages;
	printf("\nMemory targets (size classes)\n");
	where_caption(stdout, "  ", false);
	ok = worst <= 12.5;
	printf("  [%-6s] internal waste <= 12.5%% worst case, 128 B .. 8 KiB      %.2f%% (%llu B)\n",
	       ok ? "met" : "MISSED", worst, (unsigned long long)worst_s);
	ok = bpf <= 8;
	printf("  [%-6s] mean waste of the BPF-structs mix <= 8%%               %.2f%% per object "
	       "(%.2f%% of its bytes)\n", ok ? "met" : "MISSED", bpf, waste(b));
	ok = meta <= 1;
	printf("  [%-6s] metadata <= 1%% of mapped memory                       %.2f%% (worst mix)\n",
	       ok ? "met" : "MISSED", meta);
#else
	(void)r;
#endif
}

/*
 * Debug mode's memory: the mixes marked debug again (the same draws) on
 * a heap with AA_F_DEBUG, next to r (the normal heap's). Object bytes are
 * what the requests take, their class size or page run, computed from the
 * draws: in debug mode aa_usable_size() reports the bytes requested.
 */
static void print_debug(__u64 n, const struct result *r)
{
#ifdef AA_F_DEBUG
	struct result d;
	double obj[2];
	__u64 k, s, b;
	unsigned int i, t;

	printf("\nDebug mode (AA_F_DEBUG): the same %llu allocations per mix with a %u-B tail each\n",
	       (unsigned long long)n, AA_DEBUG_TAIL);
	where_caption(stdout, "", false);
	printf("%-18s %10s | %16s %7s %6s | %18s %7s %6s\n", "mix", "requested",
	       "object MiB normal", "debug", "ratio", "mapped MiB normal", "debug", "ratio");
	for (i = 0; i < NMIX; i++) {
		if (!mixes[i].debug)
			continue;
		rng = seeds[i];
		obj[0] = obj[1] = 0;
		for (k = 0; k < n; k++) {
			s = draw(&mixes[i]);
			for (t = 0; t < 2; t++) {
				b = s + t * AA_DEBUG_TAIL;
				obj[t] += b <= AA_MAX_CLASS_SIZE ? aa_class_size(aa_size_class(b))
								 : (b + 4095) & ~4095ULL;
			}
		}
		rng = seeds[i];
		run_mix(&mixes[i], n, &d, AA_F_DEBUG);
		printf("%-18s %8.1f M | %16.1f %7.1f %5.2fx | %18.1f %7.1f %5.2fx\n", mixes[i].name,
		       d.requested / MIB, obj[0] / MIB, obj[1] / MIB, obj[1] / obj[0],
		       r[i].mapped_pages * (double)AA_PAGE_SIZE / MIB, d.mapped_pages * (double)AA_PAGE_SIZE / MIB,
		       (double)d.mapped_pages / r[i].mapped_pages);
	}
#else
	(void)n;
	(void)r;
#endif
}

/* "before" results: one line per mix, written by --out of the baseline. */
static int read_before(const char *path, struct result *b)
{
	FILE *f = fopen(path, "r");
	unsigned int i;
	int ok = 0;

	if (!f)
		return 0;
	for (i = 0; i < NMIX; i++)
		ok += fscanf(f, "%llu %llu %llu %llu %llu %llu", (unsigned long long *)&b[i].n,
			     (unsigned long long *)&b[i].requested,
			     (unsigned long long *)&b[i].usable,
			     (unsigned long long *)&b[i].mapped_pages,
			     (unsigned long long *)&b[i].meta_pages,
			     (unsigned long long *)&b[i].left_pages) == 6;
	fclose(f);
	return ok == NMIX;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "n", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "before", required_argument, NULL, 'b' },
		{}
	};
	struct result r[NMIX], b[NMIX];
	const char *out = NULL, *before = NULL;
	__u64 n = 100000;
	bool have_before;
	unsigned int i;
	FILE *f;
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'o': out = optarg; break;
		case 'b': before = optarg; break;
		default:
			fprintf(stderr, "usage: aa_bench_mem [--n N] [--out FILE] [--before FILE]\n");
			return 2;
		}
	}
	aa_set_print(NULL);
	for (i = 0; i < NMIX; i++) {
		seeds[i] = rng;
		run_mix(&mixes[i], n, &r[i], 0);
	}
	if (out) {
		f = fopen(out, "w");
		if (!f)
			die(out, errno);
		for (i = 0; i < NMIX; i++)
			fprintf(f, "%llu %llu %llu %llu %llu %llu\n", (unsigned long long)r[i].n,
				(unsigned long long)r[i].requested, (unsigned long long)r[i].usable,
				(unsigned long long)r[i].mapped_pages,
				(unsigned long long)r[i].meta_pages,
				(unsigned long long)r[i].left_pages);
		fclose(f);
	}
	if (!before)
		return 0;
	have_before = read_before(before, b);
	printf("\nMemory: %llu live allocations per mix, caches on; before = %s\n",
	       (unsigned long long)n, have_before ? "the release before size classes"
					    : "not available (see make bench)");
	where_caption(stdout, "", false);
	printf("%-18s %10s | %14s %8s | %18s %7s | %10s | %9s\n", "mix", "requested",
	       "waste before", "after", "mapped MiB before", "after", "after/bef", "metadata");
	for (i = 0; i < NMIX; i++) {
		double mb = b[i].mapped_pages * (double)AA_PAGE_SIZE / MIB, ma = r[i].mapped_pages * (double)AA_PAGE_SIZE / MIB;

		printf("%-18s %8.1f M | %13.1f%% %7.1f%% | %18.1f %7.1f | %9.2fx | %8.2f%%\n",
		       mixes[i].name, r[i].requested / MIB, have_before ? waste(&b[i]) : 0,
		       waste(&r[i]), have_before ? mb : 0, ma, have_before && mb ? ma / mb : 0,
		       r[i].mapped_pages ? 100.0 * r[i].meta_pages / r[i].mapped_pages : 0);
	}
	print_targets(r);
	for (i = 0; i < NMIX; i++)
		if (r[i].left_pages > 16)
			printf("  %s: %llu pages left after free, drain and trim\n", mixes[i].name,
			       (unsigned long long)r[i].left_pages);
	print_debug(n, r);
	return 0;
}
