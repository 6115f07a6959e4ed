// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap.c - the loader: open/load the BPF object, map the arena, run the
 * SEC("syscall") programs (init, grow, trim, teardown, check, call, batch)
 * and translate arena addresses into pointers of this process.
 *
 * Every error is a negative errno returned to the caller (errno set too)
 * with a message through aa_set_print()'s callback; nothing aborts.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "internal.h"
#include "arena_alloc.skel.h"

struct aa_heap {
	struct bpf_object *obj;
	struct arena_alloc *skel;	/* set when we own the object */
	char *arena;			/* our mapping of the arena */
	__u64 arena_size;
	__u64 arena_base;		/* == (__u64)arena: arenas map at their
					 * user_vm_start in every process */
	const struct aa_root *root;
	int prog_init, prog_grow, prog_trim, prog_teardown, prog_check;
	int prog_call, prog_batch;
};

/* --- Messages ------------------------------------------------------------ */

static int default_print(enum aa_print_level level, const char *fmt, va_list ap)
{
	if (level > AA_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static aa_print_fn_t print_fn = default_print;

AA_API aa_print_fn_t aa_set_print(aa_print_fn_t fn)
{
	aa_print_fn_t old = print_fn;

	print_fn = fn;
	return old;
}

void aa_pr(enum aa_print_level level, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (!print_fn)
		return;
	va_start(ap, fmt);
	print_fn(level, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* --- Running syscall programs -------------------------------------------- */

static int run_prog(int fd, void *ctx, size_t ctx_sz, const char *name)
{
	LIBBPF_OPTS(bpf_test_run_opts, topts, .ctx_in = ctx, .ctx_size_in = ctx_sz);
	int err;

	if (fd < 0) {
		pr_warn("program %s is missing from the BPF object\n", name);
		return -ENOENT;
	}
	err = bpf_prog_test_run_opts(fd, &topts);
	if (err) {
		err = -errno;
		pr_warn("running %s failed: %s\n", name, strerror(-err));
		return err;
	}
	return (int)topts.retval;
}

static int prog_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, name);

	return p ? bpf_program__fd(p) : -1;
}

/* --- Open / attach ------------------------------------------------------- */

static bool arena_supported(void)
{
	return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_ARENA, NULL) == 1;
}

static int heap_bind(struct aa_heap *h, struct bpf_object *obj)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "arena");
	size_t sz = 0;

	if (!map || bpf_map__type(map) != BPF_MAP_TYPE_ARENA) {
		pr_warn("BPF object has no arena map named 'arena'\n");
		return -ENOENT;
	}
	h->obj = obj;
	h->arena = bpf_map__initial_value(map, &sz);
	if (!h->arena || bpf_map__fd(map) < 0) {
		pr_warn("arena map is not loaded or not mapped\n");
		return -EINVAL;
	}
	h->arena_size = (__u64)bpf_map__max_entries(map) * getpagesize();
	h->arena_base = (__u64)(unsigned long)h->arena;
	h->prog_init = prog_fd(obj, "aa_init");
	h->prog_grow = prog_fd(obj, "aa_grow");
	h->prog_trim = prog_fd(obj, "aa_trim");
	h->prog_teardown = prog_fd(obj, "aa_teardown");
	h->prog_check = prog_fd(obj, "aa_check");
	h->prog_call = prog_fd(obj, "aa_call");
	h->prog_batch = prog_fd(obj, "aa_batch");
	if (h->prog_init < 0) {
		pr_warn("BPF object does not link libarena_alloc.bpf.o (no aa_init)\n");
		return -ENOENT;
	}
	return 0;
}

AA_API int aa_heap__init(struct aa_heap *h, __u64 init_bytes)
{
	struct aa_init_args args = {
		.arena_base = h->arena_base,
		.arena_size = h->arena_size,
		.grow_bytes = init_bytes,
	};
	int err;

	err = run_prog(h->prog_init, &args, sizeof(args), "aa_init");
	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	if (args.err) {
		pr_warn("heap init failed: %s\n", strerror(-args.err));
		return aa_err(args.err);
	}
	h->root = aa_heap__ptr(h, args.root_addr);
	if (!h->root || h->root->magic != AA_ROOT_MAGIC ||
	    h->root->version != AA_LAYOUT_VERSION ||
	    h->root->root_size != sizeof(struct aa_root)) {
		pr_warn("heap root at 0x%llx is not valid (layout mismatch?)\n",
			(unsigned long long)args.root_addr);
		return aa_err(-EPROTO);
	}
	return 0;
}

static struct aa_heap *heap_finish(struct aa_heap *h, const struct aa_heap_opts *opts)
{
	__u64 init = AA_OPTS_GET(opts, init_bytes, 0);
	int err;

	err = aa_heap__init(h, init ? init : AA_CHUNK_SIZE);
	if (err) {
		aa_heap__destroy(h);
		return aa_err_ptr(err);
	}
	return h;
}

AA_API struct aa_heap *aa_heap__open(const struct aa_heap_opts *opts)
{
	struct aa_heap *h;
	__u32 pages;
	int err;

	if (!AA_OPTS_VALID(opts, aa_heap_opts)) {
		pr_warn("invalid aa_heap_opts\n");
		return aa_err_ptr(-EINVAL);
	}
	pages = AA_OPTS_GET(opts, arena_pages, 0);
	if (!pages)
		pages = AA_DEFAULT_ARENA_PAGES;
	if (pages > AA_MAX_ARENA_PAGES || pages < AA_CHUNK_PAGES * 2) {
		pr_warn("arena_pages %u out of range [%u, %u]\n", pages,
			AA_CHUNK_PAGES * 2, AA_MAX_ARENA_PAGES);
		return aa_err_ptr(-EINVAL);
	}
	if (!arena_supported()) {
		pr_warn("BPF arena needs Linux >= 6.9 (this kernel has no BPF_MAP_TYPE_ARENA)\n");
		return aa_err_ptr(-EOPNOTSUPP);
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return aa_err_ptr(-ENOMEM);
	h->skel = arena_alloc__open();
	if (!h->skel) {
		err = -errno;
		pr_warn("opening the BPF object failed: %s\n", strerror(-err));
		goto fail;
	}
	err = bpf_map__set_max_entries(h->skel->maps.arena, pages);
	if (err)
		goto fail;
	err = arena_alloc__load(h->skel);
	if (err) {
		err = -errno;
		pr_warn("loading the BPF object failed: %s\n", strerror(-err));
		goto fail;
	}
	err = heap_bind(h, h->skel->obj);
	if (err)
		goto fail;
	return heap_finish(h, opts);
fail:
	aa_heap__destroy(h);
	return aa_err_ptr(err ? err : -EINVAL);
}

AA_API struct aa_heap *aa_heap__attach(struct bpf_object *obj, const struct aa_heap_opts *opts)
{
	struct aa_heap *h;
	int err;

	if (!obj || !AA_OPTS_VALID(opts, aa_heap_opts)) {
		pr_warn("invalid arguments to aa_heap__attach\n");
		return aa_err_ptr(-EINVAL);
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return aa_err_ptr(-ENOMEM);
	err = heap_bind(h, obj);
	if (err) {
		free(h);
		return aa_err_ptr(err);
	}
	return heap_finish(h, opts);
}

AA_API void aa_heap__destroy(struct aa_heap *h)
{
	if (!h)
		return;
	if (h->skel)
		arena_alloc__destroy(h->skel);
	free(h);
}

/* --- Heap operations ----------------------------------------------------- */

AA_API int aa_heap__grow(struct aa_heap *h, __u64 bytes)
{
	struct aa_grow_args args = { .bytes = bytes };
	int err = run_prog(h->prog_grow, &args, sizeof(args), "aa_grow");

	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	if (args.err) {
		pr_warn("grow by %llu bytes failed: %s\n", (unsigned long long)bytes,
			strerror(-args.err));
		return aa_err(args.err);
	}
	return (int)args.chunks;
}

static int trim_like(struct aa_heap *h, int fd, const char *name, __u64 keep)
{
	struct aa_trim_args args = { .keep_bytes = keep };
	int err = run_prog(fd, &args, sizeof(args), name);

	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	if (args.err) {
		pr_warn("%s failed: %s\n", name, strerror(-args.err));
		return aa_err(args.err);
	}
	return (int)args.chunks;
}

AA_API int aa_heap__trim(struct aa_heap *h, __u64 keep_bytes)
{
	return trim_like(h, h->prog_trim, "aa_trim", keep_bytes);
}

AA_API int aa_heap__teardown(struct aa_heap *h)
{
	return trim_like(h, h->prog_teardown, "aa_teardown", 0);
}

AA_API int aa_heap__check(struct aa_heap *h)
{
	int ret = run_prog(h->prog_check, NULL, 0, "aa_check");

	if (ret > 0)
		pr_warn("heap check failed with code %d\n", ret);
	return ret < 0 ? aa_err(ret) : ret;
}

AA_API int aa_heap__call(struct aa_heap *h, struct aa_op_args *args)
{
	int err;

	if (!args)
		return aa_err(-EINVAL);
	err = run_prog(h->prog_call, args, sizeof(*args), "aa_call");
	return aa_err(err > 0 ? -EINVAL : err);
}

AA_API __u64 aa_heap__malloc(struct aa_heap *h, __u64 size)
{
	struct aa_op_args a = { .op = AA_OP_MALLOC, .size = size };

	if (aa_heap__call(h, &a))
		return 0;
	if (!a.ptr)
		errno = -a.ret;
	return a.ptr;
}

AA_API int aa_heap__free(struct aa_heap *h, __u64 addr)
{
	struct aa_op_args a = { .op = AA_OP_FREE, .ptr = addr };
	int err = aa_heap__call(h, &a);

	return err ? err : aa_err((int)a.ret);
}

AA_API int aa_heap__batch(struct aa_heap *h, __u64 ops, __u32 n)
{
	struct aa_batch_args a = { .ops = ops, .n = n };
	int err;

	if (!aa_heap__ptr(h, ops) || !aa_heap__ptr(h, ops + (__u64)n * sizeof(struct aa_batch_op) - 1))
		return aa_err(-EFAULT);
	err = run_prog(h->prog_batch, &a, sizeof(a), "aa_batch");
	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	return (int)a.done;
}

/* --- Address translation and stats --------------------------------------- */

AA_API void *aa_heap__ptr(const struct aa_heap *h, __u64 addr)
{
	if (!h || addr < h->arena_base || addr - h->arena_base >= h->arena_size) {
		errno = EFAULT;
		return NULL;
	}
	return h->arena + (addr - h->arena_base);
}

AA_API __u64 aa_heap__addr(const struct aa_heap *h, const void *ptr)
{
	const char *p = ptr;

	if (!h || p < h->arena || (__u64)(p - h->arena) >= h->arena_size) {
		errno = EFAULT;
		return 0;
	}
	return h->arena_base + (p - h->arena);
}

AA_API const struct aa_root *aa_heap__root(const struct aa_heap *h)
{
	return h ? h->root : NULL;
}

AA_API int aa_heap__stats(const struct aa_heap *h, struct aa_stats *out)
{
	if (!h || !h->root || !out)
		return aa_err(-EINVAL);
	memcpy(out, (const void *)&h->root->stats, sizeof(*out));
	return 0;
}

AA_API struct bpf_object *aa_heap__object(const struct aa_heap *h)
{
	return h ? h->obj : NULL;
}

AA_API __u64 aa_heap__arena_size(const struct aa_heap *h)
{
	return h ? h->arena_size : 0;
}
