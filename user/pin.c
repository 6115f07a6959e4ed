// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pin.c - heaps that outlive their loader: pin a loaded heap under a bpffs
 * directory, bind a new handle to the pins in another process
 * (aa_heap__open_pinned() in heap.c creates and destroys that handle;
 * foreign.c maps the arena), unpin it.
 *
 * A pinned heap is a directory of:
 *   arena     the arena map (mmapped again at its user_vm_start)
 *   aa_fast   the library's .data.aa_fast map, whose root field holds the
 *             arena address of struct aa_root (set by the first init,
 *             never cleared): how a heap is found in any arena
 *   aa_refill_rb  the refill event ring (optional: pins made before it
 *             existed have none; the refill waiter then reads the flag)
 *   aa__init, aa__grow, ... the library's SEC("syscall") programs present
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "internal.h"

static int pin_path(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= PATH_MAX) {
		pr_warn("pin path %s/%s is too long\n", dir, name);
		return -ENAMETOOLONG;
	}
	return 0;
}

AA_API int aa_heap__unpin(const char *dir)
{
	char path[PATH_MAX];
	bool found = false;
	size_t i;
	int err;

	if (!dir)
		return aa_err(-EINVAL);
	if ((err = pin_path(path, dir, "arena")))
		return aa_err(err);
	found = !unlink(path);
	if (!pin_path(path, dir, "aa_fast"))
		unlink(path);
	if (!pin_path(path, dir, AA_REFILL_RING))
		unlink(path);
	if (!pin_path(path, dir, AA_DEBUG_RING))
		unlink(path);
	for (i = 0; i < AA_NR_PROGS; i++)
		if (!pin_path(path, dir, aa__prog_names[i]))
			unlink(path);
	if (!found) {
		pr_warn("no heap pinned at %s\n", dir);
		return aa_err(-ENOENT);
	}
	if (rmdir(dir) && errno != ENOENT) {
		err = -errno;
		pr_warn("%s: unpinned, but the directory stays: %s\n", dir, strerror(-err));
		return aa_err(err);
	}
	return 0;
}

AA_API int aa_heap__pin(struct aa_heap *h, const char *dir)
{
	char path[PATH_MAX];
	struct bpf_program *p;
	size_t i;
	int err;

	AA_CHECK_HEAP(h, -EINVAL);
	if (!dir || !h->obj || !h->arena_map || !h->fast_map) {
		pr_warn("aa_heap__pin: needs a heap from aa_heap__open() or aa_heap__attach()\n");
		return aa_err(-EINVAL);
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		pr_warn("cannot create %s: %s\n", dir, strerror(-err));
		return aa_err(err);
	}
	if ((err = pin_path(path, dir, "arena")))
		return aa_err(err);
	if (!access(path, F_OK)) {
		pr_warn("a heap is pinned at %s already (unload it first)\n", dir);
		return aa_err(-EEXIST);
	}
	err = bpf_map__pin(h->arena_map, path);
	if (!err && !(err = pin_path(path, dir, "aa_fast")))
		err = bpf_map__pin(h->fast_map, path);
	if (!err && h->refill_map && !(err = pin_path(path, dir, AA_REFILL_RING)))
		err = bpf_map__pin(h->refill_map, path);
	if (!err && h->debug_map && !(err = pin_path(path, dir, AA_DEBUG_RING)))
		err = bpf_map__pin(h->debug_map, path);
	for (i = 0; !err && i < AA_NR_PROGS; i++) {
		p = bpf_object__find_program_by_name(h->obj, aa__prog_names[i]);
		if (p && !(err = pin_path(path, dir, aa__prog_names[i])))
			err = bpf_program__pin(p, path);
	}
	if (err) {
		pr_warn("pinning the heap under %s failed: %s\n", dir, strerror(-err));
		aa_heap__unpin(dir);
		return aa_err(err);
	}
	return 0;
}

/* Open the pin `name` of dir; -errno when it is not there. */
static int pin_get(struct aa_heap *h, const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd, err;

	if ((err = pin_path(path, dir, name)))
		return err;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : aa__heap_keep_fd(h, fd);
}

/* Bind h (a new handle, every fd -1) to the heap pinned at dir: the pins'
 * fds kept in h, the arena mapped, the root found. 0 or -errno (said);
 * either way h is the caller's to destroy. */
int aa__heap_bind_pinned(struct aa_heap *h, const char *dir)
{
	int arena_fd, fast_fd, err, fd;
	size_t i;

	arena_fd = pin_get(h, dir, "arena");
	if (arena_fd < 0) {
		err = arena_fd;
		if (err == -EPERM || err == -EACCES)
			aa__warn_arena_err(dir, err);
		else
			pr_warn("no heap pinned at %s: %s%s\n", dir, strerror(-err),
				err == -ENOENT ? " (arena-alloc load pins one)" : "");
		return err;
	}
	fast_fd = pin_get(h, dir, "aa_fast");
	fd = pin_get(h, dir, AA_REFILL_RING);
	h->refill_fd = fd < 0 ? -1 : fd;
	fd = pin_get(h, dir, AA_DEBUG_RING);
	h->debug_fd = fd < 0 ? -1 : fd;
	err = aa__heap_map_fds(h, arena_fd, fast_fd, dir);
	if (err)
		return err;
	for (i = 0; i < AA_NR_PROGS; i++) {
		fd = pin_get(h, dir, aa__prog_names[i]);
		h->prog[i] = fd < 0 ? -1 : fd;	/* missing: said when used */
	}
	return 0;
}
