// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * env_tunables.c - fuzz target: the library's environment, read by
 * aa_tunables__default() (ARENA_ALLOC_CPU_CACHE_CAP, _BATCH,
 * _TRANSFER_CAP, _KEEP_BYTES, _LOW_WATERMARK, _DEFER_LIMIT) and by the
 * configuration step of aa_heap__open()/attach()/reinit()
 * (aa__heap_configure(): ARENA_ALLOC_NO_CACHES, ARENA_ALLOC_DEFER, then
 * aa_tunables__validate()), then ARENA_ALLOC_QUARANTINE (read last by
 * aa_tunables__default()), ARENA_ALLOC_DEBUG and ARENA_ALLOC_NO_SELF_GROW.
 * The input's lines are the values of those eleven variables, in that order
 * (a missing line: unset).
 * Oracle: a value is a whole number as strtoull(base 0) reads one
 * (decimal, 0x hex, 0 octal; white space and '+' before it), never
 * negative, at most 32 bits for the per-class three and at most
 * AA_QUARANTINE_MAX for the quarantine; the first bad value makes the
 * call -EINVAL; NO_CACHES and NO_SELF_GROW are on for any value but ""
 * and "0", DEFER and DEBUG for "1".
 */
#include "fuzz.h"
#include "internal.h"

static const char *const vars[] = {
	"ARENA_ALLOC_CPU_CACHE_CAP", "ARENA_ALLOC_BATCH", "ARENA_ALLOC_TRANSFER_CAP",
	"ARENA_ALLOC_KEEP_BYTES", "ARENA_ALLOC_LOW_WATERMARK", "ARENA_ALLOC_DEFER_LIMIT",
	"ARENA_ALLOC_NO_CACHES", "ARENA_ALLOC_DEFER", "ARENA_ALLOC_QUARANTINE", "ARENA_ALLOC_DEBUG",
	"ARENA_ALLOC_NO_SELF_GROW",
};
#define NR_VARS	(sizeof(vars) / sizeof(vars[0]))
#define NR_NUMBERS	6

static struct aa_tunables builtin;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t i;

	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	for (i = 0; i < NR_VARS; i++)
		unsetenv(vars[i]);
	if (aa_tunables__default(&builtin))
		fuzz_fail("aa_tunables__default() fails with no environment");
	return 0;
}

/* The oracle's number: 1 and *out, or 0 (unset or empty: 1, *out as it was). */
static int ref_number(const char *s, __u64 max, __u64 *out)
{
	const char *p = s;
	unsigned __int128 v = 0;
	unsigned int base = 10, d;

	if (!s || !*s)
		return 1;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '+')
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2]))
		base = 16, p += 2;
	else if (p[0] == '0')
		base = 8;
	if (!*p)
		return 0;
	for (; *p; p++) {
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (isxdigit((unsigned char)*p))
			d = (*p | 0x20) - 'a' + 10;
		else
			return 0;
		if (d >= base)
			return 0;
		v = v * base + d;
		if (v > max)
			return 0;
	}
	*out = (__u64)v;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aa_tunables got, want = builtin;
	struct aa_heap h = {};
	char *val[NR_VARS] = {};
	const uint8_t *p = data, *end = data + size, *nl;
	__u64 *u64s[] = { &want.keep_bytes, &want.low_watermark, &want.defer_limit };
	__u32 want_flags = 0;
	size_t i, c;
	int r, ok = 1;
	__u64 v;

	for (i = 0; i < NR_VARS && p < end; i++, p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		val[i] = fuzz_str(p, nl - p);
		setenv(vars[i], val[i], 1);
	}
	for (i = 0; i < NR_NUMBERS && ok; i++) {
		v = i < 3 ? 0 : *u64s[i - 3];
		ok = ref_number(val[i], i < 3 ? 0xffffffffULL : ~0ULL, &v);
		if (ok && val[i] && *val[i] && i < 3)
			for (c = 0; c < AA_NR_CLASSES; c++)
				(i == 0 ? want.cpu_cache_cap : i == 1 ? want.batch : want.transfer_cap)[c] = v;
		else if (ok && i >= 3)
			*u64s[i - 3] = v;
	}
	if (ok) {
		v = want.quarantine;
		ok = ref_number(val[8], AA_QUARANTINE_MAX, &v);
		want.quarantine = v;
		i = 9;		/* the bad value's line + 1, for the message */
	}
	r = aa_tunables__default(&got);
	if (ok && r)
		fuzz_fail("aa_tunables__default() = %d, the oracle takes %s=\"%s\" ...", r, vars[0],
			  fuzz_show(val[0] ? val[0] : "(unset)"));
	if (!ok && r != -EINVAL)
		fuzz_fail("aa_tunables__default() = %d for a bad value (%s)", r, fuzz_show(val[i - 1]));
	if (ok && memcmp(&got, &want, sizeof(got)))
		fuzz_fail("aa_tunables__default(): not the values of the environment");

	if (val[6] && *val[6] && strcmp(val[6], "0"))
		want_flags |= AA_F_NO_CACHES;
	if (val[7] && !strcmp(val[7], "1"))
		want_flags |= AA_F_DEFER;
	if (val[9] && !strcmp(val[9], "1"))
		want_flags |= AA_F_DEBUG;
	if (val[10] && *val[10] && strcmp(val[10], "0"))
		want_flags |= AA_F_NO_SELF_GROW;
	r = aa__heap_configure(&h, NULL);
	if (!ok && r != -EINVAL)
		fuzz_fail("aa__heap_configure() = %d with a bad value", r);
	if (ok && r != aa_tunables__validate(&want))
		fuzz_fail("aa__heap_configure() = %d, validate() = %d", r, aa_tunables__validate(&want));
	if (!r && (h.flags != want_flags || memcmp(&h.tun, &want, sizeof(want))))
		fuzz_fail("aa__heap_configure(): flags 0x%x (0x%x expected) or tunables differ",
			  h.flags, want_flags);
	for (i = 0; i < NR_VARS; i++) {
		unsetenv(vars[i]);
		free(val[i]);
	}
	return 0;
}
