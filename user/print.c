// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * print.c - the library's messages: aa_set_print() picks where they go,
 * aa_pr() (pr_warn(), pr_info()) sends one there, errno untouched.
 *
 * Every error of the library is a negative errno returned to the caller
 * (errno set too) with a message through here; nothing aborts. Every file
 * calls this one; it calls none.
 */
#include <stdarg.h>
#include <stdio.h>
#include "internal.h"

static int default_print(enum aa_print_level level, const char *fmt, va_list ap)
{
	if (level > AA_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static aa_print_fn_t print_fn = default_print;

AA_API aa_print_fn_t aa_set_print(aa_print_fn_t fn)
{
	aa_print_fn_t old = print_fn;

	print_fn = fn;
	return old;
}

void aa_pr(enum aa_print_level level, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (!print_fn)
		return;
	va_start(ap, fmt);
	print_fn(level, fmt, ap);
	va_end(ap);
	errno = saved;
}
