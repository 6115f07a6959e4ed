// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench.bpf.c - the programs of build/aa_bench, linked with
 * libarena_alloc.bpf.o like any embedder's object.
 *
 *  - bench_lat: the allocator latency harness. A round is a timed alloc
 *    phase (`allocs` allocations into a pointer array in arena memory)
 *    and a timed free phase; a run is `rounds` rounds. Each phase is
 *    timed as a whole with bpf_ktime_get_ns(), never a single operation,
 *    and each round also times an empty phase: the timer's own cost.
 *    The implementations sharing the harness: arena-alloc's inline API
 *    (aa_malloc/aa_free: the hit path in this program) and its global
 *    functions (aa_malloc_u64/aa_free_u64: one call each), the kernel's allocator (bpf_obj_new/bpf_obj_drop,
 *    i.e. bpf_mem_alloc), and the floor, a per-CPU LIFO of preallocated
 *    arena objects with no allocator logic (called, or inlined).
 *    malloc-xfree hands each filled pointer array to the next worker
 *    (worker w -> w + 1, through a single-producer single-consumer ring)
 *    and frees the array the previous worker handed over: with workers
 *    pinned to different CPUs, the frees cross CPUs.
 *  - bench_htab (htab.bpf.c, included at the end): an htab-mem style
 *    application benchmark: a hash table in arena memory whose elements
 *    come from arena-alloc, against BPF_MAP_TYPE_HASH preallocated and
 *    with BPF_F_NO_PREALLOC.
 *
 * Build notes (docs/EMBEDDING.md, "Pitfalls"): loops are can_loop (may_goto,
 * an instruction, not a kfunc) or bpf_loop(), which cost no iterator state
 * in the measured loops. Arena memory is written field by field (-fno-builtin).
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "arena_alloc.bpf.h"
#include "../bench.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

#define ENOENT	2
#define E2BIG	7
#define ENOMEM	12
#define EBUSY	16
#define EEXIST	17
#define EINVAL	22

/* --- Kernel pieces declared here (vmlinux.h's prototypes are off) ------- */

extern void *bpf_obj_new_impl(__u64 local_type_id__k, void *meta__ign) __ksym;
extern void bpf_obj_drop_impl(void *p__alloc, void *meta__ign) __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
#define bpf_obj_new(type)	((type *)bpf_obj_new_impl(bpf_core_type_id_local(type), NULL))
#define bpf_obj_drop(kptr)	bpf_obj_drop_impl(kptr, NULL)

/* can_loop: may_goto, the verifier-bounded loop condition (kernel
 * bpf_experimental.h). Not a kfunc, so it links next to the library. */
#define can_loop					\
	({ __label__ l_break, l_continue;		\
	bool ret = true;				\
	asm volatile goto("may_goto %l[l_break]"	\
		      :::: l_break);			\
	goto l_continue;				\
	l_break: ret = false;				\
	l_continue:;					\
	ret;						\
	})

#define barrier()	asm volatile("" ::: "memory")
#define READ_ONCE_A(x)	(*(volatile typeof(x) *)&(x))

/*
 * Verifier: a loop counter that starts at a constant is tracked exactly,
 * and can_loop loops only converge when the old state's ranges contain
 * the new ones: the verifier would walk the loop once per value ("BPF
 * program is too large"). Counters start from ZERO, a 0 read from the
 * arena that the verifier cannot know.
 */
__u32 __arena bench_zero;
#define ZERO	READ_ONCE_A(bench_zero)

#define WMASK	(BENCH_MAX_WORKERS - 1)
#define BMASK	(BENCH_NR_BUFS - 1)
#define RMASK	(BENCH_RING_SIZE - 1)
#define AMASK	(BENCH_MAX_ALLOCS - 1)
#define FMASK	(BENCH_FLOOR_CAP - 1)

/* --- Arena state of the latency harness --------------------------------- */

struct bench_buf __arena bench_bufs[BENCH_NR_BUFS];
struct bench_worker __arena bench_workers[BENCH_MAX_WORKERS];

/* The floor: per-CPU LIFOs of objects allocated once at setup. */
struct bench_lifo __arena bench_lifos[BENCH_MAX_WORKERS];
__u64 __arena bench_floor_pool[BENCH_MAX_WORKERS][BENCH_FLOOR_PREFILL];

/* The kernel allocator's objects, one type per size (bpf_obj_new takes a
 * type), kept between phases as kptrs in an array map. */
#define BENCH_KOBJ_TYPE(sz) struct bench_kobj_##sz { __u8 data[sz]; }
BENCH_KOBJ_TYPE(8); BENCH_KOBJ_TYPE(16); BENCH_KOBJ_TYPE(32); BENCH_KOBJ_TYPE(64);
BENCH_KOBJ_TYPE(96); BENCH_KOBJ_TYPE(128); BENCH_KOBJ_TYPE(192); BENCH_KOBJ_TYPE(256);
BENCH_KOBJ_TYPE(512); BENCH_KOBJ_TYPE(1024); BENCH_KOBJ_TYPE(2048);

struct bench_kslot {
	struct bench_kobj_8 __kptr *k8;
	struct bench_kobj_16 __kptr *k16;
	struct bench_kobj_32 __kptr *k32;
	struct bench_kobj_64 __kptr *k64;
	struct bench_kobj_96 __kptr *k96;
	struct bench_kobj_128 __kptr *k128;
	struct bench_kobj_192 __kptr *k192;
	struct bench_kobj_256 __kptr *k256;
	struct bench_kobj_512 __kptr *k512;
	struct bench_kobj_1024 __kptr *k1024;
	struct bench_kobj_2048 __kptr *k2048;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_NR_BUFS * BENCH_MAX_ALLOCS);
	__type(key, __u32);
	__type(value, struct bench_kslot);
} bench_kslots SEC(".maps");

/* --- The floor: no allocator logic ------------------------------------------
 * A per-CPU LIFO of objects allocated once at setup. Two shapes: global
 * (not inlined) functions, so that each operation is one call, as it is for
 * a library's API; and the same code inlined into the timed loop, which is
 * the limit itself (the difference is what one BPF-to-BPF call costs).
 */
static __always_inline __u64 floor_pop(void)
{
	struct bench_lifo __arena *l = &bench_lifos[bpf_get_smp_processor_id() & WMASK];
	__u32 n = l->count;

	if (n == 0 || n > BENCH_FLOOR_CAP)
		return 0;
	l->count = n - 1;
	return l->objs[(n - 1) & FMASK];
}

static __always_inline int floor_push(__u64 p)
{
	struct bench_lifo __arena *l = &bench_lifos[bpf_get_smp_processor_id() & WMASK];
	__u32 n = l->count;

	if (n >= BENCH_FLOOR_CAP)
		return -ENOMEM;
	l->objs[n & FMASK] = p;
	l->count = n + 1;
	return 0;
}

__attribute__((noinline)) __u64 bench_floor_alloc(void)
{
	return floor_pop();
}

__attribute__((noinline)) int bench_floor_free(__u64 p)
{
	return floor_push(p);
}

/* --- Timed loops, one per implementation -----------------------------------
 * Each returns how many objects it handled; failures are counted by the
 * caller (alloc: NULL stored, found by the free phase; free: returned).
 */
/* arena-alloc: the global functions (inl false), or the inline API (the
 * size is the run's, not a constant, as for a program whose sizes vary:
 * the class comes from the table). */
static __always_inline __u32 aa_alloc_loop(__u64 __arena *objs, __u32 n, __u64 size, bool inl)
{
	__u32 i;

	for (i = ZERO; i < n && can_loop; i++)
		objs[i & AMASK] = inl ? (__u64)aa_malloc(size) : aa_malloc_u64(size);
	return i;
}

static __always_inline __u32 aa_free_loop(__u64 __arena *objs, __u32 n, bool inl)
{
	__u32 i, bad = ZERO;

	for (i = ZERO; i < n && can_loop; i++) {
		__u64 p = objs[i & AMASK];

		if (!p || (inl ? aa_free(p) : aa_free_u64(p)))
			bad++;
	}
	return bad;
}

/* The inline hit path alone, as global functions for `make bench-jit`
 * (the JIT listing of one inline aa_malloc(64) and one aa_free()); the
 * timed loops above inline the same code. */
__attribute__((noinline)) __u64 bench_inline_alloc(void)
{
	return (__u64)aa_malloc(64);
}

__attribute__((noinline)) int bench_inline_free(__u64 p)
{
	return aa_free(p);
}

/* Their program (a global function nobody calls is not loaded). */
SEC("syscall")
int bench_jit(void *ctx)
{
	return bench_inline_free(bench_inline_alloc());
}

static __always_inline __u32 floor_alloc_loop(__u64 __arena *objs, __u32 n, bool inl)
{
	__u32 i;

	for (i = ZERO; i < n && can_loop; i++)
		objs[i & AMASK] = inl ? floor_pop() : bench_floor_alloc();
	return i;
}

static __always_inline __u32 floor_free_loop(__u64 __arena *objs, __u32 n, bool inl)
{
	__u32 i, bad = ZERO;

	for (i = ZERO; i < n && can_loop; i++) {
		__u64 p = objs[i & AMASK];

		if (!p || (inl ? floor_push(p) : bench_floor_free(p)))
			bad++;
	}
	return bad;
}

/* bpf_obj_new + store the kptr; take it out + bpf_obj_drop. The map
 * lookup (inlined for arrays) and the kptr xchg are the price of keeping
 * a kernel object between two program points. */
#define BENCH_KOBJ_LOOPS(sz)							\
static __always_inline __u32 kobj_alloc_##sz(__u32 base, __u32 n)		\
{										\
	struct bench_kobj_##sz *o;						\
	struct bench_kslot *s;							\
	__u32 i, key;								\
										\
	for (i = ZERO; i < n && can_loop; i++) {				\
		key = base + i;							\
		s = bpf_map_lookup_elem(&bench_kslots, &key);			\
		if (!s)								\
			break;							\
		o = bpf_obj_new(struct bench_kobj_##sz);			\
		if (!o)								\
			break;							\
		o = bpf_kptr_xchg(&s->k##sz, o);				\
		if (o)								\
			bpf_obj_drop(o);					\
	}									\
	return i;								\
}										\
										\
static __always_inline __u32 kobj_free_##sz(__u32 base, __u32 n)		\
{										\
	struct bench_kobj_##sz *o;						\
	struct bench_kslot *s;							\
	__u32 i, key, bad = ZERO;						\
										\
	for (i = ZERO; i < n && can_loop; i++) {				\
		key = base + i;							\
		s = bpf_map_lookup_elem(&bench_kslots, &key);			\
		if (!s)								\
			break;							\
		o = bpf_kptr_xchg(&s->k##sz, NULL);				\
		if (o)								\
			bpf_obj_drop(o);					\
		else								\
			bad++;							\
	}									\
	return bad + (n - i);							\
}

BENCH_KOBJ_LOOPS(8) BENCH_KOBJ_LOOPS(16) BENCH_KOBJ_LOOPS(32) BENCH_KOBJ_LOOPS(64)
BENCH_KOBJ_LOOPS(96) BENCH_KOBJ_LOOPS(128) BENCH_KOBJ_LOOPS(192) BENCH_KOBJ_LOOPS(256)
BENCH_KOBJ_LOOPS(512) BENCH_KOBJ_LOOPS(1024) BENCH_KOBJ_LOOPS(2048)

#define KOBJ_CASE(idx, sz, what, ...) case idx: return kobj_##what##_##sz(__VA_ARGS__)

static __always_inline __u32 kobj_alloc(__u32 cls, __u32 base, __u32 n)
{
	switch (cls) {
	KOBJ_CASE(0, 8, alloc, base, n);	KOBJ_CASE(1, 16, alloc, base, n);
	KOBJ_CASE(2, 32, alloc, base, n);	KOBJ_CASE(3, 64, alloc, base, n);
	KOBJ_CASE(4, 96, alloc, base, n);	KOBJ_CASE(5, 128, alloc, base, n);
	KOBJ_CASE(6, 192, alloc, base, n);	KOBJ_CASE(7, 256, alloc, base, n);
	KOBJ_CASE(8, 512, alloc, base, n);	KOBJ_CASE(9, 1024, alloc, base, n);
	KOBJ_CASE(10, 2048, alloc, base, n);
	default: return 0;
	}
}

static __always_inline __u32 kobj_free(__u32 cls, __u32 base, __u32 n)
{
	switch (cls) {
	KOBJ_CASE(0, 8, free, base, n);		KOBJ_CASE(1, 16, free, base, n);
	KOBJ_CASE(2, 32, free, base, n);	KOBJ_CASE(3, 64, free, base, n);
	KOBJ_CASE(4, 96, free, base, n);	KOBJ_CASE(5, 128, free, base, n);
	KOBJ_CASE(6, 192, free, base, n);	KOBJ_CASE(7, 256, free, base, n);
	KOBJ_CASE(8, 512, free, base, n);	KOBJ_CASE(9, 1024, free, base, n);
	KOBJ_CASE(10, 2048, free, base, n);
	default: return n;
	}
}

/* --- The latency harness ---------------------------------------------------- */

/* bpf_loop() callback state, one per worker in .bss: the callback's ctx
 * (which must be on the stack) is only its index, so that the program's
 * frame stays small (the 512-B stack is shared with the allocator's
 * frames below lat_round). */
struct lat_ctx {
	__u32 impl, variant, allocs, worker, nworkers, kcls, cpu, pad;
	__u64 size;
	__u64 alloc_ns, free_ns, alloc_ops, free_ops, alloc_phases, free_phases;
	__u64 timer_ns, cross, own, errors;
};

static __always_inline __u32 alloc_phase(struct lat_ctx *c, __u32 b)
{
	struct bench_buf __arena *buf = &bench_bufs[b & BMASK];

	switch (c->impl) {
	case BENCH_IMPL_AA:
	case BENCH_IMPL_AA_INLINE:
		return aa_alloc_loop(buf->objs, c->allocs, c->size, c->impl == BENCH_IMPL_AA_INLINE);
	case BENCH_IMPL_FLOOR:
		return floor_alloc_loop(buf->objs, c->allocs, false);
	case BENCH_IMPL_FLOOR_INLINE:
		return floor_alloc_loop(buf->objs, c->allocs, true);
	case BENCH_IMPL_KOBJ:
		return kobj_alloc(c->kcls, (b & BMASK) * BENCH_MAX_ALLOCS, c->allocs);
	default:
		return 0;
	}
}

/* Returns the number of failed frees. */
static __always_inline __u32 free_phase(__u32 impl, __u32 kcls, __u32 b, __u32 n)
{
	struct bench_buf __arena *buf = &bench_bufs[b & BMASK];

	switch (impl) {
	case BENCH_IMPL_AA:
		return aa_free_loop(buf->objs, n, false);
	case BENCH_IMPL_AA_INLINE:
		return aa_free_loop(buf->objs, n, true);
	case BENCH_IMPL_FLOOR:
		return floor_free_loop(buf->objs, n, false);
	case BENCH_IMPL_FLOOR_INLINE:
		return floor_free_loop(buf->objs, n, true);
	case BENCH_IMPL_KOBJ:
		return kobj_free(kcls, (b & BMASK) * BENCH_MAX_ALLOCS, n);
	default:
		return 0;
	}
}

/* SPSC ring. The fetch_add publishing an index is a full barrier: the
 * slot (and the buffer's count and cpu) are visible before it. */
static __always_inline void ring_push(struct bench_worker __arena *r, __u32 b)
{
	__u32 tail = r->tail;

	r->slot[tail & RMASK] = b;
	__sync_fetch_and_add(&r->tail, 1);
}

static __always_inline bool ring_pop(struct bench_worker __arena *r, __u32 *b)
{
	__u32 head = r->head;

	if (head == READ_ONCE_A(r->tail))
		return false;
	barrier();
	*b = r->slot[head & RMASK];
	__sync_fetch_and_add(&r->head, 1);
	return true;
}

/* One round: fill the buffer in hand (timed), pick the buffer to empty
 * (the same one, or for xfree the one the previous worker handed over),
 * empty it (timed). */
static struct lat_ctx lat_ctxs[BENCH_MAX_WORKERS];

static long lat_round(__u64 r, void *data)
{
	struct lat_ctx *c = &lat_ctxs[*(__u32 *)data & WMASK];
	struct bench_worker __arena *me = &bench_workers[c->worker & WMASK];
	__u32 b = me->hand & BMASK, victim = b, prev, got = 0, n, m, bad;
	struct bench_buf __arena *buf = &bench_bufs[b], *vb;
	__u64 t0, t1;

	/* an empty timed phase: what the timer adds to each phase, this run */
	t0 = bpf_ktime_get_ns();
	t1 = bpf_ktime_get_ns();
	c->timer_ns += t1 - t0;

	t0 = bpf_ktime_get_ns();
	n = alloc_phase(c, b);
	t1 = bpf_ktime_get_ns();
	c->alloc_ns += t1 - t0;
	c->alloc_phases++;
	c->alloc_ops += n;
	c->errors += c->allocs - n;
	buf->count = n;
	buf->cpu = c->cpu;

	if (c->variant == BENCH_VAR_XFREE) {
		prev = c->worker ? c->worker - 1 : c->nworkers - 1;
		if (ring_pop(&bench_workers[prev & WMASK], &got)) {
			ring_push(me, b);
			victim = got & BMASK;
			me->hand = victim;
		} else {
			c->own++;	/* nothing handed over yet: free my own */
		}
	}
	vb = &bench_bufs[victim & BMASK];
	m = vb->count;
	if (m == 0)
		return 0;	/* a buffer that starts empty: nothing to time */
	if (m > BENCH_MAX_ALLOCS)
		m = BENCH_MAX_ALLOCS;
	t0 = bpf_ktime_get_ns();
	bad = free_phase(c->impl, c->kcls, victim, m);
	t1 = bpf_ktime_get_ns();
	c->free_ns += t1 - t0;
	c->free_phases++;
	c->free_ops += m;
	c->errors += bad;
	if (vb->cpu != c->cpu)
		c->cross += m;
	vb->count = 0;
	return 0;
}

SEC("syscall")
int bench_lat(struct bench_lat_args *a)
{
	__u32 w = a->worker;
	struct lat_ctx *c;

	if (a->nworkers == 0 || a->nworkers > BENCH_MAX_WORKERS || w >= a->nworkers)
		return -EINVAL;
	c = &lat_ctxs[w & WMASK];
	*c = (struct lat_ctx){
		.impl = a->impl,
		.variant = a->variant,
		.allocs = a->allocs <= BENCH_MAX_ALLOCS ? a->allocs : BENCH_MAX_ALLOCS,
		.worker = w,
		.nworkers = a->nworkers,
		.kcls = a->kobj_class,
		.cpu = bpf_get_smp_processor_id(),
		.size = a->size,
	};
	a->t_start = bpf_ktime_get_ns();
	bpf_loop(a->rounds, lat_round, &w, 0);
	a->t_end = bpf_ktime_get_ns();
	a->cpu = c->cpu;
	a->alloc_ns = c->alloc_ns;
	a->free_ns = c->free_ns;
	a->alloc_ops = c->alloc_ops;
	a->free_ops = c->free_ops;
	a->alloc_phases = c->alloc_phases;
	a->free_phases = c->free_phases;
	a->timer_ns = c->timer_ns;
	a->cross = c->cross;
	a->own = c->own;
	a->errors = c->errors;
	return 0;
}

/* --- Harness setup ---------------------------------------------------------- */

struct reset_ctx {
	__u32 impl, kcls;
	__u64 freed, errors, nulls;
};

/* The NULLs among a buffer's first m objects: allocations that failed in
 * the last round of a cell, whose free phase never ran. */
static __always_inline __u32 count_nulls(__u64 __arena *objs, __u32 m)
{
	__u32 i, nulls = ZERO;

	for (i = ZERO; i < m && can_loop; i++)
		if (!objs[i & AMASK])
			nulls++;
	return nulls;
}

static long reset_buf(__u64 b, void *data)
{
	struct reset_ctx *c = data;
	struct bench_buf __arena *buf = &bench_bufs[b & BMASK];
	__u32 m = buf->count, nulls;

	if (m > BENCH_MAX_ALLOCS)
		m = BENCH_MAX_ALLOCS;
	/* the floor's objects are not freed: bench_floor_reset refills */
	if (m && (c->impl == BENCH_IMPL_AA || c->impl == BENCH_IMPL_AA_INLINE ||
		  c->impl == BENCH_IMPL_KOBJ)) {
		/* aa_free_loop counts a NULL as a failed free */
		nulls = c->impl == BENCH_IMPL_KOBJ ? 0 : count_nulls(buf->objs, m);
		c->errors += free_phase(c->impl, c->kcls, b, m) - nulls;
		c->nulls += nulls;
		c->freed += m - nulls;
	}
	buf->count = 0;
	return 0;
}

SEC("syscall")
int bench_lat_reset(struct bench_reset_args *a)
{
	struct reset_ctx c = { .impl = a->impl, .kcls = a->kobj_class };
	__u32 w, k, nw = a->nworkers;

	bpf_loop(BENCH_NR_BUFS, reset_buf, &c, 0);
	if (nw > BENCH_MAX_WORKERS)
		nw = BENCH_MAX_WORKERS;
	for (w = 0; w < BENCH_MAX_WORKERS; w++) {
		struct bench_worker __arena *wk = &bench_workers[w];

		wk->hand = w * BENCH_BUFS_PER_WORKER;
		wk->head = 0;
		wk->tail = 0;
		if (w >= nw)
			continue;
		for (k = 1; k < BENCH_BUFS_PER_WORKER; k++)
			ring_push(wk, w * BENCH_BUFS_PER_WORKER + k);
	}
	a->freed = c.freed;
	a->errors = c.errors;
	a->nulls = c.nulls;
	return 0;
}

struct floor_ctx {
	__u64 size, errors;
};

static long floor_fill(__u64 i, void *data)
{
	struct floor_ctx *c = data;
	__u64 p = aa_malloc_u64(c->size);

	bench_floor_pool[(i / BENCH_FLOOR_PREFILL) & WMASK][(i % BENCH_FLOOR_PREFILL)] = p;
	if (!p)
		c->errors++;
	return 0;
}

/* Allocate the floor's objects from the heap, BENCH_FLOOR_PREFILL per
 * worker CPU (CPUs 0 .. nworkers - 1, by id & WMASK). Once per heap. */
SEC("syscall")
int bench_floor_setup(struct bench_floor_args *a)
{
	struct floor_ctx c = { .size = a->size };
	__u32 nw = a->nworkers <= BENCH_MAX_WORKERS ? a->nworkers : BENCH_MAX_WORKERS;

	bpf_loop(nw * BENCH_FLOOR_PREFILL, floor_fill, &c, 0);
	a->errors = c.errors;
	return 0;
}

static long floor_refill(__u64 i, void *data)
{
	__u32 w = (i / BENCH_FLOOR_PREFILL) & WMASK, k = i % BENCH_FLOOR_PREFILL;

	bench_lifos[w].objs[k & FMASK] = bench_floor_pool[w][k];
	return 0;
}

SEC("syscall")
int bench_floor_reset(struct bench_floor_args *a)
{
	__u32 nw = a->nworkers <= BENCH_MAX_WORKERS ? a->nworkers : BENCH_MAX_WORKERS, w;

	bpf_loop(nw * BENCH_FLOOR_PREFILL, floor_refill, NULL, 0);
	for (w = 0; w < BENCH_MAX_WORKERS; w++)
		bench_lifos[w].count = w < nw ? BENCH_FLOOR_PREFILL : 0;
	return 0;
}

/* The application benchmark (bench_htab). */
#include "htab.bpf.c"
