// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * entry.bpf.c - SEC("syscall") programs userspace runs with
 * bpf_prog_test_run_opts(): init, grow, trim, teardown, check, and single
 * or batched allocator calls (used by the loader, the CLI and the tests).
 *
 * These are sleepable: only they may reach the page kfuncs (arena.bpf.c).
 * Each returns 0 and reports results in its ctx (copied back to the
 * caller), so that a verifier-level failure and an allocator error differ.
 */
#include "internal.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Field by field: a struct assignment into the arena is a memcpy, whose
 * BPF lowering loses the arena address cast (verifier: "invalid mem
 * access 'scalar'"). */
static __always_inline void set_tunables(struct aa_tunables *t)
{
	__u32 c;

	for (c = 0; c < AA_NR_CLASSES; c++) {
		aa_root.tun.cpu_cache_cap[c] = t->cpu_cache_cap[c];
		aa_root.tun.batch[c] = t->batch[c];
		aa_root.tun.transfer_cap[c] = t->transfer_cap[c];
	}
	aa_root.tun.keep_bytes = t->keep_bytes;
	aa_root.tun.low_watermark = t->low_watermark;
}

SEC("syscall")
int aa_init(struct aa_init_args *args)
{
	int ret;

	args->root_addr = (__u64)&aa_root;
	if (!aa_heap_ready())
		set_tunables(&args->tun);
	ret = aa_arena_init(args->arena_base, args->arena_size);
	if (!ret && aa_root.nr_cpus == 0)
		ret = aa_arena_init_caches(args->nr_cpus, args->flags);
	if (!ret && args->grow_bytes) {
		ret = aa_arena_grow(args->grow_bytes);
		ret = ret < 0 ? ret : 0;
	}
	args->err = ret;
	return 0;
}

SEC("syscall")
int aa_grow(struct aa_grow_args *args)
{
	int ret = aa_arena_grow(args->bytes);

	args->chunks = ret > 0 ? ret : 0;
	args->err = ret < 0 ? ret : 0;
	return 0;
}

SEC("syscall")
int aa_trim(struct aa_trim_args *args)
{
	int ret = aa_arena_trim(args->keep_bytes);

	args->chunks = ret > 0 ? ret : 0;
	args->err = ret < 0 ? ret : 0;
	return 0;
}

SEC("syscall")
int aa_teardown(struct aa_trim_args *args)
{
	int ret = aa_arena_teardown();

	args->chunks = ret > 0 ? ret : 0;
	args->err = ret < 0 ? ret : 0;
	return 0;
}

/* Flush the calling CPU's cache (userspace runs it pinned to each CPU in
 * turn: only the owning CPU may touch a cache) and, with all, the transfer
 * caches. */
SEC("syscall")
int aa_drain_cpu(struct aa_drain_args *args)
{
	int n = aa_cpu_cache_drain(), m = 0;

	args->cpu = bpf_get_smp_processor_id();
	if (n >= 0 && args->all)
		m = aa_transfer_cache_drain();
	args->err = n < 0 ? n : (m < 0 ? m : 0);
	args->objects = (n > 0 ? n : 0) + (m > 0 ? m : 0);
	return 0;
}

/* Validity checker: returns 0 or the first failing check's code. */
SEC("syscall")
int aa_check(void *ctx)
{
	return aa_buddy_check();
}

SEC("syscall")
int aa_call(struct aa_op_args *a)
{
	__u64 p;

	switch (a->op) {
	case AA_OP_MALLOC:
	case AA_OP_CALLOC:
	case AA_OP_ALIGNED:
		if (a->op == AA_OP_MALLOC)
			p = aa_malloc_u64(a->size);
		else if (a->op == AA_OP_CALLOC)
			p = aa_calloc_u64(a->arg, a->size);
		else
			p = aa_aligned_alloc_u64(a->arg, a->size);
		a->ptr = p;
		a->ret = p ? 0 : -ENOMEM;
		break;
	case AA_OP_MALLOC_GROW:
		/* sleepable callers may grow the heap inline */
		p = aa_malloc_u64(a->size);
		if (!p && aa_arena_grow(a->size + AA_CHUNK_SIZE) > 0)
			p = aa_malloc_u64(a->size);
		a->ptr = p;
		a->ret = p ? 0 : -ENOMEM;
		break;
	case AA_OP_FREE:
		a->ret = aa_free_u64(a->ptr);
		break;
	case AA_OP_USABLE:
		a->size = aa_usable_size_u64(a->ptr);
		a->ret = 0;
		break;
	case AA_OP_MALLOC_BULK:
		a->ret = aa_malloc_bulk_u64(a->ptr, a->n, a->size);
		break;
	case AA_OP_FREE_BULK:
		a->ret = aa_free_bulk_u64(a->ptr, a->n);
		break;
	default:
		a->ret = -EINVAL;
	}
	return 0;
}

/* Run n ops from an arena array in one program run (the differential test
 * and the demo workload): ptr != 0 frees it, ptr == 0 allocates size. */
SEC("syscall")
int aa_batch(struct aa_batch_args *a)
{
	struct aa_batch_op __arena *ops = (struct aa_batch_op __arena *)a->ops;
	__u32 n = a->n, done = AA_ZERO;
	int i;

	bpf_for(i, 0, n) {
		struct aa_batch_op __arena *op = &ops[i];
		__u64 p = op->ptr;

		if (p) {
			op->ret = aa_free_u64(p);
		} else {
			p = aa_malloc_u64(op->size);
			op->ptr = p;
			op->ret = p ? 0 : -ENOMEM;
			op->size = p ? aa_usable_size_u64(p) : 0;
		}
		done++;
	}
	a->done = done;
	return 0;
}
