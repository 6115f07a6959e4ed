// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tunables.c - the tunables of struct aa_tunables: one table of their
 * names, kinds, places, bounds and defaults (mimalloc's src/options.c), the
 * one parser of their values, and the three ways in: aa_tunables__set()
 * (KEY, VALUE), the environment (ARENA_ALLOC_<KEY>, read by
 * aa_tunables__default()) and the CLI's `load --tunable KEY=VALUE`, which
 * calls aa_tunables__set(). aa_tunables__validate() checks a whole set:
 * the relations between tunables the table cannot state. Every key's range
 * lies inside what aa_tunables__validate() allows that key alone, so a
 * value set is refused as a set only for its relation to others.
 *
 * Sizes take the suffixes K, M and G (powers of 1024) through
 * aa__parse_u64() (parse.c), the CLI's size options included. Nothing here is
 * shared: each call works on the caller's struct aa_tunables.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include "internal.h"
#include "aa_hit.h"

/* --- The table ----------------------------------------------------------- */

enum aa_tunable_kind {
	AA_TUN_SIZE,		/* a __u64 of bytes: N, NK, NM, NG */
	AA_TUN_COUNT,		/* a __u32, decimal */
	AA_TUN_PER_CLASS,	/* a __u32 per size class, decimal; KEY:SIZE picks one */
};

/* One tunable: field at off in struct aa_tunables, sz bytes (a per-class
 * one: AA_NR_CLASSES __u32s), min <= value <= max; max fits the field's
 * width. def is the default of the scalar kinds (per class: the size-class
 * table, aa_tunables__default()). */
struct aa_tunable {
	const char *name;
	enum aa_tunable_kind kind;
	size_t off, sz;
	__u64 min, max, def;
	const char *unit;	/* in range messages */
};

#define DEFAULT_TRANSFER_BATCHES 8

#define AA_TUN(f, k, lo, hi, d, u) \
	{ #f, AA_TUN_##k, offsetof(struct aa_tunables, f), sizeof(((struct aa_tunables *)0)->f), \
	  lo, hi, d, u }
/* The order of aa_tunables__default()'s environment reads (the first bad
 * value fails it) and of the unknown key's message. */
static const struct aa_tunable tunables[] = {
	AA_TUN(cpu_cache_cap, PER_CLASS, 2, AA_CPU_CACHE_MAX, 0, "objects"),
	AA_TUN(batch, PER_CLASS, 1, AA_CPU_CACHE_MAX / 2, 0, "objects"),
	AA_TUN(transfer_cap, PER_CLASS, 1, AA_TRANSFER_MAX, 0, "objects"),
	AA_TUN(keep_bytes, SIZE, 0, ~0ULL, 4ULL << 20, "bytes"),
	AA_TUN(low_watermark, SIZE, 0, ~0ULL, 1ULL << 20, "bytes"),
	/* limbo bytes that raise the signal */
	AA_TUN(defer_limit, SIZE, 0, ~0ULL, 16ULL << 20, "bytes"),
	AA_TUN(quarantine, COUNT, 0, AA_QUARANTINE_MAX, AA_QUARANTINE_DEFAULT, "slots"),
};
#define NR_TUNABLES	(sizeof(tunables) / sizeof(tunables[0]))


static const struct aa_tunable *tunable_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NR_TUNABLES; i++)
		if (!strncmp(tunables[i].name, name, len) && !tunables[i].name[len])
			return &tunables[i];
	return NULL;
}

/* v into tu's field of t: every class when cls < 0, else class cls.
 * REQUIRES: tu->min <= v <= tu->max. */
static void tunable_store(struct aa_tunables *t, const struct aa_tunable *tu, int cls, __u64 v)
{
	char *f = (char *)t + tu->off;
	__u32 v32 = v;
	int c;

	if (tu->kind == AA_TUN_PER_CLASS) {
		for (c = 0; c < AA_NR_CLASSES; c++)
			if (cls < 0 || c == cls)
				memcpy(f + c * sizeof(v32), &v32, sizeof(v32));
	} else if (tu->sz == sizeof(v)) {
		memcpy(f, &v, sizeof(v));
	} else {
		memcpy(f, &v32, sizeof(v32));
	}
}

/* value into tu's field of t (class cls, or every class when cls < 0):
 * 0, or -EINVAL / -ERANGE with a message "who=value ..." (who: the key as
 * given, or the environment variable), t untouched. */
static int tunable_set(struct aa_tunables *t, const struct aa_tunable *tu, int cls,
		       const char *value, const char *who)
{
	__u64 v;
	int err = aa__parse_u64(value, 10, tu->kind == AA_TUN_SIZE, &v);

	if (err == -EINVAL) {
		pr_warn("%s=%s is not a %s\n", who, value,
			tu->kind == AA_TUN_SIZE ? "size (N, NK, NM or NG)" : "number");
		return err;
	}
	if (err && tu->kind == AA_TUN_SIZE) {
		pr_warn("%s=%s does not fit in 64 bits\n", who, value);
		return err;
	}
	if (err || v < tu->min || v > tu->max) {
		if (tu->min)
			pr_warn("%s=%s: at least %llu and at most %llu %s\n", who, value,
				(unsigned long long)tu->min, (unsigned long long)tu->max, tu->unit);
		else
			pr_warn("%s=%s: at most %llu %s\n", who, value,
				(unsigned long long)tu->max, tu->unit);
		return -ERANGE;
	}
	tunable_store(t, tu, cls, v);
	return 0;
}

/* The class of SIZE in key (KEY:SIZE): the class, or -EINVAL / -ERANGE
 * said ("key=value: ..."). */
static int tunable_class(const char *key, const char *size, const char *value)
{
	__u64 v;
	int err = aa__parse_u64(size, 10, true, &v);

	if (!err && (!v || v > AA_MAX_CLASS_SIZE))
		err = -ERANGE;
	if (err) {
		pr_warn("%s=%s: %s is not the object size of a class (1 .. %u)\n", key, value,
			size, AA_MAX_CLASS_SIZE);
		return err;
	}
	return aa_size_class(v);
}

/* --- Set, defaults, check ------------------------------------------------ */

AA_API int aa_tunables__set(struct aa_tunables *t, const char *key, const char *value)
{
	const struct aa_tunable *tu;
	const char *colon;
	char names[128];
	int cls = -1, len = 0;
	size_t i;

	if (!t || !key || !value) {
		pr_warn("%s: NULL %s\n", __func__, !t ? "tunables" : !key ? "key" : "value");
		return aa_err(-EINVAL);
	}
	colon = strchr(key, ':');
	tu = tunable_find(key, colon ? (size_t)(colon - key) : strlen(key));
	if (!tu) {
		for (i = 0; i < NR_TUNABLES && len < (int)sizeof(names); i++)
			len += snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
					tunables[i].name);
		pr_warn("%s=%s: unknown tunable (%s)\n", key, value, names);
		return aa_err(-EINVAL);
	}
	if (colon && tu->kind != AA_TUN_PER_CLASS) {
		pr_warn("%s=%s: %s is one value for every class (no :SIZE)\n", key, value,
			tu->name);
		return aa_err(-EINVAL);
	}
	if (colon && (cls = tunable_class(key, colon + 1, value)) < 0)
		return aa_err(cls);
	return aa_err(tunable_set(t, tu, cls, value, key));
}

#define AA_ENV_PREFIX	"ARENA_ALLOC_"

AA_API int aa_tunables__default(struct aa_tunables *t)
{
	char name[sizeof(AA_ENV_PREFIX) + 32], *p;
	const struct aa_tunable *tu;
	const char *v;
	int c, err;

	if (!t)
		return aa_err(-EINVAL);
	memset(t, 0, sizeof(*t));
	/* the size classes' defaults (aa_hit.h): bigger objects get smaller
	 * caches, so a CPU cache holds a similar number of bytes per class;
	 * a transfer cache holds DEFAULT_TRANSFER_BATCHES batches */
	for (c = 0; c < AA_NR_CLASSES; c++) {
		t->cpu_cache_cap[c] = aa_classes[c].cap;
		t->batch[c] = aa_classes[c].batch;
		t->transfer_cap[c] = aa_classes[c].batch * DEFAULT_TRANSFER_BATCHES;
		if (t->transfer_cap[c] > AA_TRANSFER_MAX)
			t->transfer_cap[c] = AA_TRANSFER_MAX;
	}
	for (tu = tunables; tu < tunables + NR_TUNABLES; tu++)
		if (tu->kind != AA_TUN_PER_CLASS)
			tunable_store(t, tu, -1, tu->def);
	/* ARENA_ALLOC_<KEY>: a per-class one sets every class; unset or
	 * empty is no override */
	for (tu = tunables; tu < tunables + NR_TUNABLES; tu++) {
		snprintf(name, sizeof(name), AA_ENV_PREFIX "%s", tu->name);
		for (p = name + strlen(AA_ENV_PREFIX); *p; p++)
			*p = toupper((unsigned char)*p);
		v = getenv(name);
		if (v && *v && (err = tunable_set(t, tu, -1, v, name)))
			return aa_err(err);
	}
	return 0;
}

AA_API int aa_tunables__validate(const struct aa_tunables *t)
{
	int c;

	if (!t)
		return aa_err(-EINVAL);
	for (c = 0; c < AA_NR_CLASSES; c++) {
		__u32 cap = t->cpu_cache_cap[c], batch = t->batch[c], tc = t->transfer_cap[c];

		if (cap < 2 || cap > AA_CPU_CACHE_MAX || batch < 1 || batch > cap / 2 ||
		    tc < batch || tc > AA_TRANSFER_MAX) {
			pr_warn("class %d (%u B): need 2 <= cpu_cache_cap (%u) <= %u, "
				"1 <= batch (%u) <= cap/2, batch <= transfer_cap (%u) <= %u\n",
				c, aa_class_size(c), cap, AA_CPU_CACHE_MAX, batch, tc,
				AA_TRANSFER_MAX);
			return aa_err(-EINVAL);
		}
	}
	if (t->quarantine > AA_QUARANTINE_MAX) {
		pr_warn("quarantine (%u) must be at most %u slots\n", t->quarantine,
			AA_QUARANTINE_MAX);
		return aa_err(-EINVAL);
	}
	return 0;
}
