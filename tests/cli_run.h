/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cli_run.h - what the CLI's test files share: a pin directory per test
 * process, the built binary next to aa_tests, running it and reading its
 * JSON and its refusals.
 */
#ifndef __AA_TESTS_CLI_RUN_H
#define __AA_TESTS_CLI_RUN_H

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include "common.h"

static char pin[64], cli[PATH_MAX + 32];

static inline void cli_setup(void)
{
	t_need_arena();
	t_cli_path(cli, sizeof(cli));
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/aa-cli-test-%d", getpid());
}

static inline void cli_teardown(void)
{
	char cmd[PATH_MAX + 128];

	snprintf(cmd, sizeof(cmd), "%s --pin %s unload >/dev/null 2>&1", cli, pin);
	if (system(cmd)) {
		/* nothing was pinned: fine */
	}
	snprintf(cmd, sizeof(cmd), "%s/flows_arena", pin);
	unlink(cmd);	/* finds_an_embedders_heap...'s pin */
	rmdir(pin);	/* a test that failed half-way */
}

/* Run `arena-alloc --pin <pin> ARGS`; its stdout (and stderr if `both`)
 * into out. Returns its exit status. */
__attribute__((format(printf, 4, 5)))
static inline int run(char *out, size_t sz, bool both, const char *fmt, ...)
{
	char args[512], cmd[PATH_MAX + 640];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s --pin %s %s %s", cli, pin, args,
		 both ? "2>&1" : "2>/dev/null");
	return t_read_cmd(cmd, out, sz);
}

static inline json_t *run_json(const char *what)
{
	static char out[1 << 16];
	json_error_t e;
	json_t *j;

	cr_assert_eq(run(out, sizeof(out), false, "-j %s", what), 0, "%s failed", what);
	j = json_loads(out, JSON_REJECT_DUPLICATES, &e);
	cr_assert_not_null(j, "%s: not JSON (%s at line %d): %.200s", what, e.text, e.line, out);
	return j;
}

static inline json_int_t jint(json_t *obj, const char *path)
{
	json_t *v = json_object_get(obj, path);

	cr_assert(json_is_integer(v), "no integer '%s'", path);
	return json_integer_value(v);
}

/* Bad input: the exit status (2 usage, 1 failure) and a message naming the
 * cause. */
static inline void bad(int want, const char *msg, const char *args)
{
	char out[4096];
	int rc = run(out, sizeof(out), true, "%s", args);

	cr_assert_eq(rc, want, "'%s' exited %d, not %d: %s", args, rc, want, out);
	cr_assert(strstr(out, msg), "'%s' said '%s', not '%s'", args, out, msg);
}

#endif /* __AA_TESTS_CLI_RUN_H */
