// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * jit_dump.c - build/bench/jit_dump: disassemble the JIT-ed functions of a
 * loaded BPF program and count their x86 instructions.
 *
 * Debian's bpftool is built without a disassembler ("No JIT disassembly
 * support"), so this fetches the image with bpf_prog_get_info_by_fd()
 * (jited_prog_insns, split by jited_func_lens, named through
 * /proc/kallsyms) and hands each function to `objdump -b binary`.
 *
 * Usage: jit_dump PINNED_PROG [NAME_SUBSTRING...]
 *   e.g. jit_dump /sys/fs/bpf/aab/bench_lat aa_malloc_u64 aa_cpu_cache_alloc
 * Prints, per matching function: name, bytes, instructions, the listing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static const char *ksym_name(__u64 addr, char *buf, size_t sz)
{
	unsigned long long a;
	char line[512], type, name[400];
	FILE *f = fopen("/proc/kallsyms", "r");

	snprintf(buf, sz, "0x%llx", (unsigned long long)addr);
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %399s", &a, &type, name) == 3 && a == addr) {
			snprintf(buf, sz, "%s", name);
			break;
		}
	fclose(f);
	return buf;
}

static bool wanted(const char *name, int argc, char **argv)
{
	if (argc <= 2)
		return true;
	for (int i = 2; i < argc; i++)
		if (strstr(name, argv[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), nf, i, off = 0;
	__u32 *lens;
	__u64 *syms;
	__u8 *img;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PINNED_PROG [NAME_SUBSTRING...]\n", argv[0]);
		return 2;
	}
	fd = bpf_obj_get(argv[1]);
	if (fd < 0 || bpf_prog_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	nf = info.nr_jited_func_lens;
	img = calloc(1, info.jited_prog_len);
	lens = calloc(nf, sizeof(*lens));
	syms = calloc(info.nr_jited_ksyms, sizeof(*syms));
	if (!img || !lens || !syms)
		return 1;
	{
		struct bpf_prog_info q = {
			.jited_prog_len = info.jited_prog_len,
			.jited_prog_insns = (__u64)(unsigned long)img,
			.nr_jited_func_lens = nf,
			.jited_func_lens = (__u64)(unsigned long)lens,
			.nr_jited_ksyms = info.nr_jited_ksyms,
			.jited_ksyms = (__u64)(unsigned long)syms,
		};

		len = sizeof(q);
		if (bpf_prog_get_info_by_fd(fd, &q, &len)) {
			fprintf(stderr, "prog info: %s\n", strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < nf; off += lens[i], i++) {
		char name[400], path[] = "/tmp/jit_dump.XXXXXX", cmd[512], line[512];
		int tfd, insns = 0;
		FILE *p;

		ksym_name(i < info.nr_jited_ksyms ? syms[i] : 0, name, sizeof(name));
		if (!wanted(name, argc, argv))
			continue;
		tfd = mkstemp(path);
		if (tfd < 0 || write(tfd, img + off, lens[i]) != (ssize_t)lens[i])
			return 1;
		close(tfd);
		snprintf(cmd, sizeof(cmd),
			 "objdump -D -b binary -mi386:x86-64 --no-show-raw-insn %s | "
			 "sed -n '/<.data>:/,$p' | tail -n +2", path);
		printf("=== %s: %u bytes\n", name, lens[i]);
		p = popen(cmd, "r");
		while (p && fgets(line, sizeof(line), p)) {
			if (strchr(line, ':'))
				insns++;
			fputs(line, stdout);
		}
		if (p)
			pclose(p);
		printf("=== %s: %d instructions\n\n", name, insns);
		unlink(path);
	}
	return 0;
}
