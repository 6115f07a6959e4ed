// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cpu_cache.bpf.c - programs for the cache-tier tests:
 *  - stress: alloc/free loop where every object is parked in a shared slot
 *    and freed by whichever CPU swaps it out (half the frees cross CPUs);
 *  - reent_outer + reent_irq: a syscall program's hot alloc/free loop and
 *    a perf_event program (hard-IRQ context) allocating on the same CPU;
 *  - tc_alloc: a non-sleepable program, for the empty-heap case;
 *  - free_slow: the slow half of a free, for a free that lost its cache
 *    claim to a teardown;
 *  - calls: a known number of calls, for the totals.
 * Loops use bpf_loop() (test_embed.bpf.c is the object that uses bpf_for()).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"
#include "../test_cpu_cache.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);

#define NSLOTS	1024
#define MAXCPU	256

/* Exchange slots: an object parked here is freed by whoever swaps it out. */
__u64 __arena xslots[NSLOTS];
/* Set while reent_outer runs on that CPU. */
__u32 __arena in_outer[MAXCPU];

struct stress_ctx {
	__u32 seed, cpu;
	__u64 allocs, frees, errors, cross;
};

static long stress_step(__u64 i, void *data)
{
	struct stress_ctx *c = data;
	__u32 r = c->seed = c->seed * 1103515245 + 12345;
	__u64 size = (16ULL << ((r >> 8) & 7)) - (r & 15);	/* 1 .. 2048 */
	__u64 __arena *p = aa_malloc(size);
	__u64 old;

	if (!p) {
		c->errors++;
		return 0;
	}
	c->allocs++;
	p[0] = (__u64)p;	/* tag: an object given out twice is caught */
	p[1] = c->cpu;		/* who allocated it (every object has 2 words) */
	old = __sync_lock_test_and_set(&xslots[(r >> 16) & (NSLOTS - 1)], (__u64)p);
	if (old) {
		if (((__u64 __arena *)old)[1] != c->cpu)
			c->cross++;
		if (*(__u64 __arena *)old != old || aa_free(old))
			c->errors++;
		else
			c->frees++;
	}
	return 0;
}

SEC("syscall")
int stress(struct stress_args *a)
{
	struct stress_ctx c = { .seed = a->seed, .cpu = bpf_get_smp_processor_id() };

	bpf_loop(a->iters, stress_step, &c, 0);
	a->allocs = c.allocs;
	a->frees = c.frees;
	a->errors = c.errors;
	a->cross = c.cross;
	return 0;
}

static long flush_step(__u64 i, void *data)
{
	__u64 old = __sync_lock_test_and_set(&xslots[i & (NSLOTS - 1)], 0);

	if (old && aa_free(old))
		(*(__u64 *)data)++;
	return 0;
}

/* Free every parked object. Returns the number of failed frees. */
SEC("syscall")
int flush_slots(void *ctx)
{
	__u64 errors = 0;

	bpf_loop(NSLOTS, flush_step, &errors, 0);
	return errors;
}

/* --- Reentrancy ---------------------------------------------------------- */

__u64 irq_runs, irq_nested, irq_ok, irq_null, irq_errors;

static long hot_step(__u64 i, void *data)
{
	struct reent_args *a = data;
	__u64 __arena *p = aa_malloc(64);
	__u64 __arena *q = aa_malloc(200);

	if (!p || !q) {
		a->errors++;
	} else {
		p[7] = i;
		q[20] = i;
		if (p[7] != i || q[20] != i)
			a->errors++;
	}
	if (aa_free(p) | aa_free(q))
		a->errors++;
	else
		a->ok++;
	return 0;
}

SEC("syscall")
int reent_outer(struct reent_args *a)
{
	__u32 cpu = bpf_get_smp_processor_id() & (MAXCPU - 1);

	struct reent_args st = { .iters = a->iters };

	in_outer[cpu] = 1;
	bpf_loop(st.iters, hot_step, &st, 0);	/* callback ctx: on the stack */
	in_outer[cpu] = 0;
	a->cpu = cpu;
	a->ok = st.ok;
	a->errors = st.errors;
	return 0;
}

SEC("perf_event")
int reent_irq(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id() & (MAXCPU - 1);
	__u64 __arena *p;

	__sync_fetch_and_add(&irq_runs, 1);
	if (in_outer[cpu])
		__sync_fetch_and_add(&irq_nested, 1);
	p = aa_malloc(64);
	if (!p) {
		__sync_fetch_and_add(&irq_null, 1);
		return 0;
	}
	p[3] = cpu;
	if (p[3] != cpu || aa_free(p))
		__sync_fetch_and_add(&irq_errors, 1);
	else
		__sync_fetch_and_add(&irq_ok, 1);
	return 0;
}

/* --- The reserve: one call in hard IRQ on CPU 0 ---------------------------------
 * rsv_cmd (in): 1 allocates 64 B into rsv_ptr, 2 frees rsv_ptr (the result
 * in rsv_ret); the first IRQ on CPU 0 that interrupts rsv_spin does it and
 * clears rsv_cmd.
 */
__u32 rsv_cmd, rsv_spinning;
__u64 rsv_ptr;
__s32 rsv_ret;

static long spin_step(__u64 i, void *data)
{
	return *(volatile __u32 *)&rsv_cmd == 0;
}

/* Kernel code for rsv_irq to interrupt until it ran: an IRQ that
 * interrupts user mode runs on the task's stack (x86), and the allocator
 * takes it for task context. */
SEC("syscall")
int rsv_spin(void *ctx)
{
	rsv_spinning = 1;
	bpf_loop(1 << 20, spin_step, NULL, 0);
	rsv_spinning = 0;
	return 0;
}

SEC("perf_event")
int rsv_irq(void *ctx)
{
	__u32 cmd = rsv_cmd;

	if (!cmd || !rsv_spinning || bpf_get_smp_processor_id() != 0)
		return 0;
	if (cmd == 1)
		rsv_ptr = (__u64)aa_malloc(64);
	else
		rsv_ret = aa_free((void __arena *)rsv_ptr);
	__sync_lock_test_and_set(&rsv_cmd, 0);
	return 0;
}

/* --- Non-sleepable alloc ----------------------------------------------------- */

SEC("tc")
int tc_alloc(struct __sk_buff *skb)
{
	__u64 __arena *p = aa_malloc(128);

	if (!p)
		return 2;
	p[15] = 1;
	return aa_free(p) ? 3 : 1;
}

/* --- A free that lost its cache claim ---------------------------------------
 * What a free does once it has claimed its object (word 0: the FREED mark)
 * but finds its CPU cache claimed by someone else, here a teardown: the
 * slow path, which offers the object to the transfer cache.
 */
SEC("syscall")
int free_slow(struct free_slow_args *a)
{
	a->ret = aa_cpu_cache_free_slow(a->ptr, a->cls);
	return 0;
}

/* One call of a known kind on slot first + i: an aa_malloc (even i) or
 * aa_calloc (odd i) into it, or an aa_free of it. */
static long calls_step(__u64 i, void *data)
{
	struct calls_args *a = data;
	__u64 __arena *slot = &xslots[(a->first + i) & (NSLOTS - 1)];
	__u64 p = *slot;

	if (a->free) {
		*slot = 0;
		a->done += p && !aa_free(p);
		return 0;
	}
	p = (__u64)(i & 1 ? aa_calloc(1, a->size) : aa_malloc(a->size));
	*slot = p;
	a->done += !!p;
	return 0;
}

SEC("syscall")
int calls(struct calls_args *a)
{
	struct calls_args c = { .first = a->first, .n = a->n, .size = a->size, .free = a->free };

	bpf_loop(c.n, calls_step, &c, 0);	/* its ctx: the stack only */
	a->done = c.done;
	return 0;
}
