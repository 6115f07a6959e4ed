// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* stats.c - name and print the counters read from the arena mmap, copy
 * the CPU caches (aa_heap__cpu_cache()) and describe its chunks
 * (aa_heap__chunk()). */
#include <stdlib.h>
#include <unistd.h>
#include "internal.h"

static const char *const error_names[AA_NR_ERRORS] = {
	[AA_ERR_SIZE]		= "bad_size",
	[AA_ERR_ALIGN]		= "bad_align",
	[AA_ERR_NOMEM]		= "nomem",
	[AA_ERR_BUSY]		= "lock_busy",
	[AA_ERR_NESTED]		= "nested",
	[AA_ERR_DOUBLE_FREE]	= "double_free",
	[AA_ERR_FOREIGN]	= "foreign_ptr",
	[AA_ERR_INTERIOR]	= "interior_ptr",
	[AA_ERR_MISALIGNED]	= "misaligned_ptr",
	[AA_ERR_CORRUPT]	= "corrupt",
	[AA_ERR_UNINIT]		= "uninit",
	[AA_ERR_ZEROING]	= "zeroing",
};

AA_API const char *aa_error_str(enum aa_error err)
{
	return (unsigned)err < AA_NR_ERRORS ? error_names[err] : "unknown";
}

/* --- Totals: the calls programs made (equations: struct aa_stats) ------- */

static const struct aa_cpu_cache *cache_at(const struct aa_heap *h, int *i);

/* What the caches served and hold: one copy of each CPU's and user cache
 * (aa_heap__cpu_cache()), and the transfer caches' counts, reserves
 * included. */
struct cache_sums {
	__u64 allocs, frees;	/* calls the CPU caches and their reserves served */
	__u64 objs, bytes;	/* objects held, CPU and transfer caches */
};

/* Objects in class c's transfer cache and its reserve (0: the heap has
 * none). */
static __u32 tc_count(const struct aa_heap *h, int c)
{
	const struct aa_transfer_cache *t = aa_heap__transfer_cache(h, c);

	return t ? __atomic_load_n(&t->count, __ATOMIC_RELAXED) +
		   aa_reserve_objs(&t->reserve, h->root->cache_key) : 0;
}

static void cache_sums(const struct aa_heap *h, struct cache_sums *s)
{
	const struct aa_cpu_cache *cc;
	const struct aa_cpu_class *k;
	__u32 n;
	int i, c;

	memset(s, 0, sizeof(*s));
	for (c = 0; c < AA_NR_CLASSES; c++) {
		n = tc_count(h, c);
		s->objs += n;
		s->bytes += (__u64)n * aa_class_size(c);
	}
	for (i = 0; (cc = cache_at(h, &i)); i++)
		for (c = 0; c < AA_NR_CLASSES; c++) {
			k = &cc->cls[c];
			n = k->count + aa_reserve_objs(&k->reserve, h->root->cache_key);
			s->objs += n;
			s->bytes += (__u64)n * aa_class_size(c);
			s->allocs += k->stats.allocs + k->reserve_allocs;
			s->frees += k->stats.frees + k->reserve_frees;
		}
}

AA_API __u64 aa_heap__cached_bytes(const struct aa_heap *h, __u64 *objects)
{
	struct cache_sums s = {};

	AA_CHECK_HEAP(h, 0);
	if (h->root)
		cache_sums(h, &s);
	if (objects)
		*objects = s.objs;
	return s.bytes;
}

AA_API int aa_heap__stats(const struct aa_heap *h, struct aa_stats *out)
{
	const volatile struct aa_root *r;
	struct cache_sums cs;

	AA_CHECK_HEAP(h, -EINVAL);
	r = h->root;
	if (!r || !out)
		return aa_err(-EINVAL);
	memset(out, 0, sizeof(*out));
	memcpy(&out->heap, (const void *)&r->stats, sizeof(out->heap));

	cache_sums(h, &cs);	/* one copy of each CPU's cache */
	out->cached_objs = cs.objs;
	out->cached_bytes = cs.bytes;
	if (r->flags & AA_F_DEBUG) {
		out->quarantined_objs = r->debug.q_objs;
		out->quarantined_bytes = r->debug.q_bytes;
	}
	out->limbo_objs = r->defer.pending_objs;
	out->limbo_bytes = r->defer.pending_bytes;
	out->limbo_nodes = r->defer.nodes;
	out->limbo_node_bytes = out->limbo_nodes * AA_MIN_SIZE;
	out->parked_objs = aa_sub_clamp(out->frees_parked, out->frees_unparked);

	out->nr_allocs = cs.allocs + out->tc_allocs + out->direct_allocs;
	out->nr_frees = cs.frees + out->tc_frees + out->direct_frees + r->defer.deferred +
			out->quarantined_objs;
	out->live_allocs = aa_sub_clamp(out->heap_live, out->cached_objs + out->quarantined_objs +
					out->limbo_objs + out->limbo_nodes + out->parked_objs);
	out->bytes_in_use = aa_sub_clamp(out->heap_bytes, out->cached_bytes +
					 out->quarantined_bytes + out->limbo_bytes +
					 out->limbo_node_bytes);
	return 0;
}

AA_API int aa_stats__print(const struct aa_stats *st, FILE *out)
{
	int k;

	if (!st || !out)
		return aa_err(-EINVAL);
	fprintf(out, "calls: in use %llu B in %llu live allocations\n",
		(unsigned long long)st->bytes_in_use, (unsigned long long)st->live_allocs);
	fprintf(out, "       allocs %llu  frees %llu\n",
		(unsigned long long)st->nr_allocs, (unsigned long long)st->nr_frees);
	fprintf(out, "held:  cached %llu (%llu B), quarantined %llu (%llu B), "
		"limbo %llu (%llu B) and %llu nodes (%llu B), parked %llu\n",
		(unsigned long long)st->cached_objs, (unsigned long long)st->cached_bytes,
		(unsigned long long)st->quarantined_objs, (unsigned long long)st->quarantined_bytes,
		(unsigned long long)st->limbo_objs, (unsigned long long)st->limbo_bytes,
		(unsigned long long)st->limbo_nodes, (unsigned long long)st->limbo_node_bytes,
		(unsigned long long)st->parked_objs);
	fprintf(out, "heap:  in use %llu B (peak %llu B) in %llu objects, "
		"allocs %llu  frees %llu (caches' refills and spills included)\n",
		(unsigned long long)st->heap_bytes, (unsigned long long)st->heap_peak_bytes,
		(unsigned long long)st->heap_live, (unsigned long long)st->heap_allocs,
		(unsigned long long)st->heap_frees);
	fprintf(out, "pages of %u KiB: mapped %llu (peak %llu), chunks %llu (%llu whole in large "
		"allocations), grown %llu, trimmed %llu\n", AA_PAGE_SIZE / 1024,
		(unsigned long long)st->pages_mapped, (unsigned long long)st->peak_pages_mapped,
		(unsigned long long)st->nr_chunks, (unsigned long long)st->large_chunks,
		(unsigned long long)st->nr_grows, (unsigned long long)st->nr_trims);
	fprintf(out, "       in spans %llu, in page runs %llu\n",
		(unsigned long long)st->span_pages, (unsigned long long)st->run_pages);
	if (st->absent_pages)
		fprintf(out, "       partial chunks: %llu of their slots' pages not the heap's\n",
			(unsigned long long)st->absent_pages);
	if (st->self_grows || st->self_grow_fails)
		fprintf(out, "       grown by allocations %llu (%llu ns per chunk), "
			"self-grows that got none %llu\n",
			(unsigned long long)st->self_grows,
			(unsigned long long)(st->self_grow_ns /
					     (st->self_grows ? st->self_grows : 1)),
			(unsigned long long)st->self_grow_fails);
	fprintf(out, "free page blocks per order:");
	for (k = 0; k < AA_NR_ORDERS; k++)
		if (st->free_blocks[k])
			fprintf(out, " %up:%llu", 1U << k,
				(unsigned long long)st->free_blocks[k]);
	fprintf(out, "\nerrors:");
	for (k = 0; k < AA_NR_ERRORS; k++)
		fprintf(out, " %s=%llu", error_names[k], (unsigned long long)st->err[k]);
	fprintf(out, "\ncontention (recovered): lock_waits=%llu lock_misses=%llu "
		"frees_parked=%llu frees_unparked=%llu no_cache=%llu\n",
		(unsigned long long)st->lock_waits, (unsigned long long)st->lock_misses,
		(unsigned long long)st->frees_parked, (unsigned long long)st->frees_unparked,
		(unsigned long long)st->no_cache);
	return 0;
}

/* Per class: spans, objects out of the spans, how many of those sit in
 * caches (the rest are in use), and bytes lost to rounding so far by
 * allocations through the CPU caches; in use and lost are clamped
 * differences (aa_sub_clamp()). */
static int print_classes(const struct aa_heap *h, FILE *out)
{
	const struct aa_root *r = aa_heap__root(h);
	const struct aa_cpu_cache *cc;
	__u64 cached, allocs, req;
	int c, i;

	fprintf(out, "class %6s %6s %8s %10s %10s %10s %12s\n", "size", "pages", "spans",
		"out", "cached", "in_use", "round_waste");
	for (c = 0; c < AA_NR_CLASSES; c++) {
		const struct aa_central *ce = &r->central[c];

		cached = tc_count(h, c);
		allocs = req = 0;
		for (i = 0; (cc = cache_at(h, &i)); i++) {
			cached += cc->cls[c].count;
			allocs += cc->cls[c].stats.allocs;
			req += cc->cls[c].stats.req_bytes;
		}
		if (!ce->spans && !ce->objs_out && !ce->span_allocs)
			continue;
		fprintf(out, "%5d %6u %6u %8llu %10llu %10llu %10llu %12llu\n", c,
			r->class_size[c], r->class_pages[c], (unsigned long long)ce->spans,
			(unsigned long long)ce->objs_out, (unsigned long long)cached,
			(unsigned long long)aa_sub_clamp(ce->objs_out, cached),
			(unsigned long long)aa_sub_clamp(allocs * r->class_size[c], req));
	}
	return 0;
}

AA_API int aa_heap__print_caches(const struct aa_heap *h, FILE *out)
{
	const struct aa_root *r;
	const struct aa_cpu_cache *cc;
	int i, c;

	AA_CHECK_HEAP(h, -EINVAL);
	r = aa_heap__root(h);
	if (!r || !out)
		return aa_err(-EINVAL);
	if (r->flags & AA_F_NO_CACHES) {
		fprintf(out, "caches: off (central lists only)\n");
		return print_classes(h, out);
	}
	fprintf(out, "%-4s %6s %10s %10s %10s %8s %8s %8s %8s %8s %6s %7s %9s %9s\n", "cpu",
		"class", "allocs", "frees", "hits", "misses", "refills", "spills", "nested",
		"failures", "cached", "reserve", "rsv_alloc", "rsv_free");
	for (i = 0; (cc = cache_at(h, &i)); i++)
		for (c = 0; c < AA_NR_CLASSES; c++) {
			const struct aa_cpu_class *k = &cc->cls[c];
			const struct aa_cpu_class_stats *s = &k->stats;
			char who[16];

			if (!s->allocs && !s->frees && !s->nested && !s->failures &&
			    !k->reserve_allocs && !k->reserve_frees)
				continue;
			snprintf(who, sizeof(who), i < AA_MAX_CPUS ? "%d" : "u%d",
				 i < AA_MAX_CPUS ? i : i - AA_MAX_CPUS);
			fprintf(out, "%-4s %6u %10llu %10llu %10llu %8llu %8llu %8llu %8llu %8llu %6u "
				"%7u %9llu %9llu\n",
				who, r->class_size[c], (unsigned long long)s->allocs,
				(unsigned long long)s->frees,
				(unsigned long long)aa_class_hits(s->allocs, s->failures,
								  s->misses),
				(unsigned long long)s->misses, (unsigned long long)s->refills,
				(unsigned long long)s->spills, (unsigned long long)s->nested,
				(unsigned long long)s->failures, k->count,
				aa_reserve_objs(&k->reserve, r->cache_key),
				(unsigned long long)k->reserve_allocs,
				(unsigned long long)k->reserve_frees);
		}
	fprintf(out, "transfer %6s %10s %10s %10s %11s %11s %6s %7s\n", "class", "batch_in",
		"batch_out", "lock_fail", "remove_miss", "insert_miss", "cached", "reserve");
	for (c = 0; c < AA_NR_CLASSES; c++) {
		const struct aa_transfer_cache *t = aa_heap__transfer_cache(h, c);

		if (!t)
			break;
		if (!t->batches_in && !t->batches_out && !t->count && !t->lock_fails)
			continue;
		fprintf(out, "         %6u %10llu %10llu %10llu %11llu %11llu %6u %7u\n",
			r->class_size[c], (unsigned long long)t->batches_in,
			(unsigned long long)t->batches_out, (unsigned long long)t->lock_fails,
			(unsigned long long)t->remove_misses, (unsigned long long)t->insert_misses,
			t->count, aa_reserve_objs(&t->reserve, r->cache_key));
	}
	fprintf(out, "refill signals: %llu%s, events lost %llu\n",
		(unsigned long long)r->refill_signals,
		r->need_refill ? " (refill needed now)" : "",
		(unsigned long long)r->stats.refill_events_lost);
	return print_classes(h, out);
}

/* --- Pages the heap may return: CPU caches and chunk metadata -------------
 * Read under the reader pin (aa_shared.h, AA_READERS_*), which keeps trim,
 * teardown and init from returning them meanwhile: a read of a returned
 * page would map a fresh one into the arena.
 */

#define READ_TRIES	100	/* 1 ms apart: returners hold them off briefly */

/* Count us as a reader: 0 with the pages safe to read until
 * reader_unpin(), or -EBUSY: pages were being returned at every try. */
static int reader_pin(const struct aa_heap *h)
{
	__u32 *w = (__u32 *)&h->root->mmap_readers;	/* the arena is writable */
	int i;

	for (i = 0; i < READ_TRIES; i++) {
		if (__atomic_fetch_add(w, 1, __ATOMIC_SEQ_CST) < AA_READERS_RETURNER)
			return 0;
		__atomic_fetch_sub(w, 1, __ATOMIC_SEQ_CST);
		usleep(1000);
	}
	pr_warn("reading the heap's pages: they were being returned for %d ms\n", READ_TRIES);
	return -EBUSY;
}

static void reader_unpin(const struct aa_heap *h)
{
	__atomic_fetch_sub((__u32 *)&h->root->mmap_readers, 1, __ATOMIC_SEQ_CST);
}

/* A copy of the cache at arena offset off (0: none), in h's buffer (one
 * per handle: the previous copy is overwritten), taken under the pin. */
static const struct aa_cpu_cache *copy_cache(const struct aa_heap *h, const __u32 *offp)
{
	struct aa_heap *scratch = (struct aa_heap *)h;	/* the copy buffer only */
	__u32 off;

	if (!h->cc_copy && !(scratch->cc_copy = malloc(sizeof(*h->cc_copy))))
		return NULL;
	if (reader_pin(h)) {
		errno = EBUSY;
		return NULL;
	}
	off = __atomic_load_n(offp, __ATOMIC_RELAXED);
	if (off && off <= h->arena_size - sizeof(*h->cc_copy))
		memcpy(h->cc_copy, h->arena + off, sizeof(*h->cc_copy));
	else
		off = 0;
	reader_unpin(h);
	return off ? h->cc_copy : NULL;
}

AA_API const struct aa_cpu_cache *aa_heap__cpu_cache(const struct aa_heap *h, int cpu)
{
	const struct aa_root *r;

	AA_CHECK_HEAP(h, NULL);
	r = h->root;
	if (!r || cpu < 0 || cpu >= AA_MAX_CPUS || cpu >= (int)r->nr_cpus)
		return NULL;
	return copy_cache(h, &r->cpu_cache_off[cpu]);
}

AA_API const struct aa_cpu_cache *aa_heap__user_cache(const struct aa_heap *h, int idx)
{
	AA_CHECK_HEAP(h, NULL);
	if (!h->root || idx < 0 || idx >= AA_MAX_USER_CACHES)
		return NULL;
	return copy_cache(h, &h->root->user.off[idx]);
}

/* Cache *i of the heap: CPU caches, then user caches (AA_MAX_CPUS + their
 * index), a copy as above; NULL past the last. *i moves past gaps. */
static const struct aa_cpu_cache *cache_at(const struct aa_heap *h, int *i)
{
	const struct aa_cpu_cache *cc;

	for (; *i < AA_MAX_CPUS + AA_MAX_USER_CACHES; ++*i) {
		cc = *i < AA_MAX_CPUS ? aa_heap__cpu_cache(h, *i)
				      : aa_heap__user_cache(h, *i - AA_MAX_CPUS);
		if (cc)
			return cc;
		if (errno == EBUSY)
			return NULL;
	}
	return NULL;
}

/* --- Chunks, for dump-like tools (read from the mmap, no program runs) --- */

/* Entry i (size bytes) of the root's table at arena offset off, inside
 * the arena, or NULL (errno EFAULT). */
static const void *table_entry(const struct aa_heap *h, __u32 off, __u64 i, __u64 size)
{
	__u64 addr = h->root->arena_base + off + i * size;

	if (!aa_heap__ptr(h, addr + size - 1))
		return NULL;
	return aa_heap__ptr(h, addr);
}

AA_API const struct aa_slot *aa_heap__slot(const struct aa_heap *h, __u32 slot)
{
	const struct aa_root *r;

	AA_CHECK_HEAP(h, NULL);
	r = h->root;
	if (!r || !r->slots || slot >= r->nr_slots || slot >= AA_MAX_SLOTS) {
		errno = ENOENT;
		return NULL;
	}
	return table_entry(h, r->slots - r->arena_base, slot, sizeof(struct aa_slot));
}

AA_API const struct aa_transfer_cache *aa_heap__transfer_cache(const struct aa_heap *h, int cls)
{
	const struct aa_root *r;

	AA_CHECK_HEAP(h, NULL);
	r = h->root;
	if (!r || !r->tc_off || cls < 0 || cls >= AA_NR_CLASSES) {
		errno = ENOENT;
		return NULL;
	}
	return table_entry(h, r->tc_off, cls, sizeof(struct aa_transfer_cache));
}

AA_API int aa_heap__chunk(const struct aa_heap *h, __u32 slot, struct aa_chunk_info *out)
{
	const struct aa_root *r;
	const struct aa_slot *st;
	__u32 pm[AA_CHUNK_PAGES];
	const void *src;
	__u32 p, e, k;
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	r = h->root;
	if (!r || !out)
		return aa_err(-EINVAL);
	st = aa_heap__slot(h, slot);
	if (!st)
		return aa_err(-errno);
	memset(out, 0, sizeof(*out));
	out->slot = slot;
	err = reader_pin(h);
	if (err)
		return aa_err(err);
	out->state = __atomic_load_n(&st->state, __ATOMIC_RELAXED);
	/* the slot's entries of the page map (aa_shared.h) */
	src = table_entry(h, r->pm - r->arena_base, slot, sizeof(pm));
	if (out->state == AA_SLOT_CHUNK && src)
		memcpy(pm, src, sizeof(pm));
	else if (out->state == AA_SLOT_CHUNK)
		err = -EFAULT;
	reader_unpin(h);
	if (err || out->state != AA_SLOT_CHUNK)
		return err ? aa_err(err) : 0;
	for (p = 0; p < AA_CHUNK_PAGES; p++) {
		e = pm[p];
		switch (AA_PM_KIND(e)) {
		case AA_PM_FREE_HEAD:
			k = AA_PM_LOW(e);
			if (k < AA_NR_ORDERS) {
				out->free_blocks[k]++;
				if ((1U << k) > out->largest_free)
					out->largest_free = 1U << k;
			}
			/* fallthrough */
		case AA_PM_FREE:
			out->map[p] = '.';
			out->free_pages++;
			break;
		case AA_PM_SPAN:
			out->map[p] = 's';
			out->span_pages++;
			break;
		case AA_PM_ABSENT:	/* a partial chunk's: not the heap's */
			out->map[p] = 'x';
			break;
		default:
			out->map[p] = 'r';
			out->run_pages++;
		}
	}
	return 0;
}
