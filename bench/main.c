// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - build/aa_bench: arena-alloc's benchmarks, all in one run.
 *
 *   1. allocator latency (malloc-free, malloc-xfree): caches off
 *      ("before"), caches on through the global functions ("call") and
 *      through the inline API ("after", what aa_malloc() gives), with the
 *      speedup;
 *      1.3: the inline API on heaps in debug mode (AA_F_DEBUG, quarantine
 *      0 and the default), with their ratios over "after";
 *   2. the same harness with the kernel's allocator (bpf_obj_new/drop);
 *   3. the floor: a per-CPU LIFO of preallocated arena objects;
 *   4. htab-mem style: a hash table in the arena with arena-alloc elements
 *      against BPF_MAP_TYPE_HASH, preallocated and BPF_F_NO_PREALLOC;
 *   5. the speed targets, met or missed, with the ratio: the global
 *      functions against the one-call floor, the inline API against the
 *      inline floor and against bpf_obj_new/drop, scaling over producers.
 *
 * Producers are threads pinned to CPUs 0 .. P-1, each running a
 * SEC("syscall") program (bench/bpf/bench.bpf.c) again and again; the
 * programs time whole phases with bpf_ktime_get_ns() and return sums.
 * Every round also times one empty phase: the timer's own cost, measured
 * in the same run, comes off each phase (--raw keeps it). A latency cell
 * (implementation x variant x allocs x producers) is measured in --passes
 * slices of a warm-up and cell_ms / passes of runs; within a pass the
 * implementations of one (variant, allocs, producers) run back to back, so
 * a shared machine's slow drifts hit every column alike. A cell's latency
 * is the lowest over its passes of the median over the pass's runs of the
 * run's mean ns per operation (the JSON also has the pooled mean). Each
 * pass loads the programs at another code offset (code_layout() below;
 * --one-layout keeps one). A copy of the object is loaded per heap: one
 * with per-CPU caches ("after"), one with AA_F_NO_CACHES ("before"), one
 * with AA_F_DEFER (htab), and two with AA_F_DEBUG (table 1.3).
 *
 * Usage: aa_bench [--size N] [--json] [--json-out FILE] [--cell-ms N]
 *                 [--passes N] [--htab-ms N] [--ref-allocs N] [--htab-before F]
 *                 [--producers N] [--only latency|htab] [--no-debug] [--quick] [--raw]
 *                 [--one-layout]
 *
 * Every table says where it ran (where.h: kernel, host or QEMU guest,
 * TCG or KVM, vCPUs), and under TCG which of its ratios carry over. A run
 * that measured nothing (no cell of a table asked for completed a program
 * run) fails.
 *
 * Files: runner.c (options, producers, jobs), latency.c, htab.c, tables.c,
 * targets.c, json.c, where.h; harness.h declares what they share.
 */
#include "harness.h"

/* --- main ---------------------------------------------------------------------------- */

void usage(FILE *f)
{
	fprintf(f,
		"Usage: aa_bench [OPTIONS]\n"
		"  --size N         object size in bytes, 8..2048 (default 64)\n"
		"  --json           print JSON on stdout instead of the tables\n"
		"  --json-out FILE  also write the JSON into FILE\n"
		"  --cell-ms N      measured time per latency cell, all passes (default %d)\n"
		"  --passes N       measure each latency cell in N slices (default %d)\n"
		"  --htab-ms N      measured time per htab cell (default %d)\n"
		"  --htab-before F  the baseline's JSON (make bench): before columns\n"
		"  --ref-allocs N   allocs row the targets are judged at (default %u)\n"
		"  --producers N    at most N producers (default: every CPU, at most %d)\n"
		"  --quick          short cells (a smoke run, noisy)\n"
		"  --raw            do not subtract the timer's cost per phase\n"
		"  --only WHAT      latency (tables 1-3) or htab (table 4) alone\n"
		"  --no-debug       leave out the debug-mode columns (table 1.3)\n"
		"  --one-layout     load the programs once, not at another code offset per pass\n",
		opt.cell_ms, opt.passes, opt.htab_ms, opt.ref_allocs, BENCH_MAX_WORKERS);
}

void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "json-out", required_argument, NULL, 'o' },
		{ "cell-ms", required_argument, NULL, 'c' },
		{ "passes", required_argument, NULL, 'P' },
		{ "htab-ms", required_argument, NULL, 'H' },
		{ "htab-before", required_argument, NULL, 'B' },
		{ "ref-allocs", required_argument, NULL, 'r' },
		{ "producers", required_argument, NULL, 'p' },
		{ "quick", no_argument, NULL, 'q' },
		{ "raw", no_argument, NULL, 'R' },
		{ "only", required_argument, NULL, 'O' },
		{ "no-debug", no_argument, NULL, 'D' },
		{ "one-layout", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': opt.size = strtoull(optarg, NULL, 0); break;
		case 'j': opt.json = true; break;
		case 'o': opt.json_out = optarg; break;
		case 'c': opt.cell_ms = atoi(optarg); break;
		case 'P': opt.passes = atoi(optarg); break;
		case 'H': opt.htab_ms = atoi(optarg); break;
		case 'B': opt.htab_before = optarg; break;
		case 'r': opt.ref_allocs = atoi(optarg); break;
		case 'p': opt.max_producers = atoi(optarg); break;
		case 'q':
			opt.cell_ms = 60;
			opt.passes = 1;
			opt.warm_ms = 20;
			opt.htab_ms = 150;
			opt.htab_warm_ms = 60;
			break;
		case 'R': opt.raw = true; break;
		case 'O':
			opt.no_latency = strcmp(optarg, "latency");
			opt.no_htab = strcmp(optarg, "htab");
			if (opt.no_latency && opt.no_htab)
				die("--only takes latency or htab");
			break;
		case 'D': opt.no_debug = true; break;
		case 'L': opt.one_layout = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (opt.size < 8 || opt.size > AA_MAX_CLASS_SIZE)
		die("--size must be 8..%u (the per-CPU cache's classes)", AA_MAX_CLASS_SIZE);
	if (row_of(opt.ref_allocs) < 0)
		die("--ref-allocs must be one of the allocs rows (1, 4, 16, 64, 256)");
	if (opt.cell_ms < 10 || opt.htab_ms < 10)
		die("--cell-ms and --htab-ms must be >= 10");
	if (opt.passes < 1 || opt.passes > 20)
		die("--passes must be 1..20");
}

int quiet_print(enum aa_print_level level, const char *fmt, va_list ap)
{
	return level == AA_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* Tables of NaN are no result: each table asked for (--only) needs a cell
 * that completed at least one program run (valid). */
static void check_measured(void)
{
	int v, c, r, P, uc, impl, nlat = 0, nhtab = 0;

	for (v = 0; v < 2; v++)
		for (c = 0; c < NR_COLS; c++)
			for (r = 0; r < (int)NR_ROWS; r++)
				for (P = 1; P <= nproc; P++)
					nlat += lat[v][c][r][P].valid;
	for (uc = 0; uc < BENCH_NR_HTAB_CASES; uc++)
		for (impl = 0; impl < BENCH_NR_HTAB_IMPLS; impl++)
			for (P = 1; P <= nproc; P++)
				nhtab += htab[uc][impl][P].valid;
	if (!opt.no_latency && !nlat)
		die("measured nothing: no latency cell completed a program run in %d ms "
		    "(--cell-ms)", opt.cell_ms);
	if (!opt.no_htab && !nhtab)
		die("measured nothing: no htab cell completed a program run in %d ms "
		    "(--htab-ms)", opt.htab_ms);
}

/*
 * Code layouts. Under TCG a jump from one guest code page to another is
 * not chained: it looks its target up each time it runs. A timed loop
 * whose code straddles a page boundary then runs slower than the same
 * loop elsewhere (seen: the inline floor's free, 14 ns or 22 to 33 ns per
 * op from one load to the next), and where it lands is up to the kernel's
 * JIT allocator. Hardware has no such cost. So each pass of the latency
 * cells loads every program at another offset: pass k of n first loads a
 * padding program of about k * 4096 / n bytes of JIT code, which the
 * kernel packs before them (first fit), and a cell keeps its lowest pass
 * median. A loop shorter than 4096 / n bytes straddles in at most one of
 * n layouts.
 */
static int code_pad(unsigned int bytes)
{
	static struct bpf_insn insns[1024 + 2];
	unsigned int i, n = bytes / 4;	/* r0 += 1: 4 bytes of x86 or arm64 code */
	int fd;

	if (!n)
		return -1;
	if (n > 1024)
		n = 1024;
	insns[0] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 };
	for (i = 1; i <= n; i++)
		insns[i] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_ADD | BPF_K,
					      .dst_reg = BPF_REG_0, .imm = 1 };
	insns[n + 1] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "aa_bench_pad", "GPL", insns, n + 2,
			   NULL);
	if (fd < 0)
		die("load the code padding (%u bytes): %s", bytes, strerror(-fd));
	return fd;
}

/* Open every heap the run needs, after pad bytes of code, and set the
 * floor up. */
void insts_open(unsigned int pad)
{
	int fd = code_pad(pad);

	inst_open(&inst_on, 0);
	inst_open(&inst_off, AA_F_NO_CACHES);
	inst_open(&inst_defer, AA_F_DEFER);
	if (!opt.no_debug) {
		inst_open(&inst_dbg, AA_F_DEBUG);
		inst_open(&inst_dbgq, AA_F_DEBUG);
	}
	if (fd >= 0)
		close(fd);	/* the programs stay where they were put */
	if (floor_ok) {
		struct bench_floor_args f = { .size = opt.size, .nworkers = nproc };

		if (run_prog(inst_off.skel->progs.bench_floor_setup, &f, sizeof(f)) || f.errors)
			die("bench_floor_setup: %llu objects missing", (unsigned long long)f.errors);
	}
}

void insts_close(void)
{
	if (!opt.no_debug) {
		inst_close(&inst_dbgq);
		inst_close(&inst_dbg);
	}
	inst_close(&inst_defer);
	inst_close(&inst_on);
	inst_close(&inst_off);
}

/* Pass `pass` of the latency cells: its code layout. */
void code_layout(int pass)
{
	if (opt.one_layout || pass == 0)
		return;
	insts_close();
	/* the kernel frees JIT images after an RCU grace period, from a
	 * workqueue: the pad must not go where they still are */
	sleep_ms(1000);
	insts_open(pass * (4096 / opt.passes) & ~63u);
}

int main(int argc, char **argv)
{
	static const __u64 ksizes[BENCH_NR_KOBJ] = BENCH_KOBJ_SIZES;
	char why[AA_PROBE_LINE_SZ];
	double t0 = now_s(), runtime;
	struct utsname u;
	int i;

	parse_args(argc, argv);
	out = opt.json ? stderr : stdout;
	aa_set_print(quiet_print);
	if (aa_probe_arena(why, sizeof(why)))
		die("%s", why);
	find_cpus();
	for (i = 0; i < BENCH_NR_KOBJ; i++)
		if (ksizes[i] >= opt.size) {
			kobj_class = i;
			kobj_bytes = ksizes[i];
			break;
		}

	if (opt.no_latency)
		opt.no_debug = true;	/* its columns are latency cells */
	/* the floor's LIFOs are indexed by CPU id modulo BENCH_MAX_WORKERS */
	floor_ok = true;
	for (i = 0; i < nproc; i++)
		if (cpus[i] != i)
			floor_ok = false;
	insts_open(0);

	uname(&u);
	fprintf(out, "where: %s\n", where_str());
	if (where_caution())
		fprintf(out, "%s\n", where_caution());
	fprintf(out, "arena-alloc benchmarks: %s %s, %d producer CPU%s, object size %llu B, "
		"%d ms per latency cell, %d ms per htab cell\n", u.release, u.machine, nproc,
		nproc > 1 ? "s" : "", (unsigned long long)opt.size, opt.cell_ms, opt.htab_ms);
	fprintf(out, "Each op is timed in batches: one bpf_ktime_get_ns() pair per phase of "
		"`allocs` operations.\n");
	fprintf(out, "A latency cell is the lowest of %d pass medians, %s.\n", opt.passes,
		opt.one_layout || opt.passes == 1 ? "one code layout" :
		"each pass with the programs at another code offset");

	if (!opt.no_latency)
		run_latency();
	if (!opt.no_htab) {
		run_htab();
		read_htab_before(opt.htab_before);
	}
	progress("");
	check_measured();
	if (!opt.no_latency) {
		eval_targets();
		print_latency();
	}
	if (!opt.no_htab)
		print_htab();
	if (!opt.no_latency)
		print_targets();
	runtime = now_s() - t0;
	if (slices)
		fprintf(out, "\n%d multi-producer slices, %d re-measured (at most %d times each) "
			"because other processes\ntook a producer's CPU (it had it < %.0f%% of the "
			"time)\n", slices, slices_redone, opt.attempts - 1, 100 * opt.min_share);
	fprintf(out, "\ntotal runtime %.1f s\n", runtime);

	if (opt.json)
		write_json(stdout, runtime);
	if (opt.json_out) {
		FILE *f = fopen(opt.json_out, "w");

		if (!f)
			die("%s: %s", opt.json_out, strerror(errno));
		write_json(f, runtime);
		fclose(f);
	}
	insts_close();
	return 0;
}
