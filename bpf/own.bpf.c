// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * own.bpf.c - what the library's own object (the one aa_heap__open()
 * loads) adds to libarena_alloc.bpf.o, which leaves both to its embedder:
 * the license section and the arena map (aa_heap__open() sizes it before
 * load, aa_heap_opts.arena_pages).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arena_alloc.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

AA_ARENA(AA_ARENA_PAGES_DEFAULT);
