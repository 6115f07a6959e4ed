// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * htab.bpf.c - bench_htab of build/aa_bench: the application benchmark,
 * a hash table in arena memory against the kernel's hash maps. Part of
 * bench.bpf.c's object (included at its end: one translation unit, as
 * bpf/arena_alloc.bpf.c holds the library's tiers).
 */

/* --- Application benchmark: hash tables ---------------------------------------
 * The arena table: BENCH_HTAB_ENTRIES buckets (an arena-alloc allocation),
 * each a test-and-set lock and a singly linked chain of elements
 * (arena-alloc allocations). Like the kernel's htab, an update allocates a
 * new element under the bucket lock and replaces the old one, which is
 * freed after the unlock; a delete unlinks and frees. The plain table
 * frees with aa_free(): elements are reused at once, so a lookup must take
 * the bucket lock. The deferred one (BENCH_HTAB_ARENA_DEFER, a heap with
 * AA_F_DEFER) frees with aa_free_deferred(), as the kernel's htab frees
 * through bpf_mem_free_rcu(): bench_ah_lookup() walks a chain without the
 * lock. Links are published with a release order (x86: stores in order).
 */
struct bench_helem {
	__u64 next;		/* user address of the next element, 0 */
	__u32 key;
	__u32 pad;
	__u64 value[BENCH_HTAB_VALUE / 8];
};

struct bench_hbucket {
	__u32 lock;		/* 0 free, 1 held */
	__u32 pad;
	__u64 head;		/* first element, 0. Protected by lock. */
};

struct bench_htab __arena bench_ah;
struct bench_hpair __arena bench_hpairs[BENCH_MAX_WORKERS / 2];

struct bench_hval {
	__u64 v[BENCH_HTAB_VALUE / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BENCH_HTAB_ENTRIES);
	__type(key, __u32);
	__type(value, struct bench_hval);
} bench_htab_prealloc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BENCH_HTAB_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bench_hval);
} bench_htab_no_prealloc SEC(".maps");

#define HBITS		14	/* log2(BENCH_HTAB_ENTRIES) */
_Static_assert((1 << HBITS) == BENCH_HTAB_ENTRIES, "HBITS");

static __always_inline struct bench_hbucket __arena *ah_bucket(__u32 key)
{
	__u32 h = (key * 0x9e3779b1U) >> (32 - HBITS);

	return &((struct bench_hbucket __arena *)bench_ah.buckets)[h];
}

static __always_inline bool ah_lock(struct bench_hbucket __arena *b)
{
	while (can_loop) {
		if (!READ_ONCE_A(b->lock) && __sync_val_compare_and_swap(&b->lock, 0, 1) == 0)
			return true;
	}
	return false;
}

static __always_inline void ah_unlock(struct bench_hbucket __arena *b)
{
	__sync_lock_test_and_set(&b->lock, 0);
}

/* Find key in b's chain: returns the element's address (0: none) and the
 * link that points to it in *link. REQUIRES: b locked. */
static __always_inline __u64 ah_find(struct bench_hbucket __arena *b, __u32 key,
				     __u64 __arena **link)
{
	__u64 __arena *l = &b->head;
	__u64 cur = *l;

	while (cur && can_loop) {
		struct bench_helem __arena *e = (struct bench_helem __arena *)cur;

		if (e->key == key)
			break;
		l = &e->next;
		cur = *l;
	}
	*link = l;
	if (cur && ((struct bench_helem __arena *)cur)->key != key)
		cur = 0;	/* loop budget ran out */
	return cur;
}

/* Insert or replace key. flags: BPF_ANY or BPF_NOEXIST. */
/* Lock-free lookup (the deferred table only): the value's first word, or
 * -ENOENT. Inside RCU (every non-sleepable program): an element it reaches
 * is not reused before the program ends. */
__attribute__((noinline)) long bench_ah_lookup(__u32 key)
{
	struct bench_helem __arena *e;
	long ret = -ENOENT;
	__u64 cur;

	if (!bench_ah.buckets)
		return -EINVAL;
	bpf_rcu_read_lock();	/* a syscall program sleeps otherwise */
	cur = READ_ONCE_A(ah_bucket(key)->head);
	while (cur && can_loop) {
		e = (struct bench_helem __arena *)cur;
		if (e->key == key) {
			ret = e->value[0];
			break;
		}
		cur = READ_ONCE_A(e->next);
	}
	bpf_rcu_read_unlock();
	return ret;
}

/* The plain table's lookup: under the bucket lock (its elements are
 * reused at once). */
__attribute__((noinline)) long bench_ah_lookup_locked(__u32 key)
{
	struct bench_hbucket __arena *b;
	__u64 __arena *link = NULL;
	long ret = -ENOENT;
	__u64 cur;

	if (!bench_ah.buckets)
		return -EINVAL;
	b = ah_bucket(key);
	if (!ah_lock(b))
		return -EBUSY;
	cur = ah_find(b, key, &link);
	if (cur)
		ret = ((struct bench_helem __arena *)cur)->value[0];
	ah_unlock(b);
	return ret;
}

static __always_inline int ah_free(__u64 old, bool deferred)
{
	return deferred ? aa_free_deferred(old) : aa_free(old);
}

static __always_inline int bench_ah_update(__u32 key, __u64 flags, bool deferred)
{
	struct bench_hbucket __arena *b;
	struct bench_helem __arena *e;
	__u64 __arena *link = NULL;
	__u64 old, p;
	__u32 i;

	if (!bench_ah.buckets)
		return -EINVAL;
	b = ah_bucket(key);
	if (!ah_lock(b))
		return -EBUSY;
	old = ah_find(b, key, &link);
	if (old && flags == BPF_NOEXIST) {
		ah_unlock(b);
		return -EEXIST;
	}
	p = (__u64)aa_malloc(sizeof(*e));
	if (!p) {
		ah_unlock(b);
		return -ENOMEM;
	}
	e = (struct bench_helem __arena *)p;
	e->key = key;
	for (i = 0; i < BENCH_HTAB_VALUE / 8; i++)
		e->value[i] = 0;
	/* the element is complete before a lock-free reader can reach it
	 * (x86 keeps stores in order; the barrier keeps the compiler's) */
	if (old) {
		e->next = ((struct bench_helem __arena *)old)->next;
		barrier();
		*link = p;
	} else {
		e->next = b->head;
		barrier();
		b->head = p;
	}
	ah_unlock(b);
	if (old)
		ah_free(old, deferred);
	return 0;
}

static __always_inline int bench_ah_delete(__u32 key, bool deferred)
{
	struct bench_hbucket __arena *b;
	__u64 __arena *link = NULL;
	__u64 old;

	if (!bench_ah.buckets)
		return -EINVAL;
	b = ah_bucket(key);
	if (!ah_lock(b))
		return -EBUSY;
	old = ah_find(b, key, &link);
	if (old)
		*link = ((struct bench_helem __arena *)old)->next;
	ah_unlock(b);
	if (!old)
		return -ENOENT;
	ah_free(old, deferred);
	return 0;
}

/* Global: the loops over keys call one function per op whatever impl
 * is, so the verifier walks each loop once (inlined, the four tables'
 * paths multiplied through every loop: over 10^6 instructions). */
__attribute__((noinline)) int h_update(__u32 impl, __u32 key, __u64 flags)
{
	struct bench_hval v = {};

	switch (impl) {
	case BENCH_HTAB_ARENA:
	case BENCH_HTAB_ARENA_DEFER:
		return bench_ah_update(key, flags, impl == BENCH_HTAB_ARENA_DEFER);
	case BENCH_HTAB_PREALLOC:
		return bpf_map_update_elem(&bench_htab_prealloc, &key, &v, flags);
	default:
		return bpf_map_update_elem(&bench_htab_no_prealloc, &key, &v, flags);
	}
}

__attribute__((noinline)) int h_delete(__u32 impl, __u32 key)
{
	switch (impl) {
	case BENCH_HTAB_ARENA:
	case BENCH_HTAB_ARENA_DEFER:
		return bench_ah_delete(key, impl == BENCH_HTAB_ARENA_DEFER);
	case BENCH_HTAB_PREALLOC:
		return bpf_map_delete_elem(&bench_htab_prealloc, &key);
	default:
		return bpf_map_delete_elem(&bench_htab_no_prealloc, &key);
	}
}

static __always_inline long h_lookup(__u32 impl, __u32 key)
{
	void *v;

	switch (impl) {
	case BENCH_HTAB_ARENA:
		return bench_ah_lookup_locked(key);
	case BENCH_HTAB_ARENA_DEFER:
		return bench_ah_lookup(key);
	case BENCH_HTAB_PREALLOC:
		v = bpf_map_lookup_elem(&bench_htab_prealloc, &key);
		return v ? 0 : -ENOENT;
	default:
		v = bpf_map_lookup_elem(&bench_htab_no_prealloc, &key);
		return v ? 0 : -ENOENT;
	}
}

struct htab_ctx {
	__u64 ops, ok, nomem;
};

static __always_inline void h_updates(struct htab_ctx *c, __u32 impl, __u32 from,
				      __u32 step, __u64 flags)
{
	__u32 k;
	int err;

	for (k = from; k < BENCH_HTAB_ENTRIES && can_loop; k += step) {
		err = h_update(impl, k, flags);
		c->ops++;
		if (!err)
			c->ok++;
		else if (err == -ENOMEM || err == -E2BIG)
			c->nomem++;
	}
}

static __always_inline void h_deletes(struct htab_ctx *c, __u32 impl, __u32 from, __u32 step)
{
	__u32 k;

	for (k = from; k < BENCH_HTAB_ENTRIES && can_loop; k += step) {
		c->ops++;
		if (!h_delete(impl, k))
			c->ok++;
	}
}

/* lookup_mostly, key k, its i-th: an overwrite every 8th key, else a
 * lookup (a miss inserts it: the first pass fills the table). >= 0 ok,
 * or -errno. A global function: the verifier walks the loop over it once. */
__attribute__((noinline)) long bench_h_lookup_op(__u32 impl, __u32 k, __u32 i)
{
	long r;

	if (i % 8 == 7)
		return h_update(impl, k, BPF_ANY);
	r = h_lookup(impl, k);
	return r == -ENOENT ? h_update(impl, k, BPF_NOEXIST) : r;
}

static __always_inline void h_lookups(struct htab_ctx *c, __u32 impl, __u32 from, __u32 step)
{
	__u32 k, i = ZERO;
	long r;

	for (k = from; k < BENCH_HTAB_ENTRIES && can_loop; k += step) {
		c->ops++;
		r = bench_h_lookup_op(impl, k, i++);
		if (r >= 0)
			c->ok++;
		else if (r == -ENOMEM || r == -E2BIG)
			c->nomem++;
	}
}

/*
 * add_del_on_diff_cpu, one side of pair `pair`: walk the batches from this
 * side's cursor while they are in the state this side consumes (adder:
 * EMPTY, deleter: FULL), process each and hand it over.
 * Pair keys: pair + j * npairs, j = 0, 1, ...; batch b holds j in
 * [b * BENCH_HTAB_BATCH, (b + 1) * BENCH_HTAB_BATCH).
 */
static __always_inline void h_pair_side(struct htab_ctx *c, __u32 impl, __u32 pair,
					__u32 npairs, bool adder)
{
	struct bench_hpair __arena *hp = &bench_hpairs[pair & (BENCH_MAX_WORKERS / 2 - 1)];
	__u32 nkeys = (BENCH_HTAB_ENTRIES - pair + npairs - 1) / npairs;
	__u32 nb = (nkeys + BENCH_HTAB_BATCH - 1) / BENCH_HTAB_BATCH;
	__u32 cur = hp->cursor[adder ? 0 : 1], n, b, j, key;

	for (n = ZERO; n < nb && can_loop; n++) {
		b = (cur % nb) & (BENCH_HTAB_BATCHES - 1);
		if (READ_ONCE_A(hp->state[b]) != (adder ? BENCH_BATCH_EMPTY : BENCH_BATCH_FULL))
			break;
		barrier();
		for (j = ZERO; j < BENCH_HTAB_BATCH && can_loop; j++) {
			key = pair + (b * BENCH_HTAB_BATCH + j) * npairs;
			if (key >= BENCH_HTAB_ENTRIES)
				break;
			c->ops++;
			if (adder ? !h_update(impl, key, BPF_NOEXIST) : !h_delete(impl, key))
				c->ok++;
		}
		/* xchg: a full barrier, the batch's changes are visible first */
		__sync_lock_test_and_set(&hp->state[b],
					 adder ? BENCH_BATCH_FULL : BENCH_BATCH_EMPTY);
		cur++;
	}
	hp->cursor[adder ? 0 : 1] = cur;
}

/*
 * One pass over this worker's keys (htab-mem's use cases):
 *   overwrite:            update(k, BPF_ANY) for k = w, w + P, ...
 *   batch_add_batch_del:  update(k, BPF_NOEXIST) for the same keys, then
 *                         delete them
 *   add_del_on_diff_cpu:  workers 2i and 2i + 1 share keys i, i + P/2, ...:
 *                         the even one adds batches of them, the odd one
 *                         deletes the batches the even one filled
 *   lookup_mostly:        7 lookups per overwrite over my keys (not
 *                         htab-mem's: the read-mostly case RCU is for)
 */
SEC("syscall")
int bench_htab(struct bench_htab_args *a)
{
	struct htab_ctx c = { .ops = ZERO, .ok = ZERO, .nomem = ZERO };
	__u32 impl = a->impl, w = a->worker, nw = a->nworkers;
	__u64 t0, t1;

	if (nw == 0 || nw > BENCH_MAX_WORKERS || w >= nw || impl >= BENCH_NR_HTAB_IMPLS)
		return -EINVAL;
	if (a->use_case == BENCH_HTAB_ADD_DEL_DIFF_CPU && (nw & 1))
		return -EINVAL;
	t0 = bpf_ktime_get_ns();
	switch (a->use_case) {
	case BENCH_HTAB_OVERWRITE:
		h_updates(&c, impl, w, nw, BPF_ANY);
		break;
	case BENCH_HTAB_BATCH_ADD_DEL:
		h_updates(&c, impl, w, nw, BPF_NOEXIST);
		h_deletes(&c, impl, w, nw);
		break;
	case BENCH_HTAB_ADD_DEL_DIFF_CPU:
		h_pair_side(&c, impl, w / 2, nw / 2, !(w & 1));
		break;
	case BENCH_HTAB_LOOKUP_MOSTLY:
		h_lookups(&c, impl, w, nw);
		break;
	default:
		return -EINVAL;
	}
	t1 = bpf_ktime_get_ns();
	a->cpu = bpf_get_smp_processor_id();
	a->t_start = t0;
	a->t_end = t1;
	a->ns = t1 - t0;
	a->ops = c.ops;
	a->ok = c.ok;
	a->nomem = c.nomem;
	return 0;
}

struct clear_ctx {
	__u32 impl;
	__u32 deleted;
};

static long clear_key(__u64 k, void *data)
{
	struct clear_ctx *c = data;

	if (!h_delete(c->impl, k))
		c->deleted++;
	return 0;
}

/* Empty impl's table; ARENA: create the bucket array first, or with
 * destroy free it after. err -ENOMEM: grow the heap and run it again. */
SEC("syscall")
int bench_htab_setup(struct bench_htab_setup_args *a)
{
	struct clear_ctx c = { .impl = a->impl };
	__u64 p;

	a->err = 0;
	if ((a->impl == BENCH_HTAB_ARENA || a->impl == BENCH_HTAB_ARENA_DEFER) && !bench_ah.buckets) {
		if (a->destroy)
			return 0;
		p = aa_calloc_u64(BENCH_HTAB_ENTRIES, sizeof(struct bench_hbucket));
		if (!p) {
			a->err = -ENOMEM;
			return 0;
		}
		bench_ah.buckets = p;
	}
	bpf_loop(BENCH_HTAB_ENTRIES, clear_key, &c, 0);
	a->deleted = c.deleted;
	for (p = 0; p < BENCH_MAX_WORKERS / 2; p++) {
		struct bench_hpair __arena *hp = &bench_hpairs[p];
		__u32 b;

		for (b = 0; b < BENCH_HTAB_BATCHES; b++)
			hp->state[b] = BENCH_BATCH_EMPTY;
		hp->cursor[0] = 0;
		hp->cursor[1] = 0;
	}
	if ((a->impl == BENCH_HTAB_ARENA || a->impl == BENCH_HTAB_ARENA_DEFER) && a->destroy) {
		aa_free_u64(bench_ah.buckets);
		bench_ah.buckets = 0;
	}
	return 0;
}
