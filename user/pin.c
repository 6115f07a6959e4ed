// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pin.c - heaps that outlive their loader: pin a loaded heap under a bpffs
 * directory, open it again from there in another process, unpin it.
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
#include <stdlib.h>
#include <sys/mman.h>
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

/* Keep fd in h (closed by aa_heap__destroy()); returns it. */
int aa__heap_keep_fd(struct aa_heap *h, int fd)
{
	if (fd >= 0 && h->nr_pinned_fds < (int)(sizeof(h->pinned_fds) / sizeof(h->pinned_fds[0])))
		h->pinned_fds[h->nr_pinned_fds++] = fd;
	return fd;
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

int aa__heap_map_fds(struct aa_heap *h, int arena_fd, int fast_fd, const char *where)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), key = 0;
	struct aa_fast *fast = NULL;
	int err;

	if (bpf_map_get_info_by_fd(arena_fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARENA) {
		pr_warn("%s: not an arena map (map type %u)\n", where, info.type);
		return -EINVAL;
	}
	h->arena_size = (__u64)info.max_entries * getpagesize();
	/* aa_fast first: it says where the arena lives (the kernel maps an
	 * arena only at its user_vm_start) and where the root is */
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	if (fast_fd < 0 || bpf_map_get_info_by_fd(fast_fd, &info, &len) ||
	    info.value_size < sizeof(*fast) || !(fast = calloc(1, info.value_size)) ||
	    bpf_map_lookup_elem(fast_fd, &key, fast)) {
		pr_warn("%s: no arena-alloc aa_fast map next to the arena (no heap in it?)\n",
			where);
		free(fast);
		return -ENOENT;
	}
	if (!fast->root || !fast->arena_base) {
		pr_warn("%s: the heap was never initialised (aa_fast is empty)\n", where);
		free(fast);
		return -ENOENT;
	}
	/* At that address or not at all (an arena has one address in every
	 * process). As a hint only, the kernel's arena_get_unmapped_area()
	 * wants twice the arena's size free there and fails with EFAULT
	 * when the room after it is taken (a forked child's mappings may
	 * lie there); fixed, it takes the address as it is, and NOREPLACE
	 * refuses (EEXIST) a range that something else maps. */
	h->arena = mmap((void *)(unsigned long)fast->arena_base, h->arena_size,
			PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, arena_fd, 0);
	if (h->arena == MAP_FAILED) {
		h->arena = NULL;
		err = -errno;
		pr_warn("%s: cannot map the arena at 0x%llx: %s\n", where,
			(unsigned long long)fast->arena_base, strerror(-err));
		free(fast);
		return err;
	}
	h->own_mmap = true;
	h->arena_base = (__u64)(unsigned long)h->arena;
	if (h->arena_base != fast->arena_base) {
		pr_warn("%s: the arena mapped at %p, not at its 0x%llx\n", where, h->arena,
			(unsigned long long)fast->arena_base);
		free(fast);
		return -EADDRNOTAVAIL;
	}
	err = aa__heap_set_root(h, fast->root);
	free(fast);
	if (!err)
		h->flags = h->root->flags;
	return err;
}

AA_API struct aa_heap *aa_heap__open_pinned(const char *dir)
{
	int arena_fd, fast_fd, err, fd;
	struct aa_heap *h;
	size_t i;

	if (!dir)
		return aa_err_ptr(-EINVAL);
	h = aa__heap_new_foreign();
	if (!h)
		return aa_err_ptr(-ENOMEM);
	arena_fd = pin_get(h, dir, "arena");
	if (arena_fd < 0) {
		err = arena_fd;
		if (err == -EPERM || err == -EACCES)
			aa__warn_arena_err(dir, err);
		else
			pr_warn("no heap pinned at %s: %s%s\n", dir, strerror(-err),
				err == -ENOENT ? " (arena-alloc load pins one)" : "");
		goto fail;
	}
	fast_fd = pin_get(h, dir, "aa_fast");
	fd = pin_get(h, dir, AA_REFILL_RING);
	h->refill_fd = fd < 0 ? -1 : fd;
	fd = pin_get(h, dir, AA_DEBUG_RING);
	h->debug_fd = fd < 0 ? -1 : fd;
	err = aa__heap_map_fds(h, arena_fd, fast_fd, dir);
	if (err)
		goto fail;
	for (i = 0; i < AA_NR_PROGS; i++) {
		fd = pin_get(h, dir, aa__prog_names[i]);
		h->prog[i] = fd < 0 ? -1 : fd;	/* missing: said when used */
	}
	return h;
fail:
	aa_heap__destroy(h);
	return aa_err_ptr(err);
}

/* A handle with no program yet (all fds -1). */
struct aa_heap *aa__heap_new_foreign(void)
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

/* Set the fd of the library program `name` (one of aa__prog_names); 0 or
 * -ENOENT for another name. */
int aa__heap_set_prog(struct aa_heap *h, const char *name, int fd)
{
	int i;

	for (i = 0; i < AA_NR_PROGS; i++)
		if (!strcmp(name, aa__prog_names[i])) {
			h->prog[i] = fd;
			return 0;
		}
	return -ENOENT;
}

void aa__heap_close_pinned(struct aa_heap *h)
{
	int i;

	for (i = 0; i < h->nr_pinned_fds; i++)
		close(h->pinned_fds[i]);
	h->nr_pinned_fds = 0;
	if (h->own_mmap && h->arena)
		munmap(h->arena, h->arena_size);
	h->own_mmap = false;
}
