/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compat/bpf_arena_alloc.h - the kernel selftests' bpf_alloc() and
 * bpf_free() (tools/testing/selftests/bpf/bpf_arena_alloc.h), served by
 * arena-alloc.
 *
 * Put this directory first on the BPF include path and link the object
 * with libarena_alloc.bpf.o (bpftool gen object): code written for the
 * kernel's header builds as it is. As with that header:
 *  - the arena map is named `arena` and declared before the include;
 *  - bpf_alloc() may call the arena page kfuncs: sleepable programs on
 *    Linux < 7.0, any program since (aa_calloc_grow_u64());
 *  - bpf_arena_common.h comes with it (__arena, cast_kern(), cast_user(),
 *    NUMA_NO_NODE, the page kfuncs), from the include path;
 *  - sizes are rounded up to 8 bytes, and one of PAGE_SIZE - 8 bytes or
 *    more gets NULL; memory comes zeroed (the kernel's page-frag
 *    allocator hands out bytes of fresh pages only).
 * What differs (docs/EMBEDDING.md, "Compat front ends"): the first call
 * initialises the heap (no loader change; aa_heap__attach() still works
 * and sets tunables), memory is reused as soon as it is freed (the
 * kernel's returns a page only when all of its objects are freed), blocks
 * are 8-byte aligned as its are, and 16-byte aligned where the size is a
 * multiple of 16 (the alignment rule, aa_shared.h), and bpf_free() of a
 * pointer that is not an allocation changes nothing and is counted (its
 * corrupts a page's count). The include defines AA_ARENA_FUNCS(arena): one file per linked
 * object includes it, the others define BPF_ARENA_ALLOC_NO_FUNCS first.
 */
#pragma once
#include <bpf_arena_common.h>
#include "../arena_alloc.bpf.h"

#ifndef __round_mask
#define __round_mask(x, y) ((__typeof__(x))((y)-1))
#endif
#ifndef round_up
#define round_up(x, y) ((((x)-1) | __round_mask(x, y))+1)
#endif

#ifdef __BPF__
#ifndef BPF_ARENA_ALLOC_NO_FUNCS
AA_ARENA_FUNCS(arena)
#endif

static inline void __arena *bpf_alloc(unsigned int size)
{
	if (size >= PAGE_SIZE - 8 || round_up(size, 8) >= PAGE_SIZE - 8)
		return NULL;
	return (void __arena *)aa_calloc_grow_u64(1, size ? round_up(size, 8) : 8);
}

static inline void bpf_free(void __arena *addr)
{
	aa_free(addr);
}
#else
static inline void __arena *bpf_alloc(unsigned int size) { return NULL; }
static inline void bpf_free(void __arena *addr) {}
#endif
