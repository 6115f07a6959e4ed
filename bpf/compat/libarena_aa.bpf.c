// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libarena_aa.bpf.c - libarena's allocator API (arena_malloc(),
 * arena_free(), libarena/common.h), served by arena-alloc.
 *
 * libarena defines both __weak (src/common.bpf.c, over its buddy); these
 * are strong, so a libarena user who links this object in front of
 * libarena's (bpftool gen object libarena_aa.bpf.o <libarena's objects>
 * libarena_alloc.bpf.o) is served by arena-alloc with no source change.
 * Compiled against libarena's own headers (its include/ first on the
 * path): its `arena` map declaration and its __arena, whose BTF type tag
 * the linker needs on both sides of every call.
 * libarena's other calls stay its own: its buddy (arena_buddy_reset,
 * arena_buddy_destroy, the buddy tests, libarena's control), its page
 * reservation (arena_alloc_reserve), arena_get_info.
 * Semantics: arena_malloc(size) is aa_malloc_grow_u64() (aligned by the
 * alignment rule of aa_shared.h: 8 bytes, 16 where size is a multiple of
 * 16; not zeroed, as libarena's buddy; NULL on failure, counted);
 * it may map pages, as libarena's may: Linux >= 7.0 for non-sleepable
 * programs. arena_free(NULL) does nothing; a pointer that is not an
 * allocation is refused and counted (aa_stats.err[]) where libarena's
 * buddy would corrupt its lists.
 */
#include <libarena/common.h>
#include "arena_alloc.bpf.h"

AA_ARENA_FUNCS(arena)

void __arena *arena_malloc(size_t size)
{
	return (void __arena *)aa_malloc_grow_u64(size);
}

void arena_free(void __arena *ptr)
{
	aa_free_u64((__u64)ptr);
}

char _license[] SEC("license") = "GPL";
