// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* arena_alloc.h alone, first: it must compile in C (-std=c11) and C++
 * (-std=c++17), -Wall -Wextra -Werror, without the layout (api_only.h)
 * (make header-check, mk/test.mk). */
#include "arena_alloc.h"
#include "api_only.h"

int main(void)
{
	AA_OPTS(aa_heap_opts, o, .init_bytes = 1 << 20);
	struct aa_stats st;

	return aa_heap__stats(NULL, &st) == -22 && aa_heap__flags(NULL) == 0 &&
	       o.sz == sizeof(o) ? 0 : 1;
}
