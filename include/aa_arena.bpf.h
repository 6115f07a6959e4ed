/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * aa_arena.bpf.h - the arena map of a BPF object linked with arena-alloc:
 * AA_ARENA(pages) or AA_ARENA_FUNCS(map), and the page functions the
 * library gets and gives back pages through. Included by
 * arena_alloc.bpf.h (include that) and by the library's own files, which
 * need the page functions and not the API.
 */
#ifndef __AA_ARENA_BPF_H
#define __AA_ARENA_BPF_H

#include "aa_shared.h"

#ifdef __BPF__

#if !defined(__clang__) || __clang_major__ < 18
#error "arena_alloc.bpf.h needs clang 18 or later (BPF arena address spaces)"
#endif
#if defined(__BPF_CPU_VERSION__) && __BPF_CPU_VERSION__ < 3
#error "arena_alloc.bpf.h needs clang -mcpu=v3 or later (32-bit atomics)"
#endif

#ifndef __arena
#define __arena __attribute__((address_space(1)))
#endif

/*
 * The arena map is yours. Exactly one of the BPF files you link with the
 * library says
 *     AA_ARENA(pages);          a map named `arena` of that many pages, or
 *     AA_ARENA_FUNCS(my_map);   for a map you define yourself (any name,
 *                               size and attributes; BPF_MAP_TYPE_ARENA,
 *                               BPF_F_MMAPABLE),
 * which also defines the two global functions through which the library's
 * sleepable programs get and give back pages: the only code that names the
 * map, so libarena_alloc.bpf.o never does and your definition is free
 * (libbpf's linker needs every declaration of a map to match exactly). The
 * size can change before load: bpf_map__set_max_entries(). A program may
 * use one arena only: yours and the heap's are the same map.
 * A program that calls the allocator is tied to the map through it. One
 * that only reaches arena memory through pointers it got elsewhere (task
 * storage, another map) says AA_USE_ARENA(map) once in its body, or the
 * verifier refuses its first arena access ("addr_space_cast insn can only
 * be used in a program that has an associated arena").
 */
#define AA_USE_ARENA(map)	asm volatile("" :: "r"(&(map)))
#ifdef AA_ARENA_PAGES
#error "AA_ARENA_PAGES is gone: say AA_ARENA(pages) in one of your BPF files"
#endif

/* The page kfuncs (sleepable programs only) by their ___aa flavor: libbpf
 * resolves it to the kernel's name, and your own calls under the plain
 * names still link (bpftool <= 7.5 cannot link two objects that reference
 * one kfunc name). */
void __arena *bpf_arena_alloc_pages___aa(void *map, void __arena *addr, __u32 page_cnt,
					 int node_id, __u64 flags) __ksym __weak;
void bpf_arena_free_pages___aa(void *map, void __arena *ptr, __u32 page_cnt) __ksym __weak;

/* Defined by AA_ARENA_FUNCS(): pages at addr (0: anywhere), or 0; the
 * arena's user address and size in bytes (read from the kernel's map:
 * the heap that initialises itself on first use needs them). */
__u64 aa_arena_pages_alloc(__u64 addr, __u32 pages);
int aa_arena_pages_free(__u64 addr, __u32 pages);
__u64 aa_arena_user_base(void);
__u64 aa_arena_bytes(void);

/* The kernel's struct bpf_arena, the two fields read (CO-RE: the offsets
 * come from the running kernel's BTF). */
struct bpf_arena___aa {
	__u64 user_vm_start;
	__u64 user_vm_end;
} __attribute__((preserve_access_index));

#define AA_ARENA_FUNCS(map)						\
__u64 aa_arena_pages_alloc(__u64 addr, __u32 pages)			\
{									\
	return (__u64)bpf_arena_alloc_pages___aa(&(map),		\
			(void __arena *)addr, pages, -1, 0);		\
}									\
int aa_arena_pages_free(__u64 addr, __u32 pages)			\
{									\
	bpf_arena_free_pages___aa(&(map), (void __arena *)addr, pages);	\
	return 0;							\
}									\
__u64 aa_arena_user_base(void)						\
{									\
	return ((struct bpf_arena___aa *)&(map))->user_vm_start;	\
}									\
__u64 aa_arena_bytes(void)						\
{									\
	struct bpf_arena___aa *a = (struct bpf_arena___aa *)&(map);	\
									\
	return a->user_vm_end - a->user_vm_start;			\
}

#define AA_ARENA(pages)							\
struct {								\
	__uint(type, BPF_MAP_TYPE_ARENA);				\
	__uint(map_flags, BPF_F_MMAPABLE);				\
	__uint(max_entries, pages);					\
} arena SEC(".maps");							\
AA_ARENA_FUNCS(arena)

#endif /* __BPF__ */
#endif /* __AA_ARENA_BPF_H */
