// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_probe.c - aa_probe_arena(): can this process create BPF arena maps,
 * and the one line that says why not. The classification
 * (aa__arena_diagnose()) is checked with made-up facts for every refusal
 * it tells apart; then the probe on the running kernel against a raw
 * bpf_map_create(), what aa_heap__open() and the CLI say with it. None of
 * it needs an arena: it runs on any host.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdarg.h>
#include <sys/utsname.h>
#include <linux/capability.h>
#include <jansson.h>
#include "common.h"
#include "../user/internal.h"

#define BPF	(1ULL << 39)	/* CAP_BPF */
#define ADMIN	(1ULL << CAP_SYS_ADMIN)

static char line[AA_PROBE_LINE_SZ];

/* aa__arena_diagnose() of these facts into line; its return value. */
static int diagnose(int err, unsigned int major, unsigned int minor, __u64 caps,
		    enum aa__cx16 cx16)
{
	struct aa__arena_facts f = { .err = err, .major = major, .minor = minor, .patch = 0,
				     .cap_eff = caps, .cx16 = cx16 };

	memset(line, 'X', sizeof(line));
	return aa__arena_diagnose(&f, line, sizeof(line));
}

static void has(const char *words)
{
	cr_assert(strstr(line, words), "\"%s\" does not say \"%s\"", line, words);
}

static void lacks(const char *words)
{
	cr_assert_null(strstr(line, words), "\"%s\" says \"%s\"", line, words);
}

/* --- Classification ------------------------------------------------------- */

Test(probe, a_created_map_is_available)
{
	cr_assert_eq(diagnose(0, 6, 12, 0, AA_CX16_UNKNOWN), 0);
	has("BPF arena maps can be created (Linux 6.12.0)");
}

/* An arena's pages are the kernel's, and the allocator's page is fixed at
 * build time: a kernel whose page differs (Debian's arm64-16k for the
 * 4-KiB build) is refused, with the build that fits it. */
Test(probe, a_kernel_page_other_than_the_allocators_is_refused)
{
	long other = AA_PAGE_SIZE == 4096 ? 16384 : 4096;
	struct aa__arena_facts f = { .major = 7, .minor = 3, .page_size = other };
	char want[160];

	cr_assert_eq(aa__arena_diagnose(&f, line, sizeof(line)), -EOPNOTSUPP);
	snprintf(want, sizeof(want), "BPF arena maps can be created (Linux 7.3.0), but this "
		 "kernel's pages are %ld bytes", other);
	has(want);
	snprintf(want, sizeof(want), "%u-byte pages only (build it with `make PAGE_KB=%ld`)",
		 AA_PAGE_SIZE, other / 1024);
	has(want);
	f.page_size = AA_PAGE_SIZE;
	cr_assert_eq(aa__arena_diagnose(&f, line, sizeof(line)), 0);
	lacks("but");
}

Test(probe, einval_on_6_8_is_a_kernel_without_arena)
{
	cr_assert_eq(diagnose(EINVAL, 6, 8, BPF | ADMIN, AA_CX16_UNKNOWN), -EOPNOTSUPP);
	has("BPF arena needs Linux >= 6.9: this kernel (6.8.0) has no BPF_MAP_TYPE_ARENA");
	has("EINVAL");
	cr_assert_null(strchr(line, '\n'));
}

Test(probe, e2big_on_an_older_kernel_is_a_kernel_without_arena)
{
	cr_assert_eq(diagnose(E2BIG, 5, 4, BPF | ADMIN, AA_CX16_UNKNOWN), -EOPNOTSUPP);
	has("needs Linux >= 6.9: this kernel (5.4.0)");
	has("E2BIG");
}

Test(probe, einval_of_an_unknown_release_is_a_kernel_without_arena)
{
	cr_assert_eq(diagnose(EINVAL, 0, 0, BPF | ADMIN, AA_CX16_UNKNOWN), -EOPNOTSUPP);
	has("this kernel (unknown release) has no BPF_MAP_TYPE_ARENA");
}

Test(probe, einval_on_6_12_is_a_kernel_built_without_arena)
{
	cr_assert_eq(diagnose(EINVAL, 6, 12, BPF | ADMIN, AA_CX16_UNKNOWN), -EOPNOTSUPP);
	has("this kernel (6.12.0) was built without BPF arena");
	has("EINVAL");
	lacks("needs Linux >= 6.9");
}

Test(probe, eperm_without_capabilities_names_both)
{
	cr_assert_eq(diagnose(EPERM, 6, 12, 0, AA_CX16_UNKNOWN), -EPERM);
	has("lacks CAP_BPF and CAP_SYS_ADMIN");
	has("run as root or grant CAP_BPF");
	has("EPERM");
	lacks("security policy");
}

Test(probe, eacces_without_capabilities_is_eperm)
{
	cr_assert_eq(diagnose(EACCES, 6, 18, 1ULL << CAP_NET_ADMIN, AA_CX16_UNKNOWN), -EPERM);
	has("lacks CAP_BPF and CAP_SYS_ADMIN");
	has("EACCES");
}

/* bpf_capable() is CAP_BPF or CAP_SYS_ADMIN: with either one the kernel's
 * own check passes, so a refusal is the host's. */
Test(probe, eperm_with_only_cap_bpf_is_a_policy)
{
	cr_assert_eq(diagnose(EPERM, 6, 18, BPF, AA_CX16_UNKNOWN), -EPERM);
	has("the kernel refused BPF arena maps for this process (EPERM) although it has "
	    "CAP_BPF: a security policy of this host");
	lacks("CAP_SYS_ADMIN");
	lacks("run as root");
}

Test(probe, eperm_with_only_cap_sys_admin_is_a_policy)
{
	cr_assert_eq(diagnose(EPERM, 6, 18, ADMIN, AA_CX16_UNKNOWN), -EPERM);
	has("although it has CAP_SYS_ADMIN: a security policy");
	lacks("CAP_BPF");
}

Test(probe, eperm_with_both_capabilities_is_a_policy)
{
	cr_assert_eq(diagnose(EPERM, 6, 18, ~0ULL, AA_CX16_UNKNOWN), -EPERM);
	has("the kernel refused BPF arena maps for this process (EPERM) although it has "
	    "CAP_BPF and CAP_SYS_ADMIN: a security policy of this host (LSM, lockdown, "
	    "container) forbids them");
	lacks("run as root");
	lacks("ulimit");
}

Test(probe, enomem_on_7_3_without_cx16_is_the_cpu)
{
	cr_assert_eq(diagnose(ENOMEM, 7, 3, ~0ULL, AA_CX16_ABSENT), -ENODEV);
	has("this CPU lacks cmpxchg16b (cx16), which BPF arena maps need on Linux >= 7.0");
	has("(7.3.0)");
	has("ENOMEM");
	lacks("out of memory");
}

Test(probe, enomem_on_7_3_with_cx16_is_out_of_memory)
{
	cr_assert_eq(diagnose(ENOMEM, 7, 3, ~0ULL, AA_CX16_PRESENT), -ENOMEM);
	has("out of memory (ENOMEM)");
	has("memory cgroup");
	lacks("cmpxchg16b");
}

Test(probe, enomem_on_7_3_with_unknown_cpu_flags_says_both)
{
	cr_assert_eq(diagnose(ENOMEM, 7, 3, ~0ULL, AA_CX16_UNKNOWN), -ENOMEM);
	has("out of memory (ENOMEM)");
	has("a CPU without cmpxchg16b: its flags are unknown");
}

Test(probe, enomem_on_6_12_is_out_of_memory_whatever_the_cpu)
{
	cr_assert_eq(diagnose(ENOMEM, 6, 12, ~0ULL, AA_CX16_ABSENT), -ENOMEM);
	has("out of memory (ENOMEM)");
	lacks("cmpxchg16b");
}

Test(probe, an_odd_errno_is_said_as_it_is)
{
	cr_assert_eq(diagnose(ENOSYS, 6, 12, ~0ULL, AA_CX16_UNKNOWN), -ENOSYS);
	has("creating a BPF arena map failed: Function not implemented (ENOSYS)");
	cr_assert_eq(diagnose(E2BIG, 6, 12, ~0ULL, AA_CX16_UNKNOWN), -E2BIG);
	has("creating a BPF arena map failed: ");
	has("(E2BIG)");
}

Test(probe, every_line_fits_the_documented_buffer)
{
	static const int errs[] = { 0, EINVAL, E2BIG, EPERM, EACCES, ENOMEM, ENOSYS, EFAULT };
	static const unsigned int rel[][2] = { { 0, 0 }, { 5, 4 }, { 6, 12 }, { 7, 3 },
					       { 4294967295U, 4294967295U } };
	static const __u64 capsets[] = { 0, BPF, ADMIN, BPF | ADMIN };
	size_t e, r, c;
	int cx;

	for (e = 0; e < sizeof(errs) / sizeof(errs[0]); e++)
		for (r = 0; r < sizeof(rel) / sizeof(rel[0]); r++)
			for (c = 0; c < sizeof(capsets) / sizeof(capsets[0]); c++)
				for (cx = AA_CX16_UNKNOWN; cx <= AA_CX16_ABSENT; cx++) {
					diagnose(errs[e], rel[r][0], rel[r][1], capsets[c], cx);
					cr_assert_lt(strlen(line), AA_PROBE_LINE_SZ - 1,
						     "cut at %zu bytes: %s", strlen(line), line);
					cr_assert_null(strchr(line, '\n'));
				}
}

Test(probe, a_null_or_tiny_buffer_is_safe)
{
	struct aa__arena_facts f = { .err = EPERM, .major = 6, .minor = 18, .cap_eff = ~0ULL };
	char small[16];

	cr_assert_eq(aa__arena_diagnose(&f, NULL, 0), -EPERM);
	cr_assert_eq(aa__arena_diagnose(&f, NULL, 100), -EPERM);
	memset(small, 'X', sizeof(small));
	cr_assert_eq(aa__arena_diagnose(&f, small, 0), -EPERM);
	cr_assert_eq(small[0], 'X', "sz 0 wrote");
	cr_assert_eq(aa__arena_diagnose(&f, small, 1), -EPERM);
	cr_assert_eq(small[0], 0);
	cr_assert_eq(small[1], 'X');
	cr_assert_eq(aa__arena_diagnose(&f, small, 8), -EPERM);
	cr_assert_str_eq(small, "the ker");
	cr_assert_eq(small[8], 'X', "wrote past sz");
	cr_assert_eq(aa_probe_arena(NULL, 0) == 0, aa_probe_arena(small, sizeof(small)) == 0);
}

/* --- The running kernel ---------------------------------------------------- */

/* A one-page arena the way libbpf's probe makes it: -errno, or 0. */
static int raw_create(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARENA, NULL, 0, 0, 1, &o);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

Test(probe, the_probe_agrees_with_a_raw_map_create)
{
	int raw = raw_create(), r;

	errno = 0;
	r = aa_probe_arena(line, sizeof(line));
	cr_log_info("raw create: %d; probe: %d: %s", raw, r, line);
	cr_assert_eq(r == 0, raw == 0, "raw create %d, probe %d: %s", raw, r, line);
	if (!raw) {
		has("BPF arena maps can be created");
		return;
	}
	cr_assert_eq(errno, -r, "errno %d for %d", errno, r);
	has(strerrorname_np(-raw));	/* the line names the kernel's errno */
	switch (-raw) {
	case EPERM: case EACCES:
		cr_assert_eq(r, -EPERM);
		break;
	case EINVAL:
		cr_assert_eq(r, -EOPNOTSUPP);
		break;
	case ENOMEM:
		cr_assert(r == -ENOMEM || r == -ENODEV, "%d", r);
		break;
	case E2BIG:
		cr_assert(r == -EOPNOTSUPP || r == -E2BIG, "%d", r);
		break;
	default:
		cr_assert_eq(r, raw);
	}
}

static __u64 caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	cr_assert_eq(syscall(SYS_capget, &hdr, d), 0);
	return d[0].effective | (__u64)d[1].effective << 32;
}

/* This machine's host kernel: EPERM for arena maps, as root. */
Test(probe, a_host_that_refuses_in_spite_of_the_capabilities_is_named)
{
	if (raw_create() != -EPERM || (caps() & (BPF | ADMIN)) != (BPF | ADMIN))
		cr_skip_test("this kernel does not refuse arena maps to a process with CAP_BPF "
			     "and CAP_SYS_ADMIN");
	cr_assert_eq(aa_probe_arena(line, sizeof(line)), -EPERM);
	cr_assert_str_eq(line, "the kernel refused BPF arena maps for this process (EPERM) "
			 "although it has CAP_BPF and CAP_SYS_ADMIN: a security policy of this "
			 "host (LSM, lockdown, container) forbids them");
}

/* --- What the loader and the CLI say with it ------------------------------ */

static char said[4096];
static int nr_said, nr_libbpf;

static int keep_warnings(enum aa_print_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(said);

	if (level != AA_WARN)
		return 0;
	nr_said++;
	return vsnprintf(said + n, sizeof(said) - n, fmt, ap);
}

static int count_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)fmt, (void)ap;
	nr_libbpf += level != LIBBPF_DEBUG;
	return 0;
}

Test(probe, aa_heap__open_says_the_probes_line_once_and_loads_nothing)
{
	char want[AA_PROBE_LINE_SZ + 32];
	struct aa_heap *h;
	int r = aa_probe_arena(line, sizeof(line));

	if (!r)
		cr_skip_test("this process can create arena maps");
	aa_set_print(keep_warnings);
	libbpf_set_print(count_libbpf);
	h = aa_heap__open(NULL);
	cr_assert_null(h);
	cr_assert_eq(errno, -r, "errno %d, the probe's %d", errno, -r);
	snprintf(want, sizeof(want), "arena-alloc: %s\n", line);
	cr_assert_str_eq(said, want);
	cr_assert_eq(nr_said, 1);
	cr_assert_eq(nr_libbpf, 0, "libbpf printed %d messages (it loaded something)", nr_libbpf);
}

Test(probe, the_cli_probe_says_what_the_library_says)
{
	char cli[PATH_MAX + 32], cmd[PATH_MAX + 96], out[1024], want[AA_PROBE_LINE_SZ + 64];
	struct utsname u;
	int r = aa_probe_arena(line, sizeof(line)), st;

	t_cli_path(cli, sizeof(cli));
	cr_assert_eq(uname(&u), 0);
	if (r)
		snprintf(want, sizeof(want), "BPF arena: refused: %s\n", line);
	else
		snprintf(want, sizeof(want), "BPF arena: available (Linux %s)\n", u.release);
	snprintf(cmd, sizeof(cmd), "%s probe", cli);
	st = t_read_cmd(cmd, out, sizeof(out));
	cr_assert_eq(st, r ? 1 : 0, "exit %d for probe %d", st, r);
	cr_assert_str_eq(out, want);

	snprintf(cmd, sizeof(cmd), "%s probe extra 2>/dev/null", cli);
	cr_assert_eq(t_read_cmd(cmd, NULL, 0), 2);	/* bad usage */
	snprintf(cmd, sizeof(cmd), "%s probe --help", cli);
	cr_assert_eq(t_read_cmd(cmd, NULL, 0), 0);
}

Test(probe, the_cli_probe_json_has_every_field)
{
	char cli[PATH_MAX + 32], cmd[PATH_MAX + 96], out[2048];
	int r = aa_probe_arena(line, sizeof(line)), st;
	json_error_t jerr;
	struct utsname u;
	json_t *j;

	t_cli_path(cli, sizeof(cli));
	cr_assert_eq(uname(&u), 0);
	snprintf(cmd, sizeof(cmd), "%s -j probe", cli);
	st = t_read_cmd(cmd, out, sizeof(out));
	cr_assert_eq(st, r ? 1 : 0);
	j = json_loads(out, 0, &jerr);
	cr_assert_not_null(j, "%s: %s", out, jerr.text);
	cr_assert_eq(json_is_true(json_object_get(j, "available")), !r, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(j, "errno")), -r, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(j, "error")),
			 r ? strerrorname_np(-r) : "");
	cr_assert_str_eq(json_string_value(json_object_get(j, "kernel")), u.release);
	cr_assert_str_eq(json_string_value(json_object_get(j, "reason")), line);
	json_decref(j);
}

Test(probe, the_demo_says_the_probes_line_not_run_as_root)
{
	char cli[PATH_MAX + 32], cmd[PATH_MAX + 96], out[8192];
	int r = aa_probe_arena(line, sizeof(line));

	if (!r)
		cr_skip_test("this process can create arena maps (cli/demo runs the demo)");
	if (!(caps() & (BPF | ADMIN)))
		cr_skip_test("without CAP_BPF or CAP_SYS_ADMIN the demo says run as root");
	t_cli_path(cli, sizeof(cli));
	snprintf(cmd, sizeof(cmd), "%s demo 2>&1", cli);
	cr_assert_eq(t_read_cmd(cmd, out, sizeof(out)), 1);
	cr_assert(strstr(out, line), "the demo said: %s", out);
	cr_assert_null(strstr(out, "run as root"), "%s", out);
	cr_assert_null(strstr(out, "ulimit"), "%s", out);
}
