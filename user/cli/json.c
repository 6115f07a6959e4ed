// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - a small JSON writer in the spirit of bpftool's json_writer:
 * callers say start/end object/array, name, value; the writer places
 * commas, quotes and escapes, and indents with --pretty. Every --json
 * output of the CLI goes through it.
 */
#include <stdlib.h>
#include "cli.h"

#define JW_MAX_DEPTH	16

struct jw {
	FILE *f;
	bool pretty;
	int depth;
	bool first[JW_MAX_DEPTH];	/* no element yet at this depth */
	bool named;			/* a name was just written */
};

struct jw *jw_new(FILE *f, bool pretty)
{
	struct jw *w = calloc(1, sizeof(*w));

	if (w) {
		w->f = f;
		w->pretty = pretty;
		w->first[0] = true;
	}
	return w;
}

void jw_destroy(struct jw *w)
{
	if (!w)
		return;
	fputc('\n', w->f);
	free(w);
}

static void indent(struct jw *w)
{
	int i;

	if (!w->pretty)
		return;
	fputc('\n', w->f);
	for (i = 0; i < w->depth; i++)
		fputs("    ", w->f);
}

/* Before a value or a name: the comma and the line break it needs. */
static void element(struct jw *w)
{
	if (w->named) {
		w->named = false;
		return;
	}
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
	if (w->depth)
		indent(w);
}

static void open_(struct jw *w, char c)
{
	element(w);
	fputc(c, w->f);
	if (w->depth < JW_MAX_DEPTH - 1)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_(struct jw *w, char c)
{
	bool empty = w->first[w->depth];

	if (w->depth)
		w->depth--;
	if (!empty)
		indent(w);
	fputc(c, w->f);
}

void jw_start_object(struct jw *w) { open_(w, '{'); }
void jw_end_object(struct jw *w) { close_(w, '}'); }
void jw_start_array(struct jw *w) { open_(w, '['); }
void jw_end_array(struct jw *w) { close_(w, ']'); }

/* The length of the UTF-8 character at s (2 .. 4 bytes), or 0 when the
 * bytes there are not one: a stray continuation byte, a sequence cut
 * short, an overlong form, a surrogate or more than U+10FFFF. */
static int utf8_char(const unsigned char *s)
{
	static const unsigned int min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	unsigned int cp;
	int len, i;

	len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (!len || s[0] > 0xf4)
		return 0;
	cp = s[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* the NUL too: cut short */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* s as a JSON string. JSON is UTF-8: a byte of s that is not part of a
 * UTF-8 character (a path in Latin-1, say) is written as U+FFFD. */
static void quoted(struct jw *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int len;

	fputc('"', w->f);
	for (; *p; p++) {
		unsigned char c = *p;

		if (c == '"' || c == '\\')
			fprintf(w->f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", w->f);
		else if (c == '\t')
			fputs("\\t", w->f);
		else if (c < 0x20)
			fprintf(w->f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, w->f);
		else if ((len = utf8_char(p))) {
			fwrite(p, 1, len, w->f);
			p += len - 1;
		} else {
			fputs("\\ufffd", w->f);
		}
	}
	fputc('"', w->f);
}

void jw_name(struct jw *w, const char *name)
{
	element(w);
	quoted(w, name);
	fputs(w->pretty ? ": " : ":", w->f);
	w->named = true;
}

void jw_uint(struct jw *w, unsigned long long v) { element(w); fprintf(w->f, "%llu", v); }
void jw_int(struct jw *w, long long v) { element(w); fprintf(w->f, "%lld", v); }
void jw_string(struct jw *w, const char *s) { element(w); quoted(w, s); }
void jw_double(struct jw *w, double v) { element(w); fprintf(w->f, "%.4f", v); }
void jw_bool(struct jw *w, bool v) { element(w); fputs(v ? "true" : "false", w->f); }

void jw_kv_uint(struct jw *w, const char *name, unsigned long long v)
{
	jw_name(w, name);
	jw_uint(w, v);
}

void jw_kv_string(struct jw *w, const char *name, const char *s)
{
	jw_name(w, name);
	jw_string(w, s);
}
