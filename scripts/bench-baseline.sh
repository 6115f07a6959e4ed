#!/usr/bin/env bash
# Build the benchmarks' baseline, the "before" columns of make bench:
#   scripts/bench-baseline.sh REV DIR [MAKE]
# takes release REV from git into DIR/src and builds its library and its
# aa_bench there with its own Makefile (MAKE, default make) into DIR/build.
# Run from the top of the tree (make bench-baseline, which then builds this
# tree's bench/memory.c against that library). Exits non-zero when a step
# fails: no git history, or a REV that does not build here.
set -euo pipefail
[ $# = 2 ] || [ $# = 3 ] || { sed -n 's/^#   //p' "${BASH_SOURCE[0]}" >&2; exit 2; }
rev=$1 dir=$2 make=${3:-make}

rm -rf "$dir/src"
mkdir -p "$dir/src"
git archive "$rev" | tar -x -C "$dir/src"
out=$(cd "$dir" && pwd)/build
$make -s -C "$dir/src" OUTPUT="$out" "$out/libarena_alloc.a" "$out/aa_bench"
