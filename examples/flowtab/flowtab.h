/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* flowtab.h - the records flowtab.bpf.c keeps in the arena, shared with the
 * loader (flowtab.c), which seeds some of them (aa_heap__calloc(), filled
 * through the mmap) and reads them all straight from the mmapped arena. */
#ifndef FLOWTAB_H
#define FLOWTAB_H

struct flow_key {
	__u32 saddr, daddr;	/* network order */
	__u16 sport, dport;	/* network order */
	__u8 proto;
	__u8 pad[3];
};

struct flow {
	struct flow_key key;
	__u64 packets;
	__u64 bytes;
	__u32 flags;		/* FLOW_SEEDED */
	__u32 pad;
};

/* flow.flags: the loader allocated the record and linked it into the
 * table; the program frees it at flow end as it frees its own. */
#define FLOW_SEEDED	1

#define FLOWTAB_BUCKETS	16	/* packet-size histogram: 128-byte buckets */

#endif
