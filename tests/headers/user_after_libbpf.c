// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* arena_alloc.h after libbpf's headers, then again (include guards), in
 * C and C++, without the layout (api_only.h). */
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "arena_alloc.h"
#include "arena_alloc.h"
#include "api_only.h"

int main(void)
{
	AA_OPTS(aa_heap_opts, o, .arena_pages = 1 << 12);

	return aa_heap__object(NULL) == NULL && o.arena_pages == 1 << 12 ? 0 : 1;
}
