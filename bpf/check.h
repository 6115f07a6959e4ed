/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * check.h - what check.bpf.c gives the files above it (the tier order:
 * bpf/arena_alloc.bpf.c). Included by check.bpf.c and by those files only.
 */
#ifndef __AA_CHECK_H
#define __AA_CHECK_H

#include "internal.h"

int aa__heap_check(void);

#endif /* __AA_CHECK_H */
