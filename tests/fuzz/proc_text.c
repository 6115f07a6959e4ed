// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * proc_text.c - fuzz target: the parsers of kernel text files, on any
 * text: aa__fdinfo_arena_id() (/proc/PID/fdinfo/FD, aa_heap__open_pid())
 * and aa__cpu_list_count() (/sys/devices/system/cpu/possible,
 * aa_heap__init()). The first byte picks the parser, the rest is the
 * text. Oracles: an fdinfo id is nonzero only for text with a "map_type:"
 * line; a CPU list's count is -EINVAL or one more than the largest number
 * in the list (up to its first newline).
 */
#include "fuzz.h"
#include "internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	return 0;
}

static void fdinfo(const char *text)
{
	__u32 id = aa__fdinfo_arena_id(text);

	if (id && !strstr(text, "map_type:"))
		fuzz_fail("fdinfo %s: arena map id %u without a map_type line", fuzz_show(text), id);
}

static void cpu_list(const char *text)
{
	int got = aa__cpu_list_count(text);
	unsigned __int128 max = 0, v;
	const char *p = text;
	int any = 0;

	if (got == -EINVAL)
		return;
	if (got <= 0)
		fuzz_fail("CPU list %s: count %d", fuzz_show(text), got);
	while (*p && *p != '\n') {
		if (*p < '0' || *p > '9') {
			p++;
			continue;
		}
		for (v = 0; *p >= '0' && *p <= '9'; p++)
			v = v < ((unsigned __int128)1 << 100) ? v * 10 + (*p - '0') : v;
		max = !any || v > max ? v : max;
		any = 1;
	}
	if (!any || max + 1 != (unsigned __int128)got)
		fuzz_fail("CPU list %s: count %d, the largest number is %llu", fuzz_show(text), got,
			  (unsigned long long)max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	text = fuzz_str(data + 1, size - 1);
	if (data[0] % 2 == 0)
		fdinfo(text);
	else
		cpu_list(text);
	free(text);
	return 0;
}
