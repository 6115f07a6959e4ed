# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- compat-test: the peers' own arena test suites, in the guests -----------
# `make compat-test` fetches Debian's linux-source-6.12 and linux-source-7.3
# (scripts/compat/fetch-peers.sh: only the files used, cached; nothing of
# them is committed), builds in $(COMPAT)/<kernel>/<alloc>/ each suite's
# own sources unmodified, with tests/compat/test_progs.h standing in for
# test_progs.h and tests/compat/runner.c as main(), and runs them, one guest
# boot per kernel (RUN_BPF, forced into the guest: the suites are per
# kernel), through scripts/compat/run-guest.sh:
#   6.12: arena_list (arena_list_1, arena_list_1000), arena_htab
#         (arena_htab_llvm)
#   7.3:  the same plus arena_list_1[000]_nonsleepable, and libarena's own
#         runner (prog_tests/libarena.c), its objects linked by the bpftool
#         built from the 7.3 tarball (Debian's 7.5 cannot link them)
# arena_htab_asm is built (prog_tests/arena_htab.c includes its skeleton)
# but denied (-d): docs/TESTING.md says why. Prints each suite's own
# subtest lines and a summary; fails if any subtest failed.
#   COMPAT_ALLOC=stock  the peers' own allocators (the selftests'
#     bpf_arena_alloc.h page-frag allocator, libarena's arena_malloc): the
#     control
#   COMPAT_ALLOC=aa     (the default) arena-alloc's: include/compat/ first on the BPF
#     include path (its bpf_arena_alloc.h replaces the selftests'), every
#     peer object linked with $(LIB_BPF) before its skeleton is generated,
#     libarena's also with $(COMPAT)/libarena_aa.bpf.o (strong arena_malloc
#     and arena_free over libarena's __weak ones; scripts/compat/
#     check-linked.sh shows in the linked object that they are ours, and
#     that its BTF is whole), and the runners check the heap after each
#     test (tests/compat/aa_check.c)
#   COMPAT_KERNELS=6.12   one guest only; COMPAT_REPEAT=N runs libarena N
#   times; COMPAT_SUITE_TIMEOUT=SEC kills a suite that runs longer (300)
.PHONY: compat-test compat-run compat-fetch compat-build compat-aa-files compat-force \
	compat-bench compat-bench-run

COMPAT_ALLOC ?= aa
COMPAT_KERNELS ?= 6.12 7.3
COMPAT_REPEAT ?= 1
COMPAT_SUITE_TIMEOUT ?= 300
AA_PEER_CACHE ?= $(HOME)/.cache/arena-alloc/peers
export AA_PEER_CACHE
COMPAT := $(OUTPUT)/compat
COMPAT_LIBARENA_AA_SRC ?= bpf/compat/libarena_aa.bpf.c
COMPAT_LIBARENA_AA := $(COMPAT)/libarena_aa.bpf.o
ifeq ($(filter $(COMPAT_ALLOC),stock aa),)
$(error COMPAT_ALLOC must be stock or aa, not '$(COMPAT_ALLOC)')
endif

# The peers' files are outside this tree, in the cache: they are named in
# recipes only, behind the stamp that fetched them.
compat_src = $(AA_PEER_CACHE)/$(1)/src
compat_st = $(call compat_src,$(1))/tools/testing/selftests/bpf
# The 7.3 tree's bpftool and its bundled libbpf 1.8 (fetch-peers.sh builds them).
COMPAT_BPFTOOL73 = $(call compat_src,7.3)/tools/bpf/bpftool
COMPAT_SKEL_WRAP := -Wl,--wrap=bpf_object__load_skeleton,--wrap=bpf_object__destroy_skeleton \
	-Wl,--wrap=bpf_prog_test_run_opts -lpthread
COMPAT_RUNNER_SRCS := tests/compat/runner.c tests/compat/test_progs.h tests/compat/network_helpers.h

# The peers' BPF flags (PLATFORM.md): -mcpu=v3 for the kernel selftests
# (6.12 refuses v4's sign-extending arena loads), their tree's libbpf
# headers with the system's generated bpf_helper_defs.h, <errno.h> for
# bpf_arena_htab.h from the system.
# -Wno-missing-declarations: the nine harmless warnings of bpftool's
# vmlinux.h of 7.3 (libarena's own Makefile turns them off too).
COMPAT_BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -D__x86_64__ -Wno-unused-function \
	-Wno-missing-declarations
COMPAT_SYS_INCLUDES := -idirafter /usr/include/bpf -idirafter /usr/include/x86_64-linux-gnu
# aa: our front ends first, and what they include.
COMPAT_AA_INCLUDES := $(if $(filter aa,$(COMPAT_ALLOC)),-Iinclude/compat -Iinclude)
# aa: what the peer objects are linked with, and what the mode needs.
COMPAT_AA_LINK := $(if $(filter aa,$(COMPAT_ALLOC)),$(LIB_BPF))
COMPAT_AA_FILES := $(if $(filter aa,$(COMPAT_ALLOC)),include/compat/bpf_arena_alloc.h \
	$(if $(filter 7.3,$(COMPAT_KERNELS)),$(COMPAT_LIBARENA_AA_SRC)))
COMPAT_AA_USER := $(if $(filter aa,$(COMPAT_ALLOC)),tests/compat/aa_check.c $(LIB_A))
# aa: the skeletons show the library's arena globals (struct aa_root,
# struct aa_fast), whose types the runners get from aa_shared.h, forced in
# front (the peers' runners include their skeletons as they are).
COMPAT_AA_UFLAGS := $(if $(filter aa,$(COMPAT_ALLOC)),-Iinclude -include aa_shared.h)

compat-force:

# aa mode without the front ends: one clear line naming what is missing,
# before anything is compiled.
compat-aa-files:
	$(Q)rc=0; for f in $(COMPAT_AA_FILES); do [ -f "$$f" ] || { rc=1; \
		echo "compat-test: COMPAT_ALLOC=aa needs $$f, which does not exist yet" >&2; }; done; \
	[ $$rc = 0 ] || echo "compat-test: (arena-alloc's compat front ends;" \
		"COMPAT_ALLOC=stock runs the peers' own allocators)" >&2; exit $$rc

# $(call compat_kernel,KERNEL): the rules of one kernel's suites.
define compat_kernel
compat_o_$(1) := $(COMPAT)/$(1)/$(COMPAT_ALLOC)
# The stamp holds the package version fetched; the script runs every time
# (no network when the cache has it; a deleted cache is fetched again) and
# the stamp changes, rebuilding what the peers' files make, only when the
# version does.
$(COMPAT)/$(1)/.fetched: compat-force
	$(Q)mkdir -p $$(@D)
	$(Q)d=$$$$(bash scripts/compat/fetch-peers.sh $(1) 2>$$@.log) || { cat $$@.log >&2; exit 1; }; \
	v=$$$$(cat "$$$${d%/src}/.version"); [ "$$$$(cat $$@ 2>/dev/null)" = "$$$$v" ] || { \
		printf '  %-8s %s\n' FETCH "linux-source-$(1) $$$$v"; echo "$$$$v" > $$@; }

# The guest kernel's own types (scripts/kernel-btf.sh: from its vmlinuz).
$(COMPAT)/$(1)/vmlinux.h: | $(DEPS_STAMP)
	$$(call msg,GEN,$$@)
	$(Q)mkdir -p $$(@D)
	$(Q)$(BPFTOOL) btf dump file "$$$$(bash scripts/kernel-btf.sh $(1) | tail -n1)" format c > $$@

# The selftests' headers, copied as they are, without bpf_arena_alloc.h in
# aa mode: bpf_arena_htab.h includes "bpf_arena_alloc.h", which the
# compiler looks for in the includer's own directory before any -I; so
# that directory must not have it for include/compat's to be found.
$$(compat_o_$(1))/include/.copied: $(COMPAT)/$(1)/.fetched
	$(Q)rm -rf $$(@D) && mkdir -p $$(@D)
	$(Q)cp -p $(call compat_st,$(1))/*.h $$(@D)/
	$(Q)$(if $(filter aa,$(COMPAT_ALLOC)),rm $$(@D)/bpf_arena_alloc.h)
	$(Q)touch $$@

# The kernel selftests' programs, compiled as they are.
$$(compat_o_$(1))/%.bpf.o: $(COMPAT)/$(1)/.fetched $(COMPAT)/$(1)/vmlinux.h \
		$$(compat_o_$(1))/include/.copied \
		| compat-aa-files
	$$(call msg,BPF,$$@)
	$(Q)mkdir -p $$(@D)
	$(Q)$(CLANG) $(COMPAT_BPF_CFLAGS) -mcpu=v3 $$(if $$(filter arena_htab_asm,$$*), \
		-I$(call compat_st,$(1)),$(COMPAT_AA_INCLUDES) -I$$(compat_o_$(1))/include) \
		-I$(COMPAT)/$(1) -I$(call compat_st,$(1))/libarena/include \
		-I$(call compat_src,$(1))/tools/lib $(COMPAT_SYS_INCLUDES) \
		-c $(call compat_st,$(1))/progs/$$*.c -o $$@
	$(Q)$(LLVM_STRIP) -g $$@
# Linked with the library in aa mode; arena_htab_asm never runs and stays
# the peers' (docs/TESTING.md).
$$(compat_o_$(1))/%.linked.o: $$(compat_o_$(1))/%.bpf.o $(COMPAT_AA_LINK)
	$$(call msg,LINK,$$@)
	$(Q)$$(if $$(filter arena_htab_asm,$$*),cp $$< $$@,$(BPFTOOL) gen object $$@ $$^)
	$(if $(filter aa,$(COMPAT_ALLOC)),$(Q)$$(if $$(filter arena_htab_asm,$$*),:, \
		BPFTOOL=$(BPFTOOL) bash scripts/compat/check-linked.sh $$@))
$$(compat_o_$(1))/%.skel.h: $$(compat_o_$(1))/%.linked.o
	$$(call msg,GEN-SKEL,$$@)
	$(Q)$(BPFTOOL) gen skeleton $$< name $$* > $$@.tmp
	$(Q)$$(SKEL_FIXUP) $$@.tmp > $$@ && rm -f $$@.tmp

# The kernel selftests' runners: prog_tests/arena_{list,htab}.c.
$$(compat_o_$(1))/compat_kernel: $(COMPAT_RUNNER_SRCS) $(COMPAT_AA_USER) \
		$$(addprefix $$(compat_o_$(1))/,arena_list.skel.h arena_htab.skel.h arena_htab_asm.skel.h)
	$$(call msg,BINARY,$$@)
	$(Q)$(CC) -g -O2 -Wall -Itests/compat -I$$(compat_o_$(1)) -I$(call compat_st,$(1)) \
		-I$(call compat_st,$(1))/libarena/include $(LIBBPF_CFLAGS) $(COMPAT_AA_UFLAGS) \
		$(call compat_st,$(1))/prog_tests/arena_list.c $(call compat_st,$(1))/prog_tests/arena_htab.c \
		tests/compat/runner.c $(COMPAT_AA_USER) $(COMPAT_SKEL_WRAP) \
		$(LIBBPF_LIBS) -lelf -lz -o $$@
endef
$(foreach k,$(COMPAT_KERNELS),$(eval $(call compat_kernel,$(k))))

# --- libarena (7.3) ----------------------------------------------------------
# Built as its own Makefile builds it (every src/ and selftests/ file, no
# ASAN), with PLATFORM.md's flags: -mcpu=v4, -D__TARGET_ARCH_x86 (else its
# parallel tests skip themselves), kfunc declarations of our own
# (tests/compat/libarena_kfuncs.h), the 7.3 bpftool's libbpf headers.
COMPAT_LA_O := $(COMPAT)/7.3/$(COMPAT_ALLOC)/libarena
COMPAT_LA_SRCS = $(wildcard $(call compat_st,7.3)/libarena/src/*.bpf.c \
	$(call compat_st,7.3)/libarena/selftests/*.bpf.c)
COMPAT_LA_OBJS = $(addprefix $(COMPAT_LA_O)/,$(notdir $(COMPAT_LA_SRCS:.bpf.c=.bpf.o)))
COMPAT_LA_BPF_CFLAGS := $(COMPAT_BPF_CFLAGS) -mcpu=v4 -DENABLE_ATOMICS_TESTS \
	-Wno-incompatible-pointer-types-discards-qualifiers \
	-include tests/compat/libarena_kfuncs.h

$(COMPAT_LA_O)/%.bpf.o: $(COMPAT)/7.3/.fetched $(COMPAT)/7.3/vmlinux.h tests/compat/libarena_kfuncs.h \
		| compat-aa-files
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)src=$(call compat_st,7.3)/libarena/src/$*.bpf.c; [ -f $$src ] || \
		src=$(call compat_st,7.3)/libarena/selftests/$*.bpf.c; \
	$(CLANG) $(COMPAT_LA_BPF_CFLAGS) -I$(COMPAT)/7.3 -I$(call compat_st,7.3)/libarena/include \
		-I$(call compat_st,7.3) -I$(COMPAT_BPFTOOL73)/libbpf/include -c $$src -o $@
# libarena's object: its files, in aa mode between our arena_malloc and
# arena_free and the library. The order matters twice over with the 7.3
# bpftool's linker (libbpf 1.8): it makes a __weak definition strong once
# an object referring to it (an extern) follows, and then refuses a second
# strong one ("conflicting non-weak symbol"), so ours come first; and it
# leaves the BTF of a variable declared extern before its definition (libarena's
# qnodes) at offset 0 of its DATASEC, which is only right if the defining
# object's section comes first in the output, so the library, whose arena
# globals would come first, goes last. scripts/compat/check-linked.sh
# checks both on the result.
# Its file list exists once the sources are fetched: a sub-make compiles
# them, after this make has made everything they depend on.
$(COMPAT_LA_O)/libarena.bpf.o: $(COMPAT)/7.3/.fetched $(COMPAT)/7.3/vmlinux.h \
		tests/compat/libarena_kfuncs.h $(if $(filter aa,$(COMPAT_ALLOC)),$(LIB_BPF) $(COMPAT_LIBARENA_AA))
	$(Q)$(MAKE) $(COMPAT_LA_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(COMPAT_BPFTOOL73)/bpftool gen object $@ \
		$(if $(filter aa,$(COMPAT_ALLOC)),$(COMPAT_LIBARENA_AA)) $(COMPAT_LA_OBJS) \
		$(if $(filter aa,$(COMPAT_ALLOC)),$(LIB_BPF))
	$(if $(filter aa,$(COMPAT_ALLOC)),$(Q)BPFTOOL=$(COMPAT_BPFTOOL73)/bpftool \
		bash scripts/compat/check-linked.sh $@ arena_malloc arena_free)
$(COMPAT_LA_O)/libarena.skel.h: $(COMPAT_LA_O)/libarena.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(COMPAT_BPFTOOL73)/bpftool gen skeleton $< name libarena > $@
# Ours, against libarena's headers (its arena map and __arena), as its own
# files are compiled.
$(COMPAT_LIBARENA_AA): $(COMPAT_LIBARENA_AA_SRC) $(BPF_API_HDRS) $(COMPAT)/7.3/.fetched \
		$(COMPAT)/7.3/vmlinux.h tests/compat/libarena_kfuncs.h | compat-aa-files
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(COMPAT_LA_BPF_CFLAGS) -I$(COMPAT)/7.3 -I$(call compat_st,7.3)/libarena/include \
		-Iinclude -I$(COMPAT_BPFTOOL73)/libbpf/include -c $< -o $@

# The runner: prog_tests/libarena.c against the 7.3 bpftool's libbpf.
$(COMPAT)/7.3/$(COMPAT_ALLOC)/compat_libarena: $(COMPAT_RUNNER_SRCS) $(COMPAT_AA_USER) \
		$(COMPAT_LA_O)/libarena.skel.h
	$(call msg,BINARY,$@)
	$(Q)$(CC) -g -O2 -Wall -Itests/compat -I$(COMPAT)/7.3/$(COMPAT_ALLOC) \
		-I$(call compat_st,7.3)/libarena/include -I$(COMPAT_BPFTOOL73)/libbpf/include \
		$(COMPAT_AA_UFLAGS) \
		$(call compat_st,7.3)/prog_tests/libarena.c tests/compat/runner.c $(COMPAT_AA_USER) \
		$(COMPAT_SKEL_WRAP) $(COMPAT_BPFTOOL73)/libbpf/libbpf.a -lelf -lz -lpthread -o $@

# --- build, then one guest per kernel ----------------------------------------
COMPAT_BINS := $(foreach k,$(COMPAT_KERNELS),$(COMPAT)/$(k)/$(COMPAT_ALLOC)/compat_kernel) \
	$(if $(filter 7.3,$(COMPAT_KERNELS)),$(COMPAT)/7.3/$(COMPAT_ALLOC)/compat_libarena)
compat-fetch: $(foreach k,$(COMPAT_KERNELS),$(COMPAT)/$(k)/.fetched)
compat-build: $(COMPAT_BINS)

compat-test: compat-build
	$(Q)rc=0; sum=; for k in $(COMPAT_KERNELS); do \
		t0=$$(date +%s); \
		$(MAKE) compat-run COMPAT_KERNEL=$$k VMTEST_KERNEL=$$k && r=PASS || { r=FAIL; rc=1; }; \
		sum="$$sum$$(printf 'compat-test: %-5s %-5s %s (%s s, one guest boot)' $$k \
			$(COMPAT_ALLOC) $$r $$(( $$(date +%s) - t0 )))\n"; \
	done; printf "$$sum"; exit $$rc

# One guest: every suite of COMPAT_KERNEL (scripts/compat/run-guest.sh).
compat-run:
	$(call msg,COMPAT,$(COMPAT_KERNEL) $(COMPAT_ALLOC))
	$(Q)AA_TEST_WHERE=guest $(RUN_BPF) --name 'the peers suites ($(COMPAT_KERNEL))' -- \
		sh scripts/compat/run-guest.sh $(COMPAT)/$(COMPAT_KERNEL)/$(COMPAT_ALLOC) \
		$(COMPAT_REPEAT) $(COMPAT_SUITE_TIMEOUT)

# --- compat-bench: the peers' suites on their allocators and on ours -------
# Both builds for 7.3 (where libarena runs), then one 7.3 guest boot that
# runs libarena's runner and arena_htab on each, COMPAT_BENCH_ROUNDS
# rounds, the order swapped every round (scripts/compat/bench-guest.sh);
# scripts/compat/bench-table.py makes the table (docs/BENCHMARKS.md) from
# the log, $(OUTPUT)/bench/compat.log, into $(OUTPUT)/bench/compat.md.
COMPAT_BENCH_ROUNDS ?= 3
compat-bench:
	$(Q)$(MAKE) compat-build COMPAT_ALLOC=stock COMPAT_KERNELS=7.3
	$(Q)$(MAKE) compat-build COMPAT_ALLOC=aa COMPAT_KERNELS=7.3
	$(Q)mkdir -p $(OUTPUT)/bench
	$(Q)$(MAKE) compat-bench-run VMTEST_KERNEL=7.3 2>&1 | tee $(OUTPUT)/bench/compat.log
	$(Q)python3 scripts/compat/bench-table.py $(OUTPUT)/bench/compat.log | tee $(OUTPUT)/bench/compat.md

compat-bench-run:
	$(call msg,BENCH,peers' suites: 7.3 stock and aa)
	$(Q)AA_TEST_WHERE=guest $(RUN_BPF) --name 'the peers suites side by side' -- \
		sh scripts/compat/bench-guest.sh $(COMPAT)/7.3/stock $(COMPAT)/7.3/aa $(COMPAT_BENCH_ROUNDS)
