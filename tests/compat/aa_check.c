// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * aa_check.c - the heap check of `make compat-test COMPAT_ALLOC=aa`,
 * linked into the runners (tests/compat/runner.c calls it while the
 * peer's skeleton is alive: when the test destroys it, and between
 * subtests). The peers' loaders never call aa_heap__attach(): the heap is
 * found in the skeleton's arena map (aa_heap__open_map_id()), and then
 *   nr_allocs - nr_frees == live_allocs    (the stats balance)
 *   err[] all zero                          (no error counted), but
 *     err[NOMEM] where the arena was full: the peer's test fills it
 *     (arena_htab inserts 100,000 elements in 100 pages, and the
 *     peers' own allocators fail as many), and arena-alloc found no page
 *     left to map (stats.self_grow_fails > 0)
 *   aa_heap__check() == 0                   (every invariant holds)
 * A skeleton destroyed without a heap ever found in its arena was not
 * served by arena-alloc: a failure. Between subtests a missing heap is
 * only reported (libarena's buddy tests allocate through libarena's buddy,
 * not arena_malloc).
 *
 * AA_COMPAT_NO_CHECK=1 in the environment turns the check off: the timed
 * rounds of `make compat-bench` (a fork write-protects the parent's
 * memory, and its next writes fault: a cost the peer's side would not
 * pay).
 *
 * The check runs in a forked child: the kernel maps an arena only at its
 * user_vm_start, where the skeleton has already mapped it in this process,
 * so aa_heap__open_map_id() could not map it here ("Bad address"). The
 * child drops its copy of the skeleton's mapping first; the parent's
 * stays. Called between tests, when no worker thread runs.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"

bool aa_compat_check(struct bpf_object *obj, const char *where, bool final);

enum { CHECK_OK, CHECK_FAILED, CHECK_NO_HEAP };

static struct bpf_object *seen_obj;	/* the last object a heap was found in */

/* Child side: the heap of arena map id, checked; an enum value. */
static int check_heap(__u32 id, const char *where)
{
	__u64 errs = 0;
	struct aa_stats st;
	struct aa_heap *h;
	int err, chk;
	bool ok;
	__u32 i;

	h = aa_heap__open_map_id(id);
	if (!h) {
		printf("aa:----:%s no arena-alloc heap in arena map %u (%d)\n", where, id, -errno);
		return CHECK_NO_HEAP;
	}
	err = aa_heap__stats(h, &st);
	chk = aa_heap__check(h);
	aa_heap__destroy(h);
	if (err) {
		printf("aa:FAIL:%s aa_heap__stats: %d\n", where, err);
		return CHECK_FAILED;
	}
	for (i = 0; i < AA_NR_ERRORS; i++)
		if (i != AA_ERR_NOMEM || !st.self_grow_fails)
			errs += st.err[i];
	ok = st.nr_allocs - st.nr_frees == st.live_allocs && !errs && !chk;
	printf("aa:%s:%s heap allocs %llu frees %llu live %llu (%s), errors %llu, "
	       "aa_heap__check %d\n", ok ? "PASS" : "FAIL", where,
	       (unsigned long long)st.nr_allocs, (unsigned long long)st.nr_frees,
	       (unsigned long long)st.live_allocs,
	       st.nr_allocs - st.nr_frees == st.live_allocs ? "balanced" : "UNBALANCED",
	       (unsigned long long)errs, chk);
	for (i = 0; i < AA_NR_ERRORS; i++)
		if (st.err[i] && (i != AA_ERR_NOMEM || !st.self_grow_fails))
			printf("aa:FAIL:%s   %s: %llu\n", where, aa_error_str(i),
			       (unsigned long long)st.err[i]);
	if (st.err[AA_ERR_NOMEM] && st.self_grow_fails)
		printf("aa:----:%s   %s: %llu, the arena full (no page left to map: %llu times)\n",
		       where, aa_error_str(AA_ERR_NOMEM), (unsigned long long)st.err[AA_ERR_NOMEM],
		       (unsigned long long)st.self_grow_fails);
	return ok ? CHECK_OK : CHECK_FAILED;
}

bool aa_compat_check(struct bpf_object *obj, const char *where, bool final)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), id = 0;
	struct bpf_map *map, *arena = NULL;
	void *area = NULL;
	size_t sz = 0;
	int status, ret;
	bool found;
	pid_t pid;

	if (getenv("AA_COMPAT_NO_CHECK"))
		return true;
	bpf_object__for_each_map(map, obj)
		if (bpf_map__type(map) == BPF_MAP_TYPE_ARENA)
			arena = map;
	if (arena && !bpf_map_get_info_by_fd(bpf_map__fd(arena), &info, &len))
		id = info.id;
	if (!id) {
		printf("aa:FAIL:%s the object has no arena map\n", where);
		return false;
	}
	area = bpf_map__initial_value(arena, &sz);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		printf("aa:FAIL:%s fork: %s\n", where, strerror(errno));
		return false;
	}
	if (!pid) {
		if (area && sz)
			munmap(area, sz);
		ret = check_heap(id, where);
		fflush(stdout);
		_exit(ret);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		printf("aa:FAIL:%s the check's child process died\n", where);
		return false;
	}
	ret = WEXITSTATUS(status);
	found = seen_obj == obj;
	seen_obj = final ? NULL : ret != CHECK_NO_HEAP ? obj : seen_obj;
	if (ret != CHECK_NO_HEAP)
		return ret == CHECK_OK;
	if (!final || found)
		return true;
	printf("aa:FAIL:%s nothing was allocated through arena-alloc in this object\n", where);
	return false;
}
