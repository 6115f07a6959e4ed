// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dump_cmd.c - `arena-alloc dump`: the chunk map read from the mmap
 * (aa_heap__chunk()): per chunk its state, pages free / in spans / in runs,
 * an occupancy bar and its free blocks per order; then fragmentation, per
 * order k: the share of free pages that sit in blocks of at least 2^k
 * pages (what an allocation of 2^k pages could use; 100% at every order
 * means no fragmentation below a chunk).
 */
#include <string.h>
#include "cli.h"

/* characters per chunk: 4 pages each (1 with 16-KiB pages) */
#define BAR	(AA_CHUNK_PAGES < 64 ? AA_CHUNK_PAGES : 64)

static const char *state_name(__u32 s)
{
	switch (s) {
	case AA_SLOT_CHUNK:		return "chunk";
	case AA_SLOT_LARGE_HEAD:	return "large";
	case AA_SLOT_LARGE_TAIL:	return "large+";
	case AA_SLOT_RELEASING:		return "releasing";
	default:			return "unmapped";
	}
}

/* '#' all of a character's pages used, '.' all free, '+' some of each. */
static void bar(const struct aa_chunk_info *c, char *out)
{
	int i, j, used;

	for (i = 0; i < BAR; i++) {
		for (j = 0, used = 0; j < AA_CHUNK_PAGES / BAR; j++)
			used += c->map[i * (AA_CHUNK_PAGES / BAR) + j] != '.';
		out[i] = used == 0 ? '.' : used == AA_CHUNK_PAGES / BAR ? '#' : '+';
	}
	out[BAR] = 0;
}

/* The share of free pages in blocks of order >= k. */
static double usable(const __u64 *blocks, int k, __u64 free_pages)
{
	__u64 pages = 0;
	int j;

	for (j = k; j < AA_NR_ORDERS; j++)
		pages += blocks[j] << j;
	return free_pages ? (double)pages / free_pages : 1.0;
}

void cli_print_dump(const struct aa_heap *h, const char *where)
{
	__u64 free_pages = 0, blocks[AA_NR_ORDERS] = {}, largest = 0;
	struct aa_chunk_info c;
	struct jw *w = NULL;
	char b[BAR + 1];
	__u32 s;
	int k;

	if (cli.json) {
		w = jw_new(stdout, cli.pretty);
		jw_start_object(w);
		jw_kv_string(w, "source", where);
		jw_kv_uint(w, "page_size", AA_PAGE_SIZE);
		jw_kv_uint(w, "chunk_pages", AA_CHUNK_PAGES);
		jw_name(w, "chunks");
		jw_start_array(w);
	} else {
		char head[80];

		snprintf(head, sizeof(head), "occupancy (# used, . free, + both; %u page%s each)",
			 AA_CHUNK_PAGES / BAR, AA_CHUNK_PAGES / BAR > 1 ? "s" : "");
		printf("chunks of the heap at %s (pages of %u KiB, %u per chunk)\n", where,
		       AA_PAGE_SIZE / 1024, AA_CHUNK_PAGES);
		printf("%5s %-9s %5s %5s %5s  %-*s  free blocks (pages:count)\n", "slot", "state",
		       "free", "span", "run", BAR, head);
	}
	for (s = 0; !aa_heap__chunk(h, s, &c); s++) {
		if (c.state == AA_SLOT_UNMAPPED)
			continue;
		free_pages += c.free_pages;
		if (c.largest_free > largest)
			largest = c.largest_free;
		for (k = 0; k < AA_NR_ORDERS; k++)
			blocks[k] += c.free_blocks[k];
		if (w) {
			jw_start_object(w);
			jw_kv_uint(w, "slot", c.slot);
			jw_kv_string(w, "state", state_name(c.state));
			jw_kv_uint(w, "free_pages", c.free_pages);
			jw_kv_uint(w, "span_pages", c.span_pages);
			jw_kv_uint(w, "run_pages", c.run_pages);
			jw_kv_uint(w, "largest_free", c.largest_free);
			jw_name(w, "free_blocks");
			jw_start_array(w);
			for (k = 0; k < AA_NR_ORDERS; k++)
				jw_uint(w, c.free_blocks[k]);
			jw_end_array(w);
			if (c.state == AA_SLOT_CHUNK) {
				char map[AA_CHUNK_PAGES + 1];

				memcpy(map, c.map, AA_CHUNK_PAGES);
				map[AA_CHUNK_PAGES] = 0;
				jw_kv_string(w, "map", map);
			}
			jw_end_object(w);
			continue;
		}
		if (c.state != AA_SLOT_CHUNK) {
			printf("%5u %-9s %5s %5s %5s  %-*s\n", c.slot, state_name(c.state), "-", "-",
			       "-", BAR, "(whole chunk of a large allocation, or leaving)");
			continue;
		}
		bar(&c, b);
		printf("%5u %-9s %5u %5u %5u  %s ", c.slot, state_name(c.state), c.free_pages,
		       c.span_pages, c.run_pages, b);
		for (k = 0; k < AA_NR_ORDERS; k++)
			if (c.free_blocks[k])
				printf(" %u:%u", 1U << k, c.free_blocks[k]);
		printf("\n");
	}
	if (w) {
		jw_end_array(w);
		jw_kv_uint(w, "free_pages", free_pages);
		jw_kv_uint(w, "largest_free", largest);
		jw_name(w, "free_blocks");
		jw_start_array(w);
		for (k = 0; k < AA_NR_ORDERS; k++)
			jw_uint(w, blocks[k]);
		jw_end_array(w);
		jw_name(w, "usable_share");	/* per order: see the top */
		jw_start_array(w);
		for (k = 0; k < AA_NR_ORDERS; k++)
			jw_double(w, usable(blocks, k, free_pages));
		jw_end_array(w);
		jw_end_object(w);
		jw_destroy(w);
	} else {
		printf("\nfree: %llu pages, largest free block %llu pages\n"
		       "free blocks (pages:count):", (unsigned long long)free_pages,
		       (unsigned long long)largest);
		for (k = 0; k < AA_NR_ORDERS; k++)
			printf(" %u:%llu", 1U << k, (unsigned long long)blocks[k]);
		printf("\nfree pages in blocks of at least N pages:");
		for (k = 0; k < AA_NR_ORDERS; k++)
			printf(" %u:%.0f%%", 1U << k, 100.0 * usable(blocks, k, free_pages));
		printf("\n");
	}
}

int cmd_dump(void)
{
	struct aa_heap *h;

	h = cli_begin("dump");
	if (!h)
		return 1;
	cli_print_dump(h, cli_where());
	aa_heap__destroy(h);
	return 0;
}
