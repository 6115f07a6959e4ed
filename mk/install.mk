# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- install / uninstall -----------------------------------------------------
# Debian's multiarch libdir (DESTDIR for staging). Headers in
# $(INCLUDEDIR)/arena-alloc (C and BPF alike: every header of include/:
# arena_alloc.h and arena_alloc.bpf.h, what they include, the layout for
# skeletons, arena_alloc_internal.h for tools), the compat front ends in its compat/
# (include/compat's header, and bpf/compat/libarena_aa.bpf.c as source: it
# is compiled against the user's libarena headers), the embeddable BPF object in
# $(LIBDIR)/bpf, the .a and the versioned .so with its soname and
# development links, arena-alloc.pc, the CLI and its man page (from its
# help text). INSTALLED lists every file: uninstall removes exactly those,
# then the two directories of ours if they are empty.
PREFIX ?= /usr/local
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man

.PHONY: install uninstall
PC := $(OUTPUT)/arena-alloc.pc
MAN := $(OUTPUT)/arena-alloc.1
HDR_DIR := $(INCLUDEDIR)/arena-alloc
BPF_DIR := $(LIBDIR)/bpf
PUBLIC_HDRS := $(notdir $(wildcard include/*.h))
COMPAT_DIR := $(HDR_DIR)/compat
COMPAT_FILES := $(wildcard include/compat/*.h) bpf/compat/libarena_aa.bpf.c
INSTALLED := $(addprefix $(HDR_DIR)/,$(PUBLIC_HDRS)) $(addprefix $(COMPAT_DIR)/,$(notdir $(COMPAT_FILES))) \
	$(BPF_DIR)/libarena_alloc.bpf.o \
	$(LIBDIR)/libarena_alloc.a $(LIBDIR)/libarena_alloc.so.$(VERSION) \
	$(LIBDIR)/$(SONAME) $(LIBDIR)/libarena_alloc.so $(LIBDIR)/pkgconfig/arena-alloc.pc \
	$(BINDIR)/arena-alloc $(MANDIR)/man1/arena-alloc.1

# Regenerated when the install paths change: $(OUTPUT)/.install-paths
# holds the last ones (rewritten at parse time only when they differ).
INSTALL_PATHS := $(PREFIX) $(LIBDIR) $(INCLUDEDIR)
$(shell mkdir -p $(OUTPUT); [ "$$(cat $(OUTPUT)/.install-paths 2>/dev/null)" = '$(INSTALL_PATHS)' ] \
	|| echo '$(INSTALL_PATHS)' > $(OUTPUT)/.install-paths)
$(PC): $(OUTPUT)/.install-paths mk/install.mk Makefile
	$(call msg,GEN,$@)
	$(Q)printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' \
		'bpfincludedir=$${includedir}/arena-alloc' \
		'compatincludedir=$${includedir}/arena-alloc/compat' \
		'bpfobject=$${libdir}/bpf/libarena_alloc.bpf.o' '' \
		'Name: arena-alloc' \
		'Description: memory allocator in a BPF arena (BPF object + loader library)' \
		'Version: $(VERSION)' 'Requires: libbpf >= 1.4' \
		'Cflags: -I$${includedir}/arena-alloc$(if $(filter-out 4,$(PAGE_KB)), $(PAGE_CFLAGS))' \
		'Libs: -L$${libdir} -larena_alloc' 'Libs.private: -lelf -lz' > $@

$(MAN): $(CLI)
	$(call msg,GEN,$@)
	$(Q){ echo '.TH ARENA-ALLOC 1 "" "arena-alloc $(VERSION)" "User Commands"'; \
	      echo '.SH NAME'; echo 'arena-alloc \- load and inspect an arena-alloc heap'; \
	      echo '.SH DESCRIPTION'; echo '.nf'; $(CLI) help | sed 's/\\/\\\\/g; s/^\./\\\&./'; \
	      echo '.fi'; echo '.SH SEE ALSO'; echo 'docs/EMBEDDING.md in the source tree'; } > $@

install: lib $(CLI) $(PC) $(MAN)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(HDR_DIR) $(DESTDIR)$(COMPAT_DIR) $(DESTDIR)$(BPF_DIR) \
		$(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	$(Q)install -m 644 $(addprefix include/,$(PUBLIC_HDRS)) $(DESTDIR)$(HDR_DIR)
	$(Q)install -m 644 $(COMPAT_FILES) $(DESTDIR)$(COMPAT_DIR)
	$(Q)install -m 644 $(LIB_BPF) $(DESTDIR)$(BPF_DIR)
	$(Q)install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)
	$(Q)install -m 755 $(LIB_SO_REAL) $(DESTDIR)$(LIBDIR)
	$(Q)ln -sf libarena_alloc.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libarena_alloc.so
	$(Q)install -m 644 $(PC) $(DESTDIR)$(LIBDIR)/pkgconfig
	$(Q)install -m 755 $(CLI) $(DESTDIR)$(BINDIR)
	$(Q)install -m 644 $(MAN) $(DESTDIR)$(MANDIR)/man1

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)rmdir $(DESTDIR)$(COMPAT_DIR) $(DESTDIR)$(HDR_DIR) $(DESTDIR)$(BPF_DIR) 2>/dev/null || true
