// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * runner.c - the main() of `make compat-test`'s binaries (mk/compat.mk):
 * runs the peers' own test functions (the kernel selftests'
 * prog_tests/arena_{list,htab}.c and libarena's prog_tests/libarena.c,
 * compiled unmodified against tests/compat/test_progs.h) and prints their
 * subtests' results the way test_progs does:
 *
 *   #1/1     arena_list/arena_list_1:OK
 *   #1       arena_list:OK
 *   Summary: 1/2 PASSED, 0 SKIPPED, 0 FAILED
 *
 *   compat_runner [-v] [-t] [-d SUBTEST]... TEST...
 *     TEST     arena_list, arena_htab or libarena: runs test_TEST() (the
 *              6.12 tree's name) or serial_test_TEST() (7.x's), whichever
 *              the binary has
 *     -d NAME  does not run subtest NAME (test_progs' -d): it is reported
 *              as DENIED
 *     -v       prints the PASS lines of the checks too
 *     -t       prints, after each subtest, the wall time from the start of
 *              its first bpf_prog_test_run_opts() to the end of its last
 *              (its BPF work, without the skeleton's load, verification
 *              and the heap check; concurrent runs counted once):
 *              "time:TEST/SUBTEST: NS ns, RUNS runs" (make compat-bench)
 *   Exit status: 0 when every subtest run passed, 1 otherwise, 2 on usage
 *   errors.
 *
 * The heap check of COMPAT_ALLOC=aa: a binary linked with aa_check.c gets
 * aa_compat_check() (a weak symbol here, absent in stock mode). The peers'
 * tests load their skeleton, run it and destroy it before they return, and
 * they never hand it to us; so the binary is linked with
 * -Wl,--wrap=bpf_object__load_skeleton,--wrap=bpf_object__destroy_skeleton
 * and the wrappers below remember the object the test loaded and check its
 * heap while it is still alive: when the test destroys the skeleton (the
 * end of an arena_list or arena_htab subtest: each opens its own), and at
 * each subtest boundary while a skeleton is live (libarena's subtests share
 * one skeleton and run one after another, its worker threads joined). The
 * result counts toward the subtest that just ran.
 */
#include <pthread.h>
#include <stdarg.h>
#include <time.h>
#include "test_progs.h"

/* The peers' entry points: the 6.12 tree's test_*(), 7.x's serial_test_*(). */
#define AA_PEER_TEST(name) \
	void test_##name(void) __weak; \
	void serial_test_##name(void) __weak;
AA_PEER_TEST(arena_list)
AA_PEER_TEST(arena_htab)
AA_PEER_TEST(libarena)

static const struct aa_compat_test {
	const char *name;
	void (*fn)(void), (*serial_fn)(void);
} tests[] = {
	{ "arena_list", test_arena_list, serial_test_arena_list },
	{ "arena_htab", test_arena_htab, serial_test_arena_htab },
	{ "libarena", test_libarena, serial_test_libarena },
};

/* aa_check.c (COMPAT_ALLOC=aa): checks the arena-alloc heap in obj's
 * arena; final: obj is about to be destroyed (it must have a heap by
 * then). Prints its own lines; false when a check failed. */
bool aa_compat_check(struct bpf_object *obj, const char *where, bool final) __weak;

static struct {
	const char *test;
	int test_nr, sub_nr;
	char sub[256];
	bool in_sub, sub_failed, sub_skipped, test_failed, test_skipped, verbose, timing;
	int subs_run, subs_passed, subs_skipped, subs_failed;
	int tests_run, tests_passed, tests_skipped, tests_failed;
	const char **deny;
	int nr_deny;
	struct bpf_object *obj;		/* the live skeleton's, while there is one */
} st;

/* The current subtest's program runs (-t): first start, last end, count;
 * worker threads run programs concurrently. */
static struct {
	pthread_mutex_t lock;
	unsigned long long first, last;
	unsigned int runs;
} runs = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

bool aa_compat_report(bool ok, const char *func, const char *name, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!ok) {
		test__fail();
		printf("%s:FAIL:%s ", func, name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	} else if (st.verbose) {
		printf("%s:PASS:%s\n", func, name);
	}
	fflush(stdout);
	errno = saved;
	return ok;
}

void test__fail(void)
{
	if (st.in_sub)
		st.sub_failed = true;
	else
		st.test_failed = true;
}

void test__skip(void)
{
	if (st.in_sub)
		st.sub_skipped = true;
	else
		st.test_skipped = true;
}

static void heap_check(bool final)
{
	char where[320];

	if (!aa_compat_check || !st.obj)
		return;
	snprintf(where, sizeof(where), "%s%s%s", st.test, st.in_sub ? "/" : "",
		 st.in_sub ? st.sub : "");
	if (!aa_compat_check(st.obj, where, final))
		test__fail();
}

static void end_subtest(void)
{
	const char *res;

	if (!st.in_sub)
		return;
	heap_check(false);	/* a live skeleton's (libarena's) */
	res = st.sub_failed ? "FAIL" : st.sub_skipped ? "SKIP" : "OK";
	if (st.timing)
		printf("time:%s/%s: %llu ns, %u runs\n", st.test, st.sub,
		       runs.runs ? runs.last - runs.first : 0ULL, runs.runs);
	printf("#%d/%-3d %s/%s:%s\n", st.test_nr, st.sub_nr, st.test, st.sub, res);
	fflush(stdout);
	st.subs_run++;
	if (st.sub_failed) {
		st.subs_failed++;
		st.test_failed = true;
	} else if (st.sub_skipped) {
		st.subs_skipped++;
	} else {
		st.subs_passed++;
	}
	st.in_sub = false;
}

bool test__start_subtest(const char *name)
{
	int i;

	end_subtest();
	st.sub_nr++;
	for (i = 0; i < st.nr_deny; i++) {
		if (!strcmp(st.deny[i], name)) {
			printf("#%d/%-3d %s/%s:DENIED (-d)\n", st.test_nr, st.sub_nr, st.test, name);
			return false;
		}
	}
	snprintf(st.sub, sizeof(st.sub), "%s", name);
	runs.first = runs.last = 0;
	runs.runs = 0;
	st.in_sub = true;
	st.sub_failed = st.sub_skipped = false;
	return true;
}

/* --- Wrappers (-Wl,--wrap=...): the live object, for the heap check; the
 * program runs, for -t */

int __real_bpf_prog_test_run_opts(int prog_fd, struct bpf_test_run_opts *opts);
int __real_bpf_object__load_skeleton(struct bpf_object_skeleton *s);
void __real_bpf_object__destroy_skeleton(struct bpf_object_skeleton *s);

int __wrap_bpf_prog_test_run_opts(int prog_fd, struct bpf_test_run_opts *opts)
{
	unsigned long long t0 = now_ns(), t1;
	int ret = __real_bpf_prog_test_run_opts(prog_fd, opts);

	t1 = now_ns();
	pthread_mutex_lock(&runs.lock);
	if (!runs.runs || t0 < runs.first)
		runs.first = t0;
	if (t1 > runs.last)
		runs.last = t1;
	runs.runs++;
	pthread_mutex_unlock(&runs.lock);
	return ret;
}

int __wrap_bpf_object__load_skeleton(struct bpf_object_skeleton *s)
{
	int err = __real_bpf_object__load_skeleton(s);

	if (!err)
		st.obj = *s->obj;
	return err;
}

void __wrap_bpf_object__destroy_skeleton(struct bpf_object_skeleton *s)
{
	if (s && s->obj && *s->obj && *s->obj == st.obj) {
		heap_check(true);
		st.obj = NULL;
	}
	__real_bpf_object__destroy_skeleton(s);
}

/* --- main ----------------------------------------------------------------- */

static void run_test(const struct aa_compat_test *t)
{
	const char *res;

	st.test = t->name;
	st.test_nr++;
	st.sub_nr = 0;
	st.test_failed = st.test_skipped = false;
	(t->fn ? t->fn : t->serial_fn)();
	end_subtest();
	st.obj = NULL;
	res = st.test_failed ? "FAIL" : st.test_skipped ? "SKIP" : "OK";
	printf("#%-6d %s:%s\n", st.test_nr, st.test, res);
	fflush(stdout);
	st.tests_run++;
	if (st.test_failed)
		st.tests_failed++;
	else if (st.test_skipped)
		st.tests_skipped++;
	else
		st.tests_passed++;
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-v] [-t] [-d SUBTEST]... TEST...\n  TEST:", prog);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (tests[i].fn || tests[i].serial_fn)
			fprintf(stderr, " %s", tests[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *deny[16];
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "vtd:")) != -1) {
		switch (opt) {
		case 'v':
			st.verbose = true;
			break;
		case 't':
			st.timing = true;
			break;
		case 'd':
			if (st.nr_deny == (int)(sizeof(deny) / sizeof(deny[0])))
				return usage(argv[0]);
			deny[st.nr_deny++] = optarg;
			break;
		default:
			return usage(argv[0]);
		}
	}
	st.deny = deny;
	if (optind == argc)
		return usage(argv[0]);
	for (int i = optind; i < argc; i++) {
		size_t j;

		for (j = 0; j < sizeof(tests) / sizeof(tests[0]); j++)
			if (!strcmp(tests[j].name, argv[i]) && (tests[j].fn || tests[j].serial_fn))
				break;
		if (j == sizeof(tests) / sizeof(tests[0])) {
			fprintf(stderr, "%s: no test '%s' in this binary\n", argv[0], argv[i]);
			return usage(argv[0]);
		}
		run_test(&tests[j]);
	}
	printf("Summary: %d/%d PASSED, %d SKIPPED, %d FAILED\n", st.tests_passed,
	       st.subs_passed, st.tests_skipped + st.subs_skipped, st.tests_failed + st.subs_failed);
	return st.tests_failed || st.subs_failed ? 1 : 0;
}
