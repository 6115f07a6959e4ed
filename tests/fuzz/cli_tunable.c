// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cli_tunable.c - fuzz target: load's --tunable K=V / K:SIZE=V parser,
 * cli_parse_tunable(), on the default tunables, against an oracle: a size
 * key (keep_bytes, low_watermark, defer_limit) changes that field alone,
 * to the size of V (fuzz_ref_size()); quarantine takes 0 .. 1024 slots
 * (decimal); a per-class key (cpu_cache_cap,
 * batch, transfer_cap) sets every class, or with :SIZE (1 .. 8192) the
 * class aa_size_class(SIZE), to V, decimal digits that fit in 32 bits; a
 * refused argument changes nothing. aa_tunables__validate() then runs on
 * the result (it must answer 0 or -EINVAL, and 0 for the defaults).
 */
#include "fuzz.h"
#include "cli.h"

static struct aa_tunables defaults;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const env[] = {
		"ARENA_ALLOC_CPU_CACHE_CAP", "ARENA_ALLOC_BATCH", "ARENA_ALLOC_TRANSFER_CAP",
		"ARENA_ALLOC_KEEP_BYTES", "ARENA_ALLOC_LOW_WATERMARK", "ARENA_ALLOC_DEFER_LIMIT",
		"ARENA_ALLOC_QUARANTINE",
	};
	size_t i;

	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	for (i = 0; i < sizeof(env) / sizeof(env[0]); i++)
		unsetenv(env[i]);
	if (aa_tunables__default(&defaults) || aa_tunables__validate(&defaults))
		fuzz_fail("the default tunables are not valid");
	return 0;
}

/* A 32-bit decimal number, as the oracle reads one (white space and '+'
 * first allowed, as strtoull() takes them; never a '-'). */
static int ref_u32(const char *s, const char *end, __u64 *out)
{
	const char *p = s;
	__u64 v = 0;

	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p < end && *p == '+')
		p++;
	if (p == end)
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (*p - '0');
		if (v > 0xffffffffULL)
			return 0;
	}
	*out = v;
	return 1;
}

/* What t must be after cli_parse_tunable(arg) on the defaults: 1 and *want,
 * or 0 when arg must be refused. */
static int ref_tunable(const char *arg, struct aa_tunables *want)
{
	static const char *const per_class[] = { "cpu_cache_cap", "batch", "transfer_cap" };
	__u32 *fields[] = { want->cpu_cache_cap, want->batch, want->transfer_cap };
	const char *eq = strchr(arg, '='), *colon, *name_end;
	__u64 v, size;
	int cls = -1, i, c;

	*want = defaults;
	if (!eq || eq == arg)
		return 0;
	if (!strncmp(arg, "keep_bytes=", 11))
		return fuzz_ref_size(eq + 1, &want->keep_bytes);
	if (!strncmp(arg, "low_watermark=", 14))
		return fuzz_ref_size(eq + 1, &want->low_watermark);
	if (!strncmp(arg, "defer_limit=", 12))
		return fuzz_ref_size(eq + 1, &want->defer_limit);
	if (!strncmp(arg, "quarantine=", 11)) {
		if (!ref_u32(eq + 1, eq + strlen(eq), &v) || v > AA_QUARANTINE_MAX)
			return 0;
		want->quarantine = v;
		return 1;
	}
	colon = memchr(arg, ':', eq - arg);
	name_end = colon ? colon : eq;
	if (colon) {
		if (!ref_u32(colon + 1, eq, &size) || !size || size > AA_MAX_CLASS_SIZE)
			return 0;
		cls = aa_size_class(size);
	}
	for (i = 0; i < 3; i++)
		if (strlen(per_class[i]) == (size_t)(name_end - arg) &&
		    !strncmp(arg, per_class[i], name_end - arg))
			break;
	if (i == 3 || !ref_u32(eq + 1, eq + strlen(eq), &v))
		return 0;
	for (c = 0; c < AA_NR_CLASSES; c++)
		if (cls < 0 || c == cls)
			fields[i][c] = v;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aa_tunables got = defaults, want;
	char *s = fuzz_str(data, size);
	int r = cli_parse_tunable(s, &got), ok = ref_tunable(s, &want), v;

	if (r != 0 && r != -1)
		fuzz_fail("--tunable \"%s\": returned %d, not 0 or -1", fuzz_show(s), r);
	if (ok && r)
		fuzz_fail("--tunable \"%s\": refused", fuzz_show(s));
	if (!ok && !r)
		fuzz_fail("--tunable \"%s\": taken, the oracle refuses it", fuzz_show(s));
	if (memcmp(&got, ok ? &want : &defaults, sizeof(got)))
		fuzz_fail("--tunable \"%s\": %s", fuzz_show(s),
			  ok ? "not the tunables the oracle expects" : "refused but changed them");
	v = aa_tunables__validate(&got);
	if (v != 0 && v != -EINVAL)
		fuzz_fail("--tunable \"%s\": aa_tunables__validate() = %d", fuzz_show(s), v);
	free(s);
	return 0;
}
