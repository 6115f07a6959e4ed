/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* internal.h - private helpers of the userspace library. */
#ifndef __AA_USER_INTERNAL_H
#define __AA_USER_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "arena_alloc_internal.h"
#include "aa_size_classes.h"

struct bpf_object;
struct bpf_map;
struct arena_alloc;
struct ring_buffer;
struct aa_uc;

/* The library's refill event ring map (bpf/heap.bpf.c). */
#define AA_REFILL_RING	"aa_refill_rb"
/* The debug-mode error ring (bpf/debug.bpf.c). */
#define AA_DEBUG_RING	"aa_debug_rb"

/* The library's SEC("syscall") programs (bpf/entry.bpf.c): an index into
 * aa_heap.prog[] and into aa__prog_names[] (prog.c), the one list of their
 * names, which the BPF object, a pin directory and the kernel's program
 * info all use. The lifecycle's four, then aa__run, which runs every other
 * call (enum aa_call_kind, aa__run_call()). */
enum aa_prog {
	AA_PROG_INIT, AA_PROG_GROW, AA_PROG_TRIM, AA_PROG_TEARDOWN, AA_PROG_RUN,
	AA_NR_PROGS
};
extern const char *const aa__prog_names[AA_NR_PROGS];

/* A heap handle: from aa_heap__open() (skel set: we own the object),
 * aa_heap__attach() (obj set: the caller's) or aa_heap__open_pinned()
 * (neither: fds of pinned maps and programs, our own arena mmap). */
struct aa_heap {
	struct bpf_object *obj;
	struct arena_alloc *skel;	/* set when we own the object */
	struct bpf_map *arena_map, *fast_map;	/* in obj, for aa_heap__pin() */
	struct bpf_map *refill_map;	/* in obj: aa_refill_rb, or NULL */
	int refill_fd;			/* the refill event ring, -1 = none */
	struct ring_buffer *refill_rb;	/* its reader, opened on first wait */
	struct aa_refill_event last_event; /* newest event it read */
	struct bpf_map *debug_map;	/* in obj: aa_debug_rb, or NULL */
	int debug_fd;			/* the debug error ring, -1 = none */
	struct ring_buffer *debug_rb;	/* its reader, opened on first wait */
	struct aa_debug_error *error_out; /* debug.c: where the reader copies */
	int errors_read;		/* debug.c: records the reader copied */
	char *arena;			/* our mapping of the arena */
	__u64 arena_size;
	__u64 arena_base;		/* == (__u64)arena: arenas map at their
					 * user_vm_start in every process */
	const struct aa_root *root;
	struct aa_cpu_cache *cc_copy;	/* stats.c: aa_heap__cpu_cache()'s copy */
	int prog[AA_NR_PROGS];		/* enum aa_prog: fds, -1 = missing */
	bool gp_ready;			/* defer.c: the grace-period maps */
	bool gp_warned;			/* defer.c: said that none can be had */
	int gp_outer_fd, gp_inner_fd;
	int pinned_fds[16];		/* foreign.c: fds pin.c / find.c kept */
	int nr_pinned_fds;
	bool own_mmap;			/* aa_heap__open_pinned(): to munmap */
	__u32 flags;
	struct aa_tunables tun;
	__u32 fault_pages_every, fault_spans_every;	/* for the next init */
	/* user_cache.c: this process's threads' caches (uc_lock there) */
	int uc_state;			/* 0 not set up, 1 on, -1 off */
	__u32 uc_off_gen;		/* gen + 1 of a heap without them */
	pthread_key_t uc_key;		/* the thread's struct aa_uc */
	__u64 uc_serial;		/* this handle's user caches, among all
					 * handles ever (user_cache.c) */
	struct aa_fast fast;		/* what the hit path reads */
};

/* Library-internal functions across files: aa__ names (never exported
 * by the .so; in the .a, out of the way of users' names). The files call
 * each other in rows, each file only files of the rows below its own:
 *   heap.c      the lifecycle: open, attach, init, destroy
 *   refill.c    the refill signal's answer
 *   ops.c pin.c find.c
 *   defer.c fault.c foreign.c stats.c tunables.c user_cache.c
 *   addr.c debug.c parse.c print.c probe.c prog.c size_class.c
 * (heap.c calls the modules' close hooks down; no module calls it.) */
/* prog.c */
int aa__run_prog(struct aa_heap *h, enum aa_prog p, void *ctx, size_t ctx_sz);
int aa__run_call(struct aa_heap *h, enum aa_call_kind k, void *args, size_t args_sz);
/* addr.c */
int aa__heap_set_root(struct aa_heap *h, __u64 addr);
/* heap.c: the parsers of the library, apart so that tests/fuzz/ can call
 * them without a kernel: aa_heap__open()'s opts check (the arena pages, or
 * -EINVAL), the flags and tunables of opts and the environment into h, a
 * CPU list's CPU count. */
int aa__heap_open_pages(const struct aa_heap_opts *opts);
int aa__heap_configure(struct aa_heap *h, const struct aa_heap_opts *opts);
int aa__cpu_list_count(const char *list);
/* find.c: bind a new handle of heap.c to the heap of an arena map id; the
 * arena map id of a pinned map, a program, a process (> 0), or -errno
 * (said); the arena map id in a map fd's fdinfo text, or 0 */
int aa__heap_bind_map_id(struct aa_heap *h, __u32 arena_id);
__s64 aa__arena_of_map_pin(const char *path);
__s64 aa__arena_of_prog_id(__u32 prog_id);
__s64 aa__arena_of_pid(int pid);
__u32 aa__fdinfo_arena_id(const char *text);
/* probe.c */
__u64 aa__cap_eff(void);
/* pin.c: bind a new handle of heap.c to the heap pinned at dir */
int aa__heap_bind_pinned(struct aa_heap *h, const char *dir);
/* foreign.c: handles on heaps other processes loaded (pinned or found) */
void aa__heap_close_foreign(struct aa_heap *h);
int aa__heap_keep_fd(struct aa_heap *h, int fd);
int aa__heap_set_prog(struct aa_heap *h, const char *name, int fd);
/* refill.c */
void aa__heap_close_refill(struct aa_heap *h);
/* user_cache.c: user caches */
void aa__heap_close_user(struct aa_heap *h);
void aa__heap_fast_refresh(struct aa_heap *h);
/* Tests only: called by a thread opening its cache after it read the
 * heap's generation and before it asks for a cache (NULL: nothing). */
extern void (*aa__uc_open_hook)(struct aa_heap *h);
/* defer.c */
void aa__heap_close_defer(struct aa_heap *h);
/* debug.c */
void aa__heap_close_debug(struct aa_heap *h);
/* fault.c: the fault-injection options of opts and the environment */
int aa__heap_configure_fault(struct aa_heap *h, const struct aa_heap_opts *opts);
/* parse.c: s as a number in base (0: C's 0x and 0 prefixes), white space
 * and '+' first allowed, then K, M or G (powers of 1024, either case) when
 * sized: 0 and *out, -EINVAL (not a number, or a '-' anywhere) or -ERANGE
 * (over 64 bits), *out untouched; no message. The syntax is judged before
 * the range: "99999999999999999999x" is not a number. The one number
 * parser: tunables, environment knobs, the CLI (it links the static
 * library). */
int aa__parse_u64(const char *s, int base, bool sized, __u64 *out);
/* parse.c: a decimal environment variable into *out: 1 when set, 0 when
 * unset or empty, -EINVAL (said why) when not a number */
int aa__env_u64(const char *name, __u64 *out);
/* foreign.c: map the arena and find the root through aa_fast; where names
 * the source in messages. */
int aa__heap_map_fds(struct aa_heap *h, int arena_fd, int fast_fd, const char *where);
__u64 aa__arena_quiet_addr(__u64 bytes);
/* probe.c: what aa_probe_arena() learns about this process, apart so
 * that tests can classify any refusal without the kernel that gives it. */
enum aa__cx16 { AA_CX16_UNKNOWN, AA_CX16_PRESENT, AA_CX16_ABSENT };
struct aa__arena_facts {
	int err;		/* errno of the one-page arena map create; 0: created */
	unsigned int major, minor, patch;	/* kernel release; 0.0.0: unknown */
	__u64 cap_eff;		/* effective capabilities, bit CAP_x set */
	enum aa__cx16 cx16;	/* the x86 CPU flag cmpxchg16b */
	long page_size;		/* the kernel's page in bytes; 0: unknown */
};
/* The line of aa_probe_arena() for f into buf (sz bytes, truncated,
 * buf may be NULL); its return value. */
int aa__arena_diagnose(const struct aa__arena_facts *f, char *buf, size_t sz);
/* pr_warn() "where: why" for err (negative) from the kernel on an arena:
 * why is aa_probe_arena()'s line when err is EPERM or EACCES and this
 * process cannot create arena maps at all, else strerror() (with "run as
 * root" for EPERM or EACCES when the process lacks CAP_SYS_ADMIN). */
void aa__warn_arena_err(const char *where, int err);
/* 0 when this kernel's page is the allocator's (AA_PAGE_SIZE), else
 * -EOPNOTSUPP with aa_probe_arena()'s line said (pr_warn). */
int aa__page_size_check(void);


/* print.c */
__attribute__((format(printf, 2, 3)))
void aa_pr(enum aa_print_level level, const char *fmt, ...);
#define pr_warn(fmt, ...)	aa_pr(AA_WARN, "arena-alloc: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)	aa_pr(AA_INFO, "arena-alloc: " fmt, ##__VA_ARGS__)

/* CLOCK_MONOTONIC in ns (bpf_ktime_get_ns()'s clock). */
static inline __u64 aa__now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* libbpf_err(): set errno from a negative error and return it. */
static inline int aa_err(int ret)
{
	if (ret < 0)
		errno = -ret;
	return ret;
}

/* Every aa_heap__* entry point starts with this: a NULL handle is -EINVAL
 * (errno set, one message naming the function), never a crash. */
#define AA_CHECK_HEAP(h, ret)						\
	do {								\
		if (!(h)) {						\
			pr_warn("%s: NULL heap\n", __func__);		\
			errno = EINVAL;					\
			return (ret);					\
		}							\
	} while (0)

static inline void *aa_err_ptr(int err)
{
	errno = -err;
	return NULL;
}

/* OPTS_VALID: opts may be NULL; sz must cover what we read, and bytes past
 * the last field we know must be zero. */
static inline bool aa_opts_valid(const void *opts, size_t user_sz, size_t known_sz)
{
	const char *p = opts;
	size_t i;

	if (!opts)
		return true;
	if (user_sz < sizeof(size_t))
		return false;
	for (i = known_sz; i < user_sz; i++)
		if (p[i])
			return false;
	return true;
}

#define AA_OPTS_VALID(opts, type)					\
	aa_opts_valid((opts), (opts) ? (opts)->sz : 0,			\
		      offsetof(struct type, type##__last_field) +	\
		      sizeof(((struct type *)0)->type##__last_field))
#define AA_OPTS_GET(opts, field, fallback)				\
	((opts) && (opts)->sz >= offsetof(typeof(*(opts)), field) +	\
	 sizeof((opts)->field) ? (opts)->field : (fallback))

#endif
