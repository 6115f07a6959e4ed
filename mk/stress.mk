# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- stress: the long stress test (tests/test_stress.c) ----------------------
# `make stress` runs the stress test of build/aa_tests (pinned threads on
# every CPU, a hard-IRQ program and a control thread: drain, trim, grow,
# refill, reclaim, check; tests/test_stress.c) for STRESS_OPS allocator
# operations (allocations + frees of the task threads; 10^9 by default,
# minutes), printing progress every STRESS_PROGRESS seconds and the totals;
# exit 1 on any violation (or when the test did not run). `make test` runs
# the same test with 10^7 operations. On a host that refuses arena maps it
# runs in the guest (RUN_BPF, with the VM timeout of stress-vm).
# `make stress-vm` runs it in the 6.12 guest booted with preempt=full on
# STRESS_VM_CPUS vCPUs (through vmtest-preempt, which checks the model)
# for STRESS_VM_OPS operations (10^9 by default) within STRESS_VM_TIMEOUT
# seconds.
# `make irq-nulls-vm` runs irq_nulls' caches-on half (tests/test_irq_nulls.c:
# hard-IRQ allocations at 10 kHz per CPU over task threads and heap-lock
# holds, every NULL counted) for IRQ_NULLS_SECS seconds in the
# $(VMTEST_KERNEL) guest booted with preempt=full, once per CPU count in
# IRQ_NULLS_CPUS (through vmtest-preempt); `VMTEST_KERNEL=7.3` for 7.3.
# The figures of docs/BENCHMARKS.md, "IRQ allocations"; exit 1 on more than
# 1 IRQ NULL in 10^5, a task NULL or a checker failure.
.PHONY: stress stress-vm irq-nulls-vm
STRESS_OPS ?= 1000000000
STRESS_PROGRESS ?= 30
STRESS_VM_OPS ?= 1000000000
STRESS_VM_CPUS ?= 2
STRESS_VM_TIMEOUT ?= 10800
IRQ_NULLS_SECS ?= 90
IRQ_NULLS_CPUS ?= 2 4 8
stress_cmd = env AA_STRESS_ALL_OPS=$(1) AA_STRESS_PROGRESS=$(STRESS_PROGRESS) \
	$(TEST_BIN) --filter 'stress/*'

stress: $(TEST_BIN)
	$(call msg,STRESS,$(STRESS_OPS) operations)
	$(Q)$(RUN_BPF) -t '$(STRESS_VM_TIMEOUT)' --name 'the stress' -- $(call stress_cmd,$(STRESS_OPS))

stress-vm: $(TEST_BIN)
	$(Q)$(MAKE) vmtest-preempt VMTEST_PREEMPT_CPUS='$(STRESS_VM_CPUS)' \
		VMTEST_TIMEOUT='$(STRESS_VM_TIMEOUT)' VMTEST_CMD="$(call stress_cmd,$(STRESS_VM_OPS))"

irq-nulls-vm: $(TEST_BIN)
	$(Q)$(MAKE) vmtest-preempt VMTEST_PREEMPT_CPUS='$(IRQ_NULLS_CPUS)' \
		VMTEST_CMD="env AA_IRQ_NULLS_SECS=$(IRQ_NULLS_SECS) $(TEST_BIN) --filter 'irq_nulls/with_caches' --verbose"
