#!/usr/bin/env bash
# Build the benchmarks' baseline, the "before" columns of make bench:
#   scripts/bench-baseline.sh REV DIR
# takes release REV from git into DIR/src, builds its library and its
# aa_bench there with its own Makefile (into DIR/build), then this tree's
# bench/memory.c against that library (DIR/aa_bench_mem). Run from the top
# of the tree by make (bench-baseline), which passes MAKE, CC, CFLAGS and
# LIBBPF_LIBS in the environment. Exits non-zero when any step fails (no
# git history, or a REV that does not build here).
set -euo pipefail
[ $# = 2 ] || { sed -n 's/^#   //p' "${BASH_SOURCE[0]}" >&2; exit 2; }
rev=$1 dir=$2

rm -rf "$dir/src"
mkdir -p "$dir/src"
git archive "$rev" | tar -x -C "$dir/src"
out=$(cd "$dir" && pwd)/build
${MAKE:-make} -s -C "$dir/src" OUTPUT="$out" "$out/libarena_alloc.a" "$out/aa_bench"
# shellcheck disable=SC2086 # CFLAGS and LIBBPF_LIBS are lists of flags
${CC:-cc} ${CFLAGS:-} -I"$dir/src/include" -I"$dir/build" bench/memory.c \
	"$dir/build/libarena_alloc.a" ${LIBBPF_LIBS:--lbpf} -lelf -lz -o "$dir/aa_bench_mem"
