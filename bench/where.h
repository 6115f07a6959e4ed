/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * where.h - where a benchmark ran: kernel release, host or QEMU guest,
 * the guest's accelerator (TCG or KVM) and its vCPUs. Every table of
 * build/aa_bench and build/aa_bench_mem says it under its title, and the
 * JSON holds it as "where". Header-only (static functions): aa_bench
 * includes it through harness.h, bench/memory.c directly, and make bench
 * builds memory.c against the baseline release too, whose tree has none.
 *
 * Found once per process, the first answer winning:
 *
 *   QEMU guest   DMI sys_vendor "QEMU", or the CPUID hypervisor signature
 *                "TCGTCGTCGTCG" (only QEMU's TCG gives it), or /proc/cpuinfo's
 *                model name names QEMU, or AA_VMTEST_ACCEL and
 *                AA_VMTEST_CPUS both set (scripts/vmtest.sh exports them into
 *                the guest command; on the host AA_VMTEST_ACCEL alone is an
 *                input of vmtest.sh, not a sign of a guest);
 *   accelerator  a guest's: AA_VMTEST_ACCEL (tcg|kvm); else the CPUID
 *                hypervisor signature ("TCGTCGTCGTCG": tcg, "KVMKVMKVM":
 *                kvm); else "QEMU TCG" in the model name: tcg; else unknown;
 *   CPUs         a guest's: AA_VMTEST_CPUS; else the online CPUs.
 *
 * Anything else is the host. A host that is itself a virtual machine (the
 * hypervisor CPU flag without QEMU's marks, as on this project's Firecracker
 * machines: "KVMKVMKVM" and no DMI) says so: "host (itself a KVM virtual
 * machine)".
 *
 * Measured: the 6.12 vmtest guest under TCG has sys_vendor "QEMU", model
 * name "QEMU TCG CPU version 2.5+" and signature "TCGTCGTCGTCG"; this
 * project's 6.18 host has no DMI, model name "AMD EPYC" and "KVMKVMKVM".
 */
#ifndef __AA_BENCH_WHERE_H
#define __AA_BENCH_WHERE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

struct where {
	struct utsname u;
	bool guest;		/* a QEMU guest */
	char hv_sig[13];	/* CPUID leaf 0x40000000, "" without the flag */
	const char *hv;		/* hv_sig's hypervisor by name, or hv_sig */
	const char *accel;	/* guest: "tcg", "kvm" or "unknown"; host: NULL */
	const char *accel_from;	/* "AA_VMTEST_ACCEL", "cpuid", "cpuinfo", "none" */
	int cpus;		/* guest: its vCPUs; host: online CPUs */
	char str[256];		/* the one line: where_str() */
};

/* --- Detection ----------------------------------------------------------- */

static void where_hv_sig(char sig[13])
{
	sig[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1U << 31)))
		return;		/* no hypervisor flag: bare metal */
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = 0;
#endif
}

static const char *where_hv_name(const char *sig)
{
	static const char *const known[][2] = {
		{ "KVMKVMKVM", "KVM" }, { "TCGTCGTCGTCG", "TCG" },
		{ "Microsoft Hv", "Hyper-V" }, { "VMwareVMware", "VMware" },
		{ "XenVMMXenVMM", "Xen" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(sig, known[i][0]))
			return known[i][1];
	return sig;
}

/* The first line of path that starts with key (key NULL: the first line)
 * into buf, newline cut; false when there is none. */
static bool where_read_line(const char *path, const char *key, char *buf, size_t sz)
{
	FILE *f = fopen(path, "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(buf, sz, f))
		found = !key || !strncmp(buf, key, strlen(key));
	fclose(f);
	if (found)
		buf[strcspn(buf, "\n")] = 0;
	return found;
}

static const char *where_env_accel(void)
{
	const char *a = getenv("AA_VMTEST_ACCEL");

	return a && (!strcmp(a, "tcg") || !strcmp(a, "kvm")) ? a : NULL;
}

static int where_env_cpus(void)
{
	const char *c = getenv("AA_VMTEST_CPUS");
	int n = c ? atoi(c) : 0;

	return n > 0 ? n : 0;
}

static void where_detect(struct where *w)
{
	char vendor[128] = "", model[256] = "";
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int env_cpus = where_env_cpus();

	uname(&w->u);
	where_hv_sig(w->hv_sig);
	w->hv = where_hv_name(w->hv_sig);
	where_read_line("/sys/devices/virtual/dmi/id/sys_vendor", NULL, vendor, sizeof(vendor));
	where_read_line("/proc/cpuinfo", "model name", model, sizeof(model));
	w->guest = !strcmp(vendor, "QEMU") || !strcmp(w->hv_sig, "TCGTCGTCGTCG") ||
		   strstr(model, "QEMU") || (where_env_accel() && env_cpus);
	w->cpus = online > 0 ? (int)online : 0;
	if (!w->guest)
		return;
	if (env_cpus)
		w->cpus = env_cpus;
	if (where_env_accel()) {
		w->accel = where_env_accel();
		w->accel_from = "AA_VMTEST_ACCEL";
	} else if (!strcmp(w->hv, "TCG") || !strcmp(w->hv, "KVM")) {
		w->accel = !strcmp(w->hv, "TCG") ? "tcg" : "kvm";
		w->accel_from = "cpuid";
	} else if (strstr(model, "QEMU TCG")) {
		w->accel = "tcg";
		w->accel_from = "cpuinfo";
	} else {
		w->accel = "unknown";
		w->accel_from = "none";
	}
}

/* --- What the tables print ------------------------------------------------ */

static const struct where *where_get(void)
{
	static struct where w;
	static bool done;
	size_t n;

	if (done)
		return &w;
	done = true;
	w.accel_from = "none";
	where_detect(&w);
	n = snprintf(w.str, sizeof(w.str), "kernel %s %s, ", w.u.release, w.u.machine);
	if (w.guest)
		snprintf(w.str + n, sizeof(w.str) - n, "QEMU guest, %s, %d vCPU%s",
			 !strcmp(w.accel, "tcg") ? "TCG" : !strcmp(w.accel, "kvm") ? "KVM"
						      : "accelerator unknown",
			 w.cpus, w.cpus == 1 ? "" : "s");
	else if (w.hv_sig[0])
		snprintf(w.str + n, sizeof(w.str) - n, "host (itself a %s virtual machine), "
			 "%d CPU%s", w.hv, w.cpus, w.cpus == 1 ? "" : "s");
	else
		snprintf(w.str + n, sizeof(w.str) - n, "host, %d CPU%s", w.cpus,
			 w.cpus == 1 ? "" : "s");
	return &w;
}

/* "kernel 6.12.118+deb12-amd64 x86_64, QEMU guest, TCG, 2 vCPUs" */
static const char *where_str(void)
{
	return where_get()->str;
}

static bool where_tcg(void)
{
	const struct where *w = where_get();

	return w->guest && !strcmp(w->accel, "tcg");
}

/*
 * Under TCG, QEMU translates the JIT-ed BPF and the kernel's own C alike,
 * but not at the same cost (JIT-ed BPF 4.5-5x slower, syscalls ~2x): a
 * ratio of two BPF code paths carries over to hardware, one of BPF code
 * to the kernel's (bpf_obj_new, kernel maps) does not.
 */
static const char *where_caution(void)
{
	return where_tcg() ? "caution (TCG): only ratios between BPF code paths carry over to "
			     "hardware (alloc/floor measured 2.4x under TCG, 2.6x on a host); "
			     "ratios to the kernel's own code (bpf_obj_new, kernel maps) do not"
			   : NULL;
}

/* A table's caption line, under its title: where it ran; vs_kernel: the
 * table compares with the kernel's own code, and gets the TCG caution. */
static void where_caption(FILE *f, const char *indent, bool vs_kernel)
{
	fprintf(f, "%swhere: %s\n", indent, where_str());
	if (vs_kernel && where_caution())
		fprintf(f, "%s%s\n", indent, where_caution());
}

#endif
