/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libarena_kfuncs.h - forced in front of every libarena BPF file by
 * mk/compat.mk (clang -include). libarena's headers declare the arena
 * kfuncs with __arena pointers, which conflict with the prototypes
 * bpftool's vmlinux.h writes; so its files are compiled with
 * BPF_NO_KFUNC_PROTOTYPES, and the other kfuncs they call without
 * declaring them are declared here, as 7.3's BTF has them.
 */
#ifndef AA_COMPAT_LIBARENA_KFUNCS_H
#define AA_COMPAT_LIBARENA_KFUNCS_H

#define BPF_NO_KFUNC_PROTOTYPES
#include <vmlinux.h>

extern void bpf_preempt_disable(void) __attribute__((weak)) __attribute__((section(".ksyms")));
extern void bpf_preempt_enable(void) __attribute__((weak)) __attribute__((section(".ksyms")));
extern int bpf_stream_vprintk(int stream_id, const char *fmt__str, const void *args,
			      __u32 len__sz) __attribute__((weak)) __attribute__((section(".ksyms")));
extern int bpf_stream_print_stack(int stream_id) __attribute__((weak))
	__attribute__((section(".ksyms")));

#endif
