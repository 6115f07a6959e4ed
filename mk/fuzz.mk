# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- fuzz: libFuzzer targets of the userspace parsers (tests/fuzz/) ----------
# Each tests/fuzz/<target>.c is one LLVMFuzzerTestOneInput(), linked with
# the sources of user/ and user/cli/ compiled again with the same sanitizer
# flags into $(FUZZ_DIR) (the normal objects stay as they are; the CLI's
# main() is renamed, libFuzzer brings its own). scripts/fuzz.sh runs each
# target for the given seconds on its seeds (tests/fuzz/corpus/<target>/,
# what it finds goes to $(FUZZ_DIR)/corpus/<target>/), prints one line of
# totals per target and fails on any crash, leak, timeout or oracle
# failure (the input is saved in $(FUZZ_DIR)/crashes/).
#   make fuzz                  FUZZ_SECONDS (60) per target
#   make fuzz-short            FUZZ_SHORT_SECONDS (1; libFuzzer takes ~2) per target; make test runs it
#   make fuzz FUZZ_TARGETS=cli_size FUZZ_SECONDS=600   one target, longer
.PHONY: fuzz fuzz-short fuzz-build
FUZZ_DIR := $(OUTPUT)/fuzz
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1
# (user/ first: its internal.h, not bpf/'s)
FUZZ_CFLAGS := $(FUZZ_FLAGS) -Wall -Werror -Wno-unused-function $(LIBBPF_CFLAGS) -Iuser -Iuser/cli \
	$(INCLUDES) -I$(OUTPUT)/cli -Iuser/cli/bpf
FUZZ_ALL := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 60
FUZZ_SHORT_SECONDS ?= 1
FUZZ_OBJS := $(patsubst $(OUTPUT)/%,$(FUZZ_DIR)/%,$(USER_OBJS) $(CLI_OBJS))
FUZZ_LIB := $(FUZZ_DIR)/libaa_fuzz.a

# $(call fuzz_run,SECONDS): every target of FUZZ_TARGETS for SECONDS each
define fuzz_run
$(call msg,FUZZ,$(words $(FUZZ_TARGETS)) targets,x $(1) s)
$(Q)bash scripts/fuzz.sh $(1) $(FUZZ_DIR) $(FUZZ_TARGETS)
endef

$(FUZZ_DIR)/user $(FUZZ_DIR)/cli:
	$(Q)mkdir -p $@

$(FUZZ_DIR)/user/%.o: user/%.c $(wildcard include/*.h) user/internal.h $(OUTPUT)/arena_alloc.skel.h | $(FUZZ_DIR)/user $(DEPS_STAMP)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/cli/%.o: user/cli/%.c user/cli/cli.h $(wildcard include/*.h) | $(FUZZ_DIR)/cli $(DEPS_STAMP)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Dmain=aa_cli_main -c $< -o $@

$(FUZZ_DIR)/cli/demo.o: $(OUTPUT)/cli/demo.skel.h user/cli/bpf/demo.h

$(FUZZ_LIB): $(FUZZ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_DIR)/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(FUZZ_LIB) $(LIBBPF_LIBS) -lelf -lz -ljansson -o $@

fuzz-build: $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS))

fuzz: fuzz-build
	$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-short: fuzz-build
	$(call fuzz_run,$(FUZZ_SHORT_SECONDS))
