/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by test_user_cache.c and its BPF programs. */
#ifndef __TEST_USER_CACHE_H
#define __TEST_USER_CACHE_H

#define UC_KEEP		32	/* objects a churn round holds at once */

/* uc_churn: rounds of UC_KEEP allocations of 16 .. 512 B, then their
 * frees. */
struct uc_churn_args {
	__u32 rounds;	/* in */
	__u32 pad;
	__u64 allocs;	/* out */
	__u64 nulls;	/* out: allocations that got NULL */
	__u64 refused;	/* out: frees that returned an error */
};

#endif
