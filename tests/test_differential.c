// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_differential.c - randomized differential test of the allocator.
 *
 * The allocator runs for real on the kernel (aa__run's batch call, 1000 mixed
 * frees and allocations per run); next to it a userspace model keeps every
 * live allocation (address, requested size, expected usable size, pattern
 * seed). After each batch the two must agree:
 *
 *   - every allocation succeeds and reports the usable size of the size
 *     rule: its class's object size up to 8 KiB (include/aa_size_classes.h),
 *     whole pages above. -ENOMEM is legal (the heap only grows when asked:
 *     the test then grows it and carries on) but must be consistent:
 *     allocations never create free page blocks of an order that had none,
 *     nor free objects of a class, so until the next free a request of a
 *     class that failed must fail again, and so must one that needs a page
 *     block of the failed order or more; if the batch ends first no such
 *     free block, and no listed span of a failed class, may be left;
 *   - addresses are 16-byte aligned and where the page map (read from the
 *     mmap) says: an object of class c at a multiple of its size inside a
 *     span of class c, a page run at a page whose entry is its RUN_HEAD, a
 *     larger allocation at a LARGE_HEAD chunk;
 *   - no two live allocations overlap (usable extents, sorted sweep);
 *   - every byte of an allocation keeps the pseudo-random pattern written
 *     into it from userspace through the mmap until it is freed (checked
 *     before each free, and for the whole live set every few batches): a
 *     block handed out twice, or allocator metadata written into a live
 *     block, shows up here;
 *   - the heap counters read from the mmap equal the model exactly
 *     (bytes_in_use, peak, live_allocs, nr_allocs, nr_frees, chunk and
 *     error counters, the page invariant), and the BPF validity checker
 *     (aa_heap__check) passes.
 * At the end everything is freed: the heap must coalesce back into whole
 * free chunks that aa_heap__trim() returns.
 *
 * The workload runs twice, sharing all of the code above (struct diff's
 * `caches` says which variant runs):
 *
 *   differential/random_ops         AA_F_NO_CACHES: central lists and page
 *                                   heap alone, every rule above exactly as
 *                                   stated;
 *   differential/random_ops_caches  the per-CPU and transfer caches on (the
 *                                   default): requests of <= 8 KiB go
 *                                   through this CPU's cache. The heap
 *                                   counts cached objects as in use, so
 *                                   what changes is (see check_stats()):
 *     - heap_bytes - cached bytes == model bytes and heap_live - cached
 *       objects == model live count (aa_heap__cached_bytes(), exact since
 *       no program runs concurrently);
 *     - heap_peak_bytes, heap_allocs and heap_frees count heap traffic
 *       (cache refills and spills), not user calls: only peak >= model
 *       peak is checked, plus nr_allocs -
 *       nr_frees == live_allocs; the per-class cache counters (allocs,
 *       frees, failures and requested bytes summed over CPUs) take the
 *       model's place and must equal the model's calls of each class
 *       exactly;
 *     - the -ENOMEM consistency rule is not checked: a request may be
 *       served from a cache after a failure of a smaller class, and memory
 *       can sit in caches of other classes (or other CPUs) while a request
 *       fails;
 *     - cached objects (every CPU cache and transfer cache) join the
 *       overlap sweep: none may overlap a live allocation or each other;
 *     - at the end, after everything is freed, aa_heap__drain() must hand
 *       back exactly the cached objects; then the heap alone must match
 *       (op array only, no cached bytes) and trim everything as above.
 *   Patterns, alignment, usable sizes and overlaps are checked the same.
 *   The syscall programs may run on either CPU (the thread may migrate
 *   between batches): frees then land in another CPU's cache, which the
 *   test wants.
 *
 * The seed is printed; AA_TEST_SEED=<n> replays a run (with caches on, the
 * same requests; the addresses they get also depend on which CPU each batch
 * ran on).
 *
 * A second test corrupts a byte on purpose and shows that the pattern check
 * reports it, so the checker above is known not to be vacuous.
 *
 * The model (random numbers, size rules, patterns, geometry, counters)
 * is in diff_model.c.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include "diff_model.h"

/* --- The differential run ---------------------------------------------------- */

_Static_assert(D_BATCH <= D_MAX_LIVE, "a full live set must leave something to free");

/* What the test asked of one batch slot. */
struct plan {
	bool is_free;
	__u64 addr;	/* free: the object */
	__u64 size;	/* alloc: requested bytes */
	__u64 usable;	/* model usable size */
};

struct diff {
	bool caches;			/* the variant: CPU/transfer caches on */
	const char *name;		/* "caches off" / "caches on", for messages */
	struct aa_heap *h;
	__u64 seed, rng, obj_seq;
	struct aa_batch_op *ops;	/* D_BATCH ops in the arena ... */
	__u64 ops_addr;			/* ... at this arena address */
	struct obj ops_obj;		/* the op array as an allocation */
	struct obj *live;		/* D_MAX_LIVE */
	unsigned int nlive;
	struct plan *plan;		/* D_BATCH */
	struct extent *ext;		/* ext_cap: live, op array, cached objects */
	unsigned int ext_cap;
	struct model m;
	/* report */
	__u64 nr_ops, nr_grow_calls, peak_live_bytes, nomem_tail_checks;
	__u64 peak_cached_bytes, peak_cached_objs;
	unsigned int peak_live;
};

/* Class c's transfer cache; with caches off (no table) one that is empty. */
static const struct aa_transfer_cache *dtc(struct diff *d, int c)
{
	static const struct aa_transfer_cache none;

	if (!d->caches)
		return &none;
	return t_tc(d->h, c);
}

/*
 * Caches on: the CPU caches' per-class counters, summed over CPUs, count
 * exactly the model's calls of each class (no program runs concurrently,
 * so no call finds a cache busy and no spill finds the heap locked), and
 * every cache is idle.
 */
static void check_cache_counters(struct diff *d, const char *when)
{
	const struct aa_root *root = aa_heap__root(d->h);
	__u64 allocs[AA_NR_CLASSES] = { 0 }, frees[AA_NR_CLASSES] = { 0 };
	__u64 fails[AA_NR_CLASSES] = { 0 }, req[AA_NR_CLASSES] = { 0 };
	const struct aa_cpu_cache *cc;
	const struct aa_cpu_class_stats *cs;
	unsigned int cpu, c;

	for (cpu = 0; cpu < root->nr_cpus; cpu++) {
		cc = aa_heap__cpu_cache(d->h, cpu);
		cr_assert_not_null(cc, "%s: CPU %u of %u has no cache", when, cpu, root->nr_cpus);
		cr_assert(cc->busy == 0 && cc->cpu == cpu, "%s: CPU %u's cache: busy %u, cpu %u",
			  when, cpu, cc->busy, cc->cpu);
		for (c = 0; c < AA_NR_CLASSES; c++) {
			cs = &cc->cls[c].stats;
			cr_assert_eq(cs->nested, 0, "%s: CPU %u class %u: %llu nested calls with "
				     "nothing running concurrently", when, cpu, c,
				     (unsigned long long)cs->nested);
			/* a failure is a miss whose refill brought nothing; a
			 * refill follows a miss */
			cr_assert(cs->failures <= cs->misses && cs->refills <= cs->misses &&
				  cs->misses <= cs->allocs + cs->failures,
				  "%s: CPU %u class %u: misses %llu, refills %llu, allocs %llu, "
				  "failures %llu", when, cpu, c, (unsigned long long)cs->misses,
				  (unsigned long long)cs->refills, (unsigned long long)cs->allocs,
				  (unsigned long long)cs->failures);
			allocs[c] += cs->allocs;
			frees[c] += cs->frees;
			fails[c] += cs->failures;
			req[c] += cs->req_bytes;
		}
	}
	for (c = 0; c < AA_NR_CLASSES; c++) {
		cr_assert(dtc(d, c)->lock == 0 && dtc(d, c)->lock_fails == 0,
			  "%s: class-%u transfer cache: lock %u, %llu lock failures", when, c,
			  dtc(d, c)->lock, (unsigned long long)dtc(d, c)->lock_fails);
		cr_assert(allocs[c] == d->m.cls_allocs[c] && frees[c] == d->m.cls_frees[c] &&
			  fails[c] == d->m.cls_nomem[c] && req[c] == d->m.cls_req[c],
			  "%s: class %u (%u B): CPU caches count %llu allocs, %llu frees, "
			  "%llu failures, %llu bytes asked; model says %llu, %llu, %llu, %llu",
			  when, c, aa_class_size(c), (unsigned long long)allocs[c],
			  (unsigned long long)frees[c], (unsigned long long)fails[c],
			  (unsigned long long)req[c], (unsigned long long)d->m.cls_allocs[c],
			  (unsigned long long)d->m.cls_frees[c],
			  (unsigned long long)d->m.cls_nomem[c],
			  (unsigned long long)d->m.cls_req[c]);
	}
}

/*
 * The heap counters read from the mmap against the model. Caches off:
 * all exact. Caches on: the heap counts cached objects as in use, and
 * aa_heap__cached_bytes() says how many there are (exact: nothing runs
 * concurrently); see the file comment for what is exact and what is not.
 */
static void check_stats(struct diff *d, const char *when)
{
	const struct model *m = &d->m;
	struct aa_stats st = t_stats(d->h);
	__u64 free_pages = 0, cached_objs = 0, cached;
	unsigned int k;

	cached = aa_heap__cached_bytes(d->h, &cached_objs);
	if (!d->caches)
		cr_assert(cached == 0 && cached_objs == 0,
			  "%s: caches off, yet %llu objects (%llu bytes) are cached", when,
			  (unsigned long long)cached_objs, (unsigned long long)cached);
	if (cached > d->peak_cached_bytes)
		d->peak_cached_bytes = cached;
	if (cached_objs > d->peak_cached_objs)
		d->peak_cached_objs = cached_objs;

#define EQ(field, want)								\
	cr_assert_eq(st.field, (want), "%s: stats." #field " = %llu, model says %llu", \
		     when, (unsigned long long)st.field, (unsigned long long)(want))
#define GE(field, want)								\
	cr_assert_geq(st.field, (want), "%s: stats." #field " = %llu, model says at " \
		      "least %llu", when, (unsigned long long)st.field,	\
		      (unsigned long long)(want))
	/* the totals are the model's calls; the heap's view adds the caches */
	EQ(bytes_in_use, m->bytes);
	EQ(live_allocs, m->live);
	EQ(nr_allocs, m->allocs);
	EQ(nr_frees, m->frees);
	EQ(heap_bytes, m->bytes + cached);
	EQ(heap_live, m->live + cached_objs);
	cr_assert_eq(st.nr_allocs - st.nr_frees, st.live_allocs,
		     "%s: stats: nr_allocs %llu - nr_frees %llu != live_allocs %llu", when,
		     (unsigned long long)st.nr_allocs, (unsigned long long)st.nr_frees,
		     (unsigned long long)st.live_allocs);
	GE(heap_peak_bytes, st.bytes_in_use);
	if (!d->caches) {
		EQ(heap_peak_bytes, m->peak);
		EQ(heap_allocs, m->allocs);
		EQ(heap_frees, m->frees);
		EQ(err[AA_ERR_NOMEM], m->nomem);
	} else {
		/* Heap-level traffic: refills and spills move batches. The
		 * heap's bytes_in_use never drops below the model's, so
		 * neither does its peak. err[NOMEM] counts user calls that
		 * got NULL, as without caches (a refill that gets part of
		 * its batch serves its call: no error). */
		GE(heap_peak_bytes, m->peak);
		EQ(err[AA_ERR_NOMEM], m->nomem);
		check_cache_counters(d, when);
	}
	EQ(nr_chunks, m->chunks);
	EQ(large_chunks, m->large_chunks);
	EQ(nr_grows, m->grows);
	EQ(nr_trims, m->trims);
	EQ(pages_mapped, m->chunks * (AA_CHUNK_PAGES + AA_META_PAGES));
	for (k = 0; k < AA_NR_ERRORS; k++)
		if (k != AA_ERR_NOMEM)
			EQ(err[k], 0);
#undef EQ
#undef GE
	/* the page invariant of aa_root, from userspace; page runs are
	 * exactly the model's allocations above 8 KiB */
	for (k = 0; k < AA_NR_ORDERS; k++)
		free_pages += st.free_blocks[k] << k;
	cr_assert_eq(free_pages + st.span_pages + st.run_pages,
		     (st.nr_chunks - st.large_chunks) * AA_CHUNK_PAGES - st.absent_pages,
		     "%s: free %llu + span %llu + run %llu pages != %llu chunks - %llu large",
		     when, (unsigned long long)free_pages, (unsigned long long)st.span_pages,
		     (unsigned long long)st.run_pages, (unsigned long long)st.nr_chunks,
		     (unsigned long long)st.large_chunks);
	cr_assert_eq(st.run_pages + st.large_chunks * AA_CHUNK_PAGES, m->run_bytes >> AA_PAGE_SHIFT,
		     "%s: %llu run pages + %llu large chunks, model says %llu pages", when,
		     (unsigned long long)st.run_pages, (unsigned long long)st.large_chunks,
		     (unsigned long long)(m->run_bytes >> AA_PAGE_SHIFT));
}

static void add_extent(struct diff *d, unsigned int *n, struct extent e)
{
	cr_assert_lt(*n, d->ext_cap, "more extents than the %u expected", d->ext_cap);
	d->ext[(*n)++] = e;
}

/* A cached object of class c: an object of a span of class c, like any
 * allocation of that class. */
static void add_cached(struct diff *d, unsigned int *n, __u64 addr, __u32 kind,
		       unsigned int cpu, unsigned int c)
{
	struct obj o = { .addr = addr, .usable = aa_class_size(c) };

	check_placement(d->h, &o);
	add_extent(d, n, (struct extent){ addr, addr + o.usable, kind, cpu, c });
}

/*
 * Everything the heap counts as allocated must be disjoint: the live set,
 * the op array and, with caches on, every object in a CPU or transfer
 * cache (each within its cache's capacity). A block both cached and handed
 * out, or cached twice, shows up here before it is handed out again.
 */
static void check_all_disjoint(struct diff *d)
{
	const struct aa_root *root = aa_heap__root(d->h);
	const struct aa_cpu_cache *cc;
	unsigned int n = 0, i, cpu, c, cnt;

	for (i = 0; i < d->nlive; i++)
		add_extent(d, &n, (struct extent){ d->live[i].addr,
						   d->live[i].addr + d->live[i].usable, EXT_LIVE });
	add_extent(d, &n, (struct extent){ d->ops_obj.addr, d->ops_obj.addr + d->ops_obj.usable,
					   EXT_OPS });
	if (d->caches) {
		for (cpu = 0; cpu < root->nr_cpus; cpu++) {
			cc = aa_heap__cpu_cache(d->h, cpu);
			cr_assert_not_null(cc, "CPU %u of %u has no cache", cpu, root->nr_cpus);
			for (c = 0; c < AA_NR_CLASSES; c++) {
				cnt = cc->cls[c].count;
				cr_assert(cnt <= root->tun.cpu_cache_cap[c] &&
					  cnt <= AA_CPU_CACHE_MAX,
					  "CPU %u class %u holds %u objects, cap %u", cpu, c,
					  cnt, root->tun.cpu_cache_cap[c]);
				for (i = 0; i < cnt; i++)
					add_cached(d, &n, cc->cls[c].objs[i], EXT_CPU_CACHE, cpu, c);
			}
		}
		for (c = 0; c < AA_NR_CLASSES; c++) {
			cnt = dtc(d, c)->count;
			cr_assert(cnt <= root->tun.transfer_cap[c] && cnt <= AA_TRANSFER_MAX,
				  "class-%u transfer cache holds %u objects, cap %u", c, cnt,
				  root->tun.transfer_cap[c]);
			for (i = 0; i < cnt; i++)
				add_cached(d, &n, dtc(d, c)->objs[i], EXT_TRANSFER, 0, c);
		}
	}
	check_no_overlap(d->ext, n);
}

/* Queue a free of live[idx] in slot i: the object is swapped to the tail
 * of live[] (the last *nfree entries are this batch's frees). */
static void plan_free(struct diff *d, unsigned int i, unsigned int idx, unsigned int *nfree)
{
	unsigned int tail = d->nlive - 1 - *nfree;
	struct obj o = d->live[idx];

	d->live[idx] = d->live[tail];
	d->live[tail] = o;
	verify_obj(d->h, &o, true, NULL);	/* untouched since it was filled */
	d->ops[i] = (struct aa_batch_op){ .ptr = o.addr, .ret = D_RET_UNSET };
	d->plan[i] = (struct plan){ .is_free = true, .addr = o.addr, .usable = o.usable };
	(*nfree)++;
}

static void plan_alloc(struct diff *d, unsigned int i, __u64 size)
{
	d->ops[i] = (struct aa_batch_op){ .size = size, .ret = D_RET_UNSET };
	d->plan[i] = (struct plan){ .size = size, .usable = model_usable(size) };
}

/*
 * Fill ops[0..n) with a random mix; free_pct is the chance of a free while
 * the live set is within bounds. Returns how many are frees.
 */
static unsigned int build_batch(struct diff *d, unsigned int n, unsigned int free_pct)
{
	__u64 planned = d->m.bytes - d->ops_obj.usable;
	unsigned int i, nfree = 0, nalloc = 0;

	for (i = 0; i < n; i++) {
		unsigned int avail = d->nlive - nfree;
		bool full = d->nlive - nfree + nalloc >= D_MAX_LIVE;
		__u64 size = rnd_size(&d->rng), usable = model_usable(size);
		bool too_big = planned + usable > D_MAX_LIVE_BYTES;

		if (avail && (full || too_big || rnd_below(&d->rng, 100) < free_pct)) {
			plan_free(d, i, rnd_below(&d->rng, avail), &nfree);
			planned -= d->plan[i].usable;
			continue;
		}
		if (too_big)	/* nothing left to free: a tiny one still fits */
			size = rnd_log(&d->rng, 1, 64);
		plan_alloc(d, i, size);
		planned += d->plan[i].usable;
		nalloc++;
	}
	return nfree;
}

/*
 * Run ops[0..n) and replay them in order on the model. The batch's frees
 * are the last nfree entries of live[]; new objects replace them there.
 */
static void run_batch(struct diff *d, unsigned int n, unsigned int nfree, unsigned int batch)
{
	unsigned int i, first_new = d->nlive - nfree, nlive = first_new;
	/* since the last free: the smallest page order that a failed request
	 * needed (a span's, or a run's), the smallest multi-chunk request
	 * (chunks) and the classes that failed; AA_NR_ORDERS / ~0 / none.
	 * Caches off only: with caches on, a request may be served from a
	 * CPU or transfer cache after a smaller one failed, and memory may
	 * sit in the caches of other classes or CPUs while a request fails;
	 * the rule is not checked. */
	__u32 fail_order = AA_NR_ORDERS;
	__u64 fail_run = ~0ULL, grow = 0;
	bool fail_cls[AA_NR_CLASSES] = { false };
	const struct aa_root *root = aa_heap__root(d->h);
	struct aa_stats st;
	int ret;

	if (d->caches) {
		/* alternate CPUs: objects of one CPU's cache get freed into the
		 * other's, so cross-CPU frees happen on every run */
		t_pin_cpu(batch % libbpf_num_possible_cpus());
	}
	ret = aa_heap__batch(d->h, d->ops_addr, n);
	cr_assert_eq(ret, (int)n, "batch %u: aa_heap__batch ran %d of %u ops", batch, ret, n);
	d->nr_ops += n;

	for (i = 0; i < n; i++) {
		const struct aa_batch_op *op = &d->ops[i];
		const struct plan *pl = &d->plan[i];
		struct obj *o;

		if (pl->is_free) {
			cr_assert_eq(op->ret, 0, "batch %u op %u: free(0x%llx) returned %lld",
				     batch, i, (unsigned long long)pl->addr, (long long)op->ret);
			cr_assert_eq(op->ptr, pl->addr);
			model_free(&d->m, pl->usable);
			fail_order = AA_NR_ORDERS;
			fail_run = ~0ULL;
			memset(fail_cls, 0, sizeof(fail_cls));
			continue;
		}
		if (op->ret == -ENOMEM) {
			/* legal: the heap only grows when asked; grow and go on */
			cr_assert(op->ptr == 0 && op->size == 0,
				  "batch %u op %u: failed malloc(%llu) left ptr 0x%llx size %llu",
				  batch, i, (unsigned long long)pl->size,
				  (unsigned long long)op->ptr, (unsigned long long)op->size);
			if (pl->usable > AA_CHUNK_SIZE) {
				if (chunks_of(pl->usable) < fail_run)
					fail_run = chunks_of(pl->usable);
			} else if (model_order(model_pages(pl->usable)) < fail_order) {
				fail_order = model_order(model_pages(pl->usable));
			}
			d->m.nomem++;
			if (pl->usable <= AA_MAX_CLASS_SIZE) {
				fail_cls[model_class(pl->usable)] = true;
				d->m.cls_nomem[model_class(pl->usable)]++;
			}
			grow += pl->usable;
			continue;
		}
		cr_assert(op->ret == 0 && op->ptr != 0,
			  "batch %u op %u: malloc(%llu) returned ret %lld ptr 0x%llx",
			  batch, i, (unsigned long long)pl->size, (long long)op->ret,
			  (unsigned long long)op->ptr);
		/* a success no earlier failure (since the last free) rules out */
		cr_assert(d->caches || pl->usable > AA_MAX_CLASS_SIZE ||
			  !fail_cls[model_class(pl->usable)],
			  "batch %u op %u: malloc(%llu) succeeded after a request of its class "
			  "failed with -ENOMEM and nothing was freed in between",
			  batch, i, (unsigned long long)pl->size);
		cr_assert(d->caches || pl->usable <= AA_MAX_CLASS_SIZE ||
			  pl->usable > AA_CHUNK_SIZE ||
			  model_order(model_pages(pl->usable)) < fail_order,
			  "batch %u op %u: malloc(%llu) succeeded after a request needing an "
			  "order-%u page block failed with -ENOMEM and nothing was freed in "
			  "between", batch, i, (unsigned long long)pl->size, fail_order);
		cr_assert(d->caches || pl->usable <= AA_CHUNK_SIZE ||
			  chunks_of(pl->usable) < fail_run,
			  "batch %u op %u: malloc(%llu) succeeded after a %llu-chunk request "
			  "failed with -ENOMEM and nothing was freed in between",
			  batch, i, (unsigned long long)pl->size, (unsigned long long)fail_run);
		cr_assert_eq(op->size, pl->usable,
			     "batch %u op %u: malloc(%llu) = 0x%llx reports usable %llu, "
			     "model says %llu", batch, i, (unsigned long long)pl->size,
			     (unsigned long long)op->ptr, (unsigned long long)op->size,
			     (unsigned long long)pl->usable);
		cr_assert_lt(nlive, D_MAX_LIVE);
		o = &d->live[nlive++];
		*o = (struct obj){ .addr = op->ptr, .size = pl->size, .usable = pl->usable,
				   .seed = splitmix64(d->seed ^ ++d->obj_seq) };
		check_placement(d->h, o);
		model_alloc(&d->m, o->usable);
		if (o->usable <= AA_MAX_CLASS_SIZE)
			d->m.cls_req[model_class(o->usable)] += o->size;
	}
	d->nlive = nlive;

	/* a failure not followed by a free: no block that would have served
	 * it may be free now (caches off only, see above) */
	if (!d->caches) {
		st = t_stats(d->h);
		for (i = fail_order; i < AA_NR_ORDERS; i++)
			cr_assert_eq(st.free_blocks[i], 0,
				     "batch %u: a request needing an order-%u page block failed "
				     "with -ENOMEM, yet %llu order-%u blocks are free", batch,
				     fail_order, (unsigned long long)st.free_blocks[i], i);
		for (i = 0; i < AA_NR_CLASSES; i++)
			cr_assert(!fail_cls[i] || root->central[i].head == AA_NIL,
				  "batch %u: a class-%u request failed with -ENOMEM, yet a "
				  "span of the class has free objects", batch, i);
		if (fail_order < AA_NR_ORDERS)
			d->nomem_tail_checks++;
	}

	/* new blocks must not overlap anything live (or cached): then claim
	 * their bytes */
	check_all_disjoint(d);
	for (i = first_new; i < d->nlive; i++)
		fill_obj(d->h, &d->live[i]);

	if (grow) {
		ret = aa_heap__grow(d->h, grow + AA_CHUNK_SIZE);
		if (ret <= 0) {	/* say where the memory is */
			st = t_stats(d->h);
			aa_stats__print(&st, stderr);
			aa_heap__print_caches(d->h, stderr);
		}
		cr_assert_gt(ret, 0, "batch %u: grow by %llu bytes after -ENOMEM failed: %d "
			     "(model: %llu B live)", batch, (unsigned long long)grow, ret,
			     (unsigned long long)d->m.bytes);
		d->m.chunks += ret;
		d->m.grows += ret;
		d->nr_grow_calls++;
	}
	if (d->nlive > d->peak_live)
		d->peak_live = d->nlive;
	if (d->m.bytes > d->peak_live_bytes)
		d->peak_live_bytes = d->m.bytes;
}

static void verify_all(struct diff *d)
{
	unsigned int i;

	for (i = 0; i < d->nlive; i++)
		verify_obj(d->h, &d->live[i], true, NULL);
}

/* What the cache tiers did (the run's report, not a check). */
static void log_cache_activity(struct diff *d)
{
	const struct aa_root *root = aa_heap__root(d->h);
	__u64 hits = 0, misses = 0, refills = 0, spills = 0, in = 0, out = 0;
	const struct aa_cpu_cache *cc;
	unsigned int cpu, c, used = 0;
	char per_cpu[256] = "";
	size_t len = 0;

	for (cpu = 0; cpu < root->nr_cpus && (cc = aa_heap__cpu_cache(d->h, cpu)); cpu++) {
		__u64 a = 0, f = 0;

		for (c = 0; c < AA_NR_CLASSES; c++) {
			a += cc->cls[c].stats.allocs;
			f += cc->cls[c].stats.frees;
			hits += cc->cls[c].stats.allocs + cc->cls[c].stats.failures - cc->cls[c].stats.misses;
			misses += cc->cls[c].stats.misses;
			refills += cc->cls[c].stats.refills;
			spills += cc->cls[c].stats.spills;
		}
		used += a || f;
		if (len < sizeof(per_cpu))
			len += snprintf(per_cpu + len, sizeof(per_cpu) - len, "%sCPU %u %llu/%llu",
					len ? ", " : "", cpu, (unsigned long long)a,
					(unsigned long long)f);
	}
	for (c = 0; c < AA_NR_CLASSES; c++) {
		in += dtc(d, c)->batches_in;
		out += dtc(d, c)->batches_out;
	}
	cr_log_info("differential (caches on): %u of %u CPU caches used (allocs/frees: %s); "
		    "%llu hits, %llu misses, %llu refills, %llu spills; transfer caches: "
		    "%llu batches in, %llu out", used, root->nr_cpus, per_cpu,
		    (unsigned long long)hits, (unsigned long long)misses,
		    (unsigned long long)refills, (unsigned long long)spills,
		    (unsigned long long)in, (unsigned long long)out);
}

/*
 * The whole differential run; caches selects the variant (file comment).
 * Both variants draw their requests from the same seed; with caches on,
 * other addresses come back and -ENOMEM strikes elsewhere, so the two
 * request streams part at the first such difference.
 */
static void run_differential(bool caches)
{
	struct diff d = { .seed = env_seed(), .caches = caches,
			  .name = caches ? "caches on" : "caches off" };
	const struct aa_root *root;
	unsigned int batch, n, nfree;
	__u64 cached_objs = 0, cached;
	char when[64];
	struct aa_stats st;
	double t0 = now_sec();
	long drained = 0;
	int ret;

	d.rng = xs_init(d.seed);
	d.h = caches ? t_open_flags(D_ARENA_PAGES, D_INIT_BYTES, AA_F_NO_SELF_GROW)
		     : t_open(D_ARENA_PAGES, D_INIT_BYTES);
	root = aa_heap__root(d.h);
	if (caches && (root->flags & AA_F_NO_CACHES))
		cr_skip_test("caches turned off by ARENA_ALLOC_NO_CACHES");
	cr_assert_eq(!!(root->flags & AA_F_NO_CACHES), !caches);
	cr_assert(!caches || root->nr_cpus > 0, "caches on, yet no CPU caches");
	/* live set + op array + every object the caches may hold */
	d.ext_cap = D_MAX_LIVE + 1;
	if (caches)
		d.ext_cap += root->nr_cpus * AA_NR_CLASSES * AA_CPU_CACHE_MAX +
			     AA_NR_CLASSES * AA_TRANSFER_MAX;
	d.live = calloc(D_MAX_LIVE, sizeof(*d.live));
	d.plan = calloc(D_BATCH, sizeof(*d.plan));
	d.ext = calloc(d.ext_cap, sizeof(*d.ext));
	cr_assert(d.live && d.plan && d.ext);
	cr_log_info("differential (%s, %u CPU caches): seed 0x%llx (replay with "
		    "AA_TEST_SEED=0x%llx)", d.name, root->nr_cpus,
		    (unsigned long long)d.seed, (unsigned long long)d.seed);

	/* a fresh heap: nothing allocated, init_bytes mapped, caches empty */
	st = t_stats(d.h);
	cr_assert(st.nr_allocs == 0 && st.bytes_in_use == 0 && st.live_allocs == 0);
	cr_assert_eq(st.nr_chunks, D_INIT_BYTES >> AA_CHUNK_SHIFT);
	d.m.chunks = d.m.grows = st.nr_chunks;
	check_stats(&d, "after open");

	/* the op array is itself a live allocation of the heap (> 8 KiB: a
	 * page run, caches or not) */
	d.ops_addr = aa_heap__malloc(d.h, D_BATCH * sizeof(*d.ops));
	cr_assert_neq(d.ops_addr, 0, "op array: %s", strerror(errno));
	d.ops = aa_heap__ptr(d.h, d.ops_addr);
	cr_assert_not_null(d.ops);
	d.ops_obj = (struct obj){ .addr = d.ops_addr, .size = D_BATCH * sizeof(*d.ops),
				  .usable = model_usable(D_BATCH * sizeof(*d.ops)) };
	check_placement(d.h, &d.ops_obj);
	model_alloc(&d.m, d.ops_obj.usable);
	check_stats(&d, "after the op array");

	for (batch = 0; d.nr_ops < D_MIN_OPS; batch++) {
		/* phases that grow the live set, then shrink it */
		nfree = build_batch(&d, D_BATCH, (batch / 8) % 2 ? 65 : 35);
		run_batch(&d, D_BATCH, nfree, batch);
		snprintf(when, sizeof(when), "after batch %u", batch);
		check_stats(&d, when);
		if (batch % D_CHECK_EVERY == D_CHECK_EVERY - 1) {
			cr_assert_eq(aa_heap__check(d.h), 0, "%s: heap check failed", when);
			verify_all(&d);
		}
	}
	cr_assert_eq(aa_heap__check(d.h), 0, "after the random phase: heap check failed");

	/* free everything (patterns checked on the way), in batches */
	verify_all(&d);
	while (d.nlive) {
		n = d.nlive < D_BATCH ? d.nlive : D_BATCH;
		for (nfree = 0; nfree < n;)
			plan_free(&d, nfree, rnd_below(&d.rng, d.nlive - nfree), &nfree);
		run_batch(&d, n, nfree, batch);
		snprintf(when, sizeof(when), "draining, batch %u", batch++);
		check_stats(&d, when);
	}

	/* caches on: what the caches still hold goes back to the heap, on
	 * each CPU in turn; exactly the objects that were counted there */
	cached = aa_heap__cached_bytes(d.h, &cached_objs);
	if (caches) {
		drained = aa_heap__drain(d.h);
		cr_assert_geq(drained, 0, "aa_heap__drain: %ld (%s)", drained, strerror(errno));
		cr_assert_eq((__u64)drained, cached_objs,
			     "aa_heap__drain returned %ld objects, the caches held %llu "
			     "(%llu bytes)", drained, (unsigned long long)cached_objs,
			     (unsigned long long)cached);
		cr_assert_eq(aa_heap__cached_bytes(d.h, NULL), 0, "caches not empty after drain");
		check_stats(&d, "after drain");
	}
	/* the heap alone: only the op array is left */
	st = t_stats(d.h);
	cr_assert_eq(st.bytes_in_use, d.ops_obj.usable, "bytes_in_use %llu after freeing all",
		     (unsigned long long)st.bytes_in_use);
	cr_assert_eq(st.live_allocs, 1, "live_allocs %llu after freeing all",
		     (unsigned long long)st.live_allocs);
	cr_assert_eq(aa_heap__cached_bytes(d.h, NULL), 0);
	cr_assert_eq(aa_heap__check(d.h), 0, "after freeing everything: heap check failed");

	/* everything coalesced: all chunks but the op array's are whole and free */
	ret = aa_heap__trim(d.h, 0);
	cr_assert_eq(ret, (int)d.m.chunks - 1, "trim returned %d of %llu chunks", ret,
		     (unsigned long long)d.m.chunks - 1);
	d.m.chunks -= ret;
	d.m.trims += ret;
	check_stats(&d, "after trim");
	cr_assert_eq(t_stats(d.h).nr_chunks, 1);
	cr_assert_eq(aa_heap__check(d.h), 0, "after trim: heap check failed");

	cr_assert_eq(aa_heap__free(d.h, d.ops_addr), 0);
	model_free(&d.m, d.ops_obj.usable);
	ret = aa_heap__trim(d.h, 0);
	cr_assert_eq(ret, 1, "last trim returned %d chunks", ret);
	d.m.chunks--;
	d.m.trims++;
	check_stats(&d, "after the last trim");
	cr_assert_eq(aa_heap__check(d.h), 0, "empty heap: heap check failed");
	st = t_stats(d.h);

	cr_log_info("differential (%s): seed 0x%llx: %llu ops in %u batches (%llu allocs, "
		    "%llu frees, %llu -ENOMEM, %llu grow calls, %llu batches ending in "
		    "-ENOMEM checked against free_blocks), peak %u live objects, "
		    "peak live bytes %llu (model peak %llu, stats peak %llu), peak cached "
		    "%llu objects / %llu bytes, %ld drained at the end, %llu chunks grown, "
		    "%.2f s",
		    d.name, (unsigned long long)d.seed, (unsigned long long)d.nr_ops, batch,
		    (unsigned long long)d.m.allocs - 1, (unsigned long long)d.m.frees - 1,
		    (unsigned long long)d.m.nomem, (unsigned long long)d.nr_grow_calls,
		    (unsigned long long)d.nomem_tail_checks,
		    d.peak_live, (unsigned long long)d.peak_live_bytes,
		    (unsigned long long)d.m.peak, (unsigned long long)st.heap_peak_bytes,
		    (unsigned long long)d.peak_cached_objs,
		    (unsigned long long)d.peak_cached_bytes, drained,
		    (unsigned long long)d.m.grows, now_sec() - t0);

	if (caches)
		log_cache_activity(&d);

	aa_heap__destroy(d.h);
	free(d.live);
	free(d.plan);
	free(d.ext);
}

/* Central lists and page heap alone (AA_F_NO_CACHES): every counter exact. */
Test(differential, random_ops, .timeout = 300)
{
	run_differential(false);
}

/* Caches on (the default): requests <= 8 KiB through the CPU caches. */
Test(differential, random_ops_caches, .timeout = 300)
{
	run_differential(true);
}

/* --- The checker is not vacuous ---------------------------------------------- */

Test(differential, pattern_check_catches_corruption)
{
	struct aa_heap *h = t_open(T_PAGES(16 * AA_CHUNK_SIZE), AA_CHUNK_SIZE);
	struct obj a = { .size = 100, .seed = 1 }, b = { .size = 1000, .seed = 2 };
	struct obj a_as_b;
	unsigned char *p;
	__u64 bad = ~0ULL;

	a.addr = aa_heap__malloc(h, a.size);
	b.addr = aa_heap__malloc(h, b.size);
	cr_assert(a.addr && b.addr);
	a.usable = model_usable(a.size);
	b.usable = model_usable(b.size);
	cr_assert_eq(t_usable(h, a.addr), a.usable);
	cr_assert_eq(t_usable(h, b.addr), b.usable);
	fill_obj(h, &a);
	fill_obj(h, &b);
	cr_assert(verify_obj(h, &a, false, &bad));
	cr_assert(verify_obj(h, &b, false, &bad));

	/* one flipped bit in the middle of b: reported at that offset, a is fine */
	p = aa_heap__ptr(h, b.addr);
	p[517] ^= 0x10;
	cr_assert_not(verify_obj(h, &b, false, &bad));
	cr_assert_eq(bad, 517);
	cr_assert(verify_obj(h, &a, false, NULL));
	p[517] ^= 0x10;
	cr_assert(verify_obj(h, &b, false, NULL));

	/* the last requested byte is covered too */
	p[b.size - 1] = ~p[b.size - 1];
	cr_assert_not(verify_obj(h, &b, false, &bad));
	cr_assert_eq(bad, b.size - 1);
	p[b.size - 1] = ~p[b.size - 1];

	/* patterns differ per object: a block handed out twice would show */
	a_as_b = a;
	a_as_b.seed = b.seed;
	cr_assert_not(verify_obj(h, &a_as_b, false, &bad));

	cr_assert_eq(aa_heap__free(h, a.addr), 0);
	cr_assert_eq(aa_heap__free(h, b.addr), 0);
	t_check(h);
	aa_heap__destroy(h);
}
