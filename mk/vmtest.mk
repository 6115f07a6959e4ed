# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- vmtest: the same test binary inside a QEMU guest kernel -----------------
# `make vmtest` builds $(TEST_BIN) on the host, installs QEMU & co.
# (install-deps.sh --vmtest, idempotent) and runs `$(TEST_BIN) $(TEST_ARGS)`
# in a guest booting Debian's $(VMTEST_KERNEL) kernel (fetched and cached by
# scripts/get-kernel.sh), the host's / read-only over 9p, this tree read-write
# at the same path, /tmp a tmpfs (Criterion's sockets live there). KVM when
# usable, TCG otherwise (minutes). Exits with the guest command's status.
#   make vmtest VMTEST_KERNEL=6.1   (or vmtest-6.1): bookworm's kernel, no BPF
#     arena: every test is skipped ("BPF arena needs Linux >= 6.9"), which
#     vmtest-6.1 allows explicitly (AA_TESTS_ALLOW_SKIP=1); exit 0
#   make vmtest VMTEST_KERNEL=7.3   (or vmtest-7.3): Debian 13's 7.3 from
#     trixie-backports; its guests get `-cpu max` (arena maps need cx16 on
#     7.x; scripts/vmtest.sh)
#   make vmtest VMTEST_CMD='build/arena-alloc demo'   any other command
#   make vmtest VMTEST_CPUS=4 VMTEST_APPEND='preempt=full'   guest vCPUs
#     (1..64, default 2) and extra kernel command-line arguments
#   make vmtest-preempt   the suite in the $(VMTEST_KERNEL) guest booted with
#     preempt=full (VMTEST_APPEND's default for this target), once per CPU
#     count in VMTEST_PREEMPT_CPUS (2 4), stopping at the first failure. Before
#     the command each guest runs scripts/vmtest-preempt-check.sh, which
#     prints `nproc` and the preemption model and fails unless the model is
#     full on the CPU count asked for: `make vmtest-preempt VMTEST_APPEND=`
#     must fail.
#   make vmtest-arm64   the arm64 cross build (make ARCH=arm64: build/arm64/)
#     in Debian's arm64 guests under qemu-system-aarch64 (TCG), one run per
#     ARCH:VERSION of VMTEST_ARM64_KERNELS (arm64-16k: 16-KiB pages, the
#     PAGE_KB=16 build in build/arm64-16k/), stopping at the first
#     failure; each guest first prints its machine, kernel, page size and
#     build. VMTEST_ARM64_CMD: what runs (the suite), $$AA_BUILD its build.
.PHONY: vmtest vmtest-6.1 vmtest-6.12 vmtest-7.3 vmtest-preempt vmtest-arm64
VMTEST_KERNEL ?= 6.12
VMTEST_CPUS ?= 2
VMTEST_MEM ?= 2G
VMTEST_APPEND ?=
VMTEST_TIMEOUT ?= 2400
VMTEST_CMD ?= $(TEST_BIN) $(TEST_ARGS)
VMTEST_PREEMPT_CPUS ?= 2 4
VMTEST_ARM64_KERNELS ?= arm64:6.12 arm64:7.3 arm64-16k:7.3
VMTEST_ARM64_CMD ?= $$AA_BUILD/aa_tests $(TEST_ARGS)
VMTEST_SH = bash scripts/vmtest.sh -k '$(VMTEST_KERNEL)' -m '$(VMTEST_MEM)' -t '$(VMTEST_TIMEOUT)'

vmtest: export VMTEST_CMD := $(VMTEST_CMD)
vmtest: $(TEST_BIN)
	$(Q)bash scripts/install-deps.sh --vmtest
	$(call msg,VMTEST,$(VMTEST_KERNEL))
	$(Q)$(VMTEST_SH) -c '$(VMTEST_CPUS)' -a '$(VMTEST_APPEND)' -- "$$VMTEST_CMD"

vmtest-6.1:
	$(Q)$(MAKE) vmtest VMTEST_KERNEL=6.1 VMTEST_CMD='env AA_TESTS_ALLOW_SKIP=1 $(TEST_BIN) $(TEST_ARGS)'

vmtest-6.12:
	$(Q)$(MAKE) vmtest VMTEST_KERNEL=6.12

vmtest-7.3:
	$(Q)$(MAKE) vmtest VMTEST_KERNEL=7.3

vmtest-preempt: VMTEST_APPEND = preempt=full
vmtest-preempt: export VMTEST_CMD := $(VMTEST_CMD)
vmtest-preempt: $(TEST_BIN)
	$(Q)bash scripts/install-deps.sh --vmtest
	$(call msg,VMTEST,$(VMTEST_KERNEL) $(VMTEST_APPEND),(CPUs: $(VMTEST_PREEMPT_CPUS)))
	$(Q)for n in $(VMTEST_PREEMPT_CPUS); do \
		$(VMTEST_SH) -c "$$n" -a '$(VMTEST_APPEND)' \
			-- "sh scripts/vmtest-preempt-check.sh $$n && $$VMTEST_CMD" || exit; \
	done

vmtest-arm64: export VMTEST_ARM64_CMD := $(VMTEST_ARM64_CMD)
vmtest-arm64:
	$(Q)bash scripts/install-deps.sh --vmtest --arm64
	$(call msg,VMTEST,$(VMTEST_ARM64_KERNELS))
	$(Q)for k in $(VMTEST_ARM64_KERNELS); do \
		case "$${k%%:*}" in *-16k) kb=16 b=build/arm64-16k;; *) kb=4 b=build/arm64;; esac; \
		$(MAKE) ARCH=arm64 PAGE_KB=$$kb all || exit; \
		$(VMTEST_SH) -A "$${k%%:*}" -k "$${k#*:}" -c '$(VMTEST_CPUS)' -a '$(VMTEST_APPEND)' -- \
			"export AA_BUILD=$$b && \
			echo \"vmtest-arm64: \$$(uname -m -r), \$$(grep -m1 KernelPageSize /proc/self/smaps), \$$AA_BUILD\" && \
			$$VMTEST_ARM64_CMD" || exit; \
	done

# --- RUN_BPF: this host, or else the vmtest guest ----------------------------
# Everything that creates BPF arena maps (test, run, stress, examples,
# bench) runs through scripts/run-bpf.sh: on this host when its kernel
# creates them (`arena-alloc probe`), else in the $(VMTEST_KERNEL) guest of
# `make vmtest` after one line saying why. AA_TEST_WHERE=host|guest forces
# either (default auto). Needs the CLI built (it probes).
AA_TEST_WHERE ?= auto
export AA_TEST_WHERE
RUN_BPF = AA_CLI=$(CLI) bash scripts/run-bpf.sh -k '$(VMTEST_KERNEL)' -c '$(VMTEST_CPUS)' \
	-m '$(VMTEST_MEM)' -t '$(VMTEST_TIMEOUT)' -a '$(VMTEST_APPEND)'
