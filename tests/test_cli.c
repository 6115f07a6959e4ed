// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cli.c - the arena-alloc CLI (what `make run` runs): its demo
 * predicts the heap's counters from the size rules and must find them in
 * the mmap after each step.
 */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include "common.h"

Test(cli, demo_stats_match_the_workload)
{
	char cli[PATH_MAX + 32], cmd[PATH_MAX + 64], line[256];
	bool matched = false;
	FILE *p;

	if (!t_have_arena())
		cr_skip_test(AA_SKIP_REASON);
	t_cli_path(cli, sizeof(cli));
	snprintf(cmd, sizeof(cmd), "%s demo 2>&1", cli);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "demo: stats match the workload"))
			matched = true;
	cr_assert_eq(pclose(p), 0, "arena-alloc demo failed");
	cr_assert(matched, "the demo did not report matching stats");
}
