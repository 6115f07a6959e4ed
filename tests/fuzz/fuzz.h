/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fuzz.h - what the libFuzzer targets of tests/fuzz/ share (README.md
 * there lists the targets).
 *
 * Every target is one LLVMFuzzerTestOneInput() built with clang-19
 * -fsanitize=fuzzer,address,undefined against the sources of user/ and
 * user/cli/ compiled the same way (build/fuzz/, `make fuzz`). A target
 * calls parsers only: nothing loads BPF, pins or talks to the kernel. Each
 * input is copied into buffers of its exact size, so that AddressSanitizer
 * sees a read one byte past the end. A target that finds a result its
 * oracle does not allow calls fuzz_fail(): the message, then abort(),
 * which libFuzzer reports as a crash with the input saved.
 */
#ifndef __AA_FUZZ_H
#define __AA_FUZZ_H

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "arena_alloc.h"

/* fd 2 as it was at start: fuzz.sh runs the targets with
 * -close_fd_mask=3 (the parsers' messages would fill the log), which
 * closes fd 2 after this copy is made. */
static int fuzz_err_fd = 2;

__attribute__((constructor))
static void fuzz_keep_stderr(void)
{
	int fd = dup(2);

	if (fd >= 0)
		fuzz_err_fd = fd;
}

__attribute__((format(printf, 1, 2), noreturn))
static void fuzz_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dprintf(fuzz_err_fd, "fuzz: oracle: %s\n", msg);
	abort();
}

/* s for a message: C escapes for what is not printable, at most ~300
 * bytes; four buffers in turn, so one message may show four strings. */
static const char *fuzz_show(const char *s)
{
	static char bufs[4][1300];
	static int next;
	char *b = bufs[next++ % 4], *p = b;

	for (; *s && p < b + 1200; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			p += sprintf(p, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			p += sprintf(p, "\\x%02x", c);
		else
			*p++ = c;
	}
	strcpy(p, *s ? "..." : "");
	return b;
}

/* data[0 .. size) as a string of its own (NUL-terminated, malloc()ed to
 * the byte: a read past the NUL is a heap overflow). Bytes after a NUL in
 * data are not part of it. */
static char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* The library's messages are formatted (format bugs show) into a buffer
 * and dropped: a fuzz run makes millions of them. */
static int fuzz_quiet_print(enum aa_print_level level, const char *fmt, va_list ap)
{
	char buf[512];

	(void)level;
	return vsnprintf(buf, sizeof(buf), fmt, ap);
}

/* The oracle of the library's values (aa_tunables__set(), the
 * ARENA_ALLOC_<KEY> environment, the CLI's sizes), written apart from
 * the parser in user/tunables.c: optional white space and '+', decimal
 * digits, then with sized K, M or G (either case, powers of 1024) or
 * nothing; never a '-'. 0 and the value; -EINVAL for a string that is not
 * such a number, -ERANGE for one past 64 bits or outside min .. max. */
static int fuzz_ref_value(const char *s, bool sized, __u64 min, __u64 max, __u64 *out)
{
	static const char units[] = "KMG";
	unsigned __int128 v = 0;
	unsigned int shift = 0;
	const char *p = s, *unit;
	int digits = 0;

	if (strchr(s, '-'))
		return -EINVAL;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '+')
		p++;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (v <= ~0ULL)		/* past 64 bits it stays past */
			v = v * 10 + (*p - '0');
	if (!digits)
		return -EINVAL;
	/* K, M, G: 2^10, 2^20, 2^30 */
	if (sized && *p && (unit = strchr(units, toupper((unsigned char)*p))))
		shift = 10 * (unit - units + 1), p++;
	if (*p)
		return -EINVAL;
	v <<= shift;
	if (v > ~0ULL || v < min || v > max)
		return -ERANGE;
	*out = (__u64)v;
	return 0;
}

/* The oracle of the CLI's sizes (cli_size.c): 1 and the value, or 0 for a
 * string that is not a size. */
static int fuzz_ref_size(const char *s, __u64 *out)
{
	return !fuzz_ref_value(s, true, 0, ~0ULL, out);
}

/* The oracle's tunables (env_tunables.c, cli_tunable.c), in the order the
 * library reads their ARENA_ALLOC_<KEY> variables: whether a value is a
 * size, whether the key is per class (KEY:SIZE picks one), its range. */
static const struct fuzz_ref_tunable {
	const char *key, *env;
	bool sized, per_class;
	__u64 min, max;
} fuzz_ref_tunables[] = {
	{ "cpu_cache_cap", "ARENA_ALLOC_CPU_CACHE_CAP", false, true, 2, AA_CPU_CACHE_MAX },
	{ "batch", "ARENA_ALLOC_BATCH", false, true, 1, AA_CPU_CACHE_MAX / 2 },
	{ "transfer_cap", "ARENA_ALLOC_TRANSFER_CAP", false, true, 1, AA_TRANSFER_MAX },
	{ "keep_bytes", "ARENA_ALLOC_KEEP_BYTES", true, false, 0, ~0ULL },
	{ "low_watermark", "ARENA_ALLOC_LOW_WATERMARK", true, false, 0, ~0ULL },
	{ "defer_limit", "ARENA_ALLOC_DEFER_LIMIT", true, false, 0, ~0ULL },
	{ "quarantine", "ARENA_ALLOC_QUARANTINE", false, false, 0, AA_QUARANTINE_MAX },
};
#define FUZZ_NR_TUNABLES	(sizeof(fuzz_ref_tunables) / sizeof(fuzz_ref_tunables[0]))

/* v into tunable i (fuzz_ref_tunables[]) of t: class cls, or every class
 * when cls < 0. */
static void fuzz_ref_store(struct aa_tunables *t, size_t i, int cls, __u64 v)
{
	__u32 *per_class[] = { t->cpu_cache_cap, t->batch, t->transfer_cap };
	__u64 *sizes[] = { &t->keep_bytes, &t->low_watermark, &t->defer_limit };
	int c;

	if (i < 3) {
		for (c = 0; c < AA_NR_CLASSES; c++)
			if (cls < 0 || c == cls)
				per_class[i][c] = v;
	} else if (i < 6) {
		*sizes[i - 3] = v;
	} else {
		t->quarantine = v;
	}
}

#define FUZZ_MAX_ARGS	32

/* An argv from data: the arguments are its lines ('\n' separates them, so
 * seeds are plain text), each in its own malloc()ed string, argv[argc] ==
 * NULL; argv[0] is prog, as main() would get it. At most FUZZ_MAX_ARGS
 * arguments; the rest of data is dropped. own[] keeps the strings for
 * fuzz_argv_free() (getopt may permute argv). */
struct fuzz_argv {
	int argc;
	char *argv[FUZZ_MAX_ARGS + 2];
	char *own[FUZZ_MAX_ARGS + 2];
};

static void fuzz_argv_split(struct fuzz_argv *a, const char *prog, const uint8_t *data,
			    size_t size)
{
	const uint8_t *p = data, *end = data + size, *nl;

	a->argc = 0;
	a->argv[a->argc++] = fuzz_str((const uint8_t *)prog, strlen(prog));
	while (a->argc <= FUZZ_MAX_ARGS) {
		nl = memchr(p, '\n', end - p);
		a->argv[a->argc++] = fuzz_str(p, (nl ? nl : end) - p);
		if (!nl || nl + 1 == end)	/* a trailing newline ends the last one */
			break;
		p = nl + 1;
	}
	a->argv[a->argc] = NULL;
	memcpy(a->own, a->argv, sizeof(a->own));
}

static void fuzz_argv_free(struct fuzz_argv *a)
{
	int i;

	for (i = 0; i < a->argc; i++)
		free(a->own[i]);
	a->argc = 0;
}

#endif
