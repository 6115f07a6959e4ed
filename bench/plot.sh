#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# plot.sh - draw allocator latency vs producers from aa_bench's JSON.
#
#   bash bench/plot.sh [RESULTS.json] [OUT.svg] [ALLOCS]
#
# RESULTS.json defaults to build/bench/results.json (written by `make bench`),
# OUT.svg to docs/bench-latency.svg, ALLOCS to the run's reference row.
# Two panels (alloc, free), ns per op on a log scale, one line per
# implementation; solid: malloc-free, dashed: malloc-xfree.
# Needs gnuplot and jq (Debian: gnuplot-nox, jq): installed with apt-get when
# missing and running as root, otherwise it says what to install.
set -euo pipefail

json=${1:-build/bench/results.json}
svg=${2:-docs/bench-latency.svg}

need=()
command -v gnuplot >/dev/null || need+=(gnuplot-nox)
command -v jq >/dev/null || need+=(jq)
if ((${#need[@]})); then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "plot.sh: installing ${need[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null ||
			{ apt-get update -q >/dev/null &&
			  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null; }
	else
		echo "plot.sh: needs ${need[*]} (apt-get install ${need[*]})" >&2
		exit 1
	fi
fi
if [[ ! -s $json ]]; then
	echo "plot.sh: $json is missing: run 'make bench' first" >&2
	exit 1
fi

allocs=${3:-$(jq -r '.options.ref_allocs' "$json")}
size=$(jq -r '.options.size' "$json")
cpus=$(jq -r '.machine.cpus' "$json")
# where it ran (bench/where.h); results from before it was recorded: kernel, CPUs
where=$(jq -r '.where.text // "kernel \(.machine.kernel), \(.machine.cpus) CPUs"' "$json")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one data file per (implementation, variant): producers alloc_ns free_ns
impls=(before after kobj floor floor-inline)
titles=("arena-alloc, caches off (before)" "arena-alloc, caches on (after)"
	"kernel: bpf_obj_new / bpf_obj_drop" "floor: per-CPU LIFO, one call" "floor: inlined LIFO")
for impl in "${impls[@]}"; do
	for var in malloc-free malloc-xfree; do
		jq -r --arg i "$impl" --arg v "$var" --argjson a "$allocs" '
			.latency[] | select(.impl == $i and .variant == $v and .allocs == $a)
			| "\(.producers) \(.alloc_ns // "NaN") \(.free_ns // "NaN")"' "$json" \
			>"$tmp/$impl.$var.dat"
	done
done

panel() {	# $1: column (2 alloc, 3 free)
	local sep="plot" i
	for i in "${!impls[@]}"; do
		local f="$tmp/${impls[$i]}"
		[[ -s $f.malloc-free.dat ]] || continue
		printf '%s "%s.malloc-free.dat" using 1:%d with linespoints ls %d title "%s", ' \
			"$sep" "$f" "$1" $((i + 1)) "${titles[$i]}"
		printf '"%s.malloc-xfree.dat" using 1:%d with linespoints ls %d dt 2 notitle' \
			"$f" "$1" $((i + 1))
		sep=","
	done
	echo
}

mkdir -p "$(dirname "$svg")"
gnuplot <<EOF
set terminal svg size 1000,520 dynamic noenhanced font "sans,11" background "white"
set output "$svg"
set multiplot layout 1,2 title "arena-alloc latency vs producers: $size-B objects, batches of $allocs, $where (solid: malloc-free, dashed: malloc-xfree)"
set logscale y
set grid ytics mytics xtics
set xtics 1
set xrange [0.8:$cpus + 0.2]
set xlabel "producers (threads pinned to CPUs)"
set ylabel "ns per operation (log)"
set key below font "sans,10" maxrows 2
set style line 1 lc rgb "#d62728" lw 2 pt 7
set style line 2 lc rgb "#1f77b4" lw 2 pt 5
set style line 3 lc rgb "#7f7f7f" lw 2 pt 9
set style line 4 lc rgb "#2ca02c" lw 2 pt 11
set style line 5 lc rgb "#98df8a" lw 2 pt 13
set title "alloc"
$(panel 2)
set title "free"
$(panel 3)
unset multiplot
EOF
echo "plot.sh: wrote $svg (allocs=$allocs)"
