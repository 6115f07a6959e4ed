// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cli.c - the arena-alloc CLI (what `make run` runs): its demo
 * predicts the heap's counters from the size rules and must find them in
 * the mmap after each step: a syscall program's batch, then a tc
 * program's runs. It ends with the stats and dump reports.
 */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include "common.h"

Test(cli, demo_stats_match_the_workload)
{
	static const char *const want[] = {
		"1. a syscall program allocated the objects",
		"2. a tc program ran 5000 times: 5000 allocations",
		"0 NULLs, 0 refused frees, 0 bad stamps",
		"heap check: ok",
		"$ arena-alloc stats",
		"$ arena-alloc dump",
		"free pages in blocks of at least N pages:",
		"demo: stats match the workload",
	};
	char cli[PATH_MAX + 32], cmd[PATH_MAX + 64], line[512];
	unsigned int seen = 0, matches = 0, i;
	FILE *p;

	t_need_arena();
	t_cli_path(cli, sizeof(cli));
	snprintf(cmd, sizeof(cmd), "%s demo --runs 5000 2>&1", cli);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (strstr(line, want[i]))
				seen |= 1U << i;
		matches += !!strstr(line, "-> match");
		cr_assert_null(strstr(line, "MISMATCH"), "%s", line);
	}
	cr_assert_eq(pclose(p), 0, "arena-alloc demo failed");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(seen & (1U << i), "the demo never said \"%s\"", want[i]);
	cr_assert_eq(matches, 4, "4 checks of the stats, %u matched", matches);
}
