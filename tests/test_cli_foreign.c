// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cli_foreign.c - the arena-alloc CLI on another program's heap:
 * test_embed (an object that links the library) loaded by this process,
 * found by its pinned arena map, a program id and this pid; arenas it
 * cannot read, each refused with its cause; an arena whose address is
 * taken in the CLI's own layout.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli_run.h"
#include "spawn.h"
#include "test_embed.skel.h"

TestSuite(cli_foreign, .init = cli_setup, .fini = cli_teardown);

/* skel's arena pinned at <pin>/flows_arena (cli_teardown() unlinks it),
 * that path into path. */
static void pin_flows_arena(struct test_embed *skel, char *path, size_t sz)
{
	cr_assert_eq(mkdir(pin, 0700), 0);
	snprintf(path, sz, "%s/flows_arena", pin);
	cr_assert_eq(bpf_map__pin(skel->maps.flows_arena, path), 0);
}

/* Arenas the CLI cannot read, each refused with its cause: one no
 * program uses, an embedder's that was never initialised, a root of
 * another layout version, a root whose magic is gone; the same heap read
 * fine once the root is put back. */
Test(cli_foreign, refuses_arenas_without_a_readable_root)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 << 20);
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	char path[128], args[192], msg[128];
	struct test_embed *skel;
	struct aa_root *root;
	struct aa_heap *h;
	__u64 magic;
	int fd;

	cr_assert_eq(mkdir(pin, 0700), 0);
	snprintf(path, sizeof(path), "%s/flows_arena", pin);
	snprintf(args, sizeof(args), "--map %s stats", path);
	/* a bare arena map: no program, no allocator */
	fd = bpf_map_create(BPF_MAP_TYPE_ARENA, "bare_arena", 0, 0, 16, &mo);
	cr_assert_geq(fd, 0, "arena map: %s", strerror(errno));
	cr_assert_eq(bpf_obj_pin(fd, path), 0);
	close(fd);
	bad(1, "no arena-alloc aa_fast map next to the arena", args);
	unlink(path);

	/* an embedder's object, loaded, its heap never initialised */
	skel = test_embed__open_and_load();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__pin(skel->maps.flows_arena, path), 0);
	bad(1, "the heap was never initialised", args);

	/* initialised; then its root as another layout version would have it */
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	cr_assert_eq(run(NULL, 0, false, "%s", args), 0, "a good heap refused");
	root = (struct aa_root *)aa_heap__root(h);
	root->version = AA_LAYOUT_VERSION - 1;
	snprintf(msg, sizeof(msg), "layout v%u found", AA_LAYOUT_VERSION - 1);
	bad(1, msg, args);
	snprintf(msg, sizeof(msg), "this arena-alloc reads v%u", AA_LAYOUT_VERSION);
	bad(1, msg, args);
	root->version = AA_LAYOUT_VERSION;
	magic = root->magic;
	root->magic = 0;
	bad(1, "no arena-alloc heap root at", args);
	root->magic = magic;
	cr_assert_eq(run(NULL, 0, false, "%s", args), 0, "the restored heap refused");
	unlink(path);
	aa_heap__destroy(h);
	test_embed__destroy(skel);
}

/* The CLI maps another process's arena at that process's address. Where
 * its own layout holds something there, it runs itself again (a new
 * layout each time) and, after its last try, says what to do. Without
 * randomization every try lays the CLI out alike: an arena over the
 * address where every dynamic program then maps its loader is taken in
 * every try. */
Test(cli_foreign, a_taken_arena_address_is_tried_again_then_explained)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 << 20);
	char self[PATH_MAX], cmd[2 * PATH_MAX + 256], out[4096], path[128], args[192], *p;
	const __u64 span = 16 << 20;
	struct test_embed *skel;
	struct aa_heap *h;
	__u64 loader, base;
	ssize_t n;
	void *m;
	int st, lines = 0;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert_gt(n, 0);
	self[n] = 0;
	/* env -i: a clean start, not a Criterion worker (its variables) */
	snprintf(cmd, sizeof(cmd), "env -i AA_TESTS_PRINT_LOADER=1 %s", self);
	st = t_spawn(cmd, T_NO_ASLR, 0, out, sizeof(out));
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "status %d: %s", st, out);
	loader = strtoull(out, NULL, 16);
	cr_assert_gt(loader, 0, "no loader address: %s", out);
	base = loader & ~(span - 1);	/* holds the loader's first page */
	/* libbpf maps an arena with a fixed address over whatever is there:
	 * that range must be free in this process */
	m = mmap((void *)base, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		 -1, 0);
	if (m == MAP_FAILED)
		cr_skip_test("0x%llx + 16 MiB is taken in this process too", (unsigned long long)base);
	munmap(m, span);

	skel = test_embed__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_map__set_map_extra(skel->maps.flows_arena, base), 0);
	cr_assert_eq(bpf_map__set_max_entries(skel->maps.flows_arena, span / getpagesize()), 0);
	cr_assert_eq(test_embed__load(skel), 0);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	cr_assert_geq((__u64)(unsigned long)aa_heap__root(h), base, "the arena is not at its address");
	cr_assert_lt((__u64)(unsigned long)aa_heap__root(h), base + span);
	pin_flows_arena(skel, path, sizeof(path));
	snprintf(args, sizeof(args), "--map %s stats", path);
	cr_assert_eq(run(NULL, 0, false, "%s", args), 0, "a free address refused");

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", cli, args);
	st = t_spawn(cmd, T_NO_ASLR, 0, out, sizeof(out));
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st, out);
	cr_assert(strstr(out, "taken here in each of 8 tries"), "%s", out);
	cr_assert(strstr(out, "bpf_map__set_map_extra()"), "%s", out);
	for (p = out; (p = strstr(p, "cannot map the arena at")); p++)
		lines++;
	cr_assert_eq(lines, 1, "the last try's reason, once: %s", out);
	cr_assert(strstr(out, "this process maps something else there"), "%s", out);
	unlink(path);
	aa_heap__destroy(h);
	test_embed__destroy(skel);
}

/* An embedder that did not load one of the library's syscall programs:
 * what needs it names it; the rest works. */
Test(cli_foreign, a_missing_program_is_named)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 << 20);
	char path[128], args[192];
	struct test_embed *skel;
	struct aa_heap *h;

	skel = test_embed__open();
	cr_assert_not_null(skel);
	cr_assert_eq(bpf_program__set_autoload(skel->progs.aa__trim, false), 0);
	cr_assert_eq(test_embed__load(skel), 0);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	pin_flows_arena(skel, path, sizeof(path));
	snprintf(args, sizeof(args), "--map %s trim", path);
	bad(1, "program aa__trim is missing from the BPF object", args);
	snprintf(args, sizeof(args), "--map %s check", path);
	cr_assert_eq(run(NULL, 0, false, "%s", args), 0, "check needs no aa__trim");
	unlink(path);
	aa_heap__destroy(h);
	test_embed__destroy(skel);
}

/* Another program's heap: this test process loads test_embed (an object
 * that links the library), allocates, and the CLI finds that heap by its
 * pinned arena map, by a program id and by this pid. */
Test(cli_foreign, finds_an_embedders_heap_by_map_prog_id_and_pid)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char path[128], how[3][160];
	struct test_embed *skel;
	struct aa_heap *h;
	__u64 objs[7];
	json_t *j;
	int i;

	skel = test_embed__open_and_load();
	cr_assert_not_null(skel);
	h = aa_heap__attach(skel->obj, &o);
	cr_assert_not_null(h);
	for (i = 0; i < 7; i++)
		cr_assert_neq(objs[i] = aa_heap__malloc(h, 200), 0);
	pin_flows_arena(skel, path, sizeof(path));
	cr_assert_eq(bpf_prog_get_info_by_fd(bpf_program__fd(skel->progs.embed_ops), &info, &len), 0);
	snprintf(how[0], sizeof(how[0]), "--map %s", path);
	snprintf(how[1], sizeof(how[1]), "--prog-id %u", info.id);
	snprintf(how[2], sizeof(how[2]), "--pid %d", getpid());
	for (i = 0; i < 3; i++) {
		char what[512], out[4096];
		json_t *heap;

		snprintf(what, sizeof(what), "%s stats", how[i]);
		j = run_json(what);
		heap = json_object_get(j, "heap");
		cr_assert_eq(jint(j, "arena_bytes"), 16 << 20, "%s: not flows_arena", how[i]);
		cr_assert_eq(jint(heap, "live_allocs"), 7, "%s: the embedder's 7 allocations",
			     how[i]);
		json_decref(j);
		cr_assert_eq(run(out, sizeof(out), true, "%s check", how[i]), 0, "%s: %s", how[i], out);
		cr_assert(strstr(out, "check: ok"), "%s: %s", how[i], out);
	}
	{	/* a process without an arena, and none at all */
		char args[64];
		pid_t child = fork();

		if (!child) {	/* exec: libbpf's fds are close-on-exec */
			execlp("sleep", "sleep", "30", (char *)NULL);
			_exit(127);
		}
		/* until it has exec'ed, it holds our fds (and our arena) */
		snprintf(args, sizeof(args), "/proc/%d/comm", child);
		for (i = 0; i < 200; i++) {
			char comm[32] = "";
			FILE *f = fopen(args, "r");

			if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, "sleep", 5)) {
				fclose(f);
				break;
			}
			if (f)
				fclose(f);
			usleep(10000);
		}
		snprintf(args, sizeof(args), "--pid %d stats", child);
		bad(1, "holds no arena map", args);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		bad(1, "No such file", "--pid 2147483647 stats");
	}
	unlink(path);
	rmdir(pin);
	aa_heap__destroy(h);
	test_embed__destroy(skel);
}

