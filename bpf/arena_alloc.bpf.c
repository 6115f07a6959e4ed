// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena_alloc.bpf.c - the library as one translation unit.
 *
 * The tiers stay in their own files but are compiled together: bpftool
 * <= 7.5 (libbpf < 1.6) cannot link two objects that both reference the
 * same kfunc ("failed to resolve size of underlying type"), and every tier
 * loops with aa_for(). Lower tiers come first: each uses the static
 * helpers of the ones below. Embedders: docs/EMBEDDING.md.
 */
#include "buddy.bpf.c"
#include "central.bpf.c"
#include "heap.bpf.c"
#include "buddy_chunks.bpf.c"
#include "check.bpf.c"
#include "transfer_cache.bpf.c"
#include "cpu_cache.bpf.c"
#include "debug.bpf.c"
#include "alloc.bpf.c"
#include "defer.bpf.c"
#include "arena.bpf.c"
#include "grow.bpf.c"
#include "self_grow.bpf.c"
#include "user_cache.bpf.c"
#include "entry.bpf.c"
