/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bench.h - what bench/bench.c and bench/bpf/bench.bpf.c share: limits,
 * the implementations under test and the ctx of each SEC("syscall")
 * program (userspace fills the "in" fields, the program the "out" ones).
 */
#ifndef __AA_BENCH_H
#define __AA_BENCH_H

/* --- Limits ---------------------------------------------------------------- */

#define BENCH_MAX_WORKERS	8	/* producers; one per CPU */
#define BENCH_MAX_ALLOCS	256	/* objects per timed phase */
#define BENCH_BUFS_PER_WORKER	4	/* pointer arrays circulating per worker */
#define BENCH_NR_BUFS		(BENCH_MAX_WORKERS * BENCH_BUFS_PER_WORKER)
#define BENCH_RING_SIZE		32	/* >= BENCH_NR_BUFS, power of two */
#define BENCH_FLOOR_PREFILL	3072	/* objects per CPU in the floor's LIFO */
#define BENCH_FLOOR_CAP		8192	/* LIFO capacity (xfree moves objects) */
#define BENCH_HTAB_ENTRIES	16384	/* hash table keys (htab-mem's default) */
#define BENCH_HTAB_VALUE	8	/* value bytes (htab-mem's default) */
#define BENCH_HTAB_BATCH	256	/* add_del_on_diff_cpu: keys per batch */
#define BENCH_HTAB_BATCHES	(BENCH_HTAB_ENTRIES / BENCH_HTAB_BATCH)

/* --- Arena layouts (arena globals: the skeleton shows them to userspace) -- */

/* A pointer array: the objects one alloc phase produced. Own page each. */
struct bench_buf {
	__u32 count;		/* objects held: objs[0 .. count) */
	__u32 cpu;		/* the CPU that allocated them */
	__u64 pad;
	__u64 objs[BENCH_MAX_ALLOCS];	/* aa, floor: addresses; kobj: in
					 * bench_kslots[buf * MAX_ALLOCS + i] */
} __attribute__((aligned(4096)));

/*
 * A worker: the buffer in hand and the ring of buffers it hands to the
 * next worker. Single producer (this worker) and single consumer (the
 * next one); head and tail on their own cache lines, the page its own.
 *
 *   worker 0 --ring 0--> worker 1 --ring 1--> ... worker P-1 --ring P-1--> worker 0
 */
struct bench_worker {
	__u32 hand;		/* buffer this worker fills next */
	__u32 pad0[15];
	__u32 head;		/* written by the consumer (next worker) */
	__u32 pad1[15];
	__u32 tail;		/* written by the producer (this worker) */
	__u32 pad2[15];
	__u32 slot[BENCH_RING_SIZE];
} __attribute__((aligned(4096)));

/* The floor: a per-CPU LIFO of objects allocated once at setup. */
struct bench_lifo {
	__u32 count;		/* objs[0 .. count) are free */
	__u32 pad;
	__u64 objs[BENCH_FLOOR_CAP];
} __attribute__((aligned(4096)));

/* The arena hash table's root. */
struct bench_htab {
	__u64 buckets;		/* user address of the bucket array, 0 */
};

/*
 * add_del_on_diff_cpu: workers 2i (adder) and 2i + 1 (deleter) share pair
 * i's keys, cut into batches. The adder fills EMPTY batches and marks them
 * FULL; the deleter empties FULL ones: both run at once, on different
 * batches, and every operation finds what it expects.
 */
enum { BENCH_BATCH_EMPTY = 0, BENCH_BATCH_FULL = 1 };

struct bench_hpair {
	__u32 state[BENCH_HTAB_BATCHES];	/* BENCH_BATCH_* */
	__u32 cursor[2];	/* next batch: [0] adder, [1] deleter */
} __attribute__((aligned(4096)));

/* --- Latency harness: bench_lat ----------------------------------------- */

enum bench_impl {
	BENCH_IMPL_NONE = 0,	/* nothing: the harness alone */
	BENCH_IMPL_AA = 1,	/* aa_malloc_u64 / aa_free_u64: one call each */
	BENCH_IMPL_KOBJ = 2,	/* bpf_obj_new / bpf_obj_drop (bpf_mem_alloc) */
	BENCH_IMPL_FLOOR = 3,	/* per-CPU LIFO of preallocated objects,
				 * one global-function call per operation */
	BENCH_IMPL_FLOOR_INLINE = 4,	/* the same LIFO inlined: no call */
	BENCH_IMPL_AA_INLINE = 5,	/* aa_malloc / aa_free: the inline API */
};

enum bench_variant {
	BENCH_VAR_FREE = 0,	/* malloc-free: free what this round allocated */
	BENCH_VAR_XFREE = 1,	/* malloc-xfree: free what the previous worker
				 * allocated in an earlier round */
};

/* bpf_obj_new needs a type per size: objects come in these sizes. */
#define BENCH_KOBJ_SIZES	{ 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048 }
#define BENCH_NR_KOBJ		11

struct bench_lat_args {
	__u32 impl;		/* in: enum bench_impl */
	__u32 variant;		/* in: enum bench_variant */
	__u32 allocs;		/* in: objects per phase, <= BENCH_MAX_ALLOCS */
	__u32 rounds;		/* in: alloc phase + free phase, this many */
	__u32 worker;		/* in: 0 .. nworkers - 1 */
	__u32 nworkers;		/* in */
	__u64 size;		/* in: bytes per object (aa, floor) */
	__u32 kobj_class;	/* in: index into BENCH_KOBJ_SIZES (kobj) */
	__u32 cpu;		/* out: where it ran */
	__u64 alloc_ns;		/* out: sum over the timed alloc phases */
	__u64 free_ns;		/* out: sum over the timed free phases */
	__u64 alloc_ops;	/* out */
	__u64 free_ops;		/* out */
	__u64 alloc_phases;	/* out */
	__u64 free_phases;	/* out */
	__u64 timer_ns;		/* out: sum over one empty timed phase per
				 * round: the timer's own cost, this run */
	__u64 cross;		/* out: frees of objects another CPU allocated */
	__u64 own;		/* out: xfree rounds that found nothing handed
				 * over and freed their own objects */
	__u64 errors;		/* out: NULL allocations, failed frees */
	__u64 t_start, t_end;	/* out: bpf_ktime_get_ns() at entry and exit
				 * (CLOCK_MONOTONIC): did the producers run at
				 * the same time? */
};

/* bench_lat_reset: free whatever the buffers hold (impl), then give each
 * of nworkers workers one empty buffer in hand and BUFS_PER_WORKER - 1
 * empty ones queued for the next worker. */
struct bench_reset_args {
	__u32 impl;		/* in */
	__u32 nworkers;		/* in */
	__u32 kobj_class;	/* in */
	__u32 pad;
	__u64 freed;		/* out: objects freed */
	__u64 errors;		/* out: frees that failed */
	__u64 nulls;		/* out: failed allocations the last cell left */
};

/* bench_floor_setup: allocate the floor's objects (aa_malloc, once);
 * bench_floor_reset: put each CPU's objects back into its LIFO. */
struct bench_floor_args {
	__u64 size;		/* in */
	__u32 nworkers;		/* in: CPUs 0 .. nworkers - 1 */
	__u32 pad;
	__u64 errors;		/* out */
};

/* --- Application benchmark: bench_htab ---------------------------------- */

enum bench_htab_impl {
	BENCH_HTAB_ARENA = 0,	/* hash table in the arena, arena-alloc elems */
	BENCH_HTAB_PREALLOC = 1,	/* BPF_MAP_TYPE_HASH */
	BENCH_HTAB_NO_PREALLOC = 2,	/* BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC */
	BENCH_HTAB_ARENA_DEFER = 3,	/* the arena table, freed with aa_free_deferred:
					 * lookups may go without the bucket lock */
	BENCH_NR_HTAB_IMPLS = 4,
};

enum bench_htab_case {
	BENCH_HTAB_OVERWRITE = 0,	/* update (BPF_ANY) every key of my range */
	BENCH_HTAB_BATCH_ADD_DEL = 1,	/* add my range, then delete it */
	BENCH_HTAB_ADD_DEL_DIFF_CPU = 2,	/* even worker adds, odd one deletes */
	BENCH_HTAB_LOOKUP_MOSTLY = 3,	/* 7 lookups per overwrite of my range */
	BENCH_NR_HTAB_CASES = 4,
};

struct bench_htab_args {
	__u32 impl;		/* in: enum bench_htab_impl */
	__u32 use_case;		/* in: enum bench_htab_case */
	__u32 worker;		/* in */
	__u32 nworkers;		/* in */
	__u32 cpu;		/* out */
	__u32 pad;
	__u64 ns;		/* out: time of the run's map operations */
	__u64 ops;		/* out: map operations attempted */
	__u64 ok;		/* out: operations that succeeded */
	__u64 nomem;		/* out: updates that found no memory */
	__u64 t_start, t_end;	/* out: as in struct bench_lat_args */
};

/* bench_htab_setup: create (ARENA: allocate the buckets) or empty the
 * table; bench_htab_clear deletes every key of impl. */
struct bench_htab_setup_args {
	__u32 impl;		/* in */
	__u32 destroy;		/* in: ARENA: also free the bucket array */
	__s32 err;		/* out: 0, -ENOMEM (grow the heap and retry) */
	__u32 pad;
	__u64 deleted;		/* out */
};

#endif /* __AA_BENCH_H */
