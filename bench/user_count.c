// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user_count.c - build/aa_bench_user's counted rows: instructions and
 * locked instructions per malloc + free pair of the user path and glibc,
 * counted by valgrind's callgrind rather than timed, so that they carry
 * over from an emulator to the hardware a target is judged on.
 *
 * The binary runs itself under callgrind (--count-child, user.c), which
 * instruments only from its counting thread's start and collects only
 * around each cell's loop, then dumps the cell alone under a trigger that
 * names it (COUNT_TAG): the probe, then per pattern and size the loop
 * with no calls (none), the user path (user) and glibc. Each dump lists
 * every instruction the cell executed with its count: its object file
 * and its address in that file (callgrind takes the load bias off, so the
 * address is the one objdump prints), in its function. A pair's figures
 * count inside the calls only: every instruction of a function other than
 * the loop's own, which are the functions the none cell ran (pairs(), or
 * whatever the compiler put it in):
 *
 *   insns/pair  = instructions executed in the calls / n
 *   locked/pair = executions of locked instructions in the calls / n
 *
 * locked: a `lock` prefix, or xchg with a memory operand (locked without
 * one), found in objdump's disassembly of each object over the executed
 * range. So a pair's figure is the callees' from their first instruction
 * to their return; the caller's argument setup and call instructions are
 * the loop's, and so is a PLT stub's jump (glibc's calls: one each), which
 * callgrind counts with the caller (the none cell's count per pair is in
 * the table beside: how the loop compiles around each path varies).
 * Userspace only: valgrind does not see the kernel, so a user-path miss
 * or spill counts its syscall's setup, not the aa__run user call (slow/1k says
 * how many there were; none in the loop).
 *
 * Checks, each a failure instead of a figure: the probe (the calibration's
 * lock cmpxchg + release store loop) counts exactly one locked instruction
 * per op; every executed address is an instruction of its object's
 * disassembly; a dump's instructions add up to its total; no cell failed
 * a call. Without valgrind, or built without <valgrind/callgrind.h>, the
 * rows are skipped with a line that says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "where.h"

#include "user.h"

extern char **environ;

/* --- What the dumps hold ------------------------------------------------ */

/* An instruction a cell executed n times: object and function (indexes
 * into names[]) and its address in the object. */
struct insn {
	int ob, fn;
	unsigned long long addr, n;
};

/* An instruction any cell executed, as the disassembly of its object
 * has it: sites[] is sorted by (ob, addr), each once. */
struct site {
	int ob;
	unsigned long long addr;
	bool found, locked;
	char *text;		/* locked: objdump's text of it */
};

struct cell {
	char path[8], pattern[8];
	unsigned long long size, n, slow, errors;
	unsigned long long ir;		/* the dump's total */
	unsigned long long calls, locked;	/* in the calls (make_rows()) */
	struct insn *in;
	int nin, cap;
};

struct counts {
	char dir[32];		/* the dumps and logs, mkdtemp() */
	char **names;		/* objects and functions, each once */
	int nnames;
	struct cell *cells;
	int ncells;
	struct site *sites;
	int nsites;
};

/* names[] index of s, added if new; -1 when out of memory. */
static int intern(struct counts *c, const char *s)
{
	char **more;
	int i;

	for (i = 0; i < c->nnames; i++)
		if (!strcmp(c->names[i], s))
			return i;
	more = realloc(c->names, (c->nnames + 1) * sizeof(*more));
	if (!more)
		return -1;
	c->names = more;
	if (!(c->names[c->nnames] = strdup(s)))
		return -1;
	return c->nnames++;
}

static int add_insn(struct cell *cell, int ob, int fn, unsigned long long addr,
		    unsigned long long n)
{
	struct insn *more;

	if (cell->nin == cell->cap) {
		more = realloc(cell->in, (cell->cap ? 2 * cell->cap : 64) * sizeof(*more));
		if (!more)
			return -ENOMEM;
		cell->in = more;
		cell->cap = cell->cap ? 2 * cell->cap : 64;
	}
	cell->in[cell->nin++] = (struct insn){ ob, fn, addr, n };
	return 0;
}

/*
 * One dump (--dump-instr=yes --dump-line=no --compress-pos=no
 * --compress-strings=no): "ob=" and "fn=" set the object and function of
 * the cost lines below them, "0xADDR COUNT" is an instruction's own count,
 * "calls=" is followed by one line of the call's inclusive cost, which the
 * callee's own lines already hold. 0, or -EINVAL with what was wrong.
 */
static int parse_dump(struct counts *c, const char *path, struct cell *cell)
{
	static const char trigger[] = "desc: Trigger: Client Request: " COUNT_TAG " ";
	unsigned long long addr, n, sum = 0, total = 0;
	int ob = -1, fn = -1, err = 0, tagged = 0, ln = 0;
	char line[4096], *end, *end2;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "user: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	memset(cell, 0, sizeof(*cell));
	while (!err && fgets(line, sizeof(line), f)) {
		ln++;
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "0x", 2)) {
			addr = strtoull(line, &end, 16);
			n = strtoull(end, &end2, 10);
			if (ob < 0 || fn < 0 || end2 == end)
				err = -EINVAL;
			else
				err = add_insn(cell, ob, fn, addr, n);
			sum += n;
		} else if (!strncmp(line, "calls=", 6)) {
			if (!fgets(line, sizeof(line), f))
				err = -EINVAL;
			ln++;
		} else if (!strncmp(line, "ob=", 3)) {
			err = (ob = intern(c, line + 3)) < 0 ? -ENOMEM : 0;
		} else if (!strncmp(line, "fn=", 3)) {
			err = (fn = intern(c, line + 3)) < 0 ? -ENOMEM : 0;
		} else if (!strncmp(line, trigger, sizeof(trigger) - 1)) {
			tagged = sscanf(line + sizeof(trigger) - 1, "path=%7s pattern=%7s size=%llu "
					"n=%llu slow=%llu errors=%llu", cell->path, cell->pattern,
					&cell->size, &cell->n, &cell->slow, &cell->errors) == 6;
		} else if (!strncmp(line, "positions:", 10)) {
			err = strcmp(line, "positions: instr") ? -EINVAL : 0;
		} else if (!strncmp(line, "events:", 7)) {
			err = strncmp(line, "events: Ir", 10) ? -EINVAL : 0;
		} else if (!strncmp(line, "totals:", 7)) {
			total = strtoull(line + 7, NULL, 10);
		} else if (line[0] == '+' || line[0] == '-' || line[0] == '*') {
			err = -EINVAL;	/* a compressed position */
		}
	}
	fclose(f);
	if (!err && (!tagged || !cell->n || sum != total)) {
		fprintf(stderr, "user: %s: %s\n", path, !tagged ? "no " COUNT_TAG " trigger" :
			!cell->n ? "no pairs" : "its instructions do not add up to its total");
		return -EINVAL;
	}
	if (err == -EINVAL)
		fprintf(stderr, "user: %s:%d: not a line of the expected format: %s\n", path, ln,
			line);
	else if (err)
		fprintf(stderr, "user: %s: %s\n", path, strerror(-err));
	if (err)
		return err;
	cell->ir = total;
	return 0;
}

/* --- Which instructions lock ----------------------------------------------- */

/* x86 prefixes as objdump prints them before the mnemonic */
static bool is_prefix(const char *w, size_t len)
{
	static const char *const p[] = {
		"lock", "data16", "data32", "addr16", "addr32", "cs", "ds", "es", "fs", "gs",
		"ss", "notrack", "bnd", "xacquire", "xrelease", "rep", "repz", "repnz", "repe",
		"repne",
	};
	size_t i;

	if (len >= 3 && !strncmp(w, "rex", 3))
		return true;
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (strlen(p[i]) == len && !strncmp(w, p[i], len))
			return true;
	return false;
}

/* Does the instruction objdump prints as t lock the bus: a lock prefix, or
 * xchg (xchgb/w/l/q) with a memory operand? */
static bool is_locked(const char *t)
{
	size_t len;

	for (;;) {
		t += strspn(t, " ");
		len = strcspn(t, " ");
		if (!is_prefix(t, len))
			break;
		if (len == 4 && !strncmp(t, "lock", 4))
			return true;
		t += len;
	}
	return !strncmp(t, "xchg", 4) && len <= 5 && strchr(t + len, '(');
}

static int cmp_site(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	if (x->ob != y->ob)
		return x->ob < y->ob ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct site *find_site(struct counts *c, int ob, unsigned long long addr)
{
	struct site key = { .ob = ob, .addr = addr };

	return bsearch(&key, c->sites, c->nsites, sizeof(key), cmp_site);
}

/* sites[]: every instruction any cell executed, sorted, each once. */
static int collect_sites(struct counts *c)
{
	int i, j, n = 0, total = 0;

	for (i = 0; i < c->ncells; i++)
		total += c->cells[i].nin;
	c->sites = calloc(total ? total : 1, sizeof(*c->sites));
	if (!c->sites)
		return -ENOMEM;
	for (i = 0; i < c->ncells; i++)
		for (j = 0; j < c->cells[i].nin; j++)
			c->sites[n++] = (struct site){ .ob = c->cells[i].in[j].ob,
						       .addr = c->cells[i].in[j].addr };
	qsort(c->sites, n, sizeof(*c->sites), cmp_site);
	for (i = j = 0; i < n; i++)
		if (!j || cmp_site(&c->sites[j - 1], &c->sites[i]))
			c->sites[j++] = c->sites[i];
	c->nsites = j;
	return 0;
}

/* Run argv (PATH looked up) with stdout to the pipe *out reads, stderr to
 * ours or, with log, to that file (stdout too). 0, or -errno. */
static int spawn(char *const argv[], FILE **out, const char *log, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int fd[2] = { -1, -1 }, err;

	if (out && pipe(fd))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	if (out) {
		posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
		posix_spawn_file_actions_addclose(&fa, fd[0]);
		posix_spawn_file_actions_addclose(&fa, fd[1]);
	} else if (log) {
		posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
	}
	err = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (out) {
		close(fd[1]);
		if (err)
			close(fd[0]);
		else if (!(*out = fdopen(fd[0], "r")))
			err = errno;
	}
	return -err;
}

/* The exit status of pid: 0 .. 255, or 256 + the signal that ended it. */
static int reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 512;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 256 + WTERMSIG(st);
}

/* Mark the sites of object ob (sites[a .. b)) found and locked from
 * objdump's disassembly of their address range. 0, or -errno. */
static int disassemble(struct counts *c, int a, int b)
{
	char start[40], stop[40], line[512], *t;
	char *argv[] = { "objdump", "-d", "--no-show-raw-insn", start, stop,
			 c->names[c->sites[a].ob], NULL };
	unsigned long long addr;
	struct site *s;
	FILE *f = NULL;
	pid_t pid;
	int err, st;

	snprintf(start, sizeof(start), "--start-address=0x%llx", c->sites[a].addr);
	snprintf(stop, sizeof(stop), "--stop-address=0x%llx", c->sites[b - 1].addr + 1);
	err = spawn(argv, &f, NULL, &pid);
	if (err) {
		fprintf(stderr, "user: objdump: %s\n", strerror(-err));
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		/* "   98930:\tpush   %r15" */
		addr = strtoull(line, &t, 16);
		if (t == line || t[0] != ':' || t[1] != '\t')
			continue;
		t[strcspn(t, "\n")] = 0;
		s = find_site(c, c->sites[a].ob, addr);
		if (!s || s->found)
			continue;
		s->found = true;
		s->locked = is_locked(t + 2);
		if (s->locked && !(s->text = strdup(t + 2)))
			err = -ENOMEM;
	}
	fclose(f);
	st = reap(pid);
	if (st) {
		fprintf(stderr, "user: objdump of %s exited %d\n", c->names[c->sites[a].ob], st);
		return -EIO;
	}
	return err;
}

/* Every object's sites through disassemble(); each must be found. */
static int find_locked(struct counts *c)
{
	int a, b, i, err;

	for (a = 0; a < c->nsites; a = b) {
		for (b = a; b < c->nsites && c->sites[b].ob == c->sites[a].ob; b++)
			;
		err = disassemble(c, a, b);
		if (err)
			return err;
	}
	for (i = 0; i < c->nsites; i++)
		if (!c->sites[i].found) {
			fprintf(stderr, "user: callgrind counted 0x%llx in %s, which its "
				"disassembly has no instruction at\n", c->sites[i].addr,
				c->names[c->sites[i].ob]);
			return -EINVAL;
		}
	return 0;
}

/* --- The run under callgrind ------------------------------------------------ */

/* The last 10 lines of file path to stderr, indented (a guest's /tmp is
 * gone when it stops). */
static void print_tail(const char *path)
{
	char lines[10][256];
	FILE *f = fopen(path, "r");
	int n = 0, i;

	if (!f)
		return;
	while (fgets(lines[n % 10], sizeof(lines[0]), f))
		n++;
	fclose(f);
	fprintf(stderr, "  the end of %s:\n", path);
	for (i = n > 10 ? n - 10 : 0; i < n; i++)
		fprintf(stderr, "    %s", lines[i % 10]);
}

/* Run self --count-child under callgrind, its dumps into c->dir; read
 * them into c->cells. 0, 1 (no valgrind here: said so), or -errno. */
static int run_child(struct counts *c, const char *self, bool user, __u64 n)
{
	char out[64], log[64], child_log[64], pairs[32], path[80];
	char *argv[] = { "valgrind", "--tool=callgrind", "--instr-atstart=no",
			 "--collect-atstart=no", "--dump-instr=yes", "--dump-line=no",
			 "--compress-pos=no", "--compress-strings=no", out, log, (char *)self,
			 "--count-child", user ? "user,glibc" : "glibc", "--count-pairs", pairs,
			 NULL };
	struct cell *more;
	struct stat sb;
	pid_t pid;
	int err, st, i;

	snprintf(out, sizeof(out), "--callgrind-out-file=%s/cg.out", c->dir);
	snprintf(log, sizeof(log), "--log-file=%s/valgrind.log", c->dir);
	snprintf(child_log, sizeof(child_log), "%s/child.log", c->dir);
	snprintf(pairs, sizeof(pairs), "%llu", (unsigned long long)n);
	err = spawn(argv, NULL, child_log, &pid);
	if (err == -ENOENT) {
		printf("counted: skipped: valgrind is not on PATH here (Debian: apt-get install "
		       "valgrind), so no instruction counts from %s\n", where_str());
		return 1;
	}
	if (err) {
		fprintf(stderr, "user: valgrind: %s\n", strerror(-err));
		return err;
	}
	st = reap(pid);
	if (st) {
		fprintf(stderr, "user: valgrind --tool=callgrind %s --count-child exited %d\n",
			self, st);
		snprintf(path, sizeof(path), "%s/valgrind.log", c->dir);
		print_tail(path);
		print_tail(child_log);
		return -EIO;
	}
	for (i = 1;; i++) {
		snprintf(path, sizeof(path), "%s/cg.out.%d", c->dir, i);
		if (stat(path, &sb))
			break;
		more = realloc(c->cells, i * sizeof(*more));
		if (!more)
			return -ENOMEM;
		c->cells = more;
		err = parse_dump(c, path, &c->cells[i - 1]);
		c->ncells = i;	/* freed with the others, parsed or not */
		if (err)
			return err;
	}
	return 0;
}

static void counts_free(struct counts *c)
{
	int i;

	for (i = 0; i < c->ncells; i++)
		free(c->cells[i].in);
	for (i = 0; i < c->nsites; i++)
		free(c->sites[i].text);
	for (i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->cells);
	free(c->sites);
	free(c->names);
}

/* Remove c->dir and what the run left in it. */
static void remove_dir(const struct counts *c)
{
	static const char *const files[] = { "cg.out", "valgrind.log", "child.log" };
	char path[80];
	unsigned int i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", c->dir, files[i]);
		unlink(path);
	}
	for (i = 1;; i++) {
		snprintf(path, sizeof(path), "%s/cg.out.%u", c->dir, i);
		if (unlink(path))
			break;
	}
	rmdir(c->dir);
}

/* --- The rows ------------------------------------------------------------- */

static struct cell *find_cell(struct counts *c, const char *path, const char *pattern,
			      __u64 size)
{
	int i;

	for (i = 0; i < c->ncells; i++)
		if (!strcmp(c->cells[i].path, path) && !strcmp(c->cells[i].pattern, pattern) &&
		    c->cells[i].size == size)
			return &c->cells[i];
	return NULL;
}

/* Is in in a function of the loop's own, one that none ran? */
static bool in_loop(const struct insn *in, const struct cell *none)
{
	int i;

	for (i = 0; i < none->nin; i++)
		if (none->in[i].ob == in->ob && none->in[i].fn == in->fn)
			return true;
	return false;
}

/* cell's calls and locked: its instructions outside the loop's own. */
static void count_calls(struct counts *c, struct cell *cell, const struct cell *none)
{
	const struct insn *in;
	int i;

	for (i = 0; i < cell->nin; i++) {
		in = &cell->in[i];
		if (in_loop(in, none))
			continue;
		cell->calls += in->n;
		if (find_site(c, in->ob, in->addr)->locked)
			cell->locked += in->n;
	}
}

/* Object ob's file name without its directory. */
static const char *ob_name(const struct counts *c, int ob)
{
	const char *s = strrchr(c->names[ob], '/');

	return s ? s + 1 : c->names[ob];
}

static int cmp_count_desc(const void *a, const void *b)
{
	const struct insn *x = a, *y = b;

	return x->n > y->n ? -1 : x->n < y->n;
}

#define MAX_FUNCS	64	/* listed per cell; the rest as "others" */

/* Per pair, what cell's calls ran: instructions by function, most first,
 * then each locked instruction with its function and disassembly (an
 * instruction can be in several of the dump's blocks: summed). */
static void print_cell(struct counts *c, const struct cell *cell, const struct cell *none)
{
	struct insn f[MAX_FUNCS + 1] = {}, *in, *o;
	double per = cell->n;
	int i, j, nf = 0;
	unsigned long long n;

	printf("  %-5s %-5s %4llu B: %.2f instructions, %.2f locked per pair\n", cell->path,
	       cell->pattern, cell->size, cell->calls / per, cell->locked / per);
	for (i = 0; i < cell->nin; i++) {
		in = &cell->in[i];
		if (in_loop(in, none))
			continue;
		for (j = 0; j < nf && (f[j].ob != in->ob || f[j].fn != in->fn); j++)
			;
		if (j == nf && nf < MAX_FUNCS)
			f[nf++] = (struct insn){ .ob = in->ob, .fn = in->fn };
		f[j].n += in->n;	/* j == MAX_FUNCS: others */
	}
	qsort(f, nf, sizeof(f[0]), cmp_count_desc);
	for (j = 0; j < nf; j++)
		printf("    %7.2f  %s (%s)\n", f[j].n / per, c->names[f[j].fn], ob_name(c, f[j].ob));
	if (f[MAX_FUNCS].n)
		printf("    %7.2f  others\n", f[MAX_FUNCS].n / per);
	for (i = 0; i < cell->nin; i++) {
		in = &cell->in[i];
		if (!find_site(c, in->ob, in->addr)->locked || in_loop(in, none))
			continue;
		for (j = 0; j < i; j++)
			if (cell->in[j].ob == in->ob && cell->in[j].addr == in->addr)
				break;
		if (j < i)
			continue;	/* printed */
		for (n = 0, j = i; j < cell->nin; j++) {
			o = &cell->in[j];
			n += o->ob == in->ob && o->addr == in->addr ? o->n : 0;
		}
		printf("    %7.2f  locked: %s 0x%llx  %s  (%s)\n", n / per, c->names[in->fn],
		       in->addr, find_site(c, in->ob, in->addr)->text, ob_name(c, in->ob));
	}
}

/* The probe and the cells, checked; rows filled from them. Rows, or
 * -errno. */
static int make_rows(struct counts *c, bool user, const char *kernel, struct row *rows, int max)
{
	static const char *const patterns[] = { "loop", "batch" };
	static const __u64 sizes[] = { 64, 1024 };
	const struct cell *none, *probe = find_cell(c, "probe", "-", 0);
	struct cell *p[NR_PATHS];
	unsigned long long probe_locked = 0;
	int i, s, k, nrows = 0;

	for (i = 0; probe && i < probe->nin; i++)	/* all of it the probe's own */
		if (find_site(c, probe->in[i].ob, probe->in[i].addr)->locked)
			probe_locked += probe->in[i].n;
	if (!probe || probe_locked != probe->n) {
		fprintf(stderr, "user: the probe (one lock cmpxchg per op) counted %.4f locked "
			"instructions per op: the counter is wrong, no counts printed\n",
			probe ? (double)probe_locked / probe->n : NAN);
		return -EINVAL;
	}
	for (i = 0; i < c->ncells; i++)
		if (c->cells[i].errors) {
			fprintf(stderr, "user: %llu failed calls in the counted %s %s %llu B\n",
				c->cells[i].errors, c->cells[i].path, c->cells[i].pattern,
				c->cells[i].size);
			return -EIO;
		}
	printf("per pair, inside the calls: instructions by function, then each locked "
	       "instruction\n(function, address in its object, disassembly):\n");
	for (i = 0; i < 2; i++)
		for (s = 0; s < 2; s++) {
			struct row *w = &rows[nrows];

			none = find_cell(c, "none", patterns[i], sizes[s]);
			p[PATH_USER] = user ? find_cell(c, "user", patterns[i], sizes[s]) : NULL;
			p[PATH_SYSCALL] = NULL;
			p[PATH_GLIBC] = find_cell(c, "glibc", patterns[i], sizes[s]);
			if (nrows == max || !none || !p[PATH_GLIBC] || (user && !p[PATH_USER]) ||
			    p[PATH_GLIBC]->n != none->n || (user && p[PATH_USER]->n != none->n)) {
				fprintf(stderr, "user: the counted %s %llu B is missing\n",
					patterns[i], (unsigned long long)sizes[s]);
				return -EINVAL;
			}
			memset(w, 0, sizeof(*w));
			snprintf(w->kind, sizeof(w->kind), "count");
			snprintf(w->pattern, sizeof(w->pattern), "%s", patterns[i]);
			snprintf(w->kernel, sizeof(w->kernel), "%s", kernel);
			snprintf(w->where, sizeof(w->where), "%.255s", where_str());
			w->size = sizes[s];
			w->threads = 1;
			w->pairs = none->n;
			w->share = NAN;
			for (k = 0; k < NR_PATHS; k++) {
				w->ns[k] = w->slow[k] = NAN;
				if (!p[k])
					continue;
				count_calls(c, p[k], none);
				w->ns[k] = (double)p[k]->calls / none->n;
				w->slow[k] = (double)p[k]->locked / none->n;
				print_cell(c, p[k], none);
			}
			w->ns[PATH_NONE] = (double)none->ir / none->n;
			w->slow[PATH_NONE] = user ? 1000.0 * p[PATH_USER]->slow / none->n : NAN;
			nrows++;
		}
	return nrows;
}

int count_cells(const char *self, bool user, __u64 n, const char *kernel, struct row *rows,
		int max)
{
	struct counts c = {};
	int err, nrows = 0;

	if (!AA_HAVE_CALLGRIND) {
		printf("counted: skipped: built without <valgrind/callgrind.h> (Debian: "
		       "valgrind), so no instruction counts\n");
		return 0;
	}
	snprintf(c.dir, sizeof(c.dir), "/tmp/aa_count.XXXXXX");
	if (!mkdtemp(c.dir)) {
		fprintf(stderr, "user: mkdtemp: %s\n", strerror(errno));
		return -errno;
	}
	printf("\nCounting under valgrind --tool=callgrind: %llu pairs a cell, %s...\n",
	       (unsigned long long)n, user ? "the user path and glibc" : "glibc");
	fflush(stdout);
	err = run_child(&c, self, user, n);
	if (!err)
		err = collect_sites(&c);
	if (!err)
		err = find_locked(&c);
	if (!err)
		err = nrows = make_rows(&c, user, kernel, rows, max);
	if (err < 0)
		fprintf(stderr, "user: counted: FAILED (%s); what the run left is in %s\n",
			strerror(-err), c.dir);
	else
		remove_dir(&c);	/* counted, or skipped (err 1) */
	counts_free(&c);
	return err < 0 ? err : nrows;
}
