// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap_opts.c - fuzz target: struct aa_heap_opts as a caller may pass it,
 * of any sz, with any bytes: aa_heap__open()'s checks
 * (aa__heap_open_pages(): OPTS_VALID, arena_pages), the flags and
 * tunables step (aa__heap_configure(): unknown flags, the tunables
 * through aa_tunables__validate()), and aa_heap__attach(NULL, opts) /
 * aa_heap__reinit(NULL, opts). Nothing is loaded. Input: sz (first
 * byte), then the struct's bytes (the buffer is exactly sz bytes: a read
 * past it is a heap overflow), then bits to flip in the default
 * struct aa_tunables that .tunables points to when the first byte's top
 * bit says so (a pointer cannot come from the input). Oracle: valid iff
 * sz covers .sz and every byte past the last field
 * (aa_heap_opts__last_field) is zero; pages 0 means 65536, and
 * AA_MIN_ARENA_PAGES (the root, a chunk's metadata and a page) ..
 * 2^20 pass; flags other than AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG |
 * AA_F_NO_SELF_GROW are -EINVAL.
 */
#include <stddef.h>
#include "fuzz.h"
#include "internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	unsetenv("ARENA_ALLOC_NO_CACHES");
	unsetenv("ARENA_ALLOC_DEFER");
	unsetenv("ARENA_ALLOC_DEBUG");
	unsetenv("ARENA_ALLOC_QUARANTINE");
	return 0;
}

#define KNOWN	(offsetof(struct aa_heap_opts, aa_heap_opts__last_field) + \
	 sizeof(((struct aa_heap_opts *)0)->aa_heap_opts__last_field))
#define COVERS(sz, field) \
	((sz) >= offsetof(struct aa_heap_opts, field) + sizeof(((struct aa_heap_opts *)0)->field))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aa_tunables tun = {}, want_tun;
	struct aa_heap h = {};
	size_t sz, n, i;
	unsigned char *buf;
	struct aa_heap_opts *o;
	int valid, r, want_pages;
	__u32 pages = 0, flags = 0;
	bool point;

	if (size < 1)
		return 0;
	sz = data[0] & 0x7f;
	point = data[0] & 0x80;
	buf = malloc(sz ? sz : 1);
	n = size - 1 < sz ? size - 1 : sz;
	memset(buf, 0, sz);
	memcpy(buf, data + 1, n);
	aa_tunables__default(&tun);	/* the rest of the input flips its bits */
	for (i = 0; i < size - 1 - n && i < sizeof(tun); i++)
		((unsigned char *)&tun)[i] ^= data[1 + n + i];
	/* a struct shorter than its sz field is not one: NULL stands for it */
	o = sz >= sizeof(size_t) ? (struct aa_heap_opts *)buf : NULL;
	if (o)
		o->sz = sz;
	if (COVERS(sz, tunables))
		o->tunables = point ? &tun : NULL;

	valid = 1;	/* NULL opts are valid */
	for (i = KNOWN; i < sz; i++)
		valid &= !buf[i];
	if (COVERS(sz, arena_pages))
		pages = o->arena_pages;
	if (!pages)
		pages = 1U << 16;
	want_pages = valid && pages >= AA_MIN_ARENA_PAGES && pages <= 1U << 20 ? (int)pages : -EINVAL;
	r = aa__heap_open_pages(o);
	if (o && r != want_pages)
		fuzz_fail("sz %zu, arena_pages %u: aa__heap_open_pages() = %d, not %d", sz, pages,
			  r, want_pages);
	if (!o && r != 1 << 16)
		fuzz_fail("NULL opts: aa__heap_open_pages() = %d", r);
	if (aa_heap__attach(NULL, o) || errno != EINVAL)
		fuzz_fail("aa_heap__attach(NULL, opts) did not refuse with EINVAL");
	if (aa_heap__reinit(NULL, o) != -EINVAL)
		fuzz_fail("aa_heap__reinit(NULL, opts) did not refuse with -EINVAL");

	if (valid) {
		if (COVERS(sz, flags))
			flags = o->flags;
		r = aa__heap_configure(&h, o);
		if (COVERS(sz, tunables) && point)
			want_tun = tun;
		else
			aa_tunables__default(&want_tun);
		if (flags & ~(AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG | AA_F_NO_SELF_GROW) ||
		    aa_tunables__validate(&want_tun)) {
			if (r != -EINVAL)
				fuzz_fail("flags 0x%x: aa__heap_configure() = %d, not -EINVAL", flags, r);
		} else if (r || h.flags != flags || memcmp(&h.tun, &want_tun, sizeof(want_tun))) {
			fuzz_fail("flags 0x%x: aa__heap_configure() = %d, flags 0x%x", flags, r, h.flags);
		}
	}
	free(buf);
	return 0;
}
