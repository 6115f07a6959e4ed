// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* arena_alloc.bpf.h after just vmlinux.h and <bpf/bpf_helpers.h>, with
 * -Wall -Wextra -Werror (make header-check, mk/test.mk). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(1 << 12);

SEC("tc")
int prog(struct __sk_buff *skb)
{
	__u64 __arena *p = aa_malloc(skb->len & 255);
	__u64 __arena *q = aa_calloc(4, 16);

	if (p)
		*p = skb->len;
	aa_free(p);
	aa_free(q);
	return 0;
}
