// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * find.c - find the heap of a program someone else loaded: any BPF object
 * that links libarena_alloc.bpf.o, found by its arena map (id or pin), by
 * one of its programs (id), or by a process that holds its arena (pid).
 * The aa__arena_of_*() lookups give the arena map id; aa__heap_bind_map_id()
 * binds a new handle to that arena's heap (the aa_heap__open_*() of
 * heap.c create and destroy the handle; foreign.c maps the arena).
 *
 * How a heap is found in a foreign arena: the programs that use the arena
 * map are the object's; among their maps, the one named ".data.aa_fast" is
 * the library's aa_fast, whose root field holds the arena address of the
 * root and arena_base the arena's user_vm_start (set by init, never
 * cleared). Wherever the linker put the arena globals, those two say where
 * they are; aa__heap_set_root() then checks magic and layout version. The
 * ring buffer map named aa_refill_rb among them is the refill event ring
 * (none: the refill waiter reads the flag on a timer instead). The
 * library's syscall programs among them (aa__grow, aa__trim, ...) give the
 * operations; a missing one is named when an operation needs it.
 * Needs CAP_SYS_ADMIN (walking program ids).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "internal.h"

#define MAX_PROG_MAPS	64

/* The maps of prog_fd, into ids (at most MAX_PROG_MAPS); their number. */
static __u32 prog_maps(int prog_fd, __u32 *ids, char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), n;

	if (bpf_prog_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	n = info.nr_map_ids < MAX_PROG_MAPS ? info.nr_map_ids : MAX_PROG_MAPS;
	memcpy(name, info.name, sizeof(info.name));
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = n;
	info.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(info);
	return bpf_prog_get_info_by_fd(prog_fd, &info, &len) ? 0 : n;
}

/* Bind h (a new handle, every fd -1) to the heap of arena map arena_id:
 * the fds of its object's maps and library programs kept in h, the arena
 * mapped, the root found. 0 or -errno (said); either way h is the
 * caller's to destroy. */
int aa__heap_bind_map_id(struct aa_heap *h, __u32 arena_id)
{
	__u32 id = 0, ids[MAX_PROG_MAPS], n, i, fast_id = 0;
	char where[48], name[BPF_OBJ_NAME_LEN];
	int arena_fd, fast_fd = -1, fd, err;
	struct bpf_map_info mi;
	bool ours;
	__u32 len;

	snprintf(where, sizeof(where), "arena map %u", arena_id);
	arena_fd = aa__heap_keep_fd(h, bpf_map_get_fd_by_id(arena_id));
	if (arena_fd < 0) {
		err = -errno;
		aa__warn_arena_err(where, err);
		return err;
	}
	while (!bpf_prog_get_next_id(id, &id)) {
		int pfd = bpf_prog_get_fd_by_id(id);

		if (pfd < 0)
			continue;
		n = prog_maps(pfd, ids, name);
		for (i = 0, ours = false; i < n; i++)
			ours |= ids[i] == arena_id;
		for (i = 0; ours && i < n && (!fast_id || h->refill_fd < 0 || h->debug_fd < 0); i++) {
			len = sizeof(mi);
			memset(&mi, 0, sizeof(mi));
			fd = bpf_map_get_fd_by_id(ids[i]);
			if (fd < 0)
				continue;
			if (bpf_map_get_info_by_fd(fd, &mi, &len)) {
				close(fd);
			} else if (!fast_id && !strcmp(mi.name, ".data.aa_fast")) {
				fast_id = ids[i];
				fast_fd = aa__heap_keep_fd(h, fd);
			} else if (h->refill_fd < 0 && mi.type == BPF_MAP_TYPE_RINGBUF &&
				   !strcmp(mi.name, AA_REFILL_RING)) {
				h->refill_fd = aa__heap_keep_fd(h, fd);
			} else if (h->debug_fd < 0 && mi.type == BPF_MAP_TYPE_RINGBUF &&
				   !strcmp(mi.name, AA_DEBUG_RING)) {
				h->debug_fd = aa__heap_keep_fd(h, fd);
			} else {
				close(fd);
			}
		}
		/* keep it if it is one of the library's programs of this heap */
		if (!ours || aa__heap_set_prog(h, name, pfd))
			close(pfd);
		else
			aa__heap_keep_fd(h, pfd);
	}
	return aa__heap_map_fds(h, arena_fd, fast_fd, where);
}

/* The first arena map among a program's maps, or 0. */
static __u32 arena_of_prog(int prog_fd)
{
	__u32 ids[MAX_PROG_MAPS], n, i, len;
	char name[BPF_OBJ_NAME_LEN];
	struct bpf_map_info mi;
	int fd;

	n = prog_maps(prog_fd, ids, name);
	for (i = 0; i < n; i++) {
		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		len = sizeof(mi);
		if (!bpf_map_get_info_by_fd(fd, &mi, &len) && mi.type == BPF_MAP_TYPE_ARENA) {
			close(fd);
			return ids[i];
		}
		close(fd);
	}
	return 0;
}

__s64 aa__arena_of_prog_id(__u32 prog_id)
{
	int fd = bpf_prog_get_fd_by_id(prog_id), err = -errno;
	char where[32];
	__u32 arena;

	if (fd < 0) {
		snprintf(where, sizeof(where), "program %u", prog_id);
		aa__warn_arena_err(where, err);
		return err;
	}
	arena = arena_of_prog(fd);
	close(fd);
	if (!arena) {
		pr_warn("program %u uses no arena map\n", prog_id);
		return -ENOENT;
	}
	return arena;
}

__s64 aa__arena_of_map_pin(const char *path)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi);
	int fd, err;

	if (!path)
		return -EINVAL;
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		aa__warn_arena_err(path, err);
		return err;
	}
	if (bpf_map_get_info_by_fd(fd, &mi, &len) || mi.type != BPF_MAP_TYPE_ARENA) {
		pr_warn("%s is not a pinned arena map\n", path);
		close(fd);
		return -EINVAL;
	}
	close(fd);
	return mi.id;
}

/* The map id that a map fd's fdinfo text ("map_type:" and "map_id:"
 * lines) gives, when it is an arena map; else 0. */
__u32 aa__fdinfo_arena_id(const char *text)
{
	__u32 id = 0, type = 0;
	const char *p;

	for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		sscanf(p, "map_type: %u", &type);
		sscanf(p, "map_id: %u", &id);
	}
	return type == BPF_MAP_TYPE_ARENA ? id : 0;
}

__s64 aa__arena_of_pid(int pid)
{
	char dir[64], path[320], text[4096];
	__u32 arena = 0;
	struct dirent *e;
	size_t n;
	FILE *f;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", pid);
	d = opendir(dir);
	if (!d) {
		pr_warn("process %d: %s\n", pid, strerror(errno));
		return -errno;
	}
	while (!arena && (e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		arena = aa__fdinfo_arena_id(text);
	}
	closedir(d);
	if (!arena) {
		pr_warn("process %d holds no arena map\n", pid);
		return -ENOENT;
	}
	return arena;
}
