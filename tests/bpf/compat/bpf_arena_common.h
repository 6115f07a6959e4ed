/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A stand-in for the kernel selftests' bpf_arena_common.h, for
 * tests/bpf/test_compat.bpf.c: the names that include/compat/
 * bpf_arena_alloc.h and a program written for the kernel's
 * bpf_arena_alloc.h use (the peers' own header is built only by
 * `make compat-test`, from Debian's linux-source packages).
 */
#pragma once

#ifndef NUMA_NO_NODE
#define NUMA_NO_NODE	(-1)
#endif

#ifdef __BPF__
#ifndef PAGE_SIZE
#define PAGE_SIZE	__PAGE_SIZE
#endif
#define __arena		__attribute__((address_space(1)))
#define cast_kern(ptr)	/* nop: clang emits the casts */
#define cast_user(ptr)

void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, __u32 page_cnt,
				    int node_id, __u64 flags) __ksym __weak;
void bpf_arena_free_pages(void *map, void __arena *ptr, __u32 page_cnt) __ksym __weak;
#else
#define __arena
#endif
