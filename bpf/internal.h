/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * internal.h - private helpers shared by the tier files of arena-alloc:
 * the arena map and root, address conversion, the concurrency primitives
 * (claims, custody marks, reserves; the locks are in lock.h), error
 * accounting and the cross-file (global) functions of each tier.
 *
 * CONCURRENCY MODEL (the one description: every other file points here)
 *
 * Who can meet on one CPU. Every BPF program runs with migration disabled,
 * so bpf_get_smp_processor_id() is stable for its whole run, but:
 *  - task-context programs (syscall, sleepable, tc/xdp/raw_tp test runs)
 *    are preemptible on kernels booted preempt=full, preempt=lazy (once the
 *    tick fires) and on PREEMPT_RT: two tasks can interleave anywhere inside
 *    one allocator call on one CPU;
 *  - softirq (tc/xdp on real traffic) interrupts tasks;
 *  - hard IRQ (perf_event on a software clock, tp_btf on hrtimer
 *    tracepoints) and NMI (perf_event on hardware counters) interrupt both
 *    and run to completion before the interrupted code resumes;
 *  - the host can deschedule a vCPU for milliseconds at any instruction;
 *  - userspace threads run the hit path on their own caches (user caches,
 *    aa_shared.h) over the mmap, and can be preempted, stopped or killed at
 *    any instruction, for ever: no BPF program ever touches a user cache
 *    or waits for one, and whatever else a thread touches (a block's word
 *    0 in its claim) follows the same lock-free protocol as a program.
 * Nothing here may assume that code between two instructions runs without
 * another allocator call on the same CPU, except inside a section that
 * disabled preemption, where only IRQ/NMI can come in between.
 *
 * Who may touch what, and when:
 *   state                          touched by                 guard
 *   CPU cache cls[] (not .nested   the claim holder           CPU cache claim
 *     nor the reserve)
 *   user cache (the same struct)   the claim holder: its      CPU cache claim;
 *                                    thread, user calls, drain,   owner_pid by
 *                                    close, reap, teardown      cmpxchg
 *   transfer cache tc[c]           its lock holder            tc[c].lock
 *   reserves (a CPU's per class,   any (take, put, fill from  atomic exchange /
 *     a transfer cache's)            its own objects)           cmpxchg per slot
 *   central lists, spans, page     the heap lock holder       aa__root.lock
 *     heap, page map, slots, stats   (lock-free readers: below)
 *   a live block                   its user; then the one     custody claim
 *                                    free that claimed it
 *   parked list aa__root.parked     any (push); lock holder    cmpxchg head
 *                                    (pop)
 *   limbo stacks, pending bits     any (push, set); the one   cmpxchg; reclaiming
 *                                    reclaimer (take, clear)
 *   spare limbo nodes              any (push, pop)            cmpxchg, generation
 *   quarantine slots               any                        atomic exchange
 *   counters (err[], contention)   any                        atomic add
 *
 *  - CPU cache (struct aa_cpu_cache): an atomic claim, cmpxchg of busy from
 *    AA_CC_FREE to AA_CC_OWNER (this CPU's programs) or AA_CC_DRAIN (a
 *    drain or teardown, from any CPU), a full barrier; whoever holds it
 *    alone touches count/objs/stats (but stats.nested, an atomic add, and
 *    the class's reserve, any caller's: Reserves, below), and
 *    releases it with a release store (aa_store_release). A caller that
 *    finds it claimed (it preempted or interrupted the holder, or a drain
 *    holds it) touches nothing of it but the class's reserve and never
 *    waits: it takes or puts one object in that reserve, else in the
 *    transfer cache (its reserve, then under its lock), else goes to the
 *    heap; counted in stats.nested. A user cache's owner thread claims it as
 *    AA_CC_OWNER from userspace for each hit (aa_hit.h), and aa__run's user calls
 *    program for its misses; whoever finds it claimed (drain, close: the
 *    thread is inside a call, or stopped there) gives up with -EBUSY, and
 *    only a reap of a dead owner takes an AA_CC_OWNER claim over (a hit
 *    writes count after objs[], so the cache is whole wherever the thread
 *    died; the one object a killed hit was moving stays marked, out of
 *    every tier).
 *  - Heap lock (aa__root.lock) and transfer-cache locks (tc[c].lock): the
 *    lock word holds the holder's CPU + 1, written by the acquiring
 *    cmpxchg itself (no gap), and the holder runs with preemption disabled
 *    from before the cmpxchg to after the releasing store. So a holder is
 *    never preempted; the only code that can find the lock held by its own
 *    CPU is an IRQ/NMI that interrupted the holder, and it fails at once
 *    (-AA_ERR_NESTED). Waiting for another CPU's holder is time-bounded:
 *    AA_WAIT_IRQ_NS in hard IRQ/NMI (and where the context cannot be
 *    told), AA_WAIT_TASK_NS elsewhere (a holder only takes longer when its
 *    vCPU was descheduled), then -AA_ERR_BUSY. No global BPF function and
 *    no page kfunc is called while a lock is held (6.12 forbids a global
 *    call with preemption disabled): locked code is static. Lock order:
 *    heap lock before a transfer-cache lock; never the other way. Every
 *    heap lock hold is bounded (AA_HOLD_OBJS objects moved by a bulk call,
 *    refill, spill or unpark round, one span carved (AA_SPAN_OBJS_MAX objects,
 *    a few stores each, in debug mode too), one chunk or span of the
 *    checker, one class of empty-span release; a large allocation finds
 *    its chunks before the lock, trim reads the free-chunk bitmap), and
 *    work done in rounds lets a waiting CPU in between them
 *    (aa_lock_yield()).
 *  - Custody marks: word 0 of a block that the allocator holds (in a CPU or
 *    transfer cache, parked, or free in a span or the page heap) carries
 *    aa_custody(addr, tag) = key ^ address ^ tag (tags: "Custody marks"
 *    below); a live block's word 0 is the user's. A block changes hands
 *    only by changing its mark.
 *  - The claim (__aa_claim(), aa_hit.h; aa_claim() in
 *    lookup.bpf.c adds a caller's tail check): a free makes its caller the
 *    block's sole owner, lock-free, any context. check is the word that
 *    says the block is allocated (its page-map entry; a multi-chunk
 *    allocation's slot state), at an address the pointer alone gives, and
 *    expect its value at the lookup:
 *
 *      v = word0                   user data, or a custody mark: refused
 *      cmpxchg(word0, v, FREED)    lost: another free won (or it is cached)
 *      *check == expect,           unchanged since the lookup,
 *      word0 == FREED, and         still ours,
 *      pending bit clear           not in limbo: claimed
 *
 *    Of two racing frees exactly one wins; the other gets -EALREADY. A
 *    free that read v long ago may find v again at the same address after
 *    the block was freed and its pages reused: its cmpxchg then succeeds on
 *    a word that is not word 0 of a live allocation. Pages are carved again
 *    (a span marks every object) or taken as a run (word 0 zeroed) before
 *    their page-map entry or slot state is written, so "check as before,
 *    then word 0 still FREED" is a live allocation that we own; otherwise
 *    the stray write is undone and the caller reports a double free. The
 *    page map is one table for the arena's life and a slot without a chunk
 *    has only 0 entries (a trim zeroes them before the slot is let go, a
 *    grower writes them once it holds the slot), so an entry says what its
 *    own page is and nothing else, whatever trims and grows a lookup
 *    straddles. A claimed block keeps its chunk (its span or page run
 *    counts it as out), so the pending bit is read through the slot after
 *    the claim. A claimed block is the claimer's until it hands it to a
 *    tier. A caller that gives a tail (debug mode: its poison) has a
 *    claimed class object that ends with it counted free all the same (a
 *    write after free replaced its mark): the claim is undone, -EALREADY.
 *  - Lock-free readers: a live allocation's own page-map entry and slot
 *    state change only when that allocation is freed, which its claimer
 *    alone can do, so lookups without the lock are exact for live
 *    allocations and a harmless snapshot for anything else. A slot's state
 *    and meta_off are one word, published by one store, read by one load.
 *  - Parked frees (aa__root.parked): a free whose lock is unavailable pushes
 *    its claimed block on this lock-free stack (cmpxchg push, any context);
 *    only the heap lock holder pops, so there is one consumer and no ABA.
 *    After each heap operation, a caller completes up to AA_HOLD_OBJS of
 *    them (aa__heap_unpark(), its own lock hold), in a published heap only
 *    (before the first init the head is 0, not AA_NIL); drain completes
 *    all. Counted before the push and after the pop, so that
 *    frees_unparked <= frees_parked at every instant (heap.bpf.c).
 *  - Limbo (deferred free, AA_F_DEFER; defer.bpf.c has the epochs): a
 *    deferred object stays allocated for every tier (word 0 the user's),
 *    with its bit set in its chunk's pending bitmap and a node on
 *    aa__root.defer.limbo[epoch & 1]. The bit is set by a cmpxchg (a second
 *    deferral finds it) and the plain free's claim reads it after its own
 *    cmpxchg, while the deferral reads word 0 after setting it (both full
 *    barriers): of a plain and a deferred free racing on one object at
 *    least one sees the other and gives up. (An inline free in a
 *    deferred-free heap takes the global function, whose claim is the one
 *    that reads the bit.) Pushers cmpxchg the stack's
 *    head; the one reclaimer (it holds defer.reclaiming) takes a whole
 *    stack with an exchange and walks it privately: no ABA. The spare
 *    nodes' stack (defer.spare) has many poppers: its head carries a
 *    generation that every pop bumps, so a pop whose top was popped and
 *    pushed back since fails its cmpxchg (its read of the stale top's
 *    link is only a value: an arena page a drain and trim returned reads
 *    as 0 in a BPF program).
 *  - Reserves (struct aa_reserve): a few free objects of one class in
 *    slot words. Take: an atomic exchange of a slot with 0 (whoever gets a
 *    non-zero word owns its object, however often the slot changed
 *    before); put: a cmpxchg of an empty slot from 0; no claim, no lock, no
 *    wait, at any nesting depth, so an interrupt over a claim or lock
 *    holder of its own CPU (or over a vCPU that the host stopped) gets
 *    memory while a reserve it reaches has some. Who takes, puts and
 *    fills which reserve: cpu_cache.bpf.c (docs/DESIGN.md, "Interrupts:
 *    the reserves"). An object keeps its transit mark in a slot, and the
 *    word carries the heap's tag (the low half of the key): a put checks
 *    the mark under the key it tags with, a take drops a word of another
 *    heap's and any word while the heap is not published, init and
 *    teardown clear the slots; so a put that races a teardown leaves
 *    nothing a later heap hands out.
 *  - Quarantine (debug mode): a freed, claimed, poisoned class object is
 *    exchanged into a slot of aa__root.debug.quarantine and the object it
 *    displaces is released: each object is in at most one slot, or out of
 *    all of them, any context, no lock.
 *  - Page kfuncs: from sleepable programs, and from any program where
 *    aa_self_grows() (an allocation that found the heap empty maps a chunk:
 *    aa__arena_self_grow()). Called with no lock held and no claim that
 *    another caller could wait for (a self-growing cache refill holds its
 *    CPU cache claim: callers that find it claimed go elsewhere, drain
 *    and teardown return -EBUSY). Two growers that race for a slot are
 *    told apart by the kernel: the second page allocation at an address
 *    fails, and that grower moves on. Chunks leave the heap through the
 *    RELEASING slot state, so their metadata stays put until freed, and
 *    their page-map entries are zeroed before the slot is UNMAPPED again
 *    (the claim above). Pages that userspace reads from the mmap (chunk
 *    metadata, CPU caches) go back only while no reader is counted (the
 *    reader pin, aa_shared.h).
 *  - Publication: init writes the whole root, then stores the magic with an
 *    atomic exchange (full barrier); callers check the magic before using
 *    anything, and their first claim or lock is a full barrier too. A CPU
 *    cache claim keeps a teardown out (it claims every cache first); a
 *    caller without one checks the magic again under the lock it takes
 *    (the transfer cache's one-object path) or after its exchange (a
 *    reserve), so nothing leaves an unpublished heap, and init empties
 *    what a teardown could not.
 */
#ifndef __AA_INTERNAL_H
#define __AA_INTERNAL_H

#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "aa_arena.bpf.h"
#include "aa_classes.bpf.h"
#include "aa_syscall.h"

#define ENOENT		2
#define ESRCH		3
#define EFAULT		14
#define EBUSY		16
#define EEXIST		17
#define ENODEV		19
#define EINVAL		22
#define ENOMEM		12
#define ENOSPC		28
#define E2BIG		7
#define EDEADLK		35
#define EALREADY	114
#define EOPNOTSUPP	95
#define EUCLEAN		117

/* --- Kernel interfaces -------------------------------------------------- */

/*
 * Every kfunc here goes by a flavored name, name___aa: libbpf resolves it to
 * the kernel's name, and an embedder's object that calls the plain name
 * (its own aa_for(), its own page kfuncs) still links with this one under
 * bpftool <= 7.5, which cannot link two objects that both reference one
 * extern kfunc ("failed to resolve size of underlying type: -22").
 */

/* Pages, sleepable programs only (SEC("syscall")): through the embedder's
 * AA_ARENA_FUNCS() (arena_alloc.bpf.h), the only code naming the map. */
static __always_inline void __arena *aa_pages_alloc(void __arena *addr, __u32 pages)
{
	return (void __arena *)aa_arena_pages_alloc((__u64)addr, pages);
}

static __always_inline void aa_pages_free(void __arena *addr, __u32 pages)
{
	aa_arena_pages_free((__u64)addr, pages);
}

/*
 * Linux 7.0+ lets non-sleepable programs allocate arena pages: the verifier
 * calls this variant of bpf_arena_alloc_pages for them. Only its existence
 * is used, as a load-time constant: libbpf resolves the weak extern to 0
 * where the kernel lacks it, and the verifier then prunes every branch that
 * aa_self_grows() guards, so an older verifier never sees a page kfunc
 * reached from a non-sleepable program.
 */
extern void __arena *bpf_arena_alloc_pages_non_sleepable___aa(void *p__map, void __arena *addr,
							       __u32 page_cnt, int node_id,
							       __u64 flags) __ksym __weak;

/* Linux 6.10+, every program type. */
void bpf_preempt_disable___aa(void) __ksym;
void bpf_preempt_enable___aa(void) __ksym;

/* A task by its pid in the initial pid namespace, referenced (NULL: no
 * such task), and its release (6.2+; syscall programs call them on 6.12
 * and 7.3, the suite's kernels): a user cache's owner (user_cache.bpf.c). */
struct task_struct *bpf_task_from_pid___aa(s32 pid) __ksym;
void bpf_task_release___aa(struct task_struct *p) __ksym;

/* Open-coded number iterators (6.4+) on the flavored names: aa_for(i,
 * start, end) is bpf_for() of <bpf/bpf_helpers.h> (the same bounds check
 * that lets the verifier trust i), aa_repeat(n) its bpf_repeat(). */
extern int bpf_iter_num_new___aa(struct bpf_iter_num *it, int start, int end) __ksym __weak;
extern int *bpf_iter_num_next___aa(struct bpf_iter_num *it) __ksym __weak;
extern void bpf_iter_num_destroy___aa(struct bpf_iter_num *it) __ksym __weak;

#define aa_for(i, start, end)						\
	for (struct bpf_iter_num ___it __attribute__((aligned(8),	\
			cleanup(bpf_iter_num_destroy___aa))),		\
	     *___p __attribute__((unused)) =				\
		(bpf_iter_num_new___aa(&___it, (start), (end)),		\
		 (void)bpf_iter_num_destroy___aa, (void *)0);		\
	     ({ int *___t = bpf_iter_num_next___aa(&___it);		\
		(___t && ((i) = *___t, (i) >= (start) && (i) < (end))); }); )

#define aa_repeat(n)							\
	for (struct bpf_iter_num ___it __attribute__((aligned(8),	\
			cleanup(bpf_iter_num_destroy___aa))),		\
	     *___p __attribute__((unused)) =				\
		(bpf_iter_num_new___aa(&___it, 0, (n)),			\
		 (void)bpf_iter_num_destroy___aa, (void *)0);		\
	     bpf_iter_num_next___aa(&___it); )

/* The root (arena.bpf.c). */
extern struct aa_root __arena aa__root;

#define READ_ONCE_ARENA(x)	(*(volatile typeof(x) *)&(x))
#define WRITE_ONCE_ARENA(x, v)	(*(volatile typeof(x) *)&(x) = (v))
#define aa_barrier()		asm volatile("" ::: "memory")

/* Release store of a 32-bit word (aa_hit.h: x86 store, else xchg). */
#define aa_store_release(p, v)	__aa_store_release((p), (v))

/* Order this thread's earlier stores before its later ones (x86: free). */
static __always_inline void aa_store_fence(void)
{
#if defined(__TARGET_ARCH_x86)
	aa_barrier();
#else
	__sync_lock_test_and_set(&aa__root.zero, 0);
#endif
}

/*
 * Loops. Two kinds only, so that both 6.12 and 6.18 verify them cheaply:
 *  - a few tiny loops with constant bounds and no branches on what they
 *    compute (stats sums, aa_calloc's stores) are unrolled;
 *  - every other loop (orders, slots, lists, batches, spins) is aa_for()/
 *    aa_repeat(): an open-coded iterator the verifier checks a few times,
 *    whose trip count the kernel bounds (BPF_MAX_LOOPS, 2^23). An unrolled
 *    loop over the orders leaves one constant order per path, and every
 *    path below it is verified once per order: the page heap cost 5x more
 *    verified instructions that way.
 *
 * Verifier: clang-19 turns store loops into memset(), whose BPF lowering
 * drops the arena addr_space_cast ("R1 invalid mem access 'scalar'"): all
 * BPF code here is built with -fno-builtin (docs/EMBEDDING.md).
 */
#define AA_MAX_LOOPS	(1 << 23)

/*
 * Verifier: a counter that is an exact constant on every path (got = 0;
 * got++) and is branched on after the loop becomes precise, so the verifier
 * walks the loop once per value ("sequence of 8193 jumps is too complex").
 * Counters start from AA_ZERO, a 0 read from the arena that the verifier
 * cannot know.
 */
#define AA_ZERO		READ_ONCE_ARENA(aa__root.zero)

/* --- Address conversion -------------------------------------------------
 * Inside the allocator a place in the arena is a __u32 offset from the
 * arena's first byte; users get full user addresses (arena_base + off),
 * which BPF and userspace can both dereference.
 */
static __always_inline void __arena *aa_addr(__u32 off)
{
	return (void __arena *)(aa__root.arena_base + off);
}

/* Slot s's entry in the slot table (aa_root.slots, nr_slots entries).
 * The callers' slots are below nr_slots (loops to it, offsets below
 * arena_size); s is masked to AA_MAX_SLOTS, so one made from a value that
 * anyone wrote into the arena stays in arena memory. */
static __always_inline struct aa_slot __arena *slot_at(__u32 s)
{
	return (struct aa_slot __arena *)aa__root.slots + (s & (AA_MAX_SLOTS - 1));
}

/* Words [from, to) of the arena object at addr = pat, four a trip (each
 * aa_for() trip calls a kfunc): debug mode's poison and redzones. */
static __always_inline void aa_word_fill(__u64 addr, __u32 from, __u32 to, __u64 pat)
{
	__u64 __arena *w = (__u64 __arena *)addr;
	__u32 quads = from < to ? (to - from) / 4 : 0, i;
	int g;

	aa_for(g, 0, quads) {
		i = from + g * 4;
		w[i] = pat;
		w[i + 1] = pat;
		w[i + 2] = pat;
		w[i + 3] = pat;
	}
	aa_for(g, from + quads * 4, to)
		w[g] = pat;
}

/* --- Errors ------------------------------------------------------------- */
static __always_inline int aa_errno(enum aa_error e)
{
	switch (e) {
	case AA_ERR_SIZE:	 return -EINVAL;
	case AA_ERR_ALIGN:	 return -EINVAL;
	case AA_ERR_NOMEM:	 return -ENOMEM;
	case AA_ERR_BUSY:	 return -EBUSY;
	case AA_ERR_NESTED:	 return -EDEADLK;
	case AA_ERR_DOUBLE_FREE: return -EALREADY;
	case AA_ERR_FOREIGN:	 return -EFAULT;
	case AA_ERR_INTERIOR:	 return -ENOENT;
	case AA_ERR_MISALIGNED:	 return -EINVAL;
	case AA_ERR_CORRUPT:	 return -EUCLEAN;
	case AA_ERR_UNINIT:	 return -ENODEV;
	default:		 return -EINVAL;
	}
}

/* Count error e (any context: atomic add) and return its negative errno. */
static __always_inline int aa_fail(enum aa_error e)
{
	if (e < AA_NR_ERRORS)
		__sync_fetch_and_add(&aa__root.stats.err[e], 1);
	return aa_errno(e);
}

/* The kernel lets every program map arena pages (a load-time constant). */
#define aa_kernel_self_grows()	bpf_ksym_exists(bpf_arena_alloc_pages_non_sleepable___aa)

/* An allocation that finds the page heap empty may map chunks itself
 * (aa__arena_self_grow()): the kernel allows it, and init found it so and
 * was not told otherwise (AA_F_SELF_GROW). */
static __always_inline bool aa_self_grows(void)
{
	return aa_kernel_self_grows() && (aa__root.flags & AA_F_SELF_GROW);
}

/* AA_DRY (aa_classes.bpf.h): what an allocation below the public
 * function returns where aa_self_grows() and the heap had no block for it.
 * The front door (alloc.bpf.c, in the public function's frame) maps
 * chunks and tries again, from the
 * frame that has room for the page functions (call frames, below); a user
 * never sees it. */

/* Metadata pages per chunk: the page map and span table, and with
 * AA_F_DEFER the pending bitmap. Fixed from init to teardown. */
static __always_inline __u32 aa_meta_pages(void)
{
	return aa__root.flags & AA_F_DEFER ? AA_META_PAGES_DEFER : AA_META_PAGES;
}

/* --- Argument checks: the front door's (alloc.bpf.c, api.bpf.c,
 * heap.bpf.c), and aa__run's report of why an allocation got NULL
 * (entry.bpf.c) ---------------------------------------------------------- */

/* A size the heap may serve: 1 .. AA_MAX_ALLOC and no more than the arena. */
static __always_inline bool aa_size_ok(__u64 size)
{
	return size != 0 && size <= AA_MAX_ALLOC && size <= aa__root.arena_size;
}

/* aa_calloc(n, size): both non-zero and n * size <= AA_MAX_ALLOC, without
 * overflow (both <= 2^30 first). */
static __always_inline bool aa_calloc_ok(__u64 n, __u64 size)
{
	return n != 0 && size != 0 && n <= AA_MAX_ALLOC && size <= AA_MAX_ALLOC &&
	       n * size <= AA_MAX_ALLOC;
}

/* An alignment: a power of two, at most a page. */
static __always_inline bool aa_align_ok(__u64 align)
{
	return align != 0 && !(align & (align - 1)) && align <= AA_PAGE_SIZE;
}

/* Count a recovered event (aa_heap_stats contention counters). */
#define aa_count(field)	__sync_fetch_and_add(&aa__root.stats.field, 1)

/* --- Fault injection (struct aa_fault in aa_shared.h) ---------------------
 * Count one call of a kind and say whether it must fail: the call whose
 * count is a multiple of *every (one volatile load: userspace changes it
 * through the mmap at any time, aa_heap__set_fault()). The failure is
 * counted in *faults. Any context (atomic adds, no lock needed); the
 * callers hold the heap lock (span) or call page kfuncs (pages).
 */
static __always_inline bool aa_fault_hit(__u32 __arena *every, __u64 __arena *calls,
					 __u64 __arena *faults)
{
	__u32 n = READ_ONCE_ARENA(*every);
	__u64 seq = __sync_fetch_and_add(calls, 1) + 1;

	if (!n || seq % n)
		return false;
	__sync_fetch_and_add(faults, 1);
	return true;
}

/* A new span or page run from the page heap (central.bpf.c, buddy.bpf.c):
 * true when fault injection makes this one fail as if the heap were empty. */
#define aa_fault_span()	aa_fault_hit(&aa__root.fault.spans_every, &aa__root.fault.span_calls, \
				     &aa__root.fault.span_faults)

/* --- Context ----------------------------------------------------------------
 * Are we on the current task's own kernel stack? Task-context programs are
 * (syscall, sleepable, test runs); hard IRQ and NMI handlers run on their
 * own per-CPU stacks, and so does softirq when it runs at interrupt exit.
 * Compares the address of a local variable with task->stack: no per-CPU
 * kernel symbol needed (those need CONFIG_KALLSYMS_ALL). Anything unusual
 * (a BPF private stack, say) reads as "not the task's": the short budget.
 */
#define AA_TASK_STACK_MAX	(32U << 10)	/* >= THREAD_SIZE (16 KiB, 32 with KASAN) */

static __always_inline bool aa_on_task_stack(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 sp = 0, base = (__u64)t->stack;
	volatile __u32 here = 0;
	void *p = (void *)&here;

	/* the verifier keeps stack addresses from becoming numbers; a
	 * probe read of the pointer's own bytes gives the number */
	if (bpf_probe_read_kernel(&sp, sizeof(sp), &p) || !base)
		return false;
	return sp - base < AA_TASK_STACK_MAX;
}

/* --- Custody marks --------------------------------------------------------
 * Word 0 of a block the allocator holds: aa_custody(addr, tag) = key ^ addr
 * ^ tag, tag < 32. A live block's word 0 is the user's; a user value equal
 * to a mark (a 64-bit random key) is not a concern.
 *   AA_TAG_FREED    claimed by a free: in a cache, parked, or in transit
 *   AA_TAG_CACHED   handed by a central list to a cache refill
 *   AA_TAG_SPAN     free object in its span (word 1: next free object)
 *   AA_TAG_BUDDY+k  first page of a free page block of order k
 * A free claims word 0 only from a value that is not a mark (aa_claim()).
 */
/* AA_TAG_FREED (1) and AA_TAG_BITS (5): aa_hit.h */
#define AA_TAG_CACHED		2
#define AA_TAG_SPAN		3
#define AA_TAG_BUDDY		4	/* + order, up to 4 + 8 */

/* Words 0 and 1 of a free object in its span (central.bpf.c). `fresh` is
 * AA_SPAN_FRESH from the carving until the object is first allocated. A
 * carving writes words 0 and 1, and the last word where aa_root.carve_tail
 * asks for one (debug mode: the poison), so that a span costs the lock a
 * few stores per object, not a fill of its pages: a fresh object's other
 * words were never poisoned and its first allocation does not check them
 * (debug.bpf.c). Its first free
 * poisons word 1 with the rest, and no tier writes the upper half of word
 * 1 with this value (links are offsets or user addresses, below 2^47). */
struct aa_span_obj {
	__u64 mark;	/* aa_custody(addr, AA_TAG_SPAN) */
	__u32 next;	/* arena offset of the next free object, AA_NIL */
	__u32 fresh;	/* AA_SPAN_FRESH: not allocated since it was carved */
};
typedef struct aa_span_obj __arena aa_span_obj_t;

#define AA_SPAN_FRESH		0xf7e5f7e5U

static __always_inline __u64 aa_custody(__u64 addr, __u32 tag)
{
	return aa__root.cache_key ^ addr ^ tag;
}

/* Is word a transit mark of the block at addr: FREED (a free claimed it)
 * or CACHED (a refill handed it to a cache)? What a block in a cache
 * tier carries. */
static __always_inline bool aa_is_transit(__u64 addr, __u64 word)
{
	return word == aa_custody(addr, AA_TAG_FREED) || word == aa_custody(addr, AA_TAG_CACHED);
}

static __always_inline bool aa_is_custody(__u64 addr, __u64 word)
{
	return ((word ^ aa__root.cache_key ^ addr) >> AA_TAG_BITS) == 0;
}

/* Push the chain first .. last (arena offsets, linked through their next
 * words; last_next is last's) on the lock-free stack whose head is *head
 * (the parked list, a limbo stack). Any context: the loop only repeats
 * when another push or a pop got in between. Popping is the consumer's
 * business (one consumer, or a whole-stack exchange: no ABA). */
static __always_inline void aa_stack_push(__u32 __arena *head, __u32 first,
					  __u32 __arena *last_next)
{
	__u32 old;

	aa_repeat(AA_MAX_LOOPS) {
		old = READ_ONCE_ARENA(*head);
		*last_next = old;
		if (__sync_val_compare_and_swap(head, old, first) == old)
			break;
	}
}

static __always_inline bool aa_heap_ready(void)
{
	return READ_ONCE_ARENA(aa__root.magic) == AA_ROOT_MAGIC;
}

/* --- Reserves (struct aa_reserve, aa_shared.h; the model above) -----------
 * n: the slots a reserve of class c uses, aa_reserve_slots() of its size
 * (the callers pass it: <= AA_RESERVE_SLOTS).
 */
static __always_inline __u32 aa_reserve_n(__u32 c)
{
	return aa_reserve_slots(aa_class(c)->size);
}

/*
 * The three operations are global functions: each is verified once, not
 * at every call site (a loop over slots inlined into every slow path cost
 * the verifier more than the slow paths themselves). A leaf frame each
 * (call frames, below); never called under a lock (6.12 refuses a global
 * call with preemption disabled). r: the reserve's address.
 */

/* Take an object out of r (n: its slots): its address (word 0 still its
 * custody mark), or 0 when the slots held none of this published heap's.
 * A word of another heap's, or any word while no heap is published, is
 * dropped: its object belongs to no heap a caller may use. */
__noinline __u64 aa__reserve_take(__u64 r, __u32 n)
{
	struct aa_reserve __arena *rv = (struct aa_reserve __arena *)r;
	__u64 w;
	int i;

	aa_for(i, 0, n < AA_RESERVE_SLOTS ? n : AA_RESERVE_SLOTS) {
		if (!READ_ONCE_ARENA(rv->slot[i & (AA_RESERVE_SLOTS - 1)]))
			continue;
		w = __sync_lock_test_and_set(&rv->slot[i & (AA_RESERVE_SLOTS - 1)], 0);
		if (AA_RESERVE_OF(w, READ_ONCE_ARENA(aa__root.cache_key)) && aa_heap_ready())
			return aa__root.arena_base + (__u32)w;
	}
	return 0;
}

/* Put ptr, a free object of the reserve's class whose word 0 is a transit
 * mark (FREED or CACHED) of this heap, into an empty slot of r (n: its
 * slots). 0 when they are full, or when ptr does not carry such a mark
 * under the key read now (a free that claimed it in a heap torn down
 * since): ptr is still the caller's; else 1. The word carries that key's
 * tag, so a put that races a teardown leaves a word the next heap's
 * takers drop. */
__noinline int aa__reserve_put(__u64 r, __u32 n, __u64 ptr)
{
	struct aa_reserve __arena *rv = (struct aa_reserve __arena *)r;
	__u64 w = AA_RESERVE_WORD(READ_ONCE_ARENA(aa__root.cache_key), ptr - aa__root.arena_base);
	int i;

	if (!aa_is_transit(ptr, *(volatile __u64 __arena *)ptr))
		return 0;
	aa_for(i, 0, n < AA_RESERVE_SLOTS ? n : AA_RESERVE_SLOTS) {
		if (READ_ONCE_ARENA(rv->slot[i & (AA_RESERVE_SLOTS - 1)]))
			continue;
		if (__sync_val_compare_and_swap(&rv->slot[i & (AA_RESERVE_SLOTS - 1)], 0, w) == 0)
			return 1;
	}
	return 0;
}

/* Move objects from the top of the caller's stack objs[0 .. n) (an arena
 * array of at most AA_TRANSFER_MAX) into the empty slots of r, a reserve
 * of class cls, leaving keep in the stack at least. The stack is a tier's
 * own (a CPU cache's LIFO under its claim, a refill's batch, a spill's):
 * its objects carry their transit marks. Returns the stack's new count. */
__noinline __u32 aa__reserve_stock(__u64 r, __u32 cls, __u64 objs, __u32 n, __u32 keep)
{
	struct aa_reserve __arena *rv = (struct aa_reserve __arena *)r;
	__u64 __arena *o = (__u64 __arena *)objs;
	__u64 key = READ_ONCE_ARENA(aa__root.cache_key);
	__u32 slots = aa_reserve_n(cls);
	int i;

	aa_for(i, 0, slots < AA_RESERVE_SLOTS ? slots : AA_RESERVE_SLOTS) {
		if (n <= keep)
			break;
		if (READ_ONCE_ARENA(rv->slot[i & (AA_RESERVE_SLOTS - 1)]))
			continue;
		if (__sync_val_compare_and_swap(&rv->slot[i & (AA_RESERVE_SLOTS - 1)], 0,
				AA_RESERVE_WORD(key, o[(n - 1) & (AA_TRANSFER_MAX - 1)] -
						     aa__root.arena_base)) == 0)
			n--;
	}
	return n;
}

/* Empty r: every slot cleared, its objects forgotten (init, teardown: they
 * went with their chunks). */
static __always_inline void aa_reserve_clear(struct aa_reserve __arena *r)
{
	int i;

	for (i = 0; i < AA_RESERVE_SLOTS; i++)
		WRITE_ONCE_ARENA(r->slot[i], 0);
}

/* --- Call frames -------------------------------------------------------------
 * A program has 8 frames, the user's and ours. Below a user's call the
 * library takes at most AA_API_FRAMES (arena_alloc.bpf.h) = 4, counting
 * the public function:
 *   1. a public function (api.bpf.c, with the front door's bodies of
 *      alloc.bpf.c and defer.bpf.c inline): arguments, routing, the
 *      CPU-cache hit path inline, self-init (aa__arena_self_init()) and
 *      self-growth (aa__arena_self_grow());
 *   2. a tier's entry point: the CPU-cache slow paths (the inline API
 *      calls aa_cpu_cache_alloc_slow() and aa_cpu_cache_free_slow() from
 *      the caller's frame, a frame above where the public functions do),
 *      aa__heap_free/claim/judge/usable_size, aa__debug_*(),
 *      aa__defer_node_get(), aa__arena_self_grow(), aa__arena_self_init();
 *   3. a tier's operation: the transfer cache, aa__heap_alloc(),
 *      aa__heap_return(), their rounds, aa__heap_alloc_chain(),
 *      aa__heap_unpark(),
 *      aa__buddy_add_chunk(), aa__arena_run_find();
 *   4. leaves, which call nothing: aa_lock_wait(), free_claimed_locked(),
 *      run_alloc_locked(), refill_notify(), the reserves' operations
 *      (aa__reserve_take/put/stock(), from frame 2 too); and, one frame
 *      higher at most, lookup(), debug_report() and the embedder's page
 *      functions.
 * So: a frame-3 function inlines everything but the leaves; the wrappers
 * of the heap's operations complete parked frees after them
 * (heap_settle()), one frame up; an allocation below the public function
 * that finds the heap empty returns AA_DRY, and the public function grows
 * the heap. Public functions never call each other. The leaves stay
 * frames for the verifier: a loop that calls free_claimed_locked()
 * converges in a few passes, and inlined into the rounds and unpark it was
 * walked ten times over (docs/EMBEDDING.md, "Call frames: why four").
 * The library's own programs (entry.bpf.c) are not bound by this.
 */

/* --- What each tier gives the tiers above it ------------------------------
 * The tier files are one translation unit (bpf/arena_alloc.bpf.c includes
 * them in tier order, lowest first). Each X.bpf.c says what it gives the
 * files above it in X.h, which only those include, so a call "up" does not
 * compile (make layer-check compiles each file with the headers it
 * includes alone). "_locked": REQUIRES the heap lock. Inline but for the
 * few marked static or __noinline (frames of their own: call frames,
 * above).
 */
typedef struct aa_chunk_meta __arena aa_meta_t;
typedef struct aa_span __arena aa_span_t;

#endif /* __AA_INTERNAL_H */
