// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * scx_tasks.c - loads scx_tasks.bpf.c (a sched_ext scheduler linked with
 * arena-alloc), sets up its heap, enables the scheduler, runs a fork/exit
 * workload of its own (short children that answer through a pipe), prints
 * the busiest live tasks straight from the arena mmap, disables the
 * scheduler and checks: it stopped because we asked, every context and
 * record it allocated was freed, the heap is as it was before, the checker
 * is clean and no error was counted. Exit 0 only then. It also prints what
 * the verifier spent on each program (processed instructions) and the
 * object's load time.
 *   scx_tasks [--cli PATH] [CHILDREN]
 *     CHILDREN    the workload's size (default 1000)
 *     --cli PATH  also run `PATH --pid <this process> stats` while the
 *                 scheduler is enabled (the arena-alloc CLI reads the heap
 *                 of a running program); it must succeed
 * On a kernel without sched_ext it says so and exits 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"
#include "aa_shared.h"	/* before the skeleton: the library's globals it shows */
#include "scx_tasks.h"
#include "scx_tasks.skel.h"

#define SCX_EXIT_UNREG	64	/* enum scx_exit_kind: unregistered by userspace */

/* children short processes, each writing one byte to a pipe and exiting;
 * two at a time. Returns how many answered. */
static int workload(int children)
{
	int fds[2], i, answered = 0;
	pid_t pid;
	char b;

	if (pipe(fds))
		return -errno;
	for (i = 0; i < children; i++) {
		pid = fork();
		if (pid < 0)
			break;
		if (!pid) {
			b = (char)i;
			_exit(write(fds[1], &b, 1) == 1 ? 0 : 1);
		}
		if (read(fds[0], &b, 1) == 1)
			answered++;
		waitpid(pid, NULL, 0);
	}
	close(fds[0]);
	close(fds[1]);
	return answered;
}

/* The busiest live tasks by runtime, read from the arena through the mmap. */
static void print_top(struct aa_heap *heap, const struct tasks *t)
{
	const struct task_ctx *top[10] = {};
	const struct task_ctx *c;
	int i, j, live = 0;

	for (i = 0; i < SCX_TASKS_SLOTS; i++) {
		if (!t->slot[i] || !(c = aa_heap__ptr(heap, t->slot[i])))
			continue;
		live++;
		for (j = 0; j < 10; j++) {
			if (!top[j] || c->runtime_ns > top[j]->runtime_ns) {
				memmove(&top[j + 1], &top[j], (9 - j) * sizeof(top[0]));
				top[j] = c;
				break;
			}
		}
	}
	printf("%d live tasks with a context; the busiest (from the arena mmap):\n", live);
	printf("%8s  %-16s %10s %10s %12s %8s\n", "pid", "comm", "enqueues", "runs",
	       "runtime ms", "last cpu");
	for (j = 0; j < 10 && top[j]; j++)
		printf("%8u  %-16.16s %10llu %10llu %12.3f %8u\n", top[j]->pid, top[j]->comm,
		       (unsigned long long)top[j]->enqueues, (unsigned long long)top[j]->runs,
		       top[j]->runtime_ns / 1e6, top[j]->last_cpu);
}

/* `cli --pid <us> stats`, its output on ours: its exit status. */
static int run_cli(const char *cli)
{
	char pid[16];
	pid_t c;
	int st;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fflush(stdout);
	c = fork();
	if (c < 0)
		return -1;
	if (!c) {
		execl(cli, cli, "--pid", pid, "stats", (char *)NULL);
		_exit(127);
	}
	if (waitpid(c, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* What the verifier processed for each loaded program (bpf_prog_info's
 * verified_insns), in all, and how long the load took. */
static void print_verifier(struct bpf_object *obj, __u64 load_ns)
{
	struct bpf_prog_info info;
	struct bpf_program *prog;
	__u32 len;
	__u64 total = 0;

	printf("scx_tasks: verifier: %-24s %10s\n", "program", "insns");
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__fd(prog) < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		printf("scx_tasks: verifier: %-24s %10u\n", bpf_program__name(prog),
		       info.verified_insns);
		total += info.verified_insns;
	}
	printf("scx_tasks: verifier: %-24s %10llu, load %.1f ms\n", "all",
	       (unsigned long long)total, load_ns / 1e6);
}

static int fail(const char *what)
{
	fprintf(stderr, "scx_tasks: FAILED: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	AA_OPTS(aa_heap_opts, opts, .init_bytes = 4 << 20);
	int children = 1000, answered, k, err = 1, cli_rc = 0;
	const char *cli = NULL;
	struct aa_stats before, after;
	__u64 t0;
	struct bpf_link *link = NULL;
	struct scx_tasks *skel;
	struct aa_heap *heap;
	struct utsname u;
	const struct tasks *t;

	if (argc > 2 && !strcmp(argv[1], "--cli")) {
		cli = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc > 1)
		children = atoi(argv[1]);
	if (children <= 0) {
		fprintf(stderr, "usage: scx_tasks [--cli PATH] [CHILDREN > 0]\n");
		return 2;
	}
	if (access("/sys/kernel/sched_ext", F_OK)) {
		uname(&u);
		printf("scx_tasks: skipped: this kernel (Linux %s) has no sched_ext\n", u.release);
		return 0;
	}
	skel = scx_tasks__open();
	if (!skel) {
		fprintf(stderr, "scx_tasks: open: %s\n", strerror(errno));
		return 1;
	}
	t0 = now_ns();
	if (scx_tasks__load(skel)) {
		fprintf(stderr, "scx_tasks: load: %s\n", strerror(errno));
		scx_tasks__destroy(skel);
		return 1;
	}
	print_verifier(skel->obj, now_ns() - t0);
	/* the heap first: init_task runs for every task when the scheduler
	 * is enabled */
	heap = aa_heap__attach(skel->obj, &opts);
	if (!heap) {
		fprintf(stderr, "scx_tasks: aa_heap__attach: %s\n", strerror(errno));
		goto out;
	}
	t = &skel->arena->tasks;
	if (aa_heap__stats(heap, &before))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.scx_tasks_ops);
	if (!link) {
		fprintf(stderr, "scx_tasks: attach: %s\n", strerror(errno));
		goto out;
	}
	printf("scx_tasks: enabled: %llu tasks got a context\n",
	       (unsigned long long)t->ctx_allocs);
	answered = workload(children);
	print_top(heap, t);
	if (cli)
		cli_rc = run_cli(cli);
	bpf_link__destroy(link);
	link = NULL;

	printf("scx_tasks: disabled (%s); %d of %d children answered; contexts %llu allocated, "
	       "%llu freed, %llu NULL, %llu not in the table; records %llu allocated, %llu "
	       "freed, %llu NULL\n", skel->bss->exit_reason, answered, children,
	       (unsigned long long)t->ctx_allocs, (unsigned long long)t->ctx_frees,
	       (unsigned long long)t->ctx_nulls, (unsigned long long)t->untabled,
	       (unsigned long long)t->rec_allocs, (unsigned long long)t->rec_frees,
	       (unsigned long long)t->rec_nulls);
	if (aa_heap__stats(heap, &after))
		goto out;
	if (skel->bss->exit_kind != SCX_EXIT_UNREG) {
		fprintf(stderr, "scx_tasks: exit kind %d (code %lld): %s\n", skel->bss->exit_kind,
			(long long)skel->bss->exit_code, skel->bss->exit_reason);
		err = fail("the scheduler stopped on an error");
	} else if (cli_rc) {
		err = fail("arena-alloc --pid ... stats failed against the running scheduler");
	} else if (answered != children) {
		err = fail("children did not all answer");
	} else if (t->ctx_allocs < (unsigned long long)children || t->ctx_allocs != t->ctx_frees) {
		err = fail("contexts allocated and freed do not match");
	} else if (t->rec_allocs != t->rec_frees) {
		err = fail("enqueue records allocated and freed do not match");
	} else if (after.live_allocs != before.live_allocs) {
		err = fail("live allocations are not back to where they were");
	} else if (aa_heap__check(heap)) {
		err = fail("the heap checker found a problem");
	} else {
		for (k = 0; k < AA_NR_ERRORS && after.err[k] == before.err[k]; k++)
			;
		err = k < AA_NR_ERRORS ? fail("an allocator error was counted") : 0;
	}
	if (!err)
		printf("scx_tasks: every context and record freed, heap check clean, no error\n");
out:
	bpf_link__destroy(link);
	aa_heap__destroy(heap);
	scx_tasks__destroy(skel);
	return err;
}
