/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * diff_model.h - the userspace model of the differential test
 * (test_differential.c says what is checked): its random numbers, the
 * size rules (classes, page runs), the byte patterns, the geometry checks and the
 * model of the heap counters, in diff_model.c.
 */
#ifndef __AA_TESTS_DIFF_MODEL_H
#define __AA_TESTS_DIFF_MODEL_H

#include "common.h"

#define D_ARENA_PAGES	T_PAGES(128ULL << 20)	/* 128 MiB of address space */
#define D_INIT_BYTES	(16ULL << 20)
#define D_BATCH		1000U			/* ops per batch call */
#define D_MIN_OPS	100000U
#define D_MAX_LIVE	2000U			/* live objects (op array aside) */
#define D_MAX_LIVE_BYTES (40ULL << 20)		/* usable bytes of those */
#define D_CHECK_EVERY	10U			/* batches between full checks */
#define D_DEFAULT_SEED	0x5eedf00dcafe1234ULL
#define D_RET_UNSET	0x7777777777777777LL	/* op.ret before the run */

/* One live allocation of the model. */
struct obj {
	__u64 addr;	/* arena address */
	__u64 size;	/* bytes requested (and patterned) */
	__u64 usable;	/* usable size the heap must report */
	__u64 seed;	/* pattern seed */
};

struct extent {
	__u64 start, end;
	__u32 kind;		/* enum ext_kind: what the extent is, for messages */
	__u32 cpu, cls;		/* cached objects: where they sit */
};

enum ext_kind { EXT_LIVE, EXT_OPS, EXT_CPU_CACHE, EXT_TRANSFER };

struct model {
	__u64 bytes, peak, live, allocs, frees;
	__u64 large_chunks;	/* whole chunks held by allocations > 1 MiB */
	__u64 run_bytes;	/* bytes of allocations > 8 KiB (page runs) */
	__u64 chunks, grows, trims, nomem;
	/* calls of each size class (usable <= 8 KiB): with caches on, the
	 * CPU caches' counters must add up to these; cls_req: bytes asked */
	__u64 cls_allocs[AA_NR_CLASSES], cls_frees[AA_NR_CLASSES], cls_nomem[AA_NR_CLASSES];
	__u64 cls_req[AA_NR_CLASSES];
};

__u64 splitmix64(__u64 x);
__u64 xs_next(__u64 *s);
__u64 xs_init(__u64 seed);
__u64 rnd_below(__u64 *rng, __u64 n);
__u64 rnd_log(__u64 *rng, __u64 lo, __u64 hi);
__u64 rnd_size(__u64 *rng);
__u32 model_class(__u64 usable);
__u64 model_pages(__u64 usable);
__u32 model_order(__u64 pages);
__u64 chunks_of(__u64 usable);
__u64 model_usable(__u64 size);
unsigned char *obj_mem(struct aa_heap *h, const struct obj *o);
void fill_obj(struct aa_heap *h, const struct obj *o);
bool verify_obj(struct aa_heap *h, const struct obj *o, bool fatal, __u64 *bad_off);
void check_placement(struct aa_heap *h, const struct obj *o);
int extent_cmp(const void *a, const void *b);
const char *extent_name(const struct extent *e, char *buf, size_t sz);
void check_no_overlap(struct extent *ext, unsigned int n);
void model_alloc(struct model *m, __u64 usable);
void model_free(struct model *m, __u64 usable);
__u64 env_seed(void);
double now_sec(void);

#endif
