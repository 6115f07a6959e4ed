// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * foreign.c - what a handle on a heap another process loaded is made of,
 * once pin.c (a pin directory) or find.c (map and program ids) gathered
 * its fds: the fds it keeps (closed by aa_heap__destroy(), through
 * aa__heap_close_foreign()), the library's programs among them by name,
 * and its own mapping of the arena, at the address and with the root that
 * the aa_fast map next to the arena names. heap.c creates and frees the
 * handle; this file fills and closes its part only. And the other side of
 * it: where aa_heap__open() puts the arena it creates, so that other
 * processes can map it there.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "internal.h"

/*
 * An address for an arena that aa_heap__open() creates, which other
 * processes will map where this one does (an arena has one address in
 * every process). Left to the kernel, it lands where this process's mmaps
 * go, top-down below its libraries, and in another process that range may
 * hold a library or a stack: likelier on arm64 (18 bits of mmap
 * randomization) than on x86-64 (28). Here: a random 4-GiB window of
 * [1 TiB, 2 TiB), which neither the program loader nor top-down mmap
 * reaches in an ordinary process, free in this one (checked: libbpf maps
 * an arena with an address over whatever is there). 0 (the kernel's
 * choice) when no window is free, or the address space is smaller.
 */
__u64 aa__arena_quiet_addr(__u64 bytes)
{
	unsigned int i, r = 0;
	__u64 a;
	void *m;

	if (!bytes || bytes > (1ULL << 32))
		return 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned int)getpid() * 2654435761U;
	for (i = 0; i < 8; i++, r = r * 1103515245U + 12345U) {
		a = (1ULL << 40) + ((__u64)(r >> 24) << 32);
		m = mmap((void *)(unsigned long)a, bytes, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (m == MAP_FAILED)
			continue;
		munmap(m, bytes);
		if ((__u64)(unsigned long)m == a)
			return a;
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

int aa__heap_map_fds(struct aa_heap *h, int arena_fd, int fast_fd, const char *where)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), key = 0;
	struct aa_fast *fast = NULL;
	int err;

	if (bpf_map_get_info_by_fd(arena_fd, &info, &len))
		return -errno;
	err = aa__page_size_check();
	if (err)
		return err;
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
		pr_warn("%s: cannot map the arena at 0x%llx: %s%s\n", where,
			(unsigned long long)fast->arena_base, strerror(-err),
			err == -EEXIST ? " (this process maps something else there: a new "
			"process has a new layout, try again)" : "");
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

void aa__heap_close_foreign(struct aa_heap *h)
{
	int i;

	for (i = 0; i < h->nr_pinned_fds; i++)
		close(h->pinned_fds[i]);
	h->nr_pinned_fds = 0;
	if (h->own_mmap && h->arena)
		munmap(h->arena, h->arena_size);
	h->own_mmap = false;
}
