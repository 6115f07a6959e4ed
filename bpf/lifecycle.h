/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lifecycle.h - what lifecycle.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by lifecycle.bpf.c and by those files only.
 */
#ifndef __AA_LIFECYCLE_H
#define __AA_LIFECYCLE_H

#include "internal.h"

int aa__arena_init(__u64 arena_base, __u64 arena_size, __u32 nr_cpus, __u32 flags,
		  __u64 grow_bytes);
int aa__arena_self_init(void);
int aa__arena_teardown(void);
int aa__arena_trim(__u64 keep_bytes);

#endif /* __AA_LIFECYCLE_H */
