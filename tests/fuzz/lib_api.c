// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lib_api.c - fuzz target: the library's entry points that take numbers,
 * strings or structs from their caller and need no kernel: the size
 * classes (aa_size_class(), aa_class_size(), aa_class_span_pages()),
 * aa_error_str(), aa_stats__print() of any counters, every aa_heap__*
 * call with a NULL heap and the input's arguments, and aa_heap__unpin()
 * of the input's path under a directory that does not exist (it unlinks
 * nothing). Oracles: a request of n bytes (1 .. 8192) gets the smallest
 * class whose size is at least n, a multiple of 16; bad sizes, classes
 * and NULL heaps are refused with EINVAL (or 0/NULL), never a crash;
 * unpin answers -ENOENT, or -ENAMETOOLONG past PATH_MAX.
 */
#include <limits.h>
#include "fuzz.h"
#include "arena_alloc_internal.h"	/* the layout's calls, NULL heap too */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	aa_set_print(fuzz_quiet_print);
	return 0;
}

struct args {
	__u64 a, b;
	__u32 c;
	__s32 d;
};

static void size_classes(__u64 n, __u32 cls)
{
	int c = aa_size_class(n);
	__u32 size = c >= 0 ? aa_class_size(c) : 0;

	if (n == 0 || n > AA_MAX_CLASS_SIZE) {
		if (c != -EINVAL || errno != EINVAL)
			fuzz_fail("aa_size_class(%llu) = %d, not -EINVAL", (unsigned long long)n, c);
	} else if (c < 0 || c >= AA_NR_CLASSES || size < n || size % AA_MIN_ALIGN ||
		   (n % 16 == 0 && size % 16) ||
		   (c > 0 && aa_class_size(c - 1) >= n)) {
		fuzz_fail("aa_size_class(%llu) = %d (class size %u, the one below %u)",
			  (unsigned long long)n, c, size, c > 0 ? aa_class_size(c - 1) : 0);
	}
	if (cls >= AA_NR_CLASSES && (aa_class_size(cls) || aa_class_span_pages(cls)))
		fuzz_fail("class %u past the last: size %u, pages %u", cls, aa_class_size(cls),
			  aa_class_span_pages(cls));
	if (cls < AA_NR_CLASSES && (!aa_class_size(cls) || !aa_class_span_pages(cls)))
		fuzz_fail("class %u: size %u, pages %u", cls, aa_class_size(cls),
			  aa_class_span_pages(cls));
}

#define REFUSED(call)								\
	do {									\
		errno = 0;							\
		if ((call) || errno != EINVAL)					\
			fuzz_fail("%s: not refused with EINVAL", #call);	\
	} while (0)

static void null_heap(const struct args *x)
{
	struct aa_op_args op = { .op = x->c, .size = x->a, .ptr = x->b };
	struct aa_refill_event ev;
	struct aa_debug_error de;
	struct aa_chunk_info ci;
	struct aa_stats st;
	__u64 objs;

	REFUSED(aa_heap__grow(NULL, x->a) != -EINVAL);
	REFUSED(aa_heap__trim(NULL, x->a) != -EINVAL);
	REFUSED(aa_heap__refill(NULL, x->a) != -EINVAL);
	REFUSED(aa_heap__init(NULL, x->a) != -EINVAL);
	REFUSED(aa_heap__malloc(NULL, x->a));
	REFUSED(aa_heap__free(NULL, x->b) != -EINVAL);
	REFUSED(aa_heap__free_deferred(NULL, x->b) != -EINVAL);
	REFUSED(aa_heap__batch(NULL, x->a, x->c) != -EINVAL);
	REFUSED(aa_heap__call(NULL, &op) != -EINVAL);
	REFUSED(aa_heap__ptr(NULL, x->a));
	REFUSED(aa_heap__addr(NULL, (void *)(uintptr_t)x->b));
	REFUSED(aa_heap__cpu_cache(NULL, x->d));
	REFUSED(aa_heap__chunk(NULL, x->c, &ci) != -EINVAL);
	REFUSED(aa_heap__stats(NULL, &st) != -EINVAL);
	REFUSED(aa_heap__wait_refill(NULL, x->d, &ev) != -EINVAL);
	REFUSED(aa_heap__errors(NULL, &de, x->c, &objs) != -EINVAL);
	REFUSED(aa_heap__wait_error(NULL, x->d, &de) != -EINVAL);
	REFUSED(aa_heap__cached_bytes(NULL, &objs));
	REFUSED(aa_heap__flags(NULL));
	REFUSED(aa_heap__pin(NULL, "/nonexistent") != -EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char prefix[] = "/nonexistent-aa-fuzz/";
	struct args x = {};
	struct aa_stats st = {};
	char *path, *out = NULL;
	size_t len = 0, n;
	const char *e;
	FILE *f;
	int r;

	n = size < sizeof(x) ? size : sizeof(x);
	memcpy(&x, data, n);
	size_classes(x.a % 9000, x.c % 64);
	size_classes(x.b, x.c);
	e = aa_debug_kind_str(x.d);
	if (!e || (x.d >= 0 && x.d < AA_DBG_NR_KINDS && !strcmp(e, "unknown")))
		fuzz_fail("aa_debug_kind_str(%d) = %s", x.d, e ? e : "NULL");
	e = aa_error_str(x.d);
	if (!e || (x.d >= 0 && x.d < AA_NR_ERRORS && !strcmp(e, "unknown")))
		fuzz_fail("aa_error_str(%d) = %s", x.d, e ? e : "NULL");
	null_heap(&x);

	memcpy(&st, data + n, size - n < sizeof(st) ? size - n : sizeof(st));
	f = open_memstream(&out, &len);
	if (aa_stats__print(&st, f) || aa_stats__print(NULL, f) != -EINVAL ||
	    aa_stats__print(&st, NULL) != -EINVAL)
		fuzz_fail("aa_stats__print() answers wrong");
	fclose(f);
	free(out);

	/* a path under a directory that is not there: nothing to unlink */
	path = malloc(sizeof(prefix) + size - n);
	memcpy(path, prefix, sizeof(prefix) - 1);
	memcpy(path + sizeof(prefix) - 1, data + n, size - n);
	path[sizeof(prefix) - 1 + size - n] = '\0';
	r = aa_heap__unpin(path);
	if (r != -ENOENT && r != -ENAMETOOLONG)
		fuzz_fail("aa_heap__unpin(%s) = %d", fuzz_show(path), r);
	if (r == -ENAMETOOLONG && strlen(path) + sizeof("/aa__teardown") <= PATH_MAX)
		fuzz_fail("aa_heap__unpin(%s): -ENAMETOOLONG for %zu bytes", fuzz_show(path),
			  strlen(path));
	free(path);
	return 0;
}
