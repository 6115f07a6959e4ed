// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe.c - can this process create BPF arena maps, and if not, why not:
 * aa_probe_arena() creates a one-page arena (as libbpf's own probe does),
 * gathers the facts that explain a refusal (the kernel's release, this
 * process's effective capabilities, the CPU's cx16 flag) and hands them to
 * aa__arena_diagnose(), a pure function the tests call with made-up facts.
 *
 * What each refusal means (the kernel's map_create() and arena_map_alloc()):
 *   EINVAL, E2BIG  the map type is unknown: Linux < 6.9, or a kernel built
 *                  without BPF arena                        -> -EOPNOTSUPP
 *   EPERM, EACCES  without CAP_BPF and CAP_SYS_ADMIN (bpf_capable()): the
 *                  capability check; with either: a policy of the host
 *                  (LSM, lockdown, container)               -> -EPERM
 *   ENOMEM         on Linux >= 7.0 without cmpxchg16b (x86 flag cx16) even
 *                  a one-page arena fails: its page array comes from
 *                  kmalloc_nolock(), which needs it         -> -ENODEV
 *                  otherwise out of memory (a memory cgroup) -> -ENOMEM
 *   anything else  said as it is                            -> -errno
 * And where the map can be created: a kernel page other than the
 * allocator's (AA_PAGE_SIZE, fixed at build time: a 16-KiB kernel needs
 * the PAGE_KB=16 build; the arena's pages are the kernel's) -> -EOPNOTSUPP
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include "internal.h"

#define CAP_BIT(cap)	(1ULL << (cap))
#ifndef CAP_BPF
#define CAP_BPF		39
#endif

/* --- Classification (pure) ----------------------------------------------- */

static const char *errno_name(int err, char *buf, size_t sz)
{
	const char *name = strerrorname_np(err);

	if (name)
		return name;
	snprintf(buf, sz, "errno %d", err);
	return buf;
}

/* f's release as "X.Y.Z", or "unknown release" when it has none. */
static const char *release(const struct aa__arena_facts *f, char *buf, size_t sz)
{
	if (!f->major)
		return "unknown release";
	snprintf(buf, sz, "%u.%u.%u", f->major, f->minor, f->patch);
	return buf;
}

static bool at_least(const struct aa__arena_facts *f, unsigned int major, unsigned int minor)
{
	return f->major > major || (f->major == major && f->minor >= minor);
}

/* The capabilities of f among CAP_BPF and CAP_SYS_ADMIN that are present
 * (want) or missing (!want), "A and B" or "A"; "" when there are none. */
static const char *caps_text(const struct aa__arena_facts *f, bool want, char *buf, size_t sz)
{
	bool bpf = !!(f->cap_eff & CAP_BIT(CAP_BPF)) == want;
	bool admin = !!(f->cap_eff & CAP_BIT(CAP_SYS_ADMIN)) == want;

	snprintf(buf, sz, "%s%s%s", bpf ? "CAP_BPF" : "", bpf && admin ? " and " : "",
		 admin ? "CAP_SYS_ADMIN" : "");
	return buf;
}

int aa__arena_diagnose(const struct aa__arena_facts *f, char *buf, size_t sz)
{
	char rel[48], caps[40], name[24];
	int err = f->err;

	if (!buf)
		sz = 0;
	if (!err && f->page_size && f->page_size != AA_PAGE_SIZE) {
		snprintf(buf, sz, "BPF arena maps can be created (Linux %s), but this kernel's "
			 "pages are %ld bytes and this arena-alloc manages %u-byte pages only "
			 "(build it with `make PAGE_KB=%ld`)",
			 release(f, rel, sizeof(rel)), f->page_size, AA_PAGE_SIZE,
			 f->page_size / 1024);
		return -EOPNOTSUPP;
	}
	if (!err) {
		snprintf(buf, sz, "BPF arena maps can be created (Linux %s)",
			 release(f, rel, sizeof(rel)));
		return 0;
	}
	if (err == EINVAL || err == E2BIG) {
		if (!at_least(f, 6, 9)) {
			snprintf(buf, sz, "BPF arena needs Linux >= 6.9: this kernel (%s) has no "
				 "BPF_MAP_TYPE_ARENA (creating one: %s)", release(f, rel, sizeof(rel)),
				 errno_name(err, name, sizeof(name)));
			return -EOPNOTSUPP;
		}
		if (err == EINVAL) {
			snprintf(buf, sz, "this kernel (%s) was built without BPF arena: creating a "
				 "BPF_MAP_TYPE_ARENA map gave EINVAL", release(f, rel, sizeof(rel)));
			return -EOPNOTSUPP;
		}
	}
	if (err == EPERM || err == EACCES) {
		if (!(f->cap_eff & (CAP_BIT(CAP_BPF) | CAP_BIT(CAP_SYS_ADMIN))))
			snprintf(buf, sz, "creating a BPF arena map needs CAP_BPF (or CAP_SYS_ADMIN) "
				 "and this process lacks %s (%s): run as root or grant CAP_BPF",
				 caps_text(f, false, caps, sizeof(caps)),
				 errno_name(err, name, sizeof(name)));
		else
			snprintf(buf, sz, "the kernel refused BPF arena maps for this process (%s) "
				 "although it has %s: a security policy of this host (LSM, "
				 "lockdown, container) forbids them", errno_name(err, name, sizeof(name)),
				 caps_text(f, true, caps, sizeof(caps)));
		return -EPERM;
	}
	if (err == ENOMEM && at_least(f, 7, 0) && f->cx16 == AA_CX16_ABSENT) {
		snprintf(buf, sz, "this CPU lacks cmpxchg16b (cx16), which BPF arena maps need on "
			 "Linux >= 7.0: this kernel (%s) refused even a one-page arena (ENOMEM)",
			 release(f, rel, sizeof(rel)));
		return -ENODEV;
	}
	if (err == ENOMEM) {
		snprintf(buf, sz, "creating a one-page BPF arena map failed: out of memory (ENOMEM): "
			 "a memory cgroup limit?%s", at_least(f, 7, 0) && f->cx16 == AA_CX16_UNKNOWN ?
			 " (or a CPU without cmpxchg16b: its flags are unknown)" : "");
		return -ENOMEM;
	}
	snprintf(buf, sz, "creating a BPF arena map failed: %s (%s)", strerror(err),
		 errno_name(err, name, sizeof(name)));
	return -err;
}

/* --- The facts of this process ------------------------------------------- */

/* Effective capabilities (capget(2), version 3: 64 bits); all of them for
 * root, none otherwise, when it fails. The CLI's checks use it too. */
__u64 aa__cap_eff(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &hdr, data))
		return geteuid() == 0 ? ~0ULL : 0;
	return data[0].effective | (__u64)data[1].effective << 32;
}

/* Whether the x86 "flags" line of /proc/cpuinfo lists cx16; unknown on
 * other architectures or when the file cannot be read. */
static enum aa__cx16 cpu_cx16(void)
{
	enum aa__cx16 r = AA_CX16_UNKNOWN;
	char line[4096];
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return r;
	while (r == AA_CX16_UNKNOWN && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5))
			r = strstr(line, " cx16") ? AA_CX16_PRESENT : AA_CX16_ABSENT;
	fclose(f);
	return r;
}

AA_API int aa_probe_arena(char *buf, size_t sz)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	struct aa__arena_facts f = {};
	struct utsname u;
	int fd;

	fd = bpf_map_create(BPF_MAP_TYPE_ARENA, NULL, 0, 0, 1, &opts);
	if (fd >= 0)
		close(fd);
	else
		f.err = errno;
	if (!uname(&u))
		sscanf(u.release, "%u.%u.%u", &f.major, &f.minor, &f.patch);
	if (f.err == EPERM || f.err == EACCES)
		f.cap_eff = aa__cap_eff();
	if (f.err == ENOMEM)
		f.cx16 = cpu_cx16();
	f.page_size = sysconf(_SC_PAGESIZE);
	return aa_err(aa__arena_diagnose(&f, buf, sz));
}

int aa__page_size_check(void)
{
	char why[AA_PROBE_LINE_SZ];
	int err;

	if (sysconf(_SC_PAGESIZE) == AA_PAGE_SIZE)
		return 0;
	err = aa_probe_arena(why, sizeof(why));
	pr_warn("%s\n", why);
	return err ? err : -EOPNOTSUPP;
}

/* --- Telling a refusal apart ----------------------------------------------- */

void aa__warn_arena_err(const char *where, int err)
{
	char why[AA_PROBE_LINE_SZ];

	if (err != -EPERM && err != -EACCES)
		pr_warn("%s: %s\n", where, strerror(-err));
	else if (aa_probe_arena(why, sizeof(why)) < 0)
		pr_warn("%s: %s\n", where, why);
	else	/* opening BPF objects by id needs CAP_SYS_ADMIN */
		pr_warn("%s: %s%s\n", where, strerror(-err),
			aa__cap_eff() & CAP_BIT(CAP_SYS_ADMIN) ? "" :
			" (this process lacks CAP_SYS_ADMIN: run as root)");
}
