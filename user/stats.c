// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* stats.c - name and print the counters read from the arena mmap. */
#include "internal.h"

static const char *const error_names[AA_NR_ERRORS] = {
	[AA_ERR_SIZE]		= "bad_size",
	[AA_ERR_ALIGN]		= "bad_align",
	[AA_ERR_NOMEM]		= "nomem",
	[AA_ERR_BUSY]		= "lock_busy",
	[AA_ERR_NESTED]		= "nested",
	[AA_ERR_DOUBLE_FREE]	= "double_free",
	[AA_ERR_FOREIGN]	= "foreign_ptr",
	[AA_ERR_INTERIOR]	= "interior_ptr",
	[AA_ERR_MISALIGNED]	= "misaligned_ptr",
	[AA_ERR_CORRUPT]	= "corrupt",
	[AA_ERR_UNINIT]		= "uninit",
	[AA_ERR_ZEROING]	= "zeroing",
};

AA_API const char *aa_error_str(enum aa_error err)
{
	return (unsigned)err < AA_NR_ERRORS ? error_names[err] : "unknown";
}

AA_API int aa_stats__print(const struct aa_stats *st, FILE *out)
{
	int k;

	if (!st || !out)
		return aa_err(-EINVAL);
	fprintf(out, "heap:  in use %llu B (peak %llu B) in %llu live allocations\n",
		(unsigned long long)st->bytes_in_use, (unsigned long long)st->peak_bytes_in_use,
		(unsigned long long)st->live_allocs);
	fprintf(out, "       allocs %llu  frees %llu\n",
		(unsigned long long)st->nr_allocs, (unsigned long long)st->nr_frees);
	fprintf(out, "pages: mapped %llu (peak %llu), chunks %llu (%llu in large runs), "
		"grown %llu, trimmed %llu\n",
		(unsigned long long)st->pages_mapped, (unsigned long long)st->peak_pages_mapped,
		(unsigned long long)st->nr_chunks, (unsigned long long)st->large_chunks,
		(unsigned long long)st->nr_grows, (unsigned long long)st->nr_trims);
	fprintf(out, "free blocks per order:");
	for (k = 0; k < AA_NR_ORDERS; k++)
		if (st->free_blocks[k])
			fprintf(out, " %uB:%llu", AA_MIN_SIZE << k,
				(unsigned long long)st->free_blocks[k]);
	fprintf(out, "\nerrors:");
	for (k = 0; k < AA_NR_ERRORS; k++)
		fprintf(out, " %s=%llu", error_names[k], (unsigned long long)st->err[k]);
	fprintf(out, "\n");
	return 0;
}
