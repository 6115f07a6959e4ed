/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * arena_alloc.h - userspace API of arena-alloc.
 *
 * A struct aa_heap is a loaded allocator: the BPF object holding it, its
 * arena mmap and its root. Open one with aa_heap__open() (the library's own
 * BPF object) or aa_heap__attach() (your loaded object, linked with
 * libarena_alloc.bpf.o). Conventions follow libbpf: int functions return 0
 * or a negative errno, pointer functions return NULL; both set errno and
 * print a message through the aa_set_print() callback. Nothing aborts: a
 * NULL heap is -EINVAL (NULL, or 0 for the __u64 functions) with errno
 * EINVAL from every aa_heap__* function; aa_heap__destroy(NULL) is a no-op.
 *
 * This header is the API and nothing of the heap's layout: its types and
 * limits are aa_types.h's. The structs inside the mmap and the functions
 * that hand them out (aa_heap__root(), the caches, the raw calls) are
 * arena_alloc_internal.h's, for tools that read the layout. A skeleton of
 * an object linking libarena_alloc.bpf.o shows the library's globals by
 * their layout types: include aa_shared.h before it.
 */
#ifndef __ARENA_ALLOC_H
#define __ARENA_ALLOC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>		/* memset(), for AA_OPTS() */
#include <linux/types.h>
#include "aa_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef AA_API
#define AA_API __attribute__((visibility("default")))
#endif

struct aa_heap;
struct bpf_object;

/* Options structs start with sz and grow at the end (libbpf style). The
 * fields not named are zero; in C++ (designated initializers are a GNU
 * extension before C++20) -Wextra would say so for each. */
#define AA_OPTS(TYPE, NAME, ...)					\
	struct TYPE NAME = ({						\
		struct TYPE ___aa_o;					\
		memset(&___aa_o, 0, sizeof(___aa_o));			\
		_Pragma("GCC diagnostic push")				\
		_Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"") \
		___aa_o = (struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ }; \
		_Pragma("GCC diagnostic pop")				\
		___aa_o;						\
	})

struct aa_heap_opts {
	size_t sz;		/* sizeof(struct aa_heap_opts) */
	/* Arena size in the kernel's pages (aa_heap__open only; attach uses
	 * the object's arena as loaded). 0: 256 MiB (65536 pages of 4 KiB,
	 * 16384 of 16 KiB). Max 4 GiB. */
	__u32 arena_pages;
	/* Grow the heap by this many bytes at init (whole 1-MiB chunks).
	 * 0: one chunk. */
	__u64 init_bytes;
	/* AA_F_DEBUG: debug mode (poisoned frees, redzones, error records:
	 * aa_heap__errors(); also set by ARENA_ALLOC_DEBUG=1).
	 * AA_F_DEFER: deferred free (aa_free_deferred(); 2 more metadata pages
	 * per chunk, also set by ARENA_ALLOC_DEFER=1).
	 * AA_F_NO_CACHES: no CPU or transfer caches (the "before" of the benchmarks). Also
	 * set by ARENA_ALLOC_NO_CACHES=1.
	 * AA_F_NO_SELF_GROW: on Linux >= 7.0, allocations that find the
	 * heap empty do not map chunks themselves (they do by default, and
	 * init then sets AA_F_SELF_GROW in aa_heap__flags()); only grow
	 * and the refill agent add memory.
	 * Also set by ARENA_ALLOC_NO_SELF_GROW=1. */
	__u32 flags;
	/* Cache tunables; NULL: aa_tunables__default() (with environment
	 * overrides). Checked by aa_tunables__validate(). */
	const struct aa_tunables *tunables;
	/* Fault injection, for tests (docs/DESIGN.md, "Fault injection"): every
	 * Nth page allocation of the sleepable paths (CPU cache pages at
	 * init, chunk metadata, chunks) fails as if the kernel had no page;
	 * every Nth page-heap request for a new span or page run fails as if
	 * the heap were empty. 0: off, unless ARENA_ALLOC_FAULT_PAGES_EVERY /
	 * ARENA_ALLOC_FAULT_SPANS_EVERY say otherwise. Change them later with
	 * aa_heap__set_fault(). */
	__u32 fault_pages_every;
	__u32 fault_spans_every;
	size_t :0;
};
#define aa_heap_opts__last_field fault_spans_every

enum aa_print_level { AA_WARN, AA_INFO, AA_DEBUG_LEVEL };
typedef int (*aa_print_fn_t)(enum aa_print_level level, const char *fmt, va_list ap);

/** @brief **aa_set_print()** sets the message callback; NULL silences.
 * @return the previous callback */
AA_API aa_print_fn_t aa_set_print(aa_print_fn_t fn);

/* A buffer of this size holds every line of aa_probe_arena(). */
#define AA_PROBE_LINE_SZ	256

/** @brief **aa_probe_arena()** tries to create a one-page BPF arena map
 * (and closes it) and says in one line, without a newline, into buf (sz
 * bytes, truncated; buf may be NULL) whether this process can, and if not
 * why: the kernel has no BPF arena (Linux < 6.9, or built without), the
 * process lacks CAP_BPF and CAP_SYS_ADMIN, a security policy of the host
 * refuses it in spite of them, the CPU lacks cmpxchg16b (Linux >= 7.0), or
 * the kernel's own error. Prints nothing.
 * @return 0 when this process can create arena maps; -EOPNOTSUPP when the
 * kernel has no BPF arena; -EPERM when it refuses this process (missing
 * capabilities or a host policy); -ENODEV when the CPU lacks cmpxchg16b
 * (Linux >= 7.0); -ENOMEM when out of memory; the kernel's negative
 * error, otherwise (errno set) */
AA_API int aa_probe_arena(char *buf, size_t sz);

/** @brief **aa_heap__open()** loads the library's own BPF object, maps the
 * arena and initialises the heap. It runs aa_probe_arena() first and
 * prints its line when this process cannot create arena maps.
 * @return a heap, or NULL with errno set (aa_probe_arena()'s errors:
 * EOPNOTSUPP when the kernel has no BPF arena, which needs Linux >= 6.9) */
AA_API struct aa_heap *aa_heap__open(const struct aa_heap_opts *opts);

/** @brief **aa_heap__attach()** takes a loaded object that links
 * libarena_alloc.bpf.o (its `arena` map and aa_* programs) and initialises
 * the heap in it. The object stays the caller's.
 * @return a heap, or NULL with errno set */
AA_API struct aa_heap *aa_heap__attach(struct bpf_object *obj,
				       const struct aa_heap_opts *opts);

/** @brief **aa_tunables__default()** fills t with the documented defaults,
 * then applies the environment overrides ARENA_ALLOC_<KEY> of every key of
 * aa_tunables__set() (KEY uppercased: ARENA_ALLOC_CPU_CACHE_CAP,
 * ARENA_ALLOC_BATCH, ARENA_ALLOC_TRANSFER_CAP for all classes,
 * ARENA_ALLOC_KEEP_BYTES, ARENA_ALLOC_LOW_WATERMARK,
 * ARENA_ALLOC_DEFER_LIMIT, ARENA_ALLOC_QUARANTINE), read as that function
 * reads its value; an unset or empty variable is no override.
 * @return 0, on success; aa_tunables__set()'s error for the first bad
 * environment value */
AA_API int aa_tunables__default(struct aa_tunables *t);

/** @brief **aa_tunables__set()** sets one tunable of t from text, as the
 * environment and `arena-alloc load --tunable KEY=VALUE` do. key is
 * keep_bytes, low_watermark or defer_limit (value: a size, N, NK, NM or
 * NG in powers of 1024), quarantine (a decimal count, 0 .. 1024 slots),
 * or cpu_cache_cap (2 .. 128), batch (1 .. 64) or transfer_cap (1 .. 256),
 * decimal counts for every size class, or with key:SIZE (batch:48) for
 * the class that serves SIZE bytes alone (SIZE: a size too). A '-' is
 * never taken. t is not checked as a whole: aa_tunables__validate() does
 * that.
 * @param t tunables to change (only the field of key, only on success)
 * @param key the tunable's name, optionally :SIZE
 * @param value its value as text
 * @return 0, on success; -EINVAL for an unknown key, or a value or SIZE
 * that is not a number (a size); -ERANGE for a value outside the key's
 * range, or a SIZE outside 1 .. AA_MAX_CLASS_SIZE; each with a message
 * naming key and value */
AA_API int aa_tunables__set(struct aa_tunables *t, const char *key,
			     const char *value);

/** @brief **aa_tunables__validate()** checks the limits, per class:
 * 2 <= cpu_cache_cap <= AA_CPU_CACHE_MAX (128), 1 <= batch <= cap / 2,
 * batch <= transfer_cap <= AA_TRANSFER_MAX (256); and quarantine <=
 * AA_QUARANTINE_MAX (1024).
 * @return 0, on success; -EINVAL with a message, otherwise */
AA_API int aa_tunables__validate(const struct aa_tunables *t);

/** @brief **aa_size_class()** is the size class that serves a request of
 * size bytes (1 .. AA_MAX_CLASS_SIZE).
 * @return the class (0 .. AA_NR_CLASSES - 1); -EINVAL for other sizes */
AA_API int aa_size_class(__u64 size);

/** @brief **aa_class_size()** is the object size of class cls (what
 * aa_usable_size() reports for its objects).
 * @return bytes, or 0 for cls >= AA_NR_CLASSES */
AA_API __u32 aa_class_size(__u32 cls);

/** @brief **aa_class_span_pages()** is the number of pages per span of
 * class cls.
 * @return pages, or 0 for cls >= AA_NR_CLASSES */
AA_API __u32 aa_class_span_pages(__u32 cls);

/** @brief **aa_heap__pin()** pins the heap's arena map, its aa_fast map and
 * the library's programs under dir (a bpffs directory, created if needed),
 * so that the heap outlives this process.
 * @return 0; -EEXIST if a heap is pinned there; negative error otherwise */
AA_API int aa_heap__pin(struct aa_heap *heap, const char *dir);

/** @brief **aa_heap__open_pinned()** opens a heap that aa_heap__pin() left
 * in dir: maps its arena, finds its root (magic and layout version
 * checked) and the programs that are there.
 * @return a heap handle (aa_heap__destroy() closes it, the pins stay), or
 * NULL with errno set */
AA_API struct aa_heap *aa_heap__open_pinned(const char *dir);

/** @brief **aa_heap__open_map_id()**, **aa_heap__open_map_pin()**,
 * **aa_heap__open_prog_id()**, **aa_heap__open_pid()** open the heap of a
 * program someone else loaded (any object linking libarena_alloc.bpf.o):
 * by its arena map (id, or a pinned path), by one of its programs, or by
 * a process holding its arena map. The heap's root is found through the
 * library's .data.aa_fast map, next to the arena in the object's programs;
 * magic and layout version are checked. Operations use the library's
 * programs of that object (a missing one is named when needed). Needs
 * CAP_SYS_ADMIN.
 * @return a heap handle, or NULL with errno set */
AA_API struct aa_heap *aa_heap__open_map_id(__u32 arena_map_id);
AA_API struct aa_heap *aa_heap__open_map_pin(const char *path);
AA_API struct aa_heap *aa_heap__open_prog_id(__u32 prog_id);
AA_API struct aa_heap *aa_heap__open_pid(int pid);

/** @brief **aa_heap__unpin()** removes what aa_heap__pin() put in dir, and
 * dir. The heap lives on while a program or process holds it.
 * @return 0; -ENOENT if no heap is pinned there */
AA_API int aa_heap__unpin(const char *dir);

/** @brief **aa_heap__destroy()** frees the handle (and, for
 * aa_heap__open(), the BPF object). Does not tear the heap down. */
AA_API void aa_heap__destroy(struct aa_heap *heap);

/** @brief **aa_heap__grow()** maps at least bytes more (whole chunks).
 * @return chunks added (> 0); negative error, otherwise */
AA_API int aa_heap__grow(struct aa_heap *heap, __u64 bytes);

/** @brief **aa_heap__trim()** returns entirely free chunks to the kernel,
 * keeping keep_bytes of them (AA_KEEP_DEFAULT: the keep_bytes tunable).
 * @return chunks returned (>= 0); negative error, otherwise */
AA_API int aa_heap__trim(struct aa_heap *heap, __u64 keep_bytes);

/** @brief **aa_heap__teardown()** returns every page, live allocations
 * included; the heap must be initialised again (aa_heap__init() or
 * aa_heap__reinit()) before use. No program may use the heap meanwhile:
 * teardown claims every CPU cache first and refuses, changing nothing,
 * while a program is inside one (or a trim is returning pages).
 * @return chunks returned (>= 0); -EBUSY (heap in use, nothing changed);
 * negative error, otherwise */
AA_API int aa_heap__teardown(struct aa_heap *heap);

/** @brief **aa_heap__drain()** flushes every CPU cache, every user cache,
 * the transfer caches and the parked frees back to the heap, and first
 * reaps the user caches of processes that died (their objects back, the
 * caches free for other threads). Runs from the calling
 * thread's CPU: caches of CPUs outside its cpuset, or offline, are drained
 * too. A cache that a program holds (it is inside an allocator call) is
 * retried for about 100 ms.
 * @return objects returned (>= 0); -EBUSY with a message naming the CPUs
 * whose caches could not be drained; negative error, otherwise */
AA_API long aa_heap__drain(struct aa_heap *heap);

/** @brief **aa_heap__reap()** closes the user caches (aa_heap__malloc()'s) of
 * processes that died with them, or exec()ed since: their objects go back
 * to the heap, the caches to threads that open one later. The kernel
 * tells (the user call looks the owner up by its pid in the initial
 * pid namespace and compares its start time and exec count), so any
 * process reaps any other's, across pid namespaces; a zombie's caches are
 * reaped once its parent has waited for it. Also closes the caches of
 * this handle's threads that exited while a drain held them.
 * What a dead process allocated and never freed stays allocated.
 * aa_heap__drain() and `arena-alloc refill-agent` call it.
 * @return caches reaped (>= 0); negative error */
AA_API int aa_heap__reap(struct aa_heap *heap);

/* The heap's default growth step: a refill's (aa_heap__refill(h, 0)), the
 * refill agent's and `arena-alloc load`'s initial heap. */
#define AA_GROW_BYTES_DEFAULT	(4ULL << 20)

/** @brief **aa_heap__refill()** answers the low-watermark signal: when BPF
 * raised root->need_refill, grows the heap by bytes (0:
 * AA_GROW_BYTES_DEFAULT, 4 MiB) and clears the signal, raising it again if
 * free memory is still below the low watermark (allocations during the
 * grow took the new memory). On heaps with AA_F_DEFER it reclaims limbo
 * first, and does not grow when that brought free memory back above the
 * low watermark.
 * @return chunks added (0 when no growth was needed); negative error */
AA_API int aa_heap__refill(struct aa_heap *heap, __u64 bytes);

/** @brief **aa_heap__wait_refill()** sleeps until the low-watermark signal
 * is up (at once if it already is) or timeout_ms pass (-1: no limit). It
 * sleeps in epoll on the heap's refill event ring (the map aa_refill_rb,
 * one event per raise), so waiting costs no CPU; a heap without the ring
 * is read every 200 ms instead. ev, if not NULL, gets the newest event
 * read (ts_ns 0 if the flag was found up with no new event). One waiter
 * per handle.
 * @return 1: the signal is up (answer it with aa_heap__refill()); 2
 * (heaps with AA_F_DEFER): deferred frees wait in limbo (answer with
 * aa_heap__reclaim()); 0: the timeout passed; -EINTR: a signal handler
 * ran; negative error, otherwise */
AA_API int aa_heap__wait_refill(struct aa_heap *heap, int timeout_ms,
				struct aa_refill_event *ev);

/** @brief **aa_heap__free_deferred()** frees addr after an RCU grace
 * period, as aa_free_deferred() does in BPF (heaps with AA_F_DEFER).
 * @return 0; negative error (-EALREADY double free, ... as
 * aa_heap__free(); -ENOMEM: no limbo record, or limbo holds twice the
 * defer_limit tunable already, and addr stays allocated; -EOPNOTSUPP
 * without AA_F_DEFER) */
AA_API int aa_heap__free_deferred(struct aa_heap *heap, __u64 addr);

/** @brief **aa_heap__reclaim()** runs one reclaim round: advances the
 * deferred-free epoch, waits for an RCU grace period (synchronize_rcu()
 * through a map-in-map update; membarrier() as a fallback) and frees what
 * was deferred before. Blocks for the grace period (milliseconds). One
 * round at a time per heap (a concurrent one waits).
 * @return objects freed (>= 0); -EAGAIN when no grace period can be had
 * (the map-in-map update failed and one CPU is online, where membarrier()
 * waits for none): the objects stay in limbo; negative error, otherwise */
AA_API long aa_heap__reclaim(struct aa_heap *heap);

/** @brief **aa_heap__refill_fd()** is an fd for the caller's own epoll
 * loop: readable when a refill event is queued; then call
 * aa_heap__wait_refill(heap, 0, ...) to read it.
 * @return the fd (owned by the heap); -ENOENT when the heap has no refill
 * event ring; negative error, otherwise */
AA_API int aa_heap__refill_fd(struct aa_heap *heap);

/** @brief **aa_heap__errors()** reads debug mode's error records
 * (AA_F_DEBUG) from the mmap: copies up to max of the first
 * AA_DEBUG_RECORDS errors found into recs, in the order they were found.
 * @param total if not NULL, gets the number of errors found in all
 * (each error once, whether or not a record kept it)
 * @return records copied (>= 0); negative error */
AA_API int aa_heap__errors(const struct aa_heap *heap, struct aa_debug_error *recs, __u32 max,
			   __u64 *total);

/** @brief **aa_heap__wait_error()** reads the next error from debug
 * mode's ring buffer (the map aa_debug_rb), waiting at most timeout_ms (0:
 * no wait, -1: no limit). Every error goes there while the ring has room
 * (the root counts the others: debug.events_lost). One reader per handle.
 * @return 1 with *out filled; 0: none within the timeout; -ENOENT: the
 * heap's object has no such ring; negative error, otherwise */
AA_API int aa_heap__wait_error(struct aa_heap *heap, int timeout_ms, struct aa_debug_error *out);

/** @brief **aa_debug_kind_str()** names an enum aa_debug_kind
 * ("use-after-free", "overflow", ...). */
AA_API const char *aa_debug_kind_str(__u32 kind);

/** @brief **aa_heap__cached_bytes()** sums the bytes held in CPU and
 * transfer caches (a racy snapshot while programs run); the heap counts
 * them as in use. objects, if not NULL, gets their number. */
AA_API __u64 aa_heap__cached_bytes(const struct aa_heap *heap, __u64 *objects);

/** @brief **aa_heap__print_caches()** prints per-CPU x class counters and
 * the transfer caches.
 * @return 0, on success; negative error, otherwise */
AA_API int aa_heap__print_caches(const struct aa_heap *heap, FILE *out);

/** @brief **aa_heap__init()** initialises the heap with the flags and
 * tunables given at open/attach, growing it by init_bytes. Done by
 * open/attach already; idempotent while the heap is initialised. Caches go
 * to the first 256 possible CPUs; CPUs above use the transfer caches and the
 * heap (counted in aa_stats.no_cache).
 * @return 0, on success; negative error, otherwise */
AA_API int aa_heap__init(struct aa_heap *heap, __u64 init_bytes);

/** @brief **aa_heap__reinit()** tears the heap down (if it is initialised;
 * see aa_heap__teardown()) and initialises it again with opts' flags,
 * tunables and init_bytes (arena_pages is ignored).
 * @return 0, on success; negative error, otherwise */
AA_API int aa_heap__reinit(struct aa_heap *heap, const struct aa_heap_opts *opts);

/** @brief **aa_heap__set_fault()** changes the fault injection of a
 * running heap (see aa_heap_opts.fault_pages_every): every pages_every-th
 * page allocation and every spans_every-th span or page-run request
 * fails from now on; 0 turns a kind off. Written straight into the root
 * through the mmap (no program runs); allocator calls already running may
 * still see the old values. Its counters are the root's
 * (aa_heap__root()->fault, arena_alloc_internal.h).
 * A later aa_heap__init() starts with these values (aa_heap__reinit()
 * with its opts').
 * @return 0, on success; -EINVAL for a heap that was never initialised */
AA_API int aa_heap__set_fault(struct aa_heap *heap, __u32 pages_every, __u32 spans_every);

/** @brief **aa_heap__check()** runs the allocator's validity checker.
 * @return 0 when every invariant holds; a positive check code when one
 * fails; negative error if it could not run */
AA_API int aa_heap__check(struct aa_heap *heap);

/** @brief **aa_heap__malloc()** allocates size bytes from userspace, in
 * the heap BPF programs use: an object they may free, and the same
 * accounting. Up to AA_MAX_CLASS_SIZE it comes from the calling thread's
 * own cache in the arena (opened on the thread's first call, closed when
 * it exits or the handle is destroyed): no syscall on a hit, a batch
 * through aa__run's user call on a miss. Larger sizes, heaps without CPU
 * caches and debug mode run aa__run once per call. The address is a pointer into this process's mapping too
 * (aa_heap__ptr() of it is the same value).
 * @return the arena address, or 0 with errno set */
AA_API __u64 aa_heap__malloc(struct aa_heap *heap, __u64 size);

/** @brief **aa_heap__calloc()** is aa_heap__malloc() of n * size bytes,
 * zeroed.
 * @return the arena address, or 0 with errno set (EINVAL: n or size 0, or
 * the product over AA_MAX_ALLOC, counted as a BPF call's would be) */
AA_API __u64 aa_heap__calloc(struct aa_heap *heap, __u64 n, __u64 size);

/** @brief **aa_heap__free()** frees an arena address from userspace,
 * whichever side allocated it: the object is claimed as a BPF free claims
 * it (a double, foreign, interior or misaligned free is refused and
 * counted, the heap unchanged) and goes to the thread's cache.
 * aa_heap__free(heap, 0) is 0.
 * @return 0, on success; negative error (see arena_alloc.bpf.h) */
AA_API int aa_heap__free(struct aa_heap *heap, __u64 addr);

/** @brief **aa_heap__ptr()** translates an arena address to a pointer into
 * this process's arena mapping.
 * @return the pointer, or NULL (errno EFAULT) outside the arena */
AA_API void *aa_heap__ptr(const struct aa_heap *heap, __u64 addr);

/** @brief **aa_heap__addr()** is the inverse of aa_heap__ptr().
 * @return the arena address, or 0 (errno EFAULT) */
AA_API __u64 aa_heap__addr(const struct aa_heap *heap, const void *ptr);

/** @brief **aa_heap__stats()** reads the counters from the mmap. Its
 * totals (nr_allocs, nr_frees, live_allocs, bytes_in_use) count the calls
 * programs made, whatever path served them; what the allocator holds for
 * itself (cached_*, quarantined_*, limbo_*, parked_objs) and the heap's
 * own view (heap_*) are apart. The equations: struct aa_stats.
 * @return 0, on success; negative error, otherwise */
AA_API int aa_heap__stats(const struct aa_heap *heap, struct aa_stats *out);

/** @brief **aa_heap__object()** is the BPF object the heap lives in. */
AA_API struct bpf_object *aa_heap__object(const struct aa_heap *heap);

/** @brief **aa_heap__arena_size()** is the arena's size in bytes. */
AA_API __u64 aa_heap__arena_size(const struct aa_heap *heap);

/** @brief **aa_heap__flags()** is the flags (AA_F_*) the heap runs with,
 * as its last init set them: those given (aa_heap_opts.flags and the
 * environment), AA_F_NO_CACHES too where init left the CPU caches off (an
 * arena they would take half of), AA_F_SELF_GROW where allocations that
 * find the heap empty map chunks themselves (Linux >= 7.0). A heap that
 * initialised itself on its first allocation, before the loader's
 * open or attach, keeps the flags of that init: AA_F_NO_CACHES, and
 * neither AA_F_DEFER nor AA_F_DEBUG, whatever the loader asked for.
 * @return the flags; 0 with errno EINVAL for a NULL heap */
AA_API __u32 aa_heap__flags(const struct aa_heap *heap);

/** @brief **aa_stats__print()** prints the counters in a readable table.
 * @return 0, on success; negative error, otherwise */
AA_API int aa_stats__print(const struct aa_stats *st, FILE *out);

/** @brief **aa_error_str()** names an enum aa_error. */
AA_API const char *aa_error_str(enum aa_error err);

#ifdef __cplusplus
}
#endif
#endif /* __ARENA_ALLOC_H */
