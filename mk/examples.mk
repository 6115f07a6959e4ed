# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- examples: install -> build the examples -> run them -> uninstall --------
# The examples (examples/*/) are projects of their own that find the library
# through pkg-config only: here, the one `make install` staged in
# $(EX_STAGE) (DESTDIR, PREFIX=/usr). `make examples` does the round trip
# on this machine; .ci/run also runs $(EX_OUT)/run.sh in the 6.12 guest
# between examples-build and examples-uninstall. The last step runs the
# installed CLI against flowtab while it runs (examples/inspect.sh).
.PHONY: examples examples-build examples-uninstall
EXAMPLES := flowtab tracelist scx_tasks
# scx_tasks needs a vmlinux.h with sched_ext: the 7.3 guest kernel's
EX_SCX_KERNEL ?= 7.3
EX_STAGE := $(abspath $(OUTPUT))/stage
EX_OUT := $(abspath $(OUTPUT))/examples
EX_LIBDIR := /usr/lib$(if $(MULTIARCH),/$(MULTIARCH))
EX_ENV := PKG_CONFIG_SYSROOT_DIR=$(EX_STAGE) PKG_CONFIG_PATH=$(EX_STAGE)$(EX_LIBDIR)/pkgconfig
# A cross build (make ARCH=arm64 [PAGE_KB=16] examples-build, run in an
# arm64 guest): the examples get the target, its compiler and the types of
# the target's $(EX_SCX_KERNEL) kernel, as an embedder's cross build would.
EX_BTF = bash scripts/kernel-btf.sh $(if $(CROSS_COMPILE),--arch $(ARCH)) $(EX_SCX_KERNEL)
EX_CROSS := $(if $(CROSS_COMPILE),ARCH=$(ARCH) CC=$(CC))

examples-build: lib $(CLI)
	$(Q)rm -rf $(EX_STAGE) $(EX_OUT)
	$(Q)$(MAKE) install DESTDIR=$(EX_STAGE) PREFIX=/usr
	$(Q)for e in $(EXAMPLES); do btf=; \
		[ $$e != scx_tasks ] && [ -z "$(CROSS_COMPILE)" ] || btf="VMLINUX_BTF=$$($(EX_BTF))" || exit 1; \
		$(EX_ENV) $(MAKE) -s -C examples/$$e OUT=$(EX_OUT)/$$e $(EX_CROSS) $$btf || exit 1; done
	$(Q){ echo 'set -e'; echo 'export LD_LIBRARY_PATH=$(EX_STAGE)$(EX_LIBDIR)'; \
	      for e in $(EXAMPLES); do a=; [ $$e != scx_tasks ] || a="--cli $(EX_STAGE)/usr/bin/arena-alloc"; \
		echo "echo '== $$e'; $(EX_OUT)/$$e/$$e $$a"; done; \
	      echo "echo '== arena-alloc --pid (flowtab --hold)'"; \
	      echo "sh $(abspath examples/inspect.sh) $(EX_OUT) $(EX_STAGE)/usr/bin/arena-alloc"; \
	      echo 'echo "examples: all passed"'; } > $(EX_OUT)/run.sh

examples-uninstall:
	$(Q)$(MAKE) uninstall DESTDIR=$(EX_STAGE) PREFIX=/usr
	$(Q)left=$$(find $(EX_STAGE) -type f -o -type l); [ -z "$$left" ] || \
		{ echo "examples: uninstall left $$left" >&2; exit 1; }
	$(Q)echo "examples: uninstall removed everything install put in $(EX_STAGE)"

# (one vCPU in a guest: tracelist enables the sched_switch tracepoint,
# whose text patching once oopsed a 2-vCPU TCG guest; see .ci/run)
examples: examples-build
	$(Q)$(RUN_BPF) -c 1 --name 'the examples' -- sh $(EX_OUT)/run.sh
	$(Q)$(MAKE) examples-uninstall
