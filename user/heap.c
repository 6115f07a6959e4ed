// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap.c - a handle's lifecycle, the top of the library: open (load the
 * library's own BPF object), attach (a caller's loaded object), open a
 * heap another process loaded (pinned, or found by map, program or
 * process), configure (opts, environment), init and reinit, destroy.
 *
 * Every handle is created and freed here, and only here: pin.c and find.c
 * bind a new handle to another process's heap and leave a failed one to
 * this file's destroy; aa_heap__destroy() calls each module's close hook
 * (aa__heap_close_*()). Every other file of user/ lies below this one and
 * calls nothing of it.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "internal.h"
#include "arena_alloc.skel.h"

/* --- Open / attach ------------------------------------------------------- */

static int object_prog_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, name);

	return p ? bpf_program__fd(p) : -1;
}

static int heap_bind(struct aa_heap *h, struct bpf_object *obj)
{
	struct bpf_map *map = NULL, *m;
	size_t sz = 0;
	int i, err;

	err = aa__page_size_check();
	if (err)
		return err;
	/* the object's arena, whatever its name (AA_ARENA_FUNCS()): the
	 * kernel allows a program one */
	bpf_object__for_each_map(m, obj)
		if (bpf_map__type(m) == BPF_MAP_TYPE_ARENA)
			map = m;
	if (!map) {
		pr_warn("BPF object has no arena map (AA_ARENA() in one of its files)\n");
		return -ENOENT;
	}
	h->obj = obj;
	h->arena_map = map;
	bpf_object__for_each_map(m, obj) {	/* the library's .data.aa_fast */
		const char *n = bpf_map__name(m);
		size_t len = strlen(n);

		if (len >= 7 && !strcmp(n + len - 7, "aa_fast"))
			h->fast_map = m;
	}
	h->refill_map = bpf_object__find_map_by_name(obj, AA_REFILL_RING);
	h->refill_fd = h->refill_map ? bpf_map__fd(h->refill_map) : -1;
	h->debug_map = bpf_object__find_map_by_name(obj, AA_DEBUG_RING);
	h->debug_fd = h->debug_map ? bpf_map__fd(h->debug_map) : -1;
	h->arena = bpf_map__initial_value(map, &sz);
	if (bpf_map__fd(map) < 0) {
		char why[AA_PROBE_LINE_SZ];
		int err = aa_probe_arena(why, sizeof(why));

		/* not loaded: say so, or why the kernel would not load it */
		if (err)
			pr_warn("the arena map is not loaded: %s\n", why);
		else
			pr_warn("the arena map is not loaded (load the object first)\n");
		return err ? err : -EINVAL;
	}
	if (!h->arena) {
		pr_warn("arena map is not mapped\n");
		return -EINVAL;
	}
	h->arena_size = (__u64)bpf_map__max_entries(map) * getpagesize();
	h->arena_base = (__u64)(unsigned long)h->arena;
	for (i = 0; i < AA_NR_PROGS; i++)
		h->prog[i] = object_prog_fd(obj, aa__prog_names[i]);
	if (h->prog[AA_PROG_INIT] < 0) {
		pr_warn("BPF object does not link libarena_alloc.bpf.o (no aa__init)\n");
		return -ENOENT;
	}
	return 0;
}

/* The number of CPUs a CPU list names ("0-3", "0,2-5", ... as in
 * /sys/devices/system/cpu/possible): the highest CPU plus one, or -EINVAL
 * for anything but digits, '-' and ',' up to the newline, or a CPU
 * number that does not fit. */
int aa__cpu_list_count(const char *list)
{
	const char *p;
	long hi = -1, v;

	for (p = list; *p && *p != '\n';) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (v = 0; *p >= '0' && *p <= '9'; p++) {
			v = v * 10 + (*p - '0');
			if (v >= INT_MAX)
				return -EINVAL;
		}
		if (v > hi)
			hi = v;
		if (*p == '-' || *p == ',')
			p++;
	}
	return hi < 0 ? -EINVAL : (int)(hi + 1);
}

/* Number of possible CPUs (/sys/devices/system/cpu/possible). Read every
 * time (libbpf caches its own answer for the life of the process). */
static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char buf[4096];

	if (!f)
		return libbpf_num_possible_cpus();
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	return aa__cpu_list_count(buf);
}

AA_API int aa_heap__init(struct aa_heap *h, __u64 init_bytes)
{
	struct aa_init_args args = { .grow_bytes = init_bytes };
	__u64 pages;
	int err, ncpus;

	AA_CHECK_HEAP(h, -EINVAL);
	args.arena_base = h->arena_base;
	args.arena_size = h->arena_size;
	args.flags = h->flags;
	args.tun = h->tun;
	args.fault_pages_every = h->fault_pages_every;
	args.fault_spans_every = h->fault_spans_every;
	ncpus = possible_cpus();

	if (ncpus <= 0) {
		pr_warn("cannot read the number of possible CPUs: %s\n", strerror(ncpus ? -ncpus : EINVAL));
		return aa_err(ncpus ? ncpus : -EINVAL);
	}
	if (ncpus > AA_MAX_CPUS && !(h->flags & AA_F_NO_CACHES))
		pr_info("%d possible CPUs: CPUs %d and up have no CPU cache and use the shared tiers\n",
			ncpus, AA_MAX_CPUS);
	args.nr_cpus = ncpus > AA_MAX_CPUS ? AA_MAX_CPUS : ncpus;
	pages = h->arena_size / AA_PAGE_SIZE;
	if (pages < AA_MIN_ARENA_PAGES) {
		pr_warn("an arena of %llu pages is below a heap's minimum of %u (arena globals %u, slot table 1, "
			"page map 1, chunk metadata %u, heap 1)\n", (unsigned long long)pages, AA_MIN_ARENA_PAGES,
			AA_GLOBALS_PAGES, AA_META_PAGES);
		return aa_err(-ENOSPC);
	}
	/* caches that would take half the arena: none (docs/DESIGN.md) */
	if (!(args.flags & AA_F_NO_CACHES) && 2ULL * AA_CACHE_PAGES(args.nr_cpus) > pages) {
		pr_info("an arena of %llu pages: no CPU caches (on %u CPUs they would take %llu "
			"pages)\n", (unsigned long long)pages, args.nr_cpus,
			(unsigned long long)AA_CACHE_PAGES(args.nr_cpus));
		args.flags |= AA_F_NO_CACHES;
	}

	err = aa__run_prog(h, AA_PROG_INIT, &args, sizeof(args));
	if (err)
		return aa_err(err < 0 ? err : -EINVAL);
	if (args.err) {
		pr_warn("heap init failed: %s\n", strerror(-args.err));
		return aa_err(args.err);
	}
	err = aa__heap_set_root(h, args.root_addr);
	if (!err && h->root->self_inits &&
	    ((h->root->flags ^ h->flags) & (AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG)))
		pr_info("the heap initialised itself on its first allocation (no CPU caches, no "
			"deferred free, no debug mode): tear it down and init again for this "
			"loader's flags\n");
	return aa_err(err);
}

/* Flags and tunables from opts (and the environment) into h: 0, or
 * -EINVAL (said). Reads nothing but opts and the environment. */
int aa__heap_configure(struct aa_heap *h, const struct aa_heap_opts *opts)
{
	const struct aa_tunables *tun = AA_OPTS_GET(opts, tunables, NULL);
	const char *env = getenv("ARENA_ALLOC_NO_CACHES");
	__u32 flags = AA_OPTS_GET(opts, flags, 0);
	struct aa_tunables t;
	int err;

	if (env && *env && strcmp(env, "0"))
		flags |= AA_F_NO_CACHES;
	if (getenv("ARENA_ALLOC_DEFER") && !strcmp(getenv("ARENA_ALLOC_DEFER"), "1"))
		flags |= AA_F_DEFER;
	if (getenv("ARENA_ALLOC_DEBUG") && !strcmp(getenv("ARENA_ALLOC_DEBUG"), "1"))
		flags |= AA_F_DEBUG;
	env = getenv("ARENA_ALLOC_NO_SELF_GROW");
	if (env && *env && strcmp(env, "0"))
		flags |= AA_F_NO_SELF_GROW;
	if (flags & ~(AA_F_NO_CACHES | AA_F_DEFER | AA_F_DEBUG | AA_F_NO_SELF_GROW)) {
		pr_warn("unknown flags 0x%x\n", flags);
		return -EINVAL;
	}
	if (tun)
		t = *tun;
	else if ((err = aa_tunables__default(&t)))
		return err;
	if ((err = aa_tunables__validate(&t)))
		return err;
	if ((err = aa__heap_configure_fault(h, opts)))
		return err;
	h->flags = flags;
	h->tun = t;
	return 0;
}

static struct aa_heap *heap_finish(struct aa_heap *h, const struct aa_heap_opts *opts)
{
	__u64 init = AA_OPTS_GET(opts, init_bytes, 0);
	int err;

	err = aa__heap_configure(h, opts);
	if (!err)
		err = aa_heap__init(h, init ? init : AA_CHUNK_SIZE);
	if (err) {
		aa_heap__destroy(h);
		return aa_err_ptr(err);
	}
	return h;
}

AA_API int aa_heap__reinit(struct aa_heap *h, const struct aa_heap_opts *opts)
{
	__u64 init = AA_OPTS_GET(opts, init_bytes, 0);
	int err;

	if (!h || !AA_OPTS_VALID(opts, aa_heap_opts)) {
		pr_warn("invalid arguments to aa_heap__reinit\n");
		return aa_err(-EINVAL);
	}
	err = aa__heap_configure(h, opts);
	if (err)
		return aa_err(err);
	if (h->root && h->root->magic == AA_ROOT_MAGIC) {
		err = aa_heap__teardown(h);
		if (err < 0)
			return err;
	}
	return aa_heap__init(h, init ? init : AA_CHUNK_SIZE);
}

/* aa_heap__open()'s checks of opts, before anything is loaded: the arena
 * size in pages, or -EINVAL (said). */
int aa__heap_open_pages(const struct aa_heap_opts *opts)
{
	__u32 pages;

	if (!AA_OPTS_VALID(opts, aa_heap_opts)) {
		pr_warn("invalid aa_heap_opts\n");
		return -EINVAL;
	}
	pages = AA_OPTS_GET(opts, arena_pages, 0);
	if (!pages)
		pages = AA_ARENA_PAGES_DEFAULT;
	if (pages > AA_MAX_ARENA_PAGES || pages < AA_MIN_ARENA_PAGES) {
		pr_warn("arena_pages %u out of range [%u, %u]\n", pages,
			AA_MIN_ARENA_PAGES, AA_MAX_ARENA_PAGES);
		return -EINVAL;
	}
	return pages;
}

AA_API struct aa_heap *aa_heap__open(const struct aa_heap_opts *opts)
{
	char why[AA_PROBE_LINE_SZ];
	struct aa_heap *h;
	int pages, err;

	pages = aa__heap_open_pages(opts);
	if (pages < 0)
		return aa_err_ptr(pages);
	/* before libbpf loads anything: its messages guess at the cause */
	err = aa_probe_arena(why, sizeof(why));
	if (err) {
		pr_warn("%s\n", why);
		return aa_err_ptr(err);
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
	if (!err)
		err = bpf_map__set_map_extra(h->skel->maps.arena,
					     aa__arena_quiet_addr((__u64)pages * AA_PAGE_SIZE));
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

/* --- Heaps other processes loaded ---------------------------------------- */

/* A handle with no program yet (all fds -1), for pin.c or find.c to bind. */
static struct aa_heap *heap_new_foreign(void)
{
	struct aa_heap *h = calloc(1, sizeof(*h));
	size_t i;

	if (h) {
		h->refill_fd = -1;
		h->debug_fd = -1;
	}
	for (i = 0; h && i < AA_NR_PROGS; i++)
		h->prog[i] = -1;
	return h;
}

/* h once its binder returned err 0; else h destroyed, NULL and errno. */
static struct aa_heap *foreign_done(struct aa_heap *h, int err)
{
	if (err) {
		aa_heap__destroy(h);
		return aa_err_ptr(err);
	}
	return h;
}

AA_API struct aa_heap *aa_heap__open_pinned(const char *dir)
{
	struct aa_heap *h;

	if (!dir)
		return aa_err_ptr(-EINVAL);
	h = heap_new_foreign();
	return h ? foreign_done(h, aa__heap_bind_pinned(h, dir)) : aa_err_ptr(-ENOMEM);
}

AA_API struct aa_heap *aa_heap__open_map_id(__u32 arena_id)
{
	struct aa_heap *h = heap_new_foreign();

	return h ? foreign_done(h, aa__heap_bind_map_id(h, arena_id)) : aa_err_ptr(-ENOMEM);
}

/* The heap of the arena map that a find.c lookup gave (id), or its -errno. */
static struct aa_heap *open_found(__s64 id)
{
	return id < 0 ? aa_err_ptr((int)id) : aa_heap__open_map_id((__u32)id);
}

AA_API struct aa_heap *aa_heap__open_map_pin(const char *path)
{
	return open_found(aa__arena_of_map_pin(path));
}

AA_API struct aa_heap *aa_heap__open_prog_id(__u32 prog_id)
{
	return open_found(aa__arena_of_prog_id(prog_id));
}

AA_API struct aa_heap *aa_heap__open_pid(int pid)
{
	return open_found(aa__arena_of_pid(pid));
}

/* --- Destroy ------------------------------------------------------------- */

AA_API void aa_heap__destroy(struct aa_heap *h)
{
	if (!h)
		return;
	aa__heap_close_user(h);
	aa__heap_close_refill(h);
	aa__heap_close_defer(h);
	aa__heap_close_debug(h);
	if (h->skel)
		arena_alloc__destroy(h->skel);
	aa__heap_close_foreign(h);
	free(h->cc_copy);
	free(h);
}
