// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json_writer.c - fuzz target: the CLI's JSON writer (json.c), which
 * writes every --json output, strings from the user among them (the
 * heap's "source": --pin DIR, --map PATH). The input's lines are names
 * and string values, its bytes also numbers, in objects and arrays
 * nested as the input says (compact and --pretty). Oracle: jansson
 * parses the document back; every string that was valid UTF-8 comes
 * back unchanged, every number and bool too. (Doubles are finite: the
 * CLI's callers compute finite shares and rates; unsigned numbers stay
 * below 2^63, the most jansson reads.)
 */
#include <math.h>
#include <jansson.h>
#include "fuzz.h"
#include "cli.h"

/* 1 if s is well-formed UTF-8 (RFC 3629: no overlongs, surrogates or
 * code points above U+10FFFF). */
static int utf8_ok(const unsigned char *s)
{
	unsigned int cp, n, i;

	while (*s) {
		if (*s < 0x80) {
			s++;
			continue;
		}
		if ((*s & 0xe0) == 0xc0)
			n = 1, cp = *s & 0x1f;
		else if ((*s & 0xf0) == 0xe0)
			n = 2, cp = *s & 0x0f;
		else if ((*s & 0xf8) == 0xf0)
			n = 3, cp = *s & 0x07;
		else
			return 0;
		for (i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

/* A JSON document from the input: an object of up to 8 members
 * "k<i>:<line>" each holding the line as a string, an array of the line
 * and numbers, or an object nesting the next; what was written is kept
 * to be compared with what jansson reads. */
struct doc {
	char *line[8];
	int kind[8];
	__u64 u[8];
	__s64 i[8];
	double d[8];
	int n;
};

/* "k" and decimal digits: a name write_doc() gives a member. */
static bool is_key_name(const char *s)
{
	if (*s++ != 'k' || !*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static void write_doc(struct jw *w, const struct doc *d, int from)
{
	char key[16];
	int k;

	jw_start_object(w);
	for (k = from; k < d->n; k++) {
		snprintf(key, sizeof(key), "k%d", k);
		jw_name(w, key);
		switch (d->kind[k]) {
		case 0:
			jw_string(w, d->line[k]);
			break;
		case 1:
			jw_start_array(w);
			jw_string(w, d->line[k]);
			jw_uint(w, d->u[k]);
			jw_int(w, d->i[k]);
			jw_double(w, d->d[k]);
			jw_bool(w, d->u[k] & 1);
			jw_end_array(w);
			break;
		default:
			write_doc(w, d, k + 1);	/* the rest, one level down */
			k = d->n;
			break;
		}
		/* the line as a name, but never one of the k%d names the
		 * oracle looks up: an object with a name twice has no answer */
		if (k < d->n && !is_key_name(d->line[k]))
			jw_kv_string(w, d->line[k], "name");
	}
	jw_end_object(w);
}

static void check_doc(const json_t *o, const struct doc *d, int from, const char *text)
{
	char key[16];
	json_t *v, *a;
	int k;

	for (k = from; k < d->n; k++) {
		snprintf(key, sizeof(key), "k%d", k);
		v = json_object_get(o, key);
		if (!v)
			fuzz_fail("member %s is missing: %s", key, fuzz_show(text));
		if (d->kind[k] == 2) {
			check_doc(v, d, k + 1, text);
			return;
		}
		a = d->kind[k] == 1 ? json_array_get(v, 0) : v;
		if (utf8_ok((const unsigned char *)d->line[k]) &&
		    (!json_is_string(a) || strcmp(json_string_value(a), d->line[k])))
			fuzz_fail("string %s does not come back: %s", fuzz_show(d->line[k]),
				  fuzz_show(text));
		if (d->kind[k] != 1)
			continue;
		if ((__u64)json_integer_value(json_array_get(v, 1)) != d->u[k])
			fuzz_fail("the uint of %s does not come back: %s", key, fuzz_show(text));
		if (json_integer_value(json_array_get(v, 2)) != d->i[k])
			fuzz_fail("the int of %s does not come back: %s", key, fuzz_show(text));
		if (fabs(json_real_value(json_array_get(v, 3)) - d->d[k]) > 1e-4 * (1 + fabs(d->d[k])))
			fuzz_fail("the numbers of %s do not come back: %s", key, fuzz_show(text));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size, *nl;
	struct doc d = {};
	char *text = NULL;
	size_t len = 0;
	json_error_t err;
	json_t *root;
	struct jw *w;
	FILE *f;

	if (size < 2)
		return 0;
	while (d.n < 8 && p < end) {
		int k = d.n++;

		d.kind[k] = *p++ % 3;
		if (end - p >= 24) {
			memcpy(&d.u[k], p, 8);
			memcpy(&d.i[k], p + 8, 8);
			memcpy(&d.d[k], p + 16, 8);
			p += 24;
		}
		d.u[k] &= INT64_MAX;	/* jansson reads no integer above it ("too big") */
		if (!isfinite(d.d[k]) || fabs(d.d[k]) > 1e15)
			d.d[k] = 0.5;
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		d.line[k] = fuzz_str(p, nl - p);
		p = nl < end ? nl + 1 : end;
	}
	f = open_memstream(&text, &len);
	if (!f)
		abort();
	w = jw_new(f, data[0] & 1);
	write_doc(w, &d, 0);
	jw_destroy(w);
	fclose(f);
	root = json_loadb(text, len, 0, &err);
	if (!root)
		fuzz_fail("not JSON (%s at %d): %s", err.text, err.position, fuzz_show(text));
	check_doc(root, &d, 0, text);
	json_decref(root);
	free(text);
	while (d.n--)
		free(d.line[d.n]);
	return 0;
}
