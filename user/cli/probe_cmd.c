// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe_cmd.c - `arena-alloc probe`: can this process create BPF arena
 * maps here (aa_probe_arena()), and if not, why not.
 *
 *   arena-alloc [-j|-p] probe
 *
 * One line on stdout, and the exit status says the same (scripts and the
 * Makefile decide by it whether BPF tests can run on this kernel):
 *   BPF arena: available (Linux <release>)       exit 0
 *   BPF arena: refused: <aa_probe_arena()'s line>  exit 1
 * With --json one object: available, errno (0 when available), error (its
 * name, "" when available), kernel (the release), reason (the line).
 * Bad usage exits 2, as for every command. Needs no privilege: a process
 * without capabilities is told which ones it lacks.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/utsname.h>
#include "cli.h"

int cmd_probe(void)
{
	char why[AA_PROBE_LINE_SZ];
	const char *name = NULL;
	struct utsname u;
	struct jw *w;
	int err;

	err = aa_probe_arena(why, sizeof(why));
	if (uname(&u))
		strcpy(u.release, "unknown");
	if (!cli.json) {
		if (err)
			printf("BPF arena: refused: %s\n", why);
		else
			printf("BPF arena: available (Linux %s)\n", u.release);
		return err ? 1 : 0;
	}
	if (err)
		name = strerrorname_np(-err);
	w = jw_new(stdout, cli.pretty);
	if (!w)
		return 1;
	jw_start_object(w);
	jw_name(w, "available");
	jw_bool(w, !err);
	jw_name(w, "errno");
	jw_int(w, -err);
	jw_kv_string(w, "error", name ? name : "");
	jw_kv_string(w, "kernel", u.release);
	jw_kv_string(w, "reason", why);
	jw_end_object(w);
	jw_destroy(w);
	return err ? 1 : 0;
}
