// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * addr.c - a handle's view of its arena: arena addresses to pointers of
 * this process and back (an arena maps at the same address in every
 * process, so the two differ only in type), the root, found and checked
 * once (aa__heap_set_root()), and the handle's object, arena size and the
 * heap's flags.
 * Reads the handle only; calls nothing of the library but messages.
 */
#include "internal.h"

AA_API void *aa_heap__ptr(const struct aa_heap *h, __u64 addr)
{
	AA_CHECK_HEAP(h, NULL);
	if (addr < h->arena_base || addr - h->arena_base >= h->arena_size) {
		errno = EFAULT;
		return NULL;
	}
	return h->arena + (addr - h->arena_base);
}

AA_API __u64 aa_heap__addr(const struct aa_heap *h, const void *ptr)
{
	const char *p = ptr;

	AA_CHECK_HEAP(h, 0);
	if (p < h->arena || (__u64)(p - h->arena) >= h->arena_size) {
		errno = EFAULT;
		return 0;
	}
	return h->arena_base + (p - h->arena);
}

/* Point h at the root at arena address addr, if it is one this library can
 * read: magic, layout version, size. 0 or -EPROTO / -ENOENT (said why). */
int aa__heap_set_root(struct aa_heap *h, __u64 addr)
{
	const struct aa_root *r = aa_heap__ptr(h, addr);

	if (!r || r->magic != AA_ROOT_MAGIC) {
		pr_warn("no arena-alloc heap root at 0x%llx (never initialised, or torn down)\n",
			(unsigned long long)addr);
		return -ENOENT;
	}
	if (r->version != AA_LAYOUT_VERSION || r->root_size != sizeof(struct aa_root)) {
		pr_warn("layout v%u found (root %u bytes), this arena-alloc reads v%u (%zu bytes)\n",
			r->version, r->root_size, AA_LAYOUT_VERSION, sizeof(struct aa_root));
		return -EPROTO;
	}
	h->root = r;
	return 0;
}

AA_API const struct aa_root *aa_heap__root(const struct aa_heap *h)
{
	AA_CHECK_HEAP(h, NULL);
	return h->root;
}

AA_API struct bpf_object *aa_heap__object(const struct aa_heap *h)
{
	AA_CHECK_HEAP(h, NULL);
	return h->obj;
}

AA_API __u64 aa_heap__arena_size(const struct aa_heap *h)
{
	AA_CHECK_HEAP(h, 0);
	return h->arena_size;
}

/* The root's flags change only at an init (a reinit may run meanwhile in
 * another thread or process): one relaxed load. */
AA_API __u32 aa_heap__flags(const struct aa_heap *h)
{
	AA_CHECK_HEAP(h, 0);
	return h->root ? __atomic_load_n(&h->root->flags, __ATOMIC_RELAXED) : 0;
}
