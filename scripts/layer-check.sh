#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# layer-check.sh CC-COMMAND: the BPF library's files call only down.
#
# The tier order is the one of bpf/arena_alloc.bpf.c's #include lines,
# lowest first. Each bpf/X.bpf.c gives the files above it bpf/X.h, which
# includes internal.h only. The check fails when
#   - a file includes the header of a file at or above it (its own but),
#   - a tier header includes anything of bpf/ but internal.h,
#   - a public header (include/) includes anything of bpf/,
#   - a file does not compile alone with the headers it includes
#     (-fsyntax-only: a call to a function that only a higher file
#     declares is an error).
set -eu
cc="$1"
top=bpf/arena_alloc.bpf.c
order=$(sed -n 's/^#include "\([a-z_]*\)\.bpf\.c"$/\1/p' "$top")
[ -n "$order" ] || { echo "layer-check: no tier order in $top" >&2; exit 1; }
fail=0
pos() { printf '%s\n' $order | grep -nx "$1" | cut -d: -f1; }

for h in include/*.h include/compat/*.h; do
	if grep -nE '#include "(\.\./)*bpf/' "$h" >&2; then
		echo "layer-check: public header $h includes bpf/" >&2; fail=1
	fi
done
i=0
for t in $order; do
	i=$((i + 1))
	if [ -f "bpf/$t.h" ]; then
		bad=$(sed -n 's/^#include "\(.*\)"$/\1/p' "bpf/$t.h" | grep -vx internal.h || true)
		if [ -n "$bad" ]; then
			echo "layer-check: bpf/$t.h includes $bad (a tier header includes internal.h only)" >&2
			fail=1
		fi
	fi
	for inc in $(sed -n 's/^#include "\([a-z_]*\)\.h"$/\1/p' "bpf/$t.bpf.c"); do
		j=$(pos "$inc")
		[ -n "$j" ] || continue		# not a tier's header
		if [ "$j" -gt "$i" ]; then
			echo "layer-check: bpf/$t.bpf.c includes $inc.h: $inc.bpf.c is above it in $top" >&2
			fail=1
		fi
	done
	if ! $cc -fsyntax-only -Wno-undefined-internal -Wno-unused-function "bpf/$t.bpf.c"; then
		echo "layer-check: bpf/$t.bpf.c does not compile with only the headers it includes" >&2
		fail=1
	fi
done
[ "$fail" = 0 ] && echo "layer-check: $(printf '%s\n' $order | wc -l) files, each calling only the files below it"
exit "$fail"
