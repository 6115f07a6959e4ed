// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * flowtab.c - loads flowtab.bpf.c (linked with arena-alloc), sends it a
 * few flows through BPF_PROG_TEST_RUN (no interface needed), then prints
 * every live flow record straight from the mmapped arena, and the size
 * histogram from the program's own page. Exits 0 only if what it read is
 * what it sent: 3 flows, one of them ended (its record freed).
 *   flowtab --hold   then keeps the heap loaded until SIGINT/SIGTERM, for
 *                    `arena-alloc --pid PID stats` and the like
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"	/* before the skeleton: its arena types */
#include "flowtab.h"
#include "flowtab.skel.h"

struct pkt {
	__u8 dst[6], src[6];
	__u16 proto;
	__u8 vihl, tos;
	__u16 tot_len, id, frag;
	__u8 ttl, protocol;
	__u16 check;
	__u32 saddr, daddr;
	__u16 sport, dport;
	__u8 l4[16];		/* TCP: seq, ack, off, flags ...; UDP: len, sum */
	__u8 payload[64];
} __attribute__((packed));

static int send_pkt(struct flowtab *skel, const char *s, const char *d, int sport, int dport,
		int proto, int tcp_flags)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	struct pkt p = {};

	p.proto = htons(0x0800);
	p.vihl = 0x45;
	p.tot_len = htons(sizeof(p) - 14);
	p.ttl = 64;
	p.protocol = proto;
	inet_pton(AF_INET, s, &p.saddr);
	inet_pton(AF_INET, d, &p.daddr);
	p.sport = htons(sport);
	p.dport = htons(dport);
	if (proto == IPPROTO_TCP) {
		p.l4[8] = 5 << 4;	/* data offset: 20 bytes */
		p.l4[9] = tcp_flags;
	}
	o.data_in = &p;
	o.data_size_in = sizeof(p);
	return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.flowtab_tc), &o);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	AA_OPTS(aa_heap_opts, opts, .init_bytes = 4 << 20);
	LIBBPF_OPTS(bpf_test_run_opts, run);
	struct flow_key key, next, *prev = NULL;
	char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];
	__u64 addr, packets = 0, *hist;
	struct flowtab *skel;
	struct aa_heap *heap;
	struct aa_stats st;
	int i, live = 0, err = 1;

	skel = flowtab__open_and_load();
	if (!skel) {
		fprintf(stderr, "flowtab: load failed: %s\n", strerror(errno));
		return 1;
	}
	heap = aa_heap__attach(skel->obj, &opts);
	if (!heap || bpf_prog_test_run_opts(bpf_program__fd(skel->progs.flowtab_setup), &run) ||
	    run.retval) {
		fprintf(stderr, "flowtab: heap or setup failed: %s\n", strerror(errno));
		goto out;
	}
	for (i = 0; i < 3; i++)		/* A: 3 packets, then FIN: ended */
		send_pkt(skel, "10.0.0.1", "10.0.0.2", 1000, 80, IPPROTO_TCP, 0x10);
	send_pkt(skel, "10.0.0.1", "10.0.0.2", 1000, 80, IPPROTO_TCP, 0x11);
	for (i = 0; i < 5; i++)		/* B: 5 packets */
		send_pkt(skel, "10.0.0.3", "10.0.0.2", 2000, 443, IPPROTO_TCP, 0x10);
	for (i = 0; i < 2; i++)		/* C: 2 datagrams */
		send_pkt(skel, "10.0.0.4", "10.0.0.5", 53, 5353, IPPROTO_UDP, 0);

	printf("%-21s %-21s %5s %8s %8s\n", "source", "destination", "proto", "packets", "bytes");
	while (!bpf_map_get_next_key(bpf_map__fd(skel->maps.flows), prev, &next)) {
		struct flow *f;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.flows), &key, &addr))
			continue;
		f = aa_heap__ptr(heap, addr);	/* the record, in the mmap */
		if (!f)
			goto out;
		inet_ntop(AF_INET, &f->key.saddr, s, sizeof(s));
		inet_ntop(AF_INET, &f->key.daddr, d, sizeof(d));
		printf("%15s:%-5u %15s:%-5u %5s %8llu %8llu\n", s, ntohs(f->key.sport), d,
		       ntohs(f->key.dport), f->key.proto == IPPROTO_TCP ? "tcp" : "udp",
		       (unsigned long long)f->packets, (unsigned long long)f->bytes);
		packets += f->packets;
		live++;
	}
	hist = aa_heap__ptr(heap, (__u64)(unsigned long)skel->bss->histogram);
	printf("sizes:");
	for (i = 0; hist && i < FLOWTAB_BUCKETS; i++)
		if (hist[i])
			printf(" %d-%d B: %llu", i * 128, i * 128 + 127, (unsigned long long)hist[i]);
	aa_heap__stats(heap, &st);	/* live_allocs: the program's, caches apart */
	printf("\nflows started %llu, ended %llu; records allocated %llu\n",
	       (unsigned long long)skel->bss->flows_started,
	       (unsigned long long)skel->bss->flows_ended,
	       (unsigned long long)st.live_allocs);
	if (live == 2 && packets == 7 && skel->bss->flows_started == 3 &&
	    skel->bss->flows_ended == 1 && st.live_allocs == 2 && hist && hist[0] == 11) {
		printf("flowtab: OK\n");
		err = 0;
		if (argc > 1 && !strcmp(argv[1], "--hold")) {
			signal(SIGINT, on_signal);
			signal(SIGTERM, on_signal);
			printf("flowtab: holding the heap, pid %d, until SIGTERM\n", getpid());
			fflush(stdout);
			while (!stop)
				sleep(1);	/* a signal ends it early */
		}
	} else {
		fprintf(stderr, "flowtab: FAILED: not what was sent\n");
	}
out:
	aa_heap__destroy(heap);
	flowtab__destroy(skel);
	return err;
}
