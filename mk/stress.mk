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
.PHONY: stress stress-vm
STRESS_OPS ?= 1000000000
STRESS_PROGRESS ?= 30
STRESS_VM_OPS ?= 1000000000
STRESS_VM_CPUS ?= 2
STRESS_VM_TIMEOUT ?= 10800
stress_cmd = env AA_STRESS_ALL_OPS=$(1) AA_STRESS_PROGRESS=$(STRESS_PROGRESS) \
	$(TEST_BIN) --filter 'stress/*'

stress: $(TEST_BIN)
	$(call msg,STRESS,$(STRESS_OPS) operations)
	$(Q)$(RUN_BPF) -t '$(STRESS_VM_TIMEOUT)' --name 'the stress' -- $(call stress_cmd,$(STRESS_OPS))

stress-vm: $(TEST_BIN)
	$(Q)$(MAKE) vmtest-preempt VMTEST_PREEMPT_CPUS='$(STRESS_VM_CPUS)' \
		VMTEST_TIMEOUT='$(STRESS_VM_TIMEOUT)' VMTEST_CMD="$(call stress_cmd,$(STRESS_VM_OPS))"
