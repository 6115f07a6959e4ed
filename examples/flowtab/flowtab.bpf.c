// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * flowtab.bpf.c - a tc program that keeps one record per IPv4 TCP/UDP flow
 * in memory from arena-alloc (aa_malloc), found through a hash map of arena
 * addresses, and frees it when the flow ends (TCP FIN or RST). The records
 * live in the arena, so the loader reads them without a map lookup each.
 * The loader may seed the table with records it allocated itself
 * (aa_heap__calloc(), flags FLOW_SEEDED): the program counts into them and
 * frees them at flow end exactly as its own, and counts those frees.
 *
 * Also, as BPF projects do: bpf_for() loops and a page of its own straight
 * from the arena page kfunc (the size histogram), next to the allocator's.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "arena_alloc.bpf.h"
#include "flowtab.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA((64 << 20) / AA_PAGE_SIZE);	/* 64 MiB of address space: the map, in this one file */

void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, __u32 page_cnt,
				    int node_id, __u64 flags) __ksym __weak;

#define ETH_P_IP	0x0800
#define TC_ACT_OK	0
#define TCP_FIN		0x01
#define TCP_RST		0x04

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct flow_key);
	__type(value, __u64);		/* arena address of its struct flow */
} flows SEC(".maps");

__u64 __arena *histogram;	/* FLOWTAB_BUCKETS counters, one page */
__u64 flows_started, flows_ended, alloc_failures;
/* of flows_ended, the loader's records: how many, and their packets */
__u64 seeded_freed, seeded_packets;
__u64 free_refused;		/* aa_free() calls that returned an error */

/* Once, before traffic (a sleepable program: the page kfunc sleeps). */
SEC("syscall")
int flowtab_setup(void *ctx)
{
	__u64 __arena *page = bpf_arena_alloc_pages(&arena, NULL, 1, -1, 0);
	int i;

	if (!page)
		return -12;
	bpf_for(i, 0, FLOWTAB_BUCKETS)
		page[i] = 0;
	histogram = page;
	return 0;
}

SEC("tc")
int flowtab_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct flow_key key = {};
	struct flow __arena *f;
	__u64 *addr, a;
	__u8 tcp_flags = 0;
	__u16 *ports;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return TC_ACT_OK;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return TC_ACT_OK;
	ports = (void *)(ip + 1);
	if ((void *)(ports + 2) > end)
		return TC_ACT_OK;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = (void *)ports;

		if ((void *)(tcp + 1) > end)
			return TC_ACT_OK;
		tcp_flags = ((__u8 *)tcp)[13];
	}
	key.saddr = ip->saddr;
	key.daddr = ip->daddr;
	key.sport = ports[0];
	key.dport = ports[1];
	key.proto = ip->protocol;

	if (histogram)
		__sync_fetch_and_add(&histogram[(skb->len >> 7) & (FLOWTAB_BUCKETS - 1)], 1);

	addr = bpf_map_lookup_elem(&flows, &key);
	if (addr) {
		f = (struct flow __arena *)*addr;
	} else {
		f = aa_malloc(sizeof(*f));
		if (!f) {
			__sync_fetch_and_add(&alloc_failures, 1);
			return TC_ACT_OK;
		}
		/* field by field: a struct assignment into the arena is a
		 * memcpy the verifier refuses (or aa_store_struct()) */
		f->key.saddr = key.saddr;
		f->key.daddr = key.daddr;
		f->key.sport = key.sport;
		f->key.dport = key.dport;
		f->key.proto = key.proto;
		f->packets = 0;
		f->bytes = 0;
		f->flags = 0;
		a = (__u64)f;
		if (bpf_map_update_elem(&flows, &key, &a, BPF_NOEXIST)) {
			/* lost a race for this flow, or full */
			if (aa_free(f))
				__sync_fetch_and_add(&free_refused, 1);
			return TC_ACT_OK;
		}
		__sync_fetch_and_add(&flows_started, 1);
	}
	/* Packets of one flow on two CPUs: one may count into a record the
	 * other just freed at flow end; it is arena memory (nothing faults)
	 * and at worst a count lands in a reused object. A reader that must
	 * never see that waits for deferred free (aa_free after a grace
	 * period). */
	__sync_fetch_and_add(&f->packets, 1);
	__sync_fetch_and_add(&f->bytes, skb->len);

	if (tcp_flags & (TCP_FIN | TCP_RST)) {
		/* flow end: whoever deletes the entry frees the record, the
		 * loader's as the program's own (read before the free: the
		 * object is the heap's after it) */
		if (!bpf_map_delete_elem(&flows, &key)) {
			__u32 seeded = f->flags & FLOW_SEEDED;
			__u64 packets = f->packets;

			if (aa_free(f)) {
				__sync_fetch_and_add(&free_refused, 1);
				return TC_ACT_OK;
			}
			__sync_fetch_and_add(&flows_ended, 1);
			if (seeded) {
				__sync_fetch_and_add(&seeded_freed, 1);
				__sync_fetch_and_add(&seeded_packets, packets);
			}
		}
	}
	return TC_ACT_OK;
}
