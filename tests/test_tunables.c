// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_tunables.c - the tunables' one parser: aa_tunables__set() for every
 * key, sizes with suffixes, KEY:SIZE for one class, every refusal with its
 * errno, a message naming key and value and the tunables untouched; the
 * environment through aa_tunables__default(); the CLI's `load --tunable`
 * and size options, refused before anything loads. No arena needed: the
 * suite runs on the host (HOST_TESTS, mk/test.mk).
 */
#include <stdarg.h>
#include "common.h"

/* The library's messages of the test, in one buffer. */
static char said[4096];

static int capture(enum aa_print_level level, const char *fmt, va_list ap)
{
	size_t len = strlen(said);

	(void)level;
	return vsnprintf(said + len, sizeof(said) - len, fmt, ap);
}

static const char *const tunable_env[] = {
	"ARENA_ALLOC_CPU_CACHE_CAP", "ARENA_ALLOC_BATCH", "ARENA_ALLOC_TRANSFER_CAP",
	"ARENA_ALLOC_KEEP_BYTES", "ARENA_ALLOC_LOW_WATERMARK", "ARENA_ALLOC_DEFER_LIMIT",
	"ARENA_ALLOC_QUARANTINE",
};

/* Defaults with no environment, messages captured. */
static void setup(void)
{
	size_t i;

	for (i = 0; i < sizeof(tunable_env) / sizeof(tunable_env[0]); i++)
		unsetenv(tunable_env[i]);
	aa_set_print(capture);
}

TestSuite(tunables, .init = setup);

static struct aa_tunables defaults(void)
{
	struct aa_tunables t;

	cr_assert_eq(aa_tunables__default(&t), 0);
	cr_assert_eq(aa_tunables__validate(&t), 0);
	return t;
}

/* key=value on the defaults must give want exactly: that field, no other. */
static void set_ok(const char *key, const char *value, const struct aa_tunables *want)
{
	struct aa_tunables t = defaults();

	cr_assert_eq(aa_tunables__set(&t, key, value), 0, "%s=%s refused: %s", key, value, said);
	cr_assert(!memcmp(&t, want, sizeof(t)), "%s=%s: not (only) its field", key, value);
}

Test(tunables, every_key_sets_its_field_alone)
{
	struct aa_tunables want;
	int c;

	want = defaults(), want.keep_bytes = 12345;
	set_ok("keep_bytes", "12345", &want);
	want = defaults(), want.low_watermark = 3 << 10;
	set_ok("low_watermark", "3K", &want);
	want = defaults(), want.defer_limit = 1ULL << 30;
	set_ok("defer_limit", "1G", &want);
	want = defaults(), want.quarantine = 12;
	set_ok("quarantine", "12", &want);
	want = defaults();
	for (c = 0; c < AA_NR_CLASSES; c++)
		want.cpu_cache_cap[c] = 64;
	set_ok("cpu_cache_cap", "64", &want);
	want = defaults();
	for (c = 0; c < AA_NR_CLASSES; c++)
		want.batch[c] = 8;
	set_ok("batch", "8", &want);
	want = defaults();
	for (c = 0; c < AA_NR_CLASSES; c++)
		want.transfer_cap[c] = 40;
	set_ok("transfer_cap", "40", &want);
	cr_assert_str_empty(said);
}

Test(tunables, sizes_take_suffixes)
{
	static const struct { const char *s; __u64 v; } sizes[] = {
		{ "16M", 16ULL << 20 }, { "16m", 16ULL << 20 }, { "4K", 4096 },
		{ "4k", 4096 }, { "2G", 2ULL << 30 }, { "0", 0 }, { " +7", 7 },
		{ "17179869183G", 17179869183ULL << 30 },
	};
	struct aa_tunables t = defaults();
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cr_assert_eq(aa_tunables__set(&t, "keep_bytes", sizes[i].s), 0, "%s: %s",
			     sizes[i].s, said);
		cr_assert_eq(t.keep_bytes, sizes[i].v, "keep_bytes=%s: %llu", sizes[i].s,
			     (unsigned long long)t.keep_bytes);
	}
}

Test(tunables, a_class_key_sets_its_class_alone)
{
	static const struct { const char *key; __u32 size; } keys[] = {
		{ "batch:48", 48 }, { "batch:1", 1 }, { "batch:8K", 8192 }, { "batch:100", 100 },
	};
	struct aa_tunables t, want;
	char value[16], key[32];
	size_t i;
	int cls;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cls = aa_size_class(keys[i].size);
		cr_assert_geq(cls, 0);
		want = t = defaults();
		want.batch[cls] = t.batch[cls] % 64 + 1;	/* not the default, 1 .. 64 */
		snprintf(value, sizeof(value), "%u", want.batch[cls]);
		cr_assert_eq(aa_tunables__set(&t, keys[i].key, value), 0, "%s: %s", keys[i].key, said);
		cr_assert(!memcmp(&t, &want, sizeof(t)), "%s=%s: not class %d alone", keys[i].key,
			  value, cls);
	}
	/* the smallest size a class serves selects it too */
	cls = aa_size_class(48);
	cr_assert_gt(cls, 0);
	snprintf(key, sizeof(key), "transfer_cap:%u", aa_class_size(cls - 1) + 1);
	want = t = defaults();
	want.cpu_cache_cap[cls] = t.cpu_cache_cap[cls] == 16 ? 17 : 16;
	want.transfer_cap[cls] = t.transfer_cap[cls] == 200 ? 201 : 200;
	snprintf(value, sizeof(value), "%u", want.cpu_cache_cap[cls]);
	cr_assert_eq(aa_tunables__set(&t, "cpu_cache_cap:48", value), 0, "%s", said);
	snprintf(value, sizeof(value), "%u", want.transfer_cap[cls]);
	cr_assert_eq(aa_tunables__set(&t, key, value), 0, "%s: %s", key, said);
	cr_assert(!memcmp(&t, &want, sizeof(t)), "%s: not class %d alone", key, cls);
}

/* What aa_tunables__set() must refuse: err, a message naming key and
 * value (and saying msg where given), the tunables as they were. */
static const struct {
	const char *key, *value;
	int err;
	const char *msg;
} refused[] = {
	/* keys */
	{ "frob", "1", -EINVAL, "frob=1: unknown tunable (cpu_cache_cap, batch, transfer_cap, "
				"keep_bytes, low_watermark, defer_limit, quarantine)" },
	{ "Batch", "1", -EINVAL }, { "batch ", "1", -EINVAL }, { "", "1", -EINVAL },
	{ "keep_bytes:48", "1", -EINVAL, "keep_bytes is one value for every class" },
	{ "batch:x", "1", -EINVAL, "batch:x=1: x is not the object size of a class (1 .. 8192)" },
	{ "batch:-48", "1", -EINVAL }, { "batch:0", "1", -ERANGE }, { "batch:9000", "1", -ERANGE },
	/* values that are not numbers: a '-' anywhere, empty, suffixes where
	 * they do not belong, other bases */
	{ "batch", "-5", -EINVAL }, { "keep_bytes", "-5", -EINVAL }, { "keep_bytes", "5-", -EINVAL },
	{ "quarantine", " -1", -EINVAL }, { "batch", "", -EINVAL }, { "keep_bytes", "", -EINVAL },
	{ "batch", "x", -EINVAL, "batch=x is not a number" },
	{ "low_watermark", "banana", -EINVAL, "low_watermark=banana is not a size" },
	{ "keep_bytes", "16MB", -EINVAL }, { "keep_bytes", "1.5M", -EINVAL },
	{ "keep_bytes", "0x10", -EINVAL }, { "batch", "16K", -EINVAL },
	{ "quarantine", "0x10", -EINVAL }, { "keep_bytes", "99999999999999999999x", -EINVAL },
	/* out of range */
	{ "keep_bytes", "99999999999999999999", -ERANGE, "does not fit in 64 bits" },
	{ "keep_bytes", "17179869184G", -ERANGE }, { "defer_limit", "18446744073709551616", -ERANGE },
	{ "quarantine", "99999999999999999999", -ERANGE },
	{ "quarantine", "1025", -ERANGE, "quarantine=1025: at most 1024 slots" },
	{ "cpu_cache_cap", "1", -ERANGE, "cpu_cache_cap=1: at least 2 and at most 128 objects" },
	{ "cpu_cache_cap", "129", -ERANGE }, { "batch", "0", -ERANGE }, { "batch:48", "65", -ERANGE },
	{ "transfer_cap", "257", -ERANGE }, { "transfer_cap", "4294967296", -ERANGE },
};

Test(tunables, bad_keys_and_values_are_refused)
{
	struct aa_tunables t, before;
	size_t i;
	int r;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *key = refused[i].key, *value = refused[i].value;

		before = t = defaults();
		said[0] = 0;
		errno = 0;
		r = aa_tunables__set(&t, key, value);
		cr_assert_eq(r, refused[i].err, "%s=%s: %d, not %d", key, value, r, refused[i].err);
		cr_assert_eq(errno, -r);
		cr_assert(!memcmp(&t, &before, sizeof(t)), "%s=%s: refused but changed", key, value);
		cr_assert(strstr(said, key) && strstr(said, value),
			  "%s=%s: the message '%s' does not name both", key, value, said);
		cr_assert(!refused[i].msg || strstr(said, refused[i].msg), "%s=%s said '%s', not '%s'",
			  key, value, said, refused[i].msg);
	}
}

/* The bounds of the keys stay inside what aa_tunables__validate() takes,
 * all at their maxima and all at their minima. */
Test(tunables, the_bounds_pass_validate)
{
	static const char *const keys[] = { "cpu_cache_cap", "batch", "transfer_cap", "quarantine" };
	static const char *const bounds[][4] = { { "128", "64", "256", "1024" }, { "2", "1", "1", "0" } };
	struct aa_tunables t = defaults();
	size_t b, k;

	for (b = 0; b < 2; b++) {
		for (k = 0; k < 4; k++)
			cr_assert_eq(aa_tunables__set(&t, keys[k], bounds[b][k]), 0, "%s", said);
		cr_assert_eq(aa_tunables__validate(&t), 0, "%s", said);
	}
}

Test(tunables, null_arguments_are_refused)
{
	struct aa_tunables t = defaults();

	cr_assert_eq(aa_tunables__set(NULL, "batch", "1"), -EINVAL);
	cr_assert_eq(aa_tunables__set(&t, NULL, "1"), -EINVAL);
	cr_assert_eq(aa_tunables__set(&t, "batch", NULL), -EINVAL);
	cr_assert_eq(errno, EINVAL);
}

Test(tunables, the_environment_takes_size_suffixes)
{
	struct aa_tunables t;

	setenv("ARENA_ALLOC_KEEP_BYTES", "16M", 1);
	cr_assert_eq(aa_tunables__default(&t), 0, "%s", said);
	cr_assert_eq(t.keep_bytes, 16ULL << 20);
	setenv("ARENA_ALLOC_LOW_WATERMARK", "3k", 1);
	setenv("ARENA_ALLOC_DEFER_LIMIT", "1G", 1);
	cr_assert_eq(aa_tunables__default(&t), 0, "%s", said);
	cr_assert_eq(t.low_watermark, 3 << 10);
	cr_assert_eq(t.defer_limit, 1ULL << 30);
}

Test(tunables, every_key_has_its_variable)
{
	struct aa_tunables t, want = defaults();
	__u32 batch0 = want.batch[0];
	int c;

	setenv("ARENA_ALLOC_CPU_CACHE_CAP", "32", 1);
	setenv("ARENA_ALLOC_BATCH", "4", 1);
	setenv("ARENA_ALLOC_TRANSFER_CAP", "100", 1);
	setenv("ARENA_ALLOC_KEEP_BYTES", "5", 1);
	setenv("ARENA_ALLOC_LOW_WATERMARK", "6", 1);
	setenv("ARENA_ALLOC_DEFER_LIMIT", "7", 1);
	setenv("ARENA_ALLOC_QUARANTINE", "8", 1);
	for (c = 0; c < AA_NR_CLASSES; c++) {
		want.cpu_cache_cap[c] = 32;
		want.batch[c] = 4;
		want.transfer_cap[c] = 100;
	}
	want.keep_bytes = 5, want.low_watermark = 6, want.defer_limit = 7, want.quarantine = 8;
	cr_assert_eq(aa_tunables__default(&t), 0, "%s", said);
	cr_assert(!memcmp(&t, &want, sizeof(t)));
	/* empty is no override */
	setenv("ARENA_ALLOC_BATCH", "", 1);
	cr_assert_eq(aa_tunables__default(&t), 0, "%s", said);
	cr_assert_eq(t.batch[0], batch0);
	cr_assert_eq(t.cpu_cache_cap[0], 32);
}

/* A bad variable fails aa_tunables__default() with aa_tunables__set()'s
 * error and a message naming the variable and its value. */
static void env_bad(const char *name, const char *value, int err, const char *msg)
{
	struct aa_tunables t;

	said[0] = 0;
	setenv(name, value, 1);
	cr_assert_eq(aa_tunables__default(&t), err, "%s=%s", name, value);
	cr_assert(strstr(said, msg), "%s=%s said '%s', not '%s'", name, value, said, msg);
	unsetenv(name);
}

Test(tunables, bad_variables_are_refused)
{
	env_bad("ARENA_ALLOC_BATCH", "x", -EINVAL, "ARENA_ALLOC_BATCH=x is not a number");
	env_bad("ARENA_ALLOC_BATCH", "0x10", -EINVAL, "ARENA_ALLOC_BATCH=0x10 is not a number");
	env_bad("ARENA_ALLOC_QUARANTINE", "5000", -ERANGE,
		"ARENA_ALLOC_QUARANTINE=5000: at most 1024 slots");
	env_bad("ARENA_ALLOC_KEEP_BYTES", "-1M", -EINVAL,
		"ARENA_ALLOC_KEEP_BYTES=-1M is not a size (N, NK, NM or NG)");
	env_bad("ARENA_ALLOC_DEFER_LIMIT", "99999999999999999999", -ERANGE,
		"ARENA_ALLOC_DEFER_LIMIT=99999999999999999999 does not fit in 64 bits");
	env_bad("ARENA_ALLOC_CPU_CACHE_CAP", "1", -ERANGE,
		"ARENA_ALLOC_CPU_CACHE_CAP=1: at least 2 and at most 128 objects");
}

/* --- The CLI: refused while parsing, so nothing loads -------------------- */

/* `arena-alloc ARGS` must exit 2 and say msg (stderr). */
static void cli_bad(const char *msg, const char *args)
{
	char cli[4200], cmd[8400], out[4096];
	int rc;

	t_cli_path(cli, sizeof(cli));
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", cli, args);
	rc = t_read_cmd(cmd, out, sizeof(out));
	cr_assert_eq(rc, 2, "'%s' exited %d, not 2: %s", args, rc, out);
	cr_assert(strstr(out, msg), "'%s' said '%s', not '%s'", args, out, msg);
}

Test(tunables, the_cli_refuses_through_the_library)
{
	cli_bad("frob=1: unknown tunable (cpu_cache_cap", "load --tunable frob=1");
	cli_bad("give KEY=VALUE", "load --tunable batch");
	cli_bad("give KEY=VALUE", "load --tunable =1");
	cli_bad("batch=x is not a number", "load --tunable batch=x");
	cli_bad("--tunable 'batch=x' refused", "load --tunable batch=x");
	cli_bad("batch:9000=1: 9000 is not the object size of a class (1 .. 8192)",
		"load --tunable batch:9000=1");
	cli_bad("batch=1000: at least 1 and at most 64 objects", "load --tunable batch=1000");
	cli_bad("low_watermark=banana is not a size", "load --tunable low_watermark=banana");
	cli_bad("quarantine=-1 is not a number", "load --tunable quarantine=-1");
	/* taken one by one, refused together */
	cli_bad("do not fit together", "load --tunable cpu_cache_cap=8 --tunable batch=5");
	/* the CLI's own size options read sizes through the library's parser */
	cli_bad("'banana' is not a size (N, NK, NM or NG)", "grow --bytes banana");
	cli_bad("'99999999999999999999' does not fit in 64 bits",
		"grow --bytes 99999999999999999999");
	cli_bad("'-4M' is not a size", "trim --keep -4M");
}
