# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- bench: build/aa_bench (bench/) ------------------------------------------
# `make bench` builds and runs every table: the memory of size mixes
# (bench-mem), the latency and htab tables with the targets, and the fast
# path at 48, 64 and 96 B (bench-sizes), each next to the release before
# size classes where it applies, then the burst (bench-burst) and the
# userspace calls (bench-user) on each of their kernels; it keeps the raw
# numbers in $(BENCH_JSON);
# `make bench-plot` turns them into docs/bench-latency.svg with gnuplot
# (installed if missing).
#   make bench BENCH_ARGS='--size 256'     any aa_bench option
.PHONY: bench bench-mem bench-sizes bench-baseline bench-plot bench-jit bench-burst \
	bench-storage bench-user bench-user-counts bench-run bench-mem-run bench-sizes-run \
	bench-jit-run bench-burst-run bench-storage-run bench-user-run
BENCH_BIN := $(OUTPUT)/aa_bench
BENCH_JSON ?= $(OUTPUT)/bench/results.json
BENCH_ARGS ?=
BENCH_SVG ?= docs/bench-latency.svg

$(OUTPUT)/bench:
	$(Q)mkdir -p $@

$(eval $(call bpf_prog,$(OUTPUT)/bench/bench,bench/bpf/bench.bpf.c,bench/bench.h bench/bpf/htab.bpf.c))

# The harness, split by role (bench/main.c lists the files).
BENCH_SRCS := $(filter-out bench/jit_dump.c bench/memory.c bench/burst.c bench/storage.c \
	bench/user.c bench/user_table.c bench/user_count.c,$(wildcard bench/*.c))
BENCH_OBJS := $(patsubst bench/%.c,$(OUTPUT)/bench/%.o,$(BENCH_SRCS))

$(BENCH_OBJS): $(OUTPUT)/bench/%.o: bench/%.c bench/harness.h bench/bench.h bench/where.h $(wildcard include/*.h) $(OUTPUT)/bench/bench.skel.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/bench -c $< -o $@

$(BENCH_BIN): $(BENCH_OBJS) $(LIB_A)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBBPF_LIBS) -lelf -lz -lm -lpthread -o $@

# Disassembles the JIT-ed fast path (Debian's bpftool has no disassembler):
# loads the bench object into a scratch bpffs directory, dumps the
# functions whose names contain one of BENCH_JIT_FUNCS with their x86
# instruction counts, removes the pins. The cache's hit path is inlined
# into aa_malloc_u64/aa_free_u64 and bench_inline_*; its slow paths are
# functions of their own.
BENCH_JIT_FUNCS ?= bench_inline_alloc bench_inline_free aa_malloc_u64 aa__cpu_cache_alloc_slow \
	aa_free_u64 aa_cpu_cache_free_slow bench_floor_
$(OUTPUT)/bench/jit_dump: bench/jit_dump.c | $(OUTPUT)/bench $(DEPS_STAMP)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $< $(LIBBPF_LIBS) -lelf -lz -o $@

# Memory of size mixes (bench/memory.c), and the "before" columns: the
# release before size classes (BENCH_BASE_REV) is built in $(BENCH_BASE)
# (its library and its aa_bench by scripts/bench-baseline.sh, then memory.c
# against its library); make bench runs it first and hands its numbers to
# this tree's benchmarks. Without git history the tables simply have no
# "before" columns.
BENCH_MEM := $(OUTPUT)/aa_bench_mem
BENCH_BASE_REV ?= a3bc7a6
BENCH_BASE := $(OUTPUT)/baseline
BENCH_MEM_ARGS ?=

$(BENCH_MEM): bench/memory.c bench/where.h $(LIB_A) $(wildcard include/*.h)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(LIB_A) $(LIBBPF_LIBS) -lelf -lz -o $@

$(BENCH_BASE)/.built-$(BENCH_BASE_REV): bench/memory.c bench/where.h scripts/bench-baseline.sh | $(DEPS_STAMP)
	$(call msg,BASELINE,$(BENCH_BASE_REV) in $(BENCH_BASE))
	$(Q)bash scripts/bench-baseline.sh $(BENCH_BASE_REV) $(BENCH_BASE) '$(MAKE)' && \
	$(CC) $(CFLAGS) -I$(BENCH_BASE)/src/include -I$(BENCH_BASE)/build $< \
		$(BENCH_BASE)/build/libarena_alloc.a $(LIBBPF_LIBS) -lelf -lz -o $(BENCH_BASE)/aa_bench_mem && \
	touch $@

# Each bench target builds here, then runs its *-run twin through RUN_BPF
# (in the guest where this host refuses arena maps: aa_bench prints where
# its tables were measured; under TCG only ratios between BPF code paths
# carry over, docs/BENCHMARKS.md). The *-run targets build nothing.
BENCH_TIMEOUT ?= 7200
BENCH_RUN = $(RUN_BPF) -t '$(BENCH_TIMEOUT)' --name 'the benchmarks' -- $(MAKE) -s
bench-baseline:
	$(Q)$(MAKE) -s $(BENCH_BASE)/.built-$(BENCH_BASE_REV) || \
		echo "bench: no baseline: $(BENCH_BASE_REV) could not be built (no git history?)"

bench: $(BENCH_BIN) $(BENCH_MEM) $(BENCH_BURST) bench-baseline | $(CLI)
	$(Q)$(BENCH_RUN) bench-run
	$(Q)$(MAKE) -s bench-burst
	$(Q)$(MAKE) -s bench-user

bench-run: bench-mem-run
	$(Q)rm -f $(BENCH_BASE)/htab.json; if [ -f $(BENCH_BASE)/.built-$(BENCH_BASE_REV) ]; then \
		echo "  BENCH    baseline $(BENCH_BASE_REV): htab (its tables go to $(BENCH_BASE)/bench.txt)"; \
		$(BENCH_BASE)/build/aa_bench --only htab --json-out $(BENCH_BASE)/htab.json \
			$(BENCH_ARGS) > $(BENCH_BASE)/bench.txt 2>&1 || { rm -f $(BENCH_BASE)/htab.json; \
		echo "  BENCH    baseline $(BENCH_BASE_REV) did not run on $$(uname -r) (the end of" \
			"$(BENCH_BASE)/bench.txt says why): no 'before' column in table 4"; }; fi
	$(call msg,BENCH,$(BENCH_BIN) $(BENCH_ARGS))
	$(Q)$(BENCH_BIN) --json-out $(BENCH_JSON) --htab-before $(BENCH_BASE)/htab.json $(BENCH_ARGS)
	$(Q)$(MAKE) -s bench-sizes-run

# The fast path at sizes that power-of-two rounding served from bigger
# blocks: each size with this tree and with the baseline, back to back;
# prints table 3 (malloc-free: floor and arena-alloc, ns per op) of each
# (this tree's without the debug-mode columns, which table 3 does not show).
BENCH_SIZES ?= 48 64 96
bench-sizes: $(BENCH_BIN) bench-baseline | $(CLI)
	$(Q)$(BENCH_RUN) bench-sizes-run

bench-sizes-run:
	$(Q)for s in $(BENCH_SIZES); do \
		for v in baseline this; do \
			if [ $$v = baseline ]; then b=$(BENCH_BASE)/build/aa_bench; x=; \
			else b=$(BENCH_BIN); x=--no-debug; fi; \
			[ -x $$b ] || continue; \
			echo; echo "== $$s B, $$v ($$b) =="; \
			if out=$$($$b --only latency $(BENCH_ARGS) $$x --size $$s --cell-ms 300 2>&1); then \
				echo "$$out" | awk '/^3\. The floor/{f=1} /^malloc-xfree/{f=0} f'; \
			elif [ $$v = baseline ]; then \
				echo "(the baseline did not run on $$(uname -r): $$(echo "$$out" | tail -n1))"; \
			else echo "$$out" | tail -n20; exit 1; fi; \
		done; \
	done

bench-mem: $(BENCH_MEM) bench-baseline | $(CLI)
	$(Q)$(BENCH_RUN) bench-mem-run

bench-mem-run:
	$(Q)rm -f $(BENCH_BASE)/mem.txt; \
	if [ -f $(BENCH_BASE)/.built-$(BENCH_BASE_REV) ]; then \
		$(BENCH_BASE)/aa_bench_mem --out $(BENCH_BASE)/mem.txt $(BENCH_MEM_ARGS); fi; \
	$(BENCH_MEM) --before $(BENCH_BASE)/mem.txt $(BENCH_MEM_ARGS)

# $(call bench_kernels,NAME,BIN,KERNELS,OUT,TITLE,ARGS): the rules of a
# benchmark run on several kernels: bench-NAME runs bench-NAME-run on each
# of KERNELS in turn (one guest each where this host refuses arena maps),
# whose BIN appends its rows to OUT, then prints every kernel's rows as one
# table (BIN --table OUT) under TITLE.
define bench_kernels
bench-$(1): $(2) | $$(CLI)
	$$(Q)rm -f $(strip $(4)); for k in $(3); do \
		$$(MAKE) -s bench-$(1)-run VMTEST_KERNEL=$$$$k || exit; done; \
	echo; echo "$(strip $(5)) on every kernel ($(strip $(4))):"; \
	$(2) --table $(strip $(4))

bench-$(1)-run:
	$$(Q)$$(RUN_BPF) -t '$$(BENCH_TIMEOUT)' --name 'the $(1) benchmark' -- \
		$(2) --out $(strip $(4)) $(6)
endef

# A burst that empties the reserve (bench/burst.c), on each kernel of
# BENCH_BURST_KERNELS in turn (one guest each where this host refuses arena
# maps), then every kernel's rows as one table.
BENCH_BURST := $(OUTPUT)/aa_bench_burst
BENCH_BURST_KERNELS ?= 6.12 7.3
BENCH_BURST_ARGS ?=
BENCH_BURST_OUT := $(OUTPUT)/bench/burst.tsv

$(BENCH_BURST): bench/burst.c bench/where.h tests/test_self_grow.h $(OUTPUT)/tests/test_self_grow.skel.h $(LIB_A) | $(OUTPUT)/bench $(DEPS_STAMP)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -Itests -I$(OUTPUT)/tests $< $(LIB_A) $(LIBBPF_LIBS) \
		-lelf -lz -lpthread -o $@

$(eval $(call bench_kernels,burst,$(BENCH_BURST),$(BENCH_BURST_KERNELS),$(BENCH_BURST_OUT),\
	Burst,$(BENCH_BURST_ARGS)))

# Task-local storage (bench/storage.c): tasks created and reaped in batches
# while tp_btf programs on task creation and free give each a 64-B and a
# 256-B context from task storage, from arena-alloc with task storage
# holding their addresses, or from arena-alloc with an arena hash; on each
# kernel of BENCH_STORAGE_KERNELS in turn, then every kernel's rows as one
# table.
BENCH_STORAGE := $(OUTPUT)/aa_bench_storage
BENCH_STORAGE_KERNELS ?= 6.12 7.3
BENCH_STORAGE_ARGS ?=
BENCH_STORAGE_OUT := $(OUTPUT)/bench/storage.tsv

$(eval $(call bpf_prog,$(OUTPUT)/bench/storage,bench/bpf/storage.bpf.c,bench/storage.h,storage_bpf))

$(BENCH_STORAGE): bench/storage.c bench/storage.h bench/where.h $(OUTPUT)/bench/storage.skel.h $(LIB_A) | $(OUTPUT)/bench $(DEPS_STAMP)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/bench $< $(LIB_A) $(LIBBPF_LIBS) -lelf -lz -lm -o $@

$(eval $(call bench_kernels,storage,$(BENCH_STORAGE),$(BENCH_STORAGE_KERNELS),\
	$(BENCH_STORAGE_OUT),Task-local storage,$(BENCH_STORAGE_ARGS)))

# Userspace calls (bench/user.c): aa_heap__malloc/aa_heap__free pairs
# from the thread's user cache, the same through the syscall path
# (aa_heap__call) and glibc's, in a loop and in batches of 256, at 64 B
# and 1 KiB, with 1 and 2 threads; frees across the sides (BPF's objects
# freed from userspace, userspace's freed by one bulk program run); and,
# counted under valgrind's callgrind rather than timed (bench/user_count.c;
# skipped, with a line that says so, where valgrind is missing), the
# instructions and locked instructions of a user and a glibc pair; on each
# kernel of BENCH_USER_KERNELS in turn, then every kernel's rows as one
# table. bench-user-counts: the counted rows alone, where RUN_BPF runs
# (`build/aa_bench_user --counts` counts glibc's on any machine).
BENCH_USER := $(OUTPUT)/aa_bench_user
BENCH_USER_KERNELS ?= 6.12 7.3
BENCH_USER_ARGS ?=
BENCH_USER_OUT := $(OUTPUT)/bench/user.tsv

$(BENCH_USER): bench/user.c bench/user_table.c bench/user_count.c bench/user.h bench/where.h $(LIB_A) $(wildcard include/*.h) | $(OUTPUT)/bench $(DEPS_STAMP)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) bench/user.c bench/user_table.c bench/user_count.c $(LIB_A) \
		$(LIBBPF_LIBS) -lelf -lz -lm -lpthread -o $@

$(eval $(call bench_kernels,user,$(BENCH_USER),$(BENCH_USER_KERNELS),$(BENCH_USER_OUT),\
	Userspace calls,$(BENCH_USER_ARGS)))

bench-user-counts: $(BENCH_USER) | $(CLI)
	$(Q)$(RUN_BPF) -t '$(BENCH_TIMEOUT)' --name 'the counted pairs' -- \
		$(BENCH_USER) --counts $(BENCH_USER_ARGS)

bench-plot:
	$(Q)bash bench/plot.sh $(BENCH_JSON) $(BENCH_SVG)

bench-jit: $(OUTPUT)/bench/jit_dump $(OUTPUT)/bench/bench.linked.o | $(CLI)
	$(Q)$(BENCH_RUN) bench-jit-run

bench-jit-run:
	$(Q)d=$$(mktemp -d /sys/fs/bpf/aa_bench_jit_XXXXXX) && \
	$(BPFTOOL) prog loadall $(OUTPUT)/bench/bench.linked.o $$d >/dev/null && \
	$(OUTPUT)/bench/jit_dump $$d/bench_jit $(BENCH_JIT_FUNCS) && \
	$(OUTPUT)/bench/jit_dump $$d/bench_lat $(BENCH_JIT_FUNCS); rc=$$?; rm -rf $$d; exit $$rc
