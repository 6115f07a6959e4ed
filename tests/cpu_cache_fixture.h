/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cpu_cache_fixture.h - the heap of the CPU-cache tier's test files
 * (test_cpu_cache.c, test_reserve.c): test_cpu_cache's object loaded with
 * an arena of the given size and attached, destroyed after each test; and
 * pinning the test's thread to a CPU.
 */
#ifndef __AA_TESTS_CPU_CACHE_FIXTURE_H
#define __AA_TESTS_CPU_CACHE_FIXTURE_H

#include "common.h"

/* The class of the 64-B objects most tests use (aa_size_class(64)). */
#define C64	6
#include "test_cpu_cache.h"
#include "test_cpu_cache.skel.h"

#define MiB (1ULL << 20)

static struct test_cpu_cache *skel;
static struct aa_heap *h;

static inline void open_with(__u32 arena_pages, __u64 init_bytes, __u32 flags)
{
	t_need_arena();
	skel = test_cpu_cache__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.arena, arena_pages), 0);
	cr_assert_eq(test_cpu_cache__load(skel), 0, "load: %s", strerror(errno));
	AA_OPTS(aa_heap_opts, o, .init_bytes = init_bytes, .flags = flags);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h, "attach: %s", strerror(errno));
}

/* The suites' default: 128 MiB of arena, a 16-MiB heap, CPU caches. */
static inline void setup(void)
{
	open_with(T_PAGES(128 * MiB), 16 * MiB, 0);
}

static inline void teardown(void)
{
	aa_heap__destroy(h);
	test_cpu_cache__destroy(skel);
	h = NULL;
	skel = NULL;
}

static inline void pin(int cpu)
{
	cr_assert_eq(t_pin_cpu(cpu), 0, "pin to CPU %d", cpu);
}

#endif /* __AA_TESTS_CPU_CACHE_FIXTURE_H */
