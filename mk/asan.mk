# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- asan: the userspace library under AddressSanitizer, with the kernel -----
# The sources of user/ compiled again with gcc -fsanitize=address into
# $(ASAN_DIR) (the normal objects stay as they are), linked with each
# tests/asan/<name>.c; `make asan` runs them where BPF runs (RUN_BPF,
# mk/vmtest.mk), one guest for all, and fails on any ASan report (ASan
# exits non-zero) or failing program. make test runs it (a few seconds).
#   uc_destroy   threads exiting while aa_heap__destroy() closes their caches
.PHONY: asan asan-build
ASAN_DIR := $(OUTPUT)/asan
ASAN_CC ?= gcc
ASAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer -g -O1
ASAN_CFLAGS := $(ASAN_FLAGS) -Wall -Werror -Wno-unused-function $(LIBBPF_CFLAGS) $(INCLUDES)
ASAN_PROGS := $(patsubst tests/asan/%.c,$(ASAN_DIR)/%,$(wildcard tests/asan/*.c))
ASAN_OBJS := $(patsubst $(OUTPUT)/%,$(ASAN_DIR)/%,$(USER_OBJS))
ASAN_RUN := $(subst $(eval) , && ,$(ASAN_PROGS))

$(ASAN_DIR)/user:
	$(Q)mkdir -p $@

$(ASAN_DIR)/user/%.o: user/%.c $(wildcard include/*.h) user/internal.h $(OUTPUT)/arena_alloc.skel.h | $(ASAN_DIR)/user $(DEPS_STAMP)
	$(call msg,ASAN-CC,$@)
	$(Q)$(ASAN_CC) $(ASAN_CFLAGS) -c $< -o $@

$(ASAN_DIR)/%: tests/asan/%.c $(ASAN_OBJS) $(OUTPUT)/arena_alloc.skel.h
	$(call msg,ASAN-LD,$@)
	$(Q)$(ASAN_CC) $(ASAN_CFLAGS) $< $(ASAN_OBJS) $(LIBBPF_LIBS) -lelf -lz -lpthread -o $@

asan-build: $(ASAN_PROGS)

define asan_run
$(call msg,ASAN,$(notdir $(ASAN_PROGS)))
$(Q)$(RUN_BPF) --name 'the ASan checks' -- sh -c '$(ASAN_RUN)'
endef

asan: asan-build $(CLI)
	$(asan_run)
