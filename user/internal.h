/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* internal.h - private helpers of the userspace library. */
#ifndef __AA_USER_INTERNAL_H
#define __AA_USER_INTERNAL_H

#include <errno.h>
#include <string.h>
#include "arena_alloc.h"
#include "aa_size_classes.h"

#define AA_DEFAULT_ARENA_PAGES	(1U << 16)
#define AA_MAX_ARENA_PAGES	(1U << 20)

__attribute__((format(printf, 2, 3)))
void aa_pr(enum aa_print_level level, const char *fmt, ...);
#define pr_warn(fmt, ...)	aa_pr(AA_WARN, "arena-alloc: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)	aa_pr(AA_INFO, "arena-alloc: " fmt, ##__VA_ARGS__)

/* libbpf_err(): set errno from a negative error and return it. */
static inline int aa_err(int ret)
{
	if (ret < 0)
		errno = -ret;
	return ret;
}

/* Every aa_heap__* entry point starts with this: a NULL handle is -EINVAL
 * (errno set, one message naming the function), never a crash. */
#define AA_CHECK_HEAP(h, ret)						\
	do {								\
		if (!(h)) {						\
			pr_warn("%s: NULL heap\n", __func__);		\
			errno = EINVAL;					\
			return (ret);					\
		}							\
	} while (0)

static inline void *aa_err_ptr(int err)
{
	errno = -err;
	return NULL;
}

/* OPTS_VALID: opts may be NULL; sz must cover what we read, and bytes past
 * the last field we know must be zero. */
static inline bool aa_opts_valid(const void *opts, size_t user_sz, size_t known_sz)
{
	const char *p = opts;
	size_t i;

	if (!opts)
		return true;
	if (user_sz < sizeof(size_t))
		return false;
	for (i = known_sz; i < user_sz; i++)
		if (p[i])
			return false;
	return true;
}

#define AA_OPTS_VALID(opts, type)					\
	aa_opts_valid((opts), (opts) ? (opts)->sz : 0,			\
		      offsetof(struct type, type##__last_field) +	\
		      sizeof(((struct type *)0)->type##__last_field))
#define AA_OPTS_GET(opts, field, fallback)				\
	((opts) && (opts)->sz >= offsetof(typeof(*(opts)), field) +	\
	 sizeof((opts)->field) ? (opts)->field : (fallback))

#endif
