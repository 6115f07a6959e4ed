// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * license.bpf.c - the license section of the library's own object (the one
 * aa_heap__open() loads), linked in next to libarena_alloc.bpf.o; the
 * embeddable object itself has none (entry.bpf.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";
