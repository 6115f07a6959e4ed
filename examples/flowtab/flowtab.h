/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* flowtab.h - the records flowtab.bpf.c keeps in the arena, shared with the
 * loader (flowtab.c), which reads them straight from the mmapped arena. */
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
};

#define FLOWTAB_BUCKETS	16	/* packet-size histogram: 128-byte buckets */

#endif
