// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena_alloc.bpf.c - the library as one translation unit.
 *
 * The tiers stay in their own files but are compiled together: bpftool
 * <= 7.5 (libbpf < 1.6) cannot link two objects that both reference the
 * same kfunc ("failed to resolve size of underlying type"), and every tier
 * loops with aa_for(). Lower tiers come first, in the one order of the
 * design (docs/DESIGN.md, "Tiers and files"): each file calls only what
 * the files before it declare in their headers (bpf/<file>.h), and make
 * layer-check proves it. Embedders: docs/EMBEDDING.md.
 */
#include "arena.bpf.c"
#include "buddy.bpf.c"
#include "central.bpf.c"
#include "buddy_chunks.bpf.c"
#include "grow.bpf.c"
#include "self_grow.bpf.c"
#include "lookup.bpf.c"
#include "heap.bpf.c"
#include "transfer_cache.bpf.c"
#include "cpu_cache.bpf.c"
#include "user_cache.bpf.c"
#include "check.bpf.c"
#include "debug.bpf.c"
#include "alloc.bpf.c"
#include "defer.bpf.c"
#include "lifecycle.bpf.c"
#include "api.bpf.c"
#include "entry.bpf.c"
