// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * env_tunables.c - fuzz target: the library's environment, read by
 * aa_tunables__default() (ARENA_ALLOC_<KEY> of every tunable: _CPU_CACHE_CAP,
 * _BATCH, _TRANSFER_CAP, _KEEP_BYTES, _LOW_WATERMARK, _DEFER_LIMIT,
 * _QUARANTINE) and by the configuration step of
 * aa_heap__open()/attach()/reinit() (aa__heap_configure():
 * ARENA_ALLOC_NO_CACHES, ARENA_ALLOC_DEFER, ARENA_ALLOC_DEBUG,
 * ARENA_ALLOC_NO_SELF_GROW, then aa_tunables__validate()).
 * The input's lines are the values of eleven variables: the first six
 * tunables, NO_CACHES, DEFER, QUARANTINE, DEBUG, NO_SELF_GROW (a missing
 * line: unset).
 * Oracle: an unset or empty tunable variable changes nothing; any other
 * value is read as fuzz_ref_value() reads one (decimal, sizes with K, M or
 * G; never a '-'), in its key's range (fuzz_ref_tunables[]); the first bad
 * value in the library's order (fuzz_ref_tunables[]) makes both calls
 * return its error, -EINVAL or -ERANGE; NO_CACHES and NO_SELF_GROW are on
 * for any value but "" and "0", DEFER and DEBUG for "1".
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
/* The line of each of fuzz_ref_tunables[] */
static const size_t tunable_line[FUZZ_NR_TUNABLES] = { 0, 1, 2, 3, 4, 5, 8 };

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aa_tunables got, want = builtin;
	struct aa_heap h = {};
	char *val[NR_VARS] = {};
	const uint8_t *p = data, *end = data + size, *nl;
	const struct fuzz_ref_tunable *rt;
	const char *bad = NULL;
	__u32 want_flags = 0;
	size_t i;
	int r, want_err = 0;
	__u64 v;

	for (i = 0; i < NR_VARS && p < end; i++, p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		val[i] = fuzz_str(p, nl - p);
		setenv(vars[i], val[i], 1);
	}
	for (i = 0; i < FUZZ_NR_TUNABLES && !want_err; i++) {
		const char *s = val[tunable_line[i]];

		rt = &fuzz_ref_tunables[i];
		if (!s || !*s)
			continue;
		want_err = fuzz_ref_value(s, rt->sized, rt->min, rt->max, &v);
		if (want_err)
			bad = s;
		else
			fuzz_ref_store(&want, i, -1, v);
	}
	r = aa_tunables__default(&got);
	if (r != want_err)
		fuzz_fail("aa_tunables__default() = %d, not %d (the first bad value: %s)", r,
			  want_err, bad ? fuzz_show(bad) : "none");
	if (!want_err && memcmp(&got, &want, sizeof(got)))
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
	if (want_err && r != want_err)
		fuzz_fail("aa__heap_configure() = %d with a bad value, not %d", r, want_err);
	if (!want_err && r != aa_tunables__validate(&want))
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
