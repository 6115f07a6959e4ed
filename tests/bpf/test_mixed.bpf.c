// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_mixed.bpf.c - one heap used as a project outside this tree uses it
 * (tests/test_mixed.c runs it), by programs of several types on every CPU:
 *  - mx_early (syscall): allocations before the heap is attached: NULL;
 *  - mx_page / mx_page_free (syscall): a page of the arena taken with the
 *    page kfunc, outside the heap, and given back at the end;
 *  - mx_tc (tc): a record per UDP flow in a flow table in the arena,
 *    allocated at the flow's first packet and freed at its end;
 *  - mx_irq (perf_event, hard IRQ on every CPU): nodes from aa_malloc()
 *    and aa_calloc() in turn, pushed on a list until MX_LIST_MAX, then
 *    nodes and page runs kept in a ring per CPU that frees the one it
 *    displaces;
 *  - mx_walk (syscall): frees the whole list; mx_ring_clear what the rings
 *    hold;
 *  - mx_churn (syscall, one thread per CPU): page runs and bulk calls, the
 *    heap-lock holds that the IRQs above land on (their frees are then
 *    parked).
 * Loops use bpf_loop().
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "arena_alloc.bpf.h"
#include "../test_mixed.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(1 << 14);	/* 64 MiB */

void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, __u32 page_cnt,
				    int node_id, __u64 flags) __ksym __weak;
void bpf_arena_free_pages(void *map, void __arena *ptr, __u32 page_cnt) __ksym __weak;

#define MX_ETH_P_IP	0x0800
#define MX_IPPROTO_UDP	17
#define MX_PAGE_WORD	0x9a9e0f0e5eedULL

__u64 __arena mx_table[MX_FLOWS];		/* flow -> its record */
__u64 __arena mx_ring[MX_CPUS * MX_RING];	/* the IRQs' kept nodes */
__u64 __arena mx_bulk[MX_CPUS][64];	/* per CPU: mx_churn's bulk calls */

__u64 mx_head;		/* the list: arena address of the newest node */
__u64 mx_page_addr;	/* the page of mx_page */
__u32 mx_ring_next[MX_CPUS];

/* out: counted with atomic adds */
__u64 mx_flows_started, mx_flows_freed, mx_tc_nulls, mx_tc_errors;
__u64 mx_irq_runs, mx_irq_nulls, mx_irq_run_nulls, mx_irq_frees, mx_irq_errors, mx_irq_bad;
__u64 mx_listed, mx_pushed;

/* Allocations before aa_heap__attach(): both must get NULL. */
SEC("syscall")
int mx_early(void *ctx)
{
	void __arena *a = aa_malloc(64), *b = aa_calloc(2, 32);

	return a || b;
}

/* A page of the arena for the project's own use, outside the heap. */
SEC("syscall")
int mx_page(void *ctx)
{
	__u64 __arena *p = bpf_arena_alloc_pages(&arena, NULL, 1, -1, 0);

	if (!p)
		return 1;
	*p = MX_PAGE_WORD;
	mx_page_addr = (__u64)p;
	return 0;
}

SEC("syscall")
int mx_page_free(void *ctx)
{
	__u64 __arena *p = (__u64 __arena *)mx_page_addr;

	if (!p)
		return 1;
	if (*p != MX_PAGE_WORD)
		return 2;
	bpf_arena_free_pages(&arena, p, 1);
	mx_page_addr = 0;
	return 0;
}

/* --- tc: a record per flow ----------------------------------------------- */

SEC("tc")
int mx_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct mx_pkt *m = (void *)(udp + 1);
	struct mx_rec __arena *r;
	__u32 flow;
	__u64 old;

	if ((void *)(m + 1) > end || eth->h_proto != bpf_htons(MX_ETH_P_IP) ||
	    ip->protocol != MX_IPPROTO_UDP)
		return 0;
	flow = m->flow;
	if (flow >= MX_FLOWS)
		return 0;
	if (m->op == MX_OP_END) {
		old = __sync_lock_test_and_set(&mx_table[flow], 0);
		if (!old)
			return 0;
		if (aa_free((void __arena *)old))
			__sync_fetch_and_add(&mx_tc_errors, 1);
		else
			__sync_fetch_and_add(&mx_flows_freed, 1);
		return 0;
	}
	r = (struct mx_rec __arena *)mx_table[flow];	/* one CPU per flow */
	if (!r) {
		r = aa_malloc(sizeof(*r));
		if (!r) {
			__sync_fetch_and_add(&mx_tc_nulls, 1);
			return 0;
		}
		r->flow = flow;
		r->packets = 0;
		r->bytes = 0;
		r->first_ns = bpf_ktime_get_ns();
		mx_table[flow] = (__u64)r;
		__sync_fetch_and_add(&mx_flows_started, 1);
	}
	r->packets++;
	r->bytes += skb->len;
	r->last_ns = bpf_ktime_get_ns();
	return 0;
}

/* --- perf_event: a list, then a ring per CPU ------------------------------ */

/* A node from aa_malloc() or, every other run, aa_calloc() (checked zero). */
static __always_inline struct mx_node __arena *node_alloc(__u64 n)
{
	struct mx_node __arena *node;

	if (!(n & 1))
		return aa_malloc(sizeof(*node));
	node = aa_calloc(1, sizeof(*node));
	if (node && (node->next || node->ts || node->pad[2]))
		__sync_fetch_and_add(&mx_irq_bad, 1);
	return node;
}

SEC("perf_event")
int mx_irq(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 n = __sync_fetch_and_add(&mx_irq_runs, 1), old;
	struct mx_node __arena *node;
	void __arena *p;
	int i;

	if (__sync_fetch_and_add(&mx_listed, 1) < MX_LIST_MAX) {
		node = node_alloc(n);
		if (!node) {
			__sync_fetch_and_add(&mx_irq_nulls, 1);
			return 0;
		}
		node->ts = bpf_ktime_get_ns();
		node->cpu = cpu;
		node->zeroed = n & 1;
		for (i = 0; i < 64; i++) {	/* push; retried only under contention */
			old = mx_head;
			node->next = old;
			if (__sync_val_compare_and_swap(&mx_head, old, (__u64)node) == old) {
				__sync_fetch_and_add(&mx_pushed, 1);
				return 0;
			}
		}
		p = node;
	} else {
		/* the ring: nodes, and every fourth run a page run, whose free
		 * goes to the heap lock (parked when the task below holds it) */
		p = n & 3 ? (void __arena *)node_alloc(n) : aa_malloc(MX_IRQ_RUN);
		if (!p) {
			__sync_fetch_and_add(n & 3 ? &mx_irq_nulls : &mx_irq_run_nulls, 1);
			return 0;
		}
		if (cpu >= MX_CPUS)
			goto free;
		/* this CPU's IRQs only: they do not nest in each other */
		old = __sync_lock_test_and_set(&mx_ring[cpu * MX_RING +
							mx_ring_next[cpu]++ % MX_RING], (__u64)p);
		if (!old)
			return 0;
		p = (void __arena *)old;
	}
free:
	if (aa_free(p))
		__sync_fetch_and_add(&mx_irq_errors, 1);
	else
		__sync_fetch_and_add(&mx_irq_frees, 1);
	return 0;
}

/* --- syscall: the list and the rings freed, the heap lock worked ---------- */

struct walk_ctx {
	__u64 next;
	struct mx_walk_args a;
};

static long walk_step(__u64 i, void *data)
{
	struct walk_ctx *w = data;
	struct mx_node __arena *node = (struct mx_node __arena *)w->next;

	if (!node)
		return 1;
	w->next = node->next;
	if (node->cpu >= 1024 || node->zeroed > 1 || !node->ts)
		w->a.bad++;
	if (aa_free(node))
		w->a.errors++;
	else
		w->a.freed++;
	return 0;
}

SEC("syscall")
int mx_walk(struct mx_walk_args *a)
{
	struct walk_ctx w = { .next = __sync_lock_test_and_set(&mx_head, 0) };

	bpf_loop(MX_LIST_MAX + 1, walk_step, &w, 0);
	a->freed = w.a.freed;
	a->errors = w.a.errors;
	a->bad = w.a.bad + (w.next != 0);
	return 0;
}

static long ring_step(__u64 i, void *data)
{
	struct mx_walk_args *a = data;
	__u64 old = __sync_lock_test_and_set(&mx_ring[i & (MX_CPUS * MX_RING - 1)], 0);

	if (!old)
		return 0;
	if (aa_free((void __arena *)old))
		a->errors++;
	else
		a->freed++;
	return 0;
}

SEC("syscall")
int mx_ring_clear(struct mx_walk_args *a)
{
	struct mx_walk_args r = {};

	bpf_loop(MX_CPUS * MX_RING, ring_step, &r, 0);
	a->freed = r.freed;
	a->errors = r.errors;
	return 0;
}

static long churn_step(__u64 i, void *data)
{
	struct mx_churn_args *c = data;
	__u32 cpu = bpf_get_smp_processor_id();
	void __arena *big;
	int got;

	if (cpu >= MX_CPUS)
		return 1;

	big = aa_malloc(MX_BIG);
	if (big) {
		c->big++;
		if (aa_free(big))
			c->errors++;
	}
	got = aa_malloc_bulk(&mx_bulk[cpu][0], 64, 64);
	if (got > 0) {
		c->bulk += got;
		if (aa_free_bulk(&mx_bulk[cpu][0], got) != got)
			c->errors++;
	}
	return 0;
}

SEC("syscall")
int mx_churn(struct mx_churn_args *a)
{
	struct mx_churn_args c = {};

	bpf_loop(a->rounds, churn_step, &c, 0);
	a->big = c.big;
	a->bulk = c.bulk;
	a->errors = c.errors;
	return 0;
}
