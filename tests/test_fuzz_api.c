// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_fuzz_api.c - hostile input to every allocator call (the BPF API's
 * fuzzing; tests/fuzz/ fuzzes the userspace parsers). Random calls through the aa__run program:
 * malloc, calloc and aligned_alloc with random, edge and invalid sizes,
 * counts and alignments; free, deferred free and usable_size with random
 * pointers of every kind: live, freed, in limbo, interior, misaligned,
 * outside the arena, the arena's first byte, the root, a CPU cache, chunk
 * metadata, random addresses inside a chunk; bulk calls with random counts.
 *
 * A userspace model keeps what is live, in limbo and freed. Each call's
 * result must be the one the model predicts (a pointer that may be live
 * again only has to be refused or freed consistently), and each refusal
 * must add exactly one to the error counter of its kind. Every 250 calls
 * the validity checker runs and the heap's own count of allocations must
 * equal the model's. AA_FUZZ_OPS sets the number of calls (default 20000),
 * AA_TEST_SEED the seed.
 *
 * A wild free that lands on the start of a live allocation frees it, as in
 * any allocator; the library's own limbo nodes are such allocations, so
 * the fuzzer leaves pointers alone that are live without being the
 * model's. A limbo node is a 16-byte object.
 */
#include <time.h>
#include "common.h"
#include "diff_model.h"	/* rnd_*, model_usable() */

#define MiB		(1ULL << 20)
#define MAX_LIVE	512
#define MAX_GONE	512

struct fz {
	struct aa_heap *h;
	const struct aa_root *r;
	__u64 rng;
	__u64 live[MAX_LIVE], live_usable[MAX_LIVE];
	unsigned int nlive;
	__u64 limbo[MAX_LIVE];	/* deferred, not yet reclaimed (at most
				 * MAX_LIVE: fuzz_free reclaims first) */
	unsigned int nlimbo;
	__u64 gone[MAX_GONE];	/* freed at some point (may be live again) */
	unsigned int ngone;
	__u64 calls, refused;
};

static __u64 errs(struct fz *f, int e)
{
	return f->r->stats.err[e];
}

static int live_index(struct fz *f, __u64 p)
{
	unsigned int i;

	for (i = 0; i < f->nlive; i++)
		if (f->live[i] == p)
			return i;
	return -1;
}

/* Is p inside (not at the start of) a live allocation or a limbo one? */
static bool inside_something(struct fz *f, __u64 p)
{
	unsigned int i;

	for (i = 0; i < f->nlive; i++)
		if (p >= f->live[i] && p < f->live[i] + f->live_usable[i])
			return true;
	for (i = 0; i < f->nlimbo; i++)
		if (p >= f->limbo[i] && p < f->limbo[i] + 16)
			return true;
	return false;
}

static bool in_limbo(struct fz *f, __u64 p)
{
	unsigned int i;

	for (i = 0; i < f->nlimbo; i++)
		if (f->limbo[i] == p)
			return true;
	return false;
}

static void add_live(struct fz *f, __u64 p, __u64 usable)
{
	if (f->nlive == MAX_LIVE) {	/* full: free one to make room */
		cr_assert_eq(t_free(f->h, f->live[0]), 0);
		f->live[0] = f->live[--f->nlive];
		f->live_usable[0] = f->live_usable[f->nlive];
	}
	f->live[f->nlive] = p;
	f->live_usable[f->nlive++] = usable;
}

static void drop_live(struct fz *f, int i, bool to_limbo)
{
	__u64 p = f->live[i];

	f->live[i] = f->live[--f->nlive];
	f->live_usable[i] = f->live_usable[f->nlive];
	if (to_limbo)
		f->limbo[f->nlimbo++] = p;
	else
		f->gone[f->ngone++ % MAX_GONE] = p;
}

/* A pointer of a random kind; *kind names it for messages. */
static __u64 pick_ptr(struct fz *f, const char **kind)
{
	const struct aa_slot *st;
	unsigned int slot;
	__u64 p;

	switch (rnd_below(&f->rng, 12)) {
	case 0: case 1: case 2:
		if (f->nlive) {
			*kind = "live";
			return f->live[rnd_below(&f->rng, f->nlive)];
		}
		/* fall through */
	case 3:
		if (f->ngone) {
			*kind = "freed";
			return f->gone[rnd_below(&f->rng, f->ngone < MAX_GONE ? f->ngone : MAX_GONE)];
		}
		/* fall through */
	case 4:
		if (f->nlive) {
			unsigned int i = rnd_below(&f->rng, f->nlive);

			*kind = "interior or misaligned";
			return f->live[i] + 8 * (1 + rnd_below(&f->rng, 64));
		}
		/* fall through */
	case 5:
		*kind = "outside the arena";
		return rnd_below(&f->rng, 2) ? rnd_below(&f->rng, 1ULL << 40) :
		       f->r->arena_base + f->r->arena_size + rnd_below(&f->rng, 1 << 20);
	case 6:
		*kind = "the root";
		return aa_heap__addr(f->h, f->r) + 16 * rnd_below(&f->rng, 64);
	case 7:
		*kind = "a CPU cache";
		return f->r->arena_base + f->r->cpu_cache_off[0] + 16 * rnd_below(&f->rng, 64);
	case 8:
		slot = 1 + rnd_below(&f->rng, 8);
		*kind = "chunk metadata";
		st = aa_heap__slot(f->h, slot);
		if (st && st->state == AA_SLOT_CHUNK)
			return f->r->arena_base + st->meta_off + 16 * rnd_below(&f->rng, 512);
		/* fall through */
	case 9:
		*kind = "the arena's first byte";
		return f->r->arena_base;
	case 10:
		if (f->nlimbo) {
			*kind = "in limbo";
			return f->limbo[rnd_below(&f->rng, f->nlimbo)];
		}
		/* fall through */
	default:
		slot = 1 + rnd_below(&f->rng, 8);
		p = f->r->arena_base + ((__u64)slot << 20) + 16 * rnd_below(&f->rng, 1 << 16);
		*kind = "random in a chunk";
		return p;
	}
}

/* Sum of the pointer-error counters. */
static __u64 ptr_errs(struct fz *f)
{
	return errs(f, AA_ERR_DOUBLE_FREE) + errs(f, AA_ERR_FOREIGN) + errs(f, AA_ERR_INTERIOR) +
	       errs(f, AA_ERR_MISALIGNED) + errs(f, AA_ERR_CORRUPT);
}

static void reclaim(struct fz *f)
{
	long got = aa_heap__reclaim(f->h);

	cr_assert_eq(got, (long)f->nlimbo, "reclaim freed %ld of %u", got, f->nlimbo);
	while (f->nlimbo)
		f->gone[f->ngone++ % MAX_GONE] = f->limbo[--f->nlimbo];
}

/* free or deferred free of a random pointer. */
static void fuzz_free(struct fz *f, bool deferred)
{
	const char *kind = "";
	__u64 p, before;
	int li, ret;

	if (f->nlimbo == MAX_LIVE)
		reclaim(f);
	p = pick_ptr(f, &kind);
	before = ptr_errs(f);
	li = live_index(f, p);

	/* a live allocation the model does not own: one of the library's
	 * 16-byte limbo nodes (freeing one would be the caller's wild free) */
	if (li < 0 && t_usable(f->h, p))
		return;
	ret = (int)t_call(f->h, deferred ? AA_OP_FREE_DEFERRED : AA_OP_FREE, 0, 0, p, 0).ret;
	f->calls++;
	if (li >= 0) {
		cr_assert_eq(ret, 0, "%s free of a live pointer (%s) 0x%llx: %d",
			     deferred ? "deferred" : "plain", kind, (unsigned long long)p, ret);
		drop_live(f, li, deferred);
		cr_assert_eq(ptr_errs(f), before, "a good free counted an error");
		return;
	}
	if (!p) {
		cr_assert_eq(ret, 0);
		return;
	}
	/* not live for the model: refused, one error of its kind */
	cr_assert_lt(ret, 0, "%s free of %s 0x%llx was taken", deferred ? "deferred" : "plain",
		     kind, (unsigned long long)p);
	cr_assert_eq(ptr_errs(f), before + 1, "%s free of %s: %llu errors counted, not 1",
		     deferred ? "deferred" : "plain", kind,
		     (unsigned long long)(ptr_errs(f) - before));
	if (in_limbo(f, p) || !inside_something(f, p))
		cr_assert(ret == -EALREADY || ret == -EFAULT || ret == -ENOENT || ret == -EINVAL,
			  "%s: %d", kind, ret);
	if (p - f->r->arena_base >= f->r->arena_size)
		cr_assert_eq(ret, -EFAULT, "%s 0x%llx: %d", kind, (unsigned long long)p, ret);
	else if ((p - f->r->arena_base) & (AA_MIN_ALIGN - 1))
		cr_assert_eq(ret, -EINVAL, "misaligned %s: %d", kind, ret);
	f->refused++;
}

static __u64 fuzz_size(struct fz *f)
{
	switch (rnd_below(&f->rng, 20)) {
	case 0:
		return 0;
	case 1:
		return AA_MAX_ALLOC + 1 + rnd_below(&f->rng, 1 << 20);
	case 2:
		return ~0ULL - rnd_below(&f->rng, 1 << 20);
	case 3:
		return rnd_log(&f->rng, 64 << 10, 3 << 20);
	default:
		return rnd_log(&f->rng, 1, 8192);
	}
}

static void fuzz_alloc(struct fz *f)
{
	__u64 size = fuzz_size(f), arg = 0, sz_errs = errs(f, AA_ERR_SIZE),
	      al_errs = errs(f, AA_ERR_ALIGN), total, usable;
	unsigned int op = rnd_below(&f->rng, 3);
	bool bad_size, bad_align = false;
	struct aa_op_args a;

	if (op == 1) {		/* calloc(n, size): overflowing products too */
		op = AA_OP_CALLOC;
		arg = rnd_below(&f->rng, 4) ? 1 + rnd_below(&f->rng, 64) : ~0ULL >> rnd_below(&f->rng, 40);
		size = size > 8192 && size <= AA_MAX_ALLOC ? 16 : size;
		total = arg * size;
		bad_size = !arg || !size || arg > AA_MAX_ALLOC || size > AA_MAX_ALLOC ||
			   total > AA_MAX_ALLOC;
	} else if (op == 2) {	/* aligned_alloc: powers of two and worse */
		op = AA_OP_ALIGNED;
		arg = rnd_below(&f->rng, 4) ? 1ULL << rnd_below(&f->rng, 14) : rnd_below(&f->rng, 100000);
		bad_align = !arg || (arg & (arg - 1)) || arg > AA_PAGE_SIZE;
		bad_size = !bad_align && (!size || size > AA_MAX_ALLOC);
		total = size;
	} else {
		op = AA_OP_MALLOC;
		bad_size = !size || size > AA_MAX_ALLOC;
		total = size;
	}
	bad_size |= !bad_align && total > f->r->arena_size;	/* more than the arena */
	a = t_call(f->h, op, size, arg, 0, 0);
	f->calls++;
	if (bad_size || bad_align) {
		cr_assert_eq(a.ptr, 0, "op %u size %llu arg %llu: got memory", op,
			     (unsigned long long)size, (unsigned long long)arg);
		cr_assert_eq(a.ret, -EINVAL);
		cr_assert_eq(errs(f, AA_ERR_SIZE) + errs(f, AA_ERR_ALIGN), sz_errs + al_errs + 1,
			     "op %u size %llu arg %llu: one size or alignment error", op,
			     (unsigned long long)size, (unsigned long long)arg);
		f->refused++;
		return;
	}
	if (!a.ptr) {
		cr_assert_eq(a.ret, -ENOMEM, "op %u size %llu arg %llu failed with %lld", op,
			     (unsigned long long)size, (unsigned long long)arg, (long long)a.ret);
		return;
	}
	cr_assert_eq((a.ptr - f->r->arena_base) % AA_OBJ_ALIGN(total), 0,
		     "0x%llx for %llu B: the alignment rule", (unsigned long long)a.ptr,
		     (unsigned long long)total);
	if (op == AA_OP_ALIGNED)
		cr_assert_eq(a.ptr % arg, 0, "aligned_alloc(%llu): 0x%llx", (unsigned long long)arg,
			     (unsigned long long)a.ptr);
	/* the size rule; aligned_alloc may take a bigger class (a multiple of
	 * the alignment) */
	usable = t_usable(f->h, a.ptr);
	if (op == AA_OP_ALIGNED)
		cr_assert_geq(usable, total);
	else
		cr_assert_eq(usable, model_usable(total), "size %llu: usable %llu",
			     (unsigned long long)total, (unsigned long long)usable);
	add_live(f, a.ptr, usable);
}

static void fuzz_usable(struct fz *f)
{
	const char *kind = "";
	__u64 p = pick_ptr(f, &kind), u = t_usable(f->h, p);
	int li = live_index(f, p);

	f->calls++;
	if (li >= 0)
		cr_assert_eq(u, f->live_usable[li], "usable size of a live %llu-B object: %llu",
			     (unsigned long long)f->live_usable[li], (unsigned long long)u);
	else if (!in_limbo(f, p) && !inside_something(f, p))
		cr_assert(u == 0 || (u == 16 && t_stats(f->h).limbo_nodes), "usable size of %s "
			  "0x%llx: %llu", kind, (unsigned long long)p,
			  (unsigned long long)u);	/* 16: a limbo node, spare or in use */
}

static void fuzz_bulk(struct fz *f)
{
	__u64 arr = t_malloc(f->h, 64 * 8), n = rnd_below(&f->rng, 3) ? 1 + rnd_below(&f->rng, 64)
							    : AA_BULK_MAX + 1 + rnd_below(&f->rng, 1000);
	__u64 *v;
	struct aa_op_args a;
	int i;

	if (!arr)
		return;
	a = t_call(f->h, AA_OP_MALLOC_BULK, 1 + rnd_below(&f->rng, 2048), 0, arr, n);
	f->calls++;
	if (n > AA_BULK_MAX) {
		cr_assert_eq(a.ret, -E2BIG);
		f->refused++;
	} else {
		cr_assert_geq(a.ret, 0);
		cr_assert_leq(a.ret, (long long)n);
		v = aa_heap__ptr(f->h, arr);
		for (i = 0; i < a.ret; i++)	/* give them straight back */
			cr_assert_neq(v[i], 0);
		a = t_call(f->h, AA_OP_FREE_BULK, 0, 0, arr, a.ret);
		cr_assert_geq(a.ret, 0);
	}
	cr_assert_eq(t_free(f->h, arr), 0);
}

/* The heap agrees with the model: the checker passes, the program holds
 * exactly the model's allocations, and limbo the model's objects (each
 * with a 16-byte node of the limbo's own: stats.limbo_nodes). */
static void agree(struct fz *f)
{
	struct aa_stats st;

	cr_assert_eq(aa_heap__check(f->h), 0, "validity check after %llu calls",
		     (unsigned long long)f->calls);
	cr_assert_eq(t_user_live(f->h), f->nlive,
		     "after %llu calls the heap holds %llu allocations, the model %u live + %u in limbo",
		     (unsigned long long)f->calls, (unsigned long long)t_user_live(f->h), f->nlive,
		     f->nlimbo);
	cr_assert_eq(f->r->defer.pending_objs, f->nlimbo);
	st = t_assert_stats(f->h, "fuzz");
	cr_assert_eq(st.limbo_objs, f->nlimbo);
	cr_assert_geq(st.limbo_nodes, f->nlimbo);
}

Test(fuzz_api, hostile_calls_never_corrupt_and_every_refusal_is_counted, .timeout = 300)
{
	struct fz f = {};
	__u64 ops = t_env_u64("AA_FUZZ_OPS", 20000), seed = t_env_u64("AA_TEST_SEED", 0);
	__u64 i;

	t_need_arena();
	if (!seed)
		seed = (__u64)time(NULL);
	cr_log_info("fuzz_api: seed %llu (AA_TEST_SEED replays it)\n", (unsigned long long)seed);
	f.rng = xs_init(seed);
	f.h = t_open_flags(T_PAGES(64 * MiB), 16 * MiB, AA_F_DEFER);
	f.r = aa_heap__root(f.h);
	for (i = 0; i < ops; i++) {
		switch (rnd_below(&f.rng, 10)) {
		case 0: case 1: case 2: case 3:
			fuzz_alloc(&f);
			break;
		case 4: case 5:
			fuzz_free(&f, false);
			break;
		case 6:
			fuzz_free(&f, true);
			break;
		case 7:
			fuzz_usable(&f);
			break;
		case 8:
			fuzz_bulk(&f);
			break;
		default:
			if (rnd_below(&f.rng, 8) == 0)	/* now and then a reclaim */
				reclaim(&f);
		}
		if (i % 250 == 249)
			agree(&f);
	}
	agree(&f);
	cr_log_info("fuzz_api: %llu calls, %llu refused (each counted once), %u live at the end\n",
		    (unsigned long long)f.calls, (unsigned long long)f.refused, f.nlive);
	for (; f.nlive; f.nlive--)
		cr_assert_eq(t_free(f.h, f.live[f.nlive - 1]), 0);
	reclaim(&f);
	cr_assert_geq(aa_heap__drain(f.h), 0);
	cr_assert_eq(t_user_live(f.h), 0, "allocations left after freeing everything");
	cr_assert_eq(aa_heap__check(f.h), 0);
	aa_heap__destroy(f.h);
}
