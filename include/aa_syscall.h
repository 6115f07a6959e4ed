/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * aa_syscall.h - the arguments of the library's SEC("syscall") programs
 * (bpf/entry.bpf.c): the ctx a loader hands to bpf_prog_test_run_opts()
 * (user/prog.c; aa_heap__call() and aa_heap__batch() for callers) and the
 * program reads and writes back. They are copied in and out on each run and
 * never stored in the arena, so AA_LAYOUT_VERSION (aa_shared.h) does not
 * cover them. REQUIRES: the loader library and the libarena_alloc.bpf.o
 * whose programs it runs come from one release.
 */
#ifndef __AA_SYSCALL_H
#define __AA_SYSCALL_H

#include "aa_shared.h"

struct aa_init_args {
	__u64 arena_base;	/* in: user address of the arena mmap */
	__u64 arena_size;	/* in: bytes */
	__u64 grow_bytes;	/* in: grow the heap by this much */
	__u64 root_addr;	/* out: user address of struct aa_root */
	__s32 err;		/* out: 0 or negative errno */
	__u32 flags;		/* in: AA_F_* */
	__u32 nr_cpus;		/* in: CPUs that get a cache (<= AA_MAX_CPUS) */
	__u32 pad;
	struct aa_tunables tun;	/* in */
	__u32 fault_pages_every;	/* in: struct aa_fault (0: off) */
	__u32 fault_spans_every;	/* in */
};

struct aa_grow_args {
	__u64 bytes;		/* in: grow by at least this many bytes */
	__u64 chunks;		/* out: chunks added */
	__s32 err;		/* out */
	__u32 pad;
};

struct aa_trim_args {
	__u64 keep_bytes;	/* in: keep this many bytes of free chunks
				 * (AA_KEEP_DEFAULT: tun.keep_bytes) */
	__u64 chunks;		/* out: chunks returned to the kernel */
	__s32 err;		/* out */
	__u32 pad;
};

enum aa_op_kind {
	AA_OP_MALLOC = 0,
	AA_OP_CALLOC = 1,	/* arg = nmemb */
	AA_OP_ALIGNED = 2,	/* arg = alignment */
	AA_OP_FREE = 3,		/* ptr in */
	AA_OP_USABLE = 4,	/* ptr in, size out */
	AA_OP_MALLOC_BULK = 5,	/* ptr = arena array of n u64, size each */
	AA_OP_FREE_BULK = 6,	/* ptr = arena array of n u64 */
	AA_OP_MALLOC_GROW = 7,	/* malloc that may grow the heap (sleepable) */
	AA_OP_FREE_DEFERRED = 8,	/* ptr in */
	AA_OP_FREE_DEFERRED_BULK = 9,	/* ptr = arena array of n u64 */
};

/* One call into the allocator from userspace (aa_heap__call). */
struct aa_op_args {
	__u32 op;		/* enum aa_op_kind */
	__u32 n;		/* bulk count */
	__u64 size;		/* in: bytes; out for USABLE */
	__u64 arg;		/* nmemb or alignment */
	__u64 ptr;		/* in for FREE/USABLE/bulk, out for allocs */
	__s64 ret;		/* out: count or negative errno */
};

/* A batch of ops executed by one program run: ops[i] in arena memory. */
struct aa_batch_op {
	__u64 ptr;		/* != 0: free it; 0: allocate size, ptr out */
	__u64 size;		/* in: alloc size; out: usable size */
	__s64 ret;		/* out: 0 or negative errno */
};

struct aa_batch_args {
	__u64 ops;		/* in: arena address of struct aa_batch_op[n] */
	__u32 n;		/* in */
	__u32 done;		/* out: ops executed */
};

/* The user call: a userspace thread's cache (aa_shared.h, "User caches"). */
enum aa_user_op {
	AA_USER_OPEN = 0,	/* take a cache without owner, else map a new
				 * one, for the calling thread: idx, cache,
				 * gen, owner_pid and owner_tid out */
	AA_USER_ALLOC = 1,	/* a miss: refill class cls, one object of size
				 * bytes out in ptr (0: ret = -errno) */
	AA_USER_FREE = 2,	/* an overflow: take ptr, an object of class
				 * cls the caller claimed (word 0 = the FREED
				 * mark), spilling a batch if full; ret 0 or
				 * -EUCLEAN: taken, else not */
	AA_USER_CLOSE = 3,	/* give the cache back: its objects to the
				 * heap (ret = how many), owner cleared; only
				 * from the owning process, for thread
				 * owner_tid; -EBUSY while claimed */
	AA_USER_REAP = 4,	/* CLOSE cache idx (AA_USER_ALL: every cache)
				 * if its owner is gone or exec()ed, even
				 * inside a hit (its claim is taken over);
				 * ret = caches reaped */
};
#define AA_USER_ALL	0xffffffffU

struct aa_user_args {
	__u32 op;		/* in: enum aa_user_op */
	__u32 idx;		/* OPEN out, else in: the cache's index */
	__u32 cls;		/* ALLOC, FREE in: the size class */
	__u32 gen;		/* OPEN out: aa_root.user.gen */
	__u64 cache;		/* OPEN out: the cache's user address */
	__u64 size;		/* ALLOC in: bytes asked for */
	__u64 ptr;		/* ALLOC out, FREE in */
	__u32 owner_pid;	/* OPEN out: aa_cpu_cache.owner_pid */
	__u32 owner_tid;	/* OPEN out, CLOSE in: aa_cpu_cache.owner_tid */
	__s64 ret;		/* out: 0, a count, or -errno */
};

/* The drain call: the quarantine (debug mode), every CPU and user cache it can
 * claim (from whatever CPU it runs on), the transfer caches and the parked frees
 * back to the heap; then the empty spans the central lists kept, to the
 * page heap. */
struct aa_drain_args {
	__u64 objects;		/* out: objects returned to the heap */
	__u64 busy[AA_MAX_CPUS / 64];	/* out: bit cpu set = cache was claimed
					 * by someone else: not drained */
	__u32 nr_busy;		/* out: number of such CPUs */
	__s32 err;		/* out: 0, or -errno of a tier that failed */
	__u32 user_busy;	/* out: user caches claimed by someone else
				 * (their thread is inside a call): not drained */
	__u32 pad;
};

/* The reclaim call: op ADVANCE starts a round (epoch out: the epoch whose frees
 * the round reclaims); after an RCU grace period, op FREE with that epoch
 * frees them and those of earlier epochs, again while `more`. -EBUSY while
 * another reclaimer runs. */
enum aa_reclaim_op {
	AA_RECLAIM_ADVANCE = 0,
	AA_RECLAIM_FREE = 1,
};

struct aa_reclaim_args {
	__u32 op;		/* in: enum aa_reclaim_op */
	__u32 epoch;		/* ADVANCE: out; FREE: in */
	__u64 objects;		/* FREE out: objects freed */
	__u64 bytes;		/* FREE out: their usable bytes */
	__u64 kept;		/* FREE out: nodes of later epochs, kept */
	__s32 err;		/* out */
	__u32 more;		/* FREE out: 1 if the loop budget ended it */
};

/*
 * aa__run: the one program of every call but the lifecycle's (one program
 * verifies the allocator's functions once where six did, for each load).
 * The ctx is struct aa_call_args: one of the calls' arguments at offset 0
 * (each call's code reads its struct at the ctx itself: the verifier takes
 * no access through a ctx pointer moved off its start), then which call.
 */
enum aa_call_kind {
	AA_CALL_OP = 0,		/* struct aa_op_args: one allocator call */
	AA_CALL_BATCH = 1,	/* struct aa_batch_args */
	AA_CALL_USER = 2,	/* struct aa_user_args */
	AA_CALL_DRAIN = 3,	/* struct aa_drain_args */
	AA_CALL_RECLAIM = 4,	/* struct aa_reclaim_args */
	AA_CALL_CHECK = 5,	/* none: the program returns the checker's code */
	AA_NR_CALLS
};

struct aa_call_args {
	union {
		struct aa_op_args op;
		struct aa_batch_args batch;
		struct aa_user_args user;
		struct aa_drain_args drain;
		struct aa_reclaim_args reclaim;
	};
	__u32 kind;		/* in: enum aa_call_kind, which member */
	__u32 pad;
};

#endif /* __AA_SYSCALL_H */
