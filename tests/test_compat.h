/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The compat program's settings and results, shared by test_compat.c and
 * tests/bpf/test_compat.bpf.c. */
#ifndef __TEST_COMPAT_H
#define __TEST_COMPAT_H

#define COMPAT_ARENA_PAGES	100	/* as the kernel selftests' arenas */
#define COMPAT_MAX_PTRS		1024

struct compat_args {
	__u32 size;		/* bpf_alloc()'s argument */
	__u32 n;		/* allocations to make (alloc), pages (pages_get/put) */
	__u32 got;		/* out: allocations made, pages got (0/n) */
	__u32 not_zero;		/* out: allocations whose bytes were not all zero */
	__u32 misaligned;	/* out: allocations not 8-byte aligned */
};

#endif
