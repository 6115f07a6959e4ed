// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cli_tunable.c - fuzz target: load's --tunable KEY=VALUE /
 * KEY:SIZE=VALUE, cli_parse_tunable() (through aa_tunables__set()), on the
 * default tunables, against an oracle: KEY is one of fuzz_ref_tunables[]
 * and changes that field alone, to VALUE as fuzz_ref_value() reads it in
 * the key's range (a size for keep_bytes, low_watermark and defer_limit,
 * decimal for the others); a per-class key (cpu_cache_cap, batch,
 * transfer_cap) sets every class, or with :SIZE (a size, 1 .. 8192) the
 * class aa_size_class(SIZE); nothing else is taken, and a refused argument
 * changes nothing. aa_tunables__validate() then runs on the result (it
 * must answer 0 or -EINVAL, and 0 for the defaults).
 */
#include "fuzz.h"
#include "cli.h"

static struct aa_tunables defaults;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t i;

	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	for (i = 0; i < FUZZ_NR_TUNABLES; i++)
		unsetenv(fuzz_ref_tunables[i].env);
	if (aa_tunables__default(&defaults) || aa_tunables__validate(&defaults))
		fuzz_fail("the default tunables are not valid");
	return 0;
}

/* What t must be after cli_parse_tunable(arg) on the defaults: 1 and *want,
 * or 0 when arg must be refused. */
static int ref_tunable(const char *arg, struct aa_tunables *want)
{
	const char *eq = strchr(arg, '='), *colon;
	char *size_s;
	size_t i, len;
	__u64 v, size;
	int cls = -1, err;

	*want = defaults;
	if (!eq || eq == arg)
		return 0;
	colon = memchr(arg, ':', eq - arg);
	len = (colon ? colon : eq) - arg;
	for (i = 0; i < FUZZ_NR_TUNABLES; i++)
		if (strlen(fuzz_ref_tunables[i].key) == len &&
		    !memcmp(arg, fuzz_ref_tunables[i].key, len))
			break;
	if (i == FUZZ_NR_TUNABLES || (colon && !fuzz_ref_tunables[i].per_class))
		return 0;
	if (colon) {
		size_s = fuzz_str((const uint8_t *)colon + 1, eq - colon - 1);
		err = fuzz_ref_value(size_s, true, 1, AA_MAX_CLASS_SIZE, &size);
		free(size_s);
		if (err)
			return 0;
		cls = aa_size_class(size);
	}
	if (fuzz_ref_value(eq + 1, fuzz_ref_tunables[i].sized, fuzz_ref_tunables[i].min,
			   fuzz_ref_tunables[i].max, &v))
		return 0;
	fuzz_ref_store(want, i, cls, v);
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
