// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * flowtab.c - loads flowtab.bpf.c (linked with arena-alloc), seeds its
 * flow table with records allocated from userspace (aa_heap__calloc(),
 * filled through the mmap), sends it a few flows through
 * BPF_PROG_TEST_RUN (no interface needed), then prints every live flow
 * record straight from the mmapped arena, and the size histogram from the
 * program's own page. Exits 0 only if what it read is what it sent: the
 * program made 3 records and ended 1 of them, it freed every seeded record
 * at its flow's end (packets counted into it), no free was refused, and
 * the heap holds the 2 live records, nothing more.
 *   flowtab --hold   then keeps the heap loaded until SIGINT/SIGTERM, for
 *                    `arena-alloc --pid PID stats` and the like
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"
#include "aa_shared.h"	/* before the skeleton: the library's globals it shows */
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

/* The workload: each flow's packets (TCP ACKs, or UDP datagrams), then a
 * last TCP packet with flags `end` (FIN or RST: the flow ends) unless 0.
 * The loader seeds the first NR_SEEDED; every one of them ends, so the
 * program frees them all. The program makes the other records itself. */
struct flow_spec {
	const char *saddr, *daddr;
	int sport, dport, proto;
	int packets;
	int end;
};

#define ACK	0x10
#define FIN	0x01
#define RST	0x04

static const struct flow_spec workload[] = {
	{ "10.0.1.1", "10.0.0.2", 3001, 22, IPPROTO_TCP, 2, ACK | FIN },
	{ "10.0.1.2", "10.0.0.2", 3002, 22, IPPROTO_TCP, 1, ACK | RST },
	{ "10.0.1.3", "10.0.0.2", 3003, 22, IPPROTO_TCP, 0, ACK | FIN },
	{ "10.0.0.1", "10.0.0.2", 1000, 80, IPPROTO_TCP, 3, ACK | FIN },	/* ends */
	{ "10.0.0.3", "10.0.0.2", 2000, 443, IPPROTO_TCP, 5, 0 },		/* live */
	{ "10.0.0.4", "10.0.0.5", 53, 5353, IPPROTO_UDP, 2, 0 },		/* live */
};
#define NR_FLOWS	(int)(sizeof(workload) / sizeof(workload[0]))
#define NR_SEEDED	3

/* The key the program builds from w's packets (network order, pad 0). */
static void flow_key_of(const struct flow_spec *w, struct flow_key *key)
{
	memset(key, 0, sizeof(*key));
	inet_pton(AF_INET, w->saddr, &key->saddr);
	inet_pton(AF_INET, w->daddr, &key->daddr);
	key->sport = htons(w->sport);
	key->dport = htons(w->dport);
	key->proto = w->proto;
}

static int send_pkt(struct flowtab *skel, const struct flow_spec *w, int tcp_flags)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	struct pkt p = {};

	p.proto = htons(0x0800);
	p.vihl = 0x45;
	p.tot_len = htons(sizeof(p) - 14);
	p.ttl = 64;
	p.protocol = w->proto;
	inet_pton(AF_INET, w->saddr, &p.saddr);
	inet_pton(AF_INET, w->daddr, &p.daddr);
	p.sport = htons(w->sport);
	p.dport = htons(w->dport);
	if (w->proto == IPPROTO_TCP) {
		p.l4[8] = 5 << 4;	/* data offset: 20 bytes */
		p.l4[9] = tcp_flags;
	}
	o.data_in = &p;
	o.data_size_in = sizeof(p);
	return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.flowtab_tc), &o);
}

/* Seeds the table with a record of w allocated from userspace (the
 * thread's cache in the arena) and filled through the mmap. The loader
 * seeds before it sends any packet, so no program run races the insert;
 * were one running, BPF_NOEXIST would keep the map to one record per flow
 * (the program's, if it came first: this one is then freed here, and the
 * seeding fails with EEXIST). The map update is a syscall, so the record's
 * fields are written before any program run can find it.
 * Returns 0, or a negative error with a message. */
static int seed_flow(struct flowtab *skel, struct aa_heap *heap, const struct flow_spec *w)
{
	struct flow_key key;
	struct flow *f;
	__u64 addr;
	int err;

	addr = aa_heap__calloc(heap, 1, sizeof(*f));
	f = addr ? aa_heap__ptr(heap, addr) : NULL;
	if (!f) {
		err = -errno;
		fprintf(stderr, "flowtab: aa_heap__calloc: %s\n", strerror(errno));
		return err;
	}
	flow_key_of(w, &key);
	f->key = key;
	f->flags = FLOW_SEEDED;		/* packets, bytes: 0 from calloc */
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.flows), &key, &addr, BPF_NOEXIST)) {
		err = -errno;
		fprintf(stderr, "flowtab: seeding %s:%d: %s\n", w->saddr, w->sport,
			strerror(errno));
		if (aa_heap__free(heap, addr))
			fprintf(stderr, "flowtab: aa_heap__free refused a seeded record\n");
		return err;
	}
	return 0;
}

/* A check that failed says what it expected and what it read. */
#define EXPECT(ok, ...)							\
	do {								\
		if (!(ok)) {						\
			fprintf(stderr, "flowtab: FAILED: " __VA_ARGS__); \
			fputc('\n', stderr);				\
			failed++;					\
		}							\
	} while (0)

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
	__u64 addr, packets = 0, *hist, refused;
	__u64 sent = 0, seeded_sent = 0, live_sent = 0, exp_live = 0, exp_ended = 0;
	struct flowtab *skel;
	struct aa_heap *heap;
	struct aa_stats st;
	int i, j, seeded = 0, live = 0, failed = 0, err = 1;

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
	for (i = 0; i < NR_SEEDED; i++) {
		if (seed_flow(skel, heap, &workload[i]))
			goto out;
		seeded++;
	}
	printf("seeded %d flow records from userspace (aa_heap__calloc)\n", seeded);

	for (i = 0; i < NR_FLOWS; i++) {
		const struct flow_spec *w = &workload[i];
		int n = w->packets + (w->end != 0);

		for (j = 0; j < w->packets; j++)
			send_pkt(skel, w, ACK);
		if (w->end)
			send_pkt(skel, w, w->end);
		sent += n;
		if (i < NR_SEEDED)
			seeded_sent += n;
		if (w->end) {
			exp_ended++;
		} else {
			exp_live++;
			live_sent += n;
		}
	}

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
	aa_heap__stats(heap, &st);	/* live_allocs: the calls', caches apart */
	refused = st.err[AA_ERR_DOUBLE_FREE] + st.err[AA_ERR_FOREIGN] +
		  st.err[AA_ERR_INTERIOR] + st.err[AA_ERR_MISALIGNED];
	printf("\nflows started %llu, ended %llu; records allocated %llu\n",
	       (unsigned long long)skel->bss->flows_started,
	       (unsigned long long)skel->bss->flows_ended,
	       (unsigned long long)st.live_allocs);
	printf("seeded by userspace %d, freed by BPF at flow end %llu (%llu packets counted "
	       "into them); frees refused: BPF %llu, heap %llu\n", seeded,
	       (unsigned long long)skel->bss->seeded_freed,
	       (unsigned long long)skel->bss->seeded_packets,
	       (unsigned long long)skel->bss->free_refused, (unsigned long long)refused);

	EXPECT(skel->bss->seeded_freed == (__u64)seeded,
	       "BPF freed %llu of the %d seeded records at flow end",
	       (unsigned long long)skel->bss->seeded_freed, seeded);
	EXPECT(skel->bss->seeded_packets == seeded_sent,
	       "the seeded records counted %llu packets, %llu were sent",
	       (unsigned long long)skel->bss->seeded_packets, (unsigned long long)seeded_sent);
	EXPECT(skel->bss->free_refused == 0 && refused == 0,
	       "frees refused: %llu by the program's aa_free(), %llu in the heap's counters",
	       (unsigned long long)skel->bss->free_refused, (unsigned long long)refused);
	EXPECT(skel->bss->flows_started == (__u64)(NR_FLOWS - seeded),
	       "the program started %llu flows, expected %d",
	       (unsigned long long)skel->bss->flows_started, NR_FLOWS - seeded);
	EXPECT(skel->bss->flows_ended == exp_ended, "%llu flows ended, expected %llu",
	       (unsigned long long)skel->bss->flows_ended, (unsigned long long)exp_ended);
	EXPECT(live == (int)exp_live && packets == live_sent,
	       "%d live flows with %llu packets, expected %llu with %llu", live,
	       (unsigned long long)packets, (unsigned long long)exp_live,
	       (unsigned long long)live_sent);
	EXPECT(st.live_allocs == exp_live,
	       "the heap holds %llu live allocations, expected the %llu live records (a leak)",
	       (unsigned long long)st.live_allocs, (unsigned long long)exp_live);
	EXPECT(hist && hist[0] == sent, "the histogram counted %llu packets, %llu were sent",
	       hist ? (unsigned long long)hist[0] : 0ULL, (unsigned long long)sent);
	if (failed)
		goto out;
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
out:
	aa_heap__destroy(heap);
	flowtab__destroy(skel);
	return err;
}
