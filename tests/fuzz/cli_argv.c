// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cli_argv.c - fuzz target: the CLI's command line, everything main()
 * does before a command runs (cli_parse_args()): the global options
 * (--json, --pretty, --pin, --map, --prog-id, --pid, --help), the command
 * table, and each command's parse() with its own options and checks
 * (load's --arena-mb, --init, --tunable; grow --bytes; trim --keep; stats
 * --watch; refill-agent --bytes, --interval-ms; demo's numbers; probe,
 * which takes none). The input's lines are the arguments. No command's
 * run() is called: nothing loads BPF, pins or opens a heap (nor probes
 * for an arena). Oracle: the status of a refusal is 0 (help) or 2; the
 * same argv parsed again gives the same answer (parse() resets its state;
 * getopt's too); cli_where() names the heap.
 */
#include <limits.h>
#include "fuzz.h"
#include "cli.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	unsetenv("POSIXLY_CORRECT");
	return 0;
}

static const struct cmd *parse(const uint8_t *data, size_t size, int *status, char *where)
{
	struct fuzz_argv a;
	const struct cmd *c;

	fuzz_argv_split(&a, "arena-alloc", data, size);
	*status = -1;
	c = cli_parse_args(a.argc, a.argv, status);
	if (!c && *status != 0 && *status != EXIT_USAGE)
		fuzz_fail("refused with exit status %d (0 or %d expected)", *status, EXIT_USAGE);
	if (c && cli_cmd(c->name) != c)
		fuzz_fail("cli_parse_args() gave a command that is not in the table");
	snprintf(where, PATH_MAX + 64, "%s", c ? cli_where() : "");
	fuzz_argv_free(&a);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char where1[PATH_MAX + 64], where2[PATH_MAX + 64];
	int status1, status2;
	const struct cmd *c1 = parse(data, size, &status1, where1);
	const struct cmd *c2 = parse(data, size, &status2, where2);

	if (c1 != c2 || (!c1 && status1 != status2) || strcmp(where1, where2))
		fuzz_fail("the same argv parsed twice: %s/%d/%s, then %s/%d/%s",
			  c1 ? c1->name : "-", status1, fuzz_show(where1),
			  c2 ? c2->name : "-", status2, fuzz_show(where2));
	return 0;
}
