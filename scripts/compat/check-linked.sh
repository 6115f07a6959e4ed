#!/usr/bin/env bash
# Checks of an object `make compat-test COMPAT_ALLOC=aa` (mk/compat.mk)
# linked from the peers' objects and arena-alloc's:
#  1. Its BTF agrees with its symbol table: every variable of a DATASEC
#     sits at its symbol's offset. libbpf's linker (1.8 seen) leaves a
#     variable that an earlier object declared extern at the offset the
#     extern got (0) in the DATASEC, while the symbol moves: the kernel
#     then refuses the BTF ("Invalid offset"), libbpf loads without it and
#     the verifier, with no global functions left, gives up on the
#     library's programs (E2BIG). The link order decides (mk/compat.mk).
#  2. Each FUNC given is defined once and is arena-alloc's: its code
#     refers to a symbol of the library (aa_*, or its .data.aa_* maps), as
#     libarena_aa.bpf.o's arena_malloc/arena_free do; libarena's own
#     __weak ones call buddy_alloc/buddy_free.
# Prints what it found; exit 1 if a check fails.
#   scripts/compat/check-linked.sh OBJECT [FUNC...]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OBJECT [FUNC...]" >&2; exit 2; }
obj=$1; shift
objdump=${LLVM_OBJDUMP:-llvm-objdump-19}
bpftool=${BPFTOOL:-bpftool}
rc=0 name=$(basename "$obj")

# 1. "section var offset" from BTF, against "section var offset" from ELF
btf=$("$bpftool" btf dump file "$obj" | awk '
	/^\[[0-9]+\] DATASEC / { sec = $3; gsub("\047", "", sec); next }
	/^\[/ { sec = "" }
	sec != "" && /\(VAR / { off = $2; sub("offset=", "", off); v = $NF; gsub("[\047)]", "", v)
		printf "%s %s %x\n", sec, v, off }' | sort)
# global variables only: statics of one name can be in several objects
elf=$("$objdump" -t "$obj" | awk '$2 == "g" {
	for (i = 3; i < NF; i++) if ($i == "O") break
	if (i >= NF || $(i + 1) !~ /^\./) next
	off = $1; sub("^0+", "", off); print $(i + 1), $NF, (off == "" ? "0" : off) }' | sort)
bad=$(join -j1 <(awk '{k[NR] = $1 "/" $2; o[NR] = $3; n[$1 "/" $2]++}
		END {for (i = 1; i <= NR; i++) if (n[k[i]] == 1) print k[i], o[i]}' <<<"$btf" | sort) \
	<(awk '{print $1 "/" $2, $3}' <<<"$elf") |
	awk '$2 != $3 {print "  " $1 ": BTF offset 0x" $2 ", symbol offset 0x" $3}')
if [ -n "$bad" ]; then
	echo "compat: $name: BTF DATASEC offsets disagree with the symbols (the kernel will refuse its BTF):"
	echo "$bad"; rc=1
else
	echo "compat: $name: BTF DATASEC offsets agree with the symbols of its global variables"
fi

# 2. the FUNCs are arena-alloc's
for f in "$@"; do
	n=$("$objdump" -t "$obj" | awk -v f="$f" '$NF == f && / F /' | wc -l)
	refs=$("$objdump" -dr --disassemble-symbols="$f" "$obj" |
		awk '/R_BPF_/ {print $NF}' | sort -u | tr '\n' ' ')
	if [ "$n" != 1 ]; then
		echo "compat: $f: $n definitions in $name (want 1)"; rc=1
	elif ! grep -qE '(^| )(aa_|\.data\.aa_)' <<<"$refs"; then
		echo "compat: $f in $name is not arena-alloc's: it refers to ${refs:-nothing}"; rc=1
	else
		echo "compat: $f in $name is arena-alloc's: it refers to $refs"
	fi
done
exit $rc
