/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * test_progs.h - a minimal stand-in for the kernel selftests' test_progs.h,
 * for `make compat-test` (mk/compat.mk): the peers' prog_tests files
 * (arena_list.c, arena_htab.c, libarena.c from Debian's linux-source
 * packages) compile against it unmodified and run under
 * tests/compat/runner.c instead of test_progs. It gives what those files
 * use and nothing more: the includes and types test_progs.h brings (u64,
 * __weak, libbpf), the ASSERT_* macros (same checks and FAIL messages as
 * test_progs'), test__start_subtest() and test__skip().
 */
#ifndef AA_COMPAT_TEST_PROGS_H
#define AA_COMPAT_TEST_PROGS_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* As libarena's <libarena/common.h> defines them for userspace (a
 * duplicate typedef of the same type is allowed). */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#ifndef __weak
#define __weak __attribute__((weak))
#endif

/* The runner's side (tests/compat/runner.c). */
bool test__start_subtest(const char *name);
void test__skip(void);
void test__fail(void);
/* A check's outcome: prints "<func>:FAIL:<name> " and the message on
 * failure (and counts it), "<func>:PASS:<name>" with -v. */
bool aa_compat_report(bool ok, const char *func, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define ASSERT_OK(res, name) ({							\
	long long ___res = (res);						\
	aa_compat_report(___res == 0, __func__, (name),				\
			 "unexpected error: %lld (errno %d)\n", ___res, errno);	\
})

#define ASSERT_TRUE(actual, name) ({						\
	bool ___ok = (actual);							\
	aa_compat_report(___ok, __func__, (name), "unexpected %s: got FALSE\n",	\
			 (name));						\
})

#define ASSERT_EQ(actual, expected, name) ({					\
	typeof(actual) ___act = (actual);					\
	typeof(expected) ___exp = (expected);					\
	aa_compat_report(___act == ___exp, __func__, (name),			\
			 "unexpected %s: actual %lld != expected %lld\n",	\
			 (name), (long long)___act, (long long)___exp);		\
})

#define ASSERT_LT(actual, expected, name) ({					\
	typeof(actual) ___act = (actual);					\
	typeof(expected) ___exp = (expected);					\
	aa_compat_report(___act < ___exp, __func__, (name),			\
			 "unexpected %s: actual %lld >= expected %lld\n",	\
			 (name), (long long)___act, (long long)___exp);		\
})

/* libbpf's error pointers: NULL (errno set) or -4095..-1 cast. */
#define ASSERT_OK_PTR(ptr, name) ({						\
	const void *___res = (ptr);						\
	long ___err = !___res ? -errno :					\
		(unsigned long)___res >= (unsigned long)-4095 ? (long)___res : 0; \
	aa_compat_report(___err == 0, __func__, (name),				\
			 "unexpected error: %ld\n", ___err);			\
})

#endif /* AA_COMPAT_TEST_PROGS_H */
