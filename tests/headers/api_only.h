/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Included after arena_alloc.h by the header checks (make header-check,
 * mk/test.mk): the public header brought the API's types (aa_types.h) and
 * nothing of the layout (aa_shared.h) or of the syscall programs'
 * arguments (aa_syscall.h). */
#ifndef __AA_TYPES_H
#error "arena_alloc.h did not include aa_types.h"
#endif
#if defined(__AA_SHARED_H) || defined(AA_LAYOUT_VERSION) || defined(AA_ROOT_MAGIC)
#error "arena_alloc.h brought the shared-memory layout (aa_shared.h)"
#endif
#if defined(__AA_SYSCALL_H) || defined(AA_USER_ALL)
#error "arena_alloc.h brought the syscall programs' arguments (aa_syscall.h)"
#endif
