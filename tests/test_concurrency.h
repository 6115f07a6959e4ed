/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Program arguments shared by test_concurrency.c and its BPF programs. */
#ifndef __TEST_CONCURRENCY_H
#define __TEST_CONCURRENCY_H

#define DF_MAX		4096	/* objects per double-free round */

/* df_free: free arr[0 .. n) in step with the other thread (index me ^ 1),
 * result i in res[i]. */
struct df_args {
	__u64 arr;	/* in: arena address of __u64[n] */
	__u64 res;	/* in: arena address of __s64[n] */
	__u32 n;	/* in */
	__u32 me;	/* in: 0 or 1 */
	__u64 waits_timed_out;	/* out: steps that did not find the other in step */
};

/* sf_free: free ptr n times (at most SF_MAX); counts what was accepted. */
#define SF_MAX		(1 << 16)

struct sf_args {
	__u64 ptr;	/* in: a user address */
	__u32 n;	/* in */
	__u32 pad;
	__u64 accepted;	/* out: frees that returned 0 */
	__u64 refused;	/* out: frees that returned an error */
};

#endif
