// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_struct_ops.bpf.c - an object with a struct_ops map (a TCP congestion
 * control, present in every kernel's BTF, standing in for a sched_ext
 * scheduler) linked with the library, whose callbacks keep a per-socket
 * context in the arena. Built and opened, not loaded (tests/test_embed.c):
 * with bpftool 7.5 and libbpf < 1.5 its skeleton did not compile ("'struct
 * bpf_map_skeleton' has no member named 'link'") until the build dropped
 * that line (SKEL_FIXUP in the Makefile).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

AA_ARENA(1 << 10);

struct so_ctx {
	__u64 acks;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} so_ctx_of SEC(".maps");

SEC("struct_ops")
void BPF_PROG(so_init, struct sock *sk)
{
	__u64 *slot = bpf_sk_storage_get(&so_ctx_of, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);

	if (slot && !*slot)
		*slot = (__u64)aa_calloc(1, sizeof(struct so_ctx));
}

SEC("struct_ops")
void BPF_PROG(so_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	__u64 *slot = bpf_sk_storage_get(&so_ctx_of, sk, NULL, 0);
	struct so_ctx __arena *c;

	AA_USE_ARENA(arena);
	if (!slot || !*slot)
		return;
	c = (struct so_ctx __arena *)*slot;
	c->acks += acked;
}

SEC("struct_ops")
void BPF_PROG(so_release, struct sock *sk)
{
	__u64 *slot = bpf_sk_storage_get(&so_ctx_of, sk, NULL, 0);

	if (slot && *slot) {
		aa_free((void __arena *)*slot);
		*slot = 0;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(so_ssthresh, struct sock *sk)
{
	return 2;
}

SEC("struct_ops")
__u32 BPF_PROG(so_undo_cwnd, struct sock *sk)
{
	return 2;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops aa_test_cc = {
	.init = (void *)so_init,
	.release = (void *)so_release,
	.ssthresh = (void *)so_ssthresh,
	.cong_avoid = (void *)so_avoid,
	.undo_cwnd = (void *)so_undo_cwnd,
	.name = "aa_test_cc",
};
