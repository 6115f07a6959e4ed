/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by test_fault.c and its BPF program (tests/bpf/test_fault.bpf.c). */
#ifndef __TEST_FAULT_H
#define __TEST_FAULT_H

#define TF_SLOTS	4096	/* objects the tc program can hold */
#define TF_STAMP	0x5eedfa17c0ffee00ULL	/* word 0 of a held object: addr ^ this */

#endif
