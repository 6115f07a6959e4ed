// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - build/aa_tests' main: Criterion's own ("providing your own
 * main": initialize, handle_args, run_all_tests, finalize) plus one rule,
 * a run that tested nothing does not pass.
 *
 * Criterion exits 0 whenever nothing failed. A test that gave up with
 * cr_skip_test() (common.h: the kernel refused an arena, a program type)
 * counts as skipped, and so does one that --filter left out; on a kernel
 * without BPF arena, `--filter heap/...` or `make stress` ran nothing and
 * exited 0. Here, after Criterion's run and its report (the "Synthesis:
 * Tested: ..." line is Criterion's, unchanged):
 *
 *   started == 0               exit 1: "aa_tests: no test ran"
 *   skipped == started > 0     exit 1: "aa_tests: all N tests were skipped:
 *                              ...", unless AA_TESTS_ALLOW_SKIP=1
 *   otherwise                  Criterion's status (1 on any failure)
 *
 * where, over the run's tests (Criterion's nb_tests),
 *
 *   nb_tests == started + left_out      left_out: --filter, .disabled
 *   started  == passed + failed + skipped
 *
 * skipped being those that ended in cr_skip_test(). A run where some but
 * not all tests were skipped passes as before. Every run that started a
 * test ends with "aa_tests: N tests started, K skipped" (.ci/run compares
 * N across kernels: the skips differ, the suite does not).
 *
 * Environment:
 *   AA_TESTS_ALLOW_SKIP=1  accept a run whose every test was skipped (a
 *                          kernel without arena, tried on purpose). A
 *                          run in which no test started fails anyway:
 *                          nothing was skipped, the filter matched none.
 *
 *   AA_TESTS_PRINT_LOADER=1  print where the dynamic loader was mapped
 *                          (getauxval(AT_BASE), hex) and exit 0: how a
 *                          test learns the address that every dynamic
 *                          program run without randomization maps
 *                          (tests/test_cli_foreign.c)
 *
 * --help, --version, --list and unknown options run no test and exit 0,
 * as with Criterion's main; so does --always-succeed whatever happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/options.h>
#include <criterion/stats.h>

/* What the run did; written by the POST_ALL hook, in this process. */
static struct {
	bool reported;		/* the POST_ALL hook ran */
	size_t total, started, skipped;
} aa_run;

static bool aa_left_out(const struct criterion_suite *s, const struct criterion_test *t)
{
	return (s->data && s->data->disabled) || (t->data && t->data->disabled);
}

ReportHook(POST_ALL)(struct criterion_global_stats *st)
{
	const struct criterion_suite_stats *ss;
	const struct criterion_test_stats *ts;

	aa_run.reported = true;
	aa_run.total = st->nb_tests;
	for (ss = st->suites; ss; ss = ss->next)
		for (ts = ss->tests; ts; ts = ts->next) {
			if (aa_left_out(ss->suite, ts->test))
				continue;
			aa_run.started++;
			if (ts->test_status == CR_STATUS_SKIPPED)
				aa_run.skipped++;
		}
}

static bool aa_allow_skip(void)
{
	const char *v = getenv("AA_TESTS_ALLOW_SKIP");

	return v && !strcmp(v, "1");
}

/* The run's exit status: Criterion's (status), or 1 with a reason on
 * stderr when it tested nothing (then status is 0: nothing failed). */
static int aa_judge(int status)
{
	if (!aa_run.reported || criterion_options.always_succeed)
		return status;
	if (!aa_run.started) {
		fprintf(stderr, "aa_tests: no test ran\n");
		return 1;
	}
	if (aa_run.skipped == aa_run.started) {
		if (aa_allow_skip()) {
			fprintf(stderr, "aa_tests: all %zu test%s skipped; accepted "
				"(AA_TESTS_ALLOW_SKIP=1)\n", aa_run.started,
				aa_run.started > 1 ? "s were" : " was");
			return 0;
		}
		fprintf(stderr, "aa_tests: all %zu test%s skipped: the kernel refused what "
			"they need (see the skip reasons above)\n", aa_run.started,
			aa_run.started > 1 ? "s were" : " was");
		return 1;
	}
	fprintf(stderr, "aa_tests: %zu tests started, %zu skipped\n", aa_run.started,
		aa_run.skipped);
	return status;
}

int main(int argc, char *argv[])
{
	struct criterion_test_set *tests;
	const char *v = getenv("AA_TESTS_PRINT_LOADER");
	int status = 0;

	if (v && !strcmp(v, "1")) {
		printf("%#lx\n", getauxval(AT_BASE));
		return 0;
	}
	tests = criterion_initialize();

	/* 0: --help, --version, --list or a bad option, handled already */
	if (criterion_handle_args(argc, argv, true))
		status = aa_judge(!criterion_run_all_tests(tests));
	criterion_finalize(tests);
	return status;
}
