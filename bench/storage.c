// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * storage.c - build/aa_bench_storage: the kernel's local-storage-create
 * benchmark in BPF terms. A workload creates tasks in batches and reaps
 * them; tp_btf programs on task creation and free (bench/bpf/storage.bpf.c)
 * give each task a 64-B and a 256-B context and take them back, in one of
 * four modes (storage.h): none (the programs only count), task (task
 * storage holds the contexts: the kernel's allocator), ptr (arena-alloc's
 * contexts, their addresses in task storage), hash (arena-alloc's
 * contexts in an arena hash by pid, no task storage).
 *
 * A cell is one (batch, mode): an object and heap (1 MiB) of its own,
 * attached (the heap first, then the programs) for the whole batch size,
 * every mode's at once, only the running one counting (the others see the
 * same tasks and return at their first test). One untimed warm-up run per
 * mode, then --runs timed runs of --tasks tasks each, interleaved (run r
 * of every mode, then r + 1), so that a drift of the machine reaches every
 * mode alike. A run clones `batch` children (CLONE_VM: processes that
 * share this one's memory, as the kernel bench's threads do, so that no
 * page table is copied), which exit at once, reaps them all with
 * waitpid(), and repeats; its rate is tasks over the time of the loop.
 * The tasks' frees come later (an RCU callback after the reap, partly
 * inside the loop's time): each run waits for every one of them after its
 * time, so that no run starts with another's tasks alive.
 *
 * Per cell: tasks created per second, mean and sample stdev over the runs;
 * allocations per task as the programs counted them (task storage
 * elements created + contexts from arena-alloc, over tasks seen); peak
 * live tasks (created, not yet freed); memory at that peak: for task
 * storage, the slab objects of its elements and of the per-task
 * bpf_local_storage (the kernel's elem_size and struct size, from its BTF,
 * rounded up to kmalloc's sizes; the maps' fdinfo memlock counts no
 * element), for the heap its peak bytes in use (the heap's view: what the
 * CPU caches hold counts as in use) and peak pages mapped; and every
 * failure (storage_get NULL, aa_calloc NULL, table full, lookup misses,
 * failed deletes and frees, contexts left in the heap, program runs the
 * kernel skipped for recursion, tasks not seen, frees that never came).
 *
 * Usage: aa_bench_storage [--batch 16,32,64] [--tasks 8192] [--runs 10]
 *                         [--modes none,task,ptr,hash] [--out FILE]
 *          measure on this kernel, print its tables, append its rows to FILE
 *        aa_bench_storage --table FILE
 *          print the rows of FILE (several kernels: make bench-storage)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"
#include "aa_shared.h"	/* before the skeleton: the library's globals */
#include "where.h"
#include "storage.h"
#include "storage.skel.h"

#define MAX_BATCH	256
#define MAX_BATCHES	8
#define STACK_SZ	(16 << 10)
#define DRAIN_MS	20000	/* frees wait for RCU grace periods: TCG is slow */

static const char *const mode_names[STORAGE_NMODES] = { "none", "task", "ptr", "hash" };

/* The failures a row counts, in TSV order. */
enum fail {
	F_CREATE, F_NULL, F_FULL, F_MISS, F_BUSY, F_DELETE, F_FREE, F_LEAKED, F_RECURSION,
	F_UNSEEN, F_UNDRAINED, NR_FAILS,
};
static const char *const fail_names[NR_FAILS] = {
	"storage_get(F_CREATE) NULL", "aa_calloc NULL", "table full", "lookup misses",
	"delete -EBUSY", "delete errors", "aa_free errors", "contexts left in the heap",
	"program runs skipped (recursion)", "tasks not seen", "frees not seen",
};

struct row {
	char kernel[sizeof(((struct utsname *)0)->release)], mode[16];
	unsigned int batch, runs;
	unsigned long long tasks;	/* per run */
	double mean, sd;		/* tasks per second over the runs */
	unsigned long long created, allocs, peak_live;
	unsigned long long kernel_b, heap_b, mapped_b;	/* at the peak */
	unsigned long long fails[NR_FAILS];
	char where[256];		/* where_str() of the run */
};

/* --- The workload ------------------------------------------------------- */

static char stacks[MAX_BATCH][STACK_SZ] __attribute__((aligned(64)));

static int child_main(void *arg)
{
	return 0;
}

/* tasks tasks, batch at a time: 0, or -errno (said). */
static int spawn_reap(unsigned long long tasks, unsigned int batch)
{
	pid_t pids[MAX_BATCH];
	unsigned int i, n;
	int err = 0;

	while (tasks && !err) {
		n = tasks < batch ? tasks : batch;
		for (i = 0; i < n; i++) {
			pids[i] = clone(child_main, stacks[i] + STACK_SZ, CLONE_VM | SIGCHLD, NULL);
			if (pids[i] < 0) {
				err = -errno;
				fprintf(stderr, "storage: clone: %s\n", strerror(errno));
				n = i;
				break;
			}
		}
		for (i = 0; i < n; i++)
			if (waitpid(pids[i], NULL, 0) < 0 && !err) {
				err = -errno;
				fprintf(stderr, "storage: waitpid: %s\n", strerror(errno));
			}
		tasks -= n;
	}
	return err;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Until every task seen created was seen freed, or DRAIN_MS pass. */
static void drain(volatile struct storage_out *o)
{
	int ms;

	for (ms = 0; ms < DRAIN_MS && o->freed != o->created; ms++)
		usleep(1000);
}

/* --- What the kernel's task storage holds -------------------------------- */

/* kmalloc's object size for size bytes (bpf_mem_alloc and kmalloc_nolock
 * serve from its caches). */
static unsigned long long slab_size(unsigned long long size)
{
	unsigned long long s = 8;

	if (size > 64 && size <= 96)
		return 96;
	if (size > 128 && size <= 192)
		return 192;
	while (s < size)
		s <<= 1;
	return s;
}

/* Byte offset of member name in struct type id of btf, or -ENOENT. */
static long member_offset(const struct btf *btf, __s32 id, const char *name)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m = btf_members(t);
	int i;

	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return btf_member_bit_offset(t, i) / 8;
	return -ENOENT;
}

/* The slab bytes per task of task storage with one element per value
 * size: each element is struct bpf_local_storage_elem up to sdata.data
 * plus the value (the kernel's elem_size), and the task's struct
 * bpf_local_storage comes with the first. 0 when the BTF lacks them. */
static unsigned long long storage_bytes_per_task(const unsigned int *values, int n)
{
	struct btf *btf = btf__load_vmlinux_btf();
	__s32 elem, data, ls;
	long off_sdata, off_data;
	unsigned long long sum = 0;
	int i;

	if (!btf)
		return 0;
	elem = btf__find_by_name_kind(btf, "bpf_local_storage_elem", BTF_KIND_STRUCT);
	data = btf__find_by_name_kind(btf, "bpf_local_storage_data", BTF_KIND_STRUCT);
	ls = btf__find_by_name_kind(btf, "bpf_local_storage", BTF_KIND_STRUCT);
	if (elem < 0 || data < 0 || ls < 0 ||
	    (off_sdata = member_offset(btf, elem, "sdata")) < 0 ||
	    (off_data = member_offset(btf, data, "data")) < 0) {
		btf__free(btf);
		return 0;
	}
	for (i = 0; i < n; i++)
		sum += slab_size(off_sdata + off_data + values[i]);
	sum += slab_size(btf__resolve_size(btf, ls));
	btf__free(btf);
	return sum;
}

/* --- Cells ---------------------------------------------------------------- */

/* One (batch, mode): its object and heap, loaded and attached for the
 * whole batch size, counting only while it is the active one. */
struct cell {
	enum storage_mode mode;
	struct storage_bpf *s;
	struct aa_heap *h;
	unsigned long long spawned;
	double sum, sq;		/* of the runs' rates */
};

static unsigned long long recursion_misses(const struct bpf_program *p)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_prog_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return 0;
	return info.recursion_misses;
}

static void cell_close(struct cell *c)
{
	aa_heap__destroy(c->h);
	storage_bpf__destroy(c->s);
	c->h = NULL;
	c->s = NULL;
}

/* Load, attach the heap, then the programs (off): 0 or -errno (said). */
static int cell_open(struct cell *c, enum storage_mode mode)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 << 20);
	int err;

	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->s = storage_bpf__open_and_load();
	if (!c->s) {
		err = -errno;
		fprintf(stderr, "storage: %s: load: %s\n", mode_names[mode], strerror(errno));
		return err;
	}
	c->h = aa_heap__attach(c->s->obj, &o);
	if (!c->h) {
		err = -errno;
		fprintf(stderr, "storage: %s: heap: %s\n", mode_names[mode], strerror(errno));
		cell_close(c);
		return err;
	}
	c->s->bss->cfg.mode = mode;
	c->s->bss->cfg.parent_tgid = 0;
	err = storage_bpf__attach(c->s);
	if (err) {
		fprintf(stderr, "storage: %s: attach: %s\n", mode_names[mode], strerror(-err));
		cell_close(c);
	}
	return err;
}

/* tasks tasks in batches with c the active cell, then every free seen;
 * timed: the run's rate into c's sums. 0 or -errno (said). */
static int cell_run(struct cell *c, unsigned int batch, unsigned long long tasks, bool timed)
{
	volatile struct storage_out *o = &c->s->bss->out;
	double t0;
	int err;

	c->s->bss->cfg.parent_tgid = getpid();
	t0 = now_s();
	err = spawn_reap(tasks, batch);
	t0 = tasks / (now_s() - t0);
	c->spawned += tasks;
	drain(o);
	c->s->bss->cfg.parent_tgid = 0;
	if (timed) {
		c->sum += t0;
		c->sq += t0 * t0;
	}
	return err;
}

/* c's row after its runs: 0 or -errno. */
static int cell_row(const struct cell *c, unsigned int runs, struct row *w)
{
	static const unsigned int task_values[] = { STORAGE_CTX_SMALL, STORAGE_CTX_LARGE };
	static const unsigned int ptr_values[] = { 8, 8 };
	const struct storage_out *o = &c->s->bss->out;
	unsigned long long per_task = 0;
	struct aa_stats st = {};
	int err;

	snprintf(w->mode, sizeof(w->mode), "%s", mode_names[c->mode]);
	w->runs = runs;
	w->mean = c->sum / runs;
	w->sd = runs > 1 ? sqrt(fmax(0, (c->sq - c->sum * c->sum / runs) / (runs - 1))) : 0;
	w->created = o->created;
	w->allocs = o->kernel_allocs + o->arena_allocs;
	w->peak_live = o->peak_live;
	if (c->mode == STORAGE_TASK)
		per_task = storage_bytes_per_task(task_values, 2);
	else if (c->mode == STORAGE_PTR)
		per_task = storage_bytes_per_task(ptr_values, 2);
	w->kernel_b = per_task * o->peak_live;
	err = aa_heap__stats(c->h, &st);
	if (err)
		return err;
	if (c->mode == STORAGE_PTR || c->mode == STORAGE_HASH) {
		w->heap_b = st.heap_peak_bytes;
		w->mapped_b = st.peak_pages_mapped * (__u64)AA_PAGE_SIZE;
	}
	w->fails[F_CREATE] = o->create_fails;
	w->fails[F_NULL] = o->alloc_nulls;
	w->fails[F_FULL] = o->table_full;
	w->fails[F_MISS] = o->lookup_misses;
	w->fails[F_BUSY] = o->delete_busy;
	w->fails[F_DELETE] = o->delete_fails;
	w->fails[F_FREE] = o->free_fails;
	w->fails[F_LEAKED] = st.live_allocs;
	w->fails[F_RECURSION] = recursion_misses(c->s->progs.storage_newtask) +
				recursion_misses(c->s->progs.storage_free);
	w->fails[F_UNSEEN] = c->spawned > o->created ? c->spawned - o->created : 0;
	w->fails[F_UNDRAINED] = o->created - o->freed;
	return 0;
}

/* Every mode of modes at one batch size, runs interleaved (run r of each
 * mode, then r + 1), so that a drift of the machine reaches every mode
 * alike; one untimed warm-up run of each first. Rows into rows[]: their
 * number, or -errno (said). */
static int measure_batch(int modes, unsigned int batch, unsigned long long tasks,
			 unsigned int runs, const char *kernel, struct row *rows)
{
	struct cell cells[STORAGE_NMODES];
	int n = 0, i, err = 0;
	unsigned int r;

	for (i = 0; i < STORAGE_NMODES && !err; i++)
		if (modes & (1 << i))
			err = cell_open(&cells[n++], i);
	if (err)
		n--;
	for (i = 0; i < n && !err; i++)
		err = cell_run(&cells[i], batch, 2 * batch, false);
	for (r = 0; r < runs && !err; r++)
		for (i = 0; i < n && !err; i++)
			err = cell_run(&cells[i], batch, tasks, true);
	for (i = 0; i < n; i++)
		storage_bpf__detach(cells[i].s);
	for (i = 0; i < n && !err; i++) {
		memset(&rows[i], 0, sizeof(rows[i]));
		snprintf(rows[i].kernel, sizeof(rows[i].kernel), "%s", kernel);
		snprintf(rows[i].where, sizeof(rows[i].where), "%.255s", where_str());
		rows[i].batch = batch;
		rows[i].tasks = tasks;
		err = cell_row(&cells[i], runs, &rows[i]);
	}
	for (i = 0; i < n; i++)
		cell_close(&cells[i]);
	return err ? err : n;
}

/* --- Tables -------------------------------------------------------------- */

static unsigned long long fails_of(const struct row *w)
{
	unsigned long long n = 0;
	int i;

	for (i = 0; i < NR_FAILS; i++)
		n += w->fails[i];
	return n;
}

static void print_header(void)
{
	printf("%-26s %5s %-5s %18s %7s %8s %6s %9s %9s %9s %6s\n", "kernel", "batch", "mode",
	       "tasks/s (mean±sd)", "vs none", "allocs/t", "peak", "kern KiB", "heap KiB",
	       "mapd KiB", "fails");
}

/* none: the row of mode none of the same kernel and batch, or NULL. */
static void print_row(const struct row *w, const struct row *none)
{
	char rate[48], rel[24] = "", kern[24] = "", heap[24] = "", mapd[24] = "";

	snprintf(rate, sizeof(rate), "%.0f ± %.0f", w->mean, w->sd);
	if (none && none->mean > 0)
		snprintf(rel, sizeof(rel), "%.3f", w->mean / none->mean);
	if (w->kernel_b)
		snprintf(kern, sizeof(kern), "%.1f", w->kernel_b / 1024.0);
	if (w->mapped_b) {
		snprintf(heap, sizeof(heap), "%.1f", w->heap_b / 1024.0);
		snprintf(mapd, sizeof(mapd), "%llu", w->mapped_b >> 10);
	}
	printf("%-26s %5u %-5s %18s %7s %8.2f %6llu %9s %9s %9s %6llu\n", w->kernel, w->batch,
	       w->mode, rate, rel, w->created ? (double)w->allocs / w->created : 0.0,
	       w->peak_live, kern, heap, mapd, fails_of(w));
}

/* Each failure kind of a row with any, on a line of its own. */
static void print_fails(const struct row *w)
{
	int i;

	if (!fails_of(w))
		return;
	printf("  FAILURES in %s batch %u %s:", w->kernel, w->batch, w->mode);
	for (i = 0; i < NR_FAILS; i++)
		if (w->fails[i])
			printf(" %s %llu;", fail_names[i], w->fails[i]);
	printf("\n");
}

static void print_legend(void)
{
	printf("  tasks/s: created per second, over %s; vs none: tasks/s over mode none's;\n"
	       "  allocs/t: storage elements + arena contexts per task seen; peak: live tasks;\n"
	       "  kern KiB: task storage's slab objects at the peak; heap KiB / mapd KiB: the\n"
	       "  heap's peak bytes in use / pages mapped (hash: + a %zu-KiB table in the arena)\n",
	       "the runs", sizeof(struct storage_slot) * STORAGE_SLOTS >> 10);
}

static int write_row(FILE *f, const struct row *w)
{
	int i;

	fprintf(f, "%s\t%u\t%s\t%u\t%llu\t%.1f\t%.1f\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu",
		w->kernel, w->batch, w->mode, w->runs, w->tasks, w->mean, w->sd, w->created,
		w->allocs, w->peak_live, w->kernel_b, w->heap_b, w->mapped_b);
	for (i = 0; i < NR_FAILS; i++)
		fprintf(f, "\t%llu", w->fails[i]);
	return fprintf(f, "\t%s\n", w->where) < 0 ? -EIO : 0;
}

static int read_row(const char *line, struct row *w)
{
	int n, i, at;

	memset(w, 0, sizeof(*w));
	if (sscanf(line, "%64[^\t]\t%u\t%15[^\t]\t%u\t%llu\t%lf\t%lf\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu%n",
		   w->kernel, &w->batch, w->mode, &w->runs, &w->tasks, &w->mean, &w->sd,
		   &w->created, &w->allocs, &w->peak_live, &w->kernel_b, &w->heap_b,
		   &w->mapped_b, &at) != 13)
		return -EINVAL;
	for (i = 0; i < NR_FAILS; i++) {
		if (sscanf(line + at, "\t%llu%n", &w->fails[i], &n) != 1)
			return -EINVAL;
		at += n;
	}
	if (sscanf(line + at, "\t%255[^\n]", w->where) != 1)
		return -EINVAL;
	return 0;
}

/* The rows, one block per kernel and batch, each next to its none row;
 * where each kernel's ran above its first block. */
static void print_rows(const struct row *rows, int n)
{
	const struct row *none;
	int i, j;

	for (i = 0; i < n; i++) {
		if (!i || strcmp(rows[i].where, rows[i - 1].where)) {
			printf("%swhere: %s\n", i ? "\n" : "", rows[i].where);
			if (strstr(rows[i].where, "TCG"))
				printf("caution (TCG): only ratios between BPF code paths carry over "
				       "to hardware, not those to the kernel's own code\n");
			print_header();
		} else if (rows[i].batch != rows[i - 1].batch) {
			printf("\n");
		}
		none = NULL;
		for (j = 0; j < n; j++)
			if (!strcmp(rows[j].mode, "none") && rows[j].batch == rows[i].batch &&
			    !strcmp(rows[j].kernel, rows[i].kernel))
				none = &rows[j];
		print_row(&rows[i], none);
	}
	for (i = 0; i < n; i++)
		print_fails(&rows[i]);
	print_legend();
}

static int print_table(const char *path)
{
	struct row *rows = NULL, *more;
	char line[2048];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f) {
		fprintf(stderr, "storage: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		more = realloc(rows, (n + 1) * sizeof(*rows));
		if (!more) {
			fprintf(stderr, "storage: out of memory\n");
			break;
		}
		rows = more;
		if (read_row(line, &rows[n])) {
			fprintf(stderr, "storage: %s: not a row: %s", path, line);
			break;
		}
		n++;
	}
	if (!feof(f))
		n = -1;
	fclose(f);
	if (n == 0)
		fprintf(stderr, "storage: %s has no rows\n", path);
	if (n > 0)
		print_rows(rows, n);
	free(rows);
	return n > 0 ? 0 : 1;
}

/* --- Options ------------------------------------------------------------- */

/* "16,32,64" into batches[]: their number, or -EINVAL (said). */
static int parse_batches(const char *s, unsigned int *batches)
{
	char *end;
	unsigned long v;
	int n = 0;

	while (*s) {
		v = strtoul(s, &end, 10);
		if (end == s || v < 1 || v > MAX_BATCH || n == MAX_BATCHES ||
		    (*end && *end != ',')) {
			fprintf(stderr, "storage: --batch: a list of at most %d sizes in 1 .. %d\n",
				MAX_BATCHES, MAX_BATCH);
			return -EINVAL;
		}
		batches[n++] = v;
		s = *end ? end + 1 : end;
	}
	return n ? n : -EINVAL;
}

/* "none,task" into a bit mask of modes, or -EINVAL (said). */
static int parse_modes(const char *s)
{
	char buf[64], *tok, *save;
	int mask = 0, m;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (m = 0; m < STORAGE_NMODES && strcmp(tok, mode_names[m]); m++)
			;
		if (m == STORAGE_NMODES) {
			fprintf(stderr, "storage: --modes: '%s' is not none, task, ptr or hash\n", tok);
			return -EINVAL;
		}
		mask |= 1 << m;
	}
	return mask ? mask : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "tasks", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'r' },
		{ "modes", required_argument, NULL, 'm' },
		{ "out", required_argument, NULL, 'o' },
		{ "table", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int batches[MAX_BATCHES] = { 16, 32, 64 }, runs = 10;
	struct row rows[MAX_BATCHES * STORAGE_NMODES];
	unsigned long long tasks = 8192;
	int nb = 3, modes = (1 << STORAGE_NMODES) - 1, c, b, m, n = 0, err = 0;
	const char *out_path = NULL;
	char probe[AA_PROBE_LINE_SZ];
	struct utsname u;
	FILE *out = NULL;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if ((nb = parse_batches(optarg, batches)) < 0)
				return 2;
			break;
		case 'n': tasks = strtoull(optarg, NULL, 0); break;
		case 'r': runs = strtoul(optarg, NULL, 0); break;
		case 'm':
			if ((modes = parse_modes(optarg)) < 0)
				return 2;
			break;
		case 'o': out_path = optarg; break;
		case 't': return print_table(optarg);
		default:
			fprintf(stderr, "usage: aa_bench_storage [--batch 16,32,64] [--tasks N] "
				"[--runs N] [--modes none,task,ptr,hash] [--out FILE] | --table FILE\n");
			return 2;
		}
	}
	if (!tasks || tasks > 1ULL << 24 || !runs || runs > 100) {
		fprintf(stderr, "storage: --tasks must be in 1 .. 2^24 and --runs in 1 .. 100\n");
		return 2;
	}
	if (aa_probe_arena(probe, sizeof(probe))) {
		fprintf(stderr, "storage: %s\n", probe);
		return 1;
	}
	if (out_path && !(out = fopen(out_path, "a"))) {
		fprintf(stderr, "storage: %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	uname(&u);
	printf("Task-local storage: a 64-B and a 256-B context per task, made at task_newtask,\n"
	       "given back at sched_process_free; %u runs of %llu tasks per batch size and mode\n",
	       runs, tasks);
	where_caption(stdout, "  ", true);
	for (b = 0; b < nb; b++) {
		m = measure_batch(modes, batches[b], tasks, runs, u.release, rows + n);
		if (m < 0) {
			err = m;
			fprintf(stderr, "storage: batch %u: %s\n", batches[b], strerror(-err));
			break;
		}
		for (c = n; out && c < n + m && !err; c++)
			err = write_row(out, &rows[c]);
		n += m;
		if (err)
			break;
	}
	if (out)
		fclose(out);
	if (n)
		print_rows(rows, n);
	return err || !n ? 1 : 0;
}
