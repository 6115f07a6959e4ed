#!/usr/bin/env bash
# Run libFuzzer targets for a bounded time each (`make fuzz`, `make
# fuzz-short`; tests/fuzz/README.md lists the targets):
#   scripts/fuzz.sh SECONDS FUZZ_DIR TARGET...
# Each target FUZZ_DIR/TARGET starts from its seeds in
# tests/fuzz/corpus/TARGET/ and from what earlier runs found
# (FUZZ_DIR/corpus/TARGET/, where new inputs go; the tree's seeds are
# never written). Its log is FUZZ_DIR/logs/TARGET.log; one line of totals
# per target:
#   fuzz: cli_size: 123456 runs in 2.1 s, cov 52, ft 75, corpus 27, crashes 0
# Exit status 1 if any target crashed, leaked, timed out or failed its
# oracle (the input is saved under FUZZ_DIR/crashes/ and named); 2 for bad
# usage.
set -uo pipefail

[ $# -ge 3 ] || { echo "usage: scripts/fuzz.sh SECONDS FUZZ_DIR TARGET..." >&2; exit 2; }
secs=$1 dir=$2
shift 2
case "$secs" in '' | *[!0-9]*) echo "fuzz: SECONDS '$secs' is not a number" >&2; exit 2 ;; esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$dir/logs" "$dir/crashes"

# value NAME LOG: the last "NAME: N" of libFuzzer's status lines
# ("#1194228 DONE cov: 52 ft: 75 corp: 27/425b ..."), or 0.
value() { grep -a -o "$1: [0-9]*" "$2" | tail -n1 | sed 's/.*: //' | grep . || echo 0; }

failed=0 total_runs=0
for t in "$@"; do
	bin=$dir/$t log=$dir/logs/$t.log work=$dir/corpus/$t seeds=tests/fuzz/corpus/$t
	[ -x "$bin" ] || { echo "fuzz: $t: no $bin (make fuzz-build)" >&2; exit 2; }
	mkdir -p "$work"
	args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3
		-print_final_stats=1 -artifact_prefix="$dir/crashes/$t-")
	[ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
	t0=$(date +%s%N)
	dirs=("$work")
	[ -d "$seeds" ] && dirs+=("$seeds")
	"$bin" "${args[@]}" "${dirs[@]}" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	runs=${runs:-$(grep -a -o '^#[0-9]*' "$log" | tail -n1 | tr -d '#')}
	runs=${runs:-0}
	crashes=0
	if [ "$rc" != 0 ]; then
		crashes=1
		failed=1
	fi
	total_runs=$((total_runs + runs))
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "fuzz: $t: $runs runs in $((ms / 1000)).$((ms % 1000 / 100)) s, cov $(value cov "$log")," \
		"ft $(value ft "$log"), corpus $(value corp "$log"), crashes $crashes"
	if [ "$rc" != 0 ]; then
		echo "fuzz: FAILED: $t exited with status $rc; from its log ($log):" >&2
		grep -a -E '^(fuzz: oracle|==[0-9]+==ERROR|SUMMARY|artifact_prefix|.*runtime error)' \
			"$log" | head -n 8 | sed 's/^/fuzz:   /' >&2
	fi
done
echo "fuzz: $# targets, $total_runs runs, $([ "$failed" = 0 ] && echo "no crashes" || echo FAILED)"
exit "$failed"
