#!/usr/bin/env bash
# Run libFuzzer targets for a bounded time each (`make fuzz`, `make
# fuzz-short`; tests/fuzz/README.md lists the targets):
#   scripts/fuzz.sh SECONDS FUZZ_DIR TARGET...
# FUZZ_JOBS targets run at a time (default 2: this machine's CPUs). Each
# target FUZZ_DIR/TARGET starts from its seeds in tests/fuzz/corpus/TARGET/
# and from what earlier runs found (FUZZ_DIR/corpus/TARGET/, where new
# inputs go; the tree's seeds are never written). Its log is
# FUZZ_DIR/logs/TARGET.log; one line of totals per target, in the order
# given, from libFuzzer's last status line and final stats:
#   fuzz: cli_size: 123456 runs in 2.1 s, cov 52, ft 75, corpus 27, crashes 0
# Exit status 1 if any target crashed, leaked, timed out or failed its
# oracle (the input is saved under FUZZ_DIR/crashes/ and named), or ran no
# input at all (it exited 0 with 0 runs: nothing was fuzzed); 2 for bad
# usage.
set -uo pipefail

[ $# -ge 3 ] || { echo "usage: scripts/fuzz.sh SECONDS FUZZ_DIR TARGET..." >&2; exit 2; }
secs=$1 dir=$2 jobs=${FUZZ_JOBS:-2}
shift 2
case "$secs$jobs" in *[!0-9]*) echo "fuzz: SECONDS '$secs', FUZZ_JOBS '$jobs': numbers" >&2; exit 2 ;; esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$dir/logs" "$dir/crashes"
for t in "$@"; do
	[ -x "$dir/$t" ] || { echo "fuzz: $t: no $dir/$t (make fuzz-build)" >&2; exit 2; }
done

# value NAME LOG: the last "NAME: N" of libFuzzer's status lines
# ("#1194228 DONE cov: 52 ft: 75 corp: 27/425b ..."), or 0.
value() { grep -a -o "$1: [0-9]*" "$2" | tail -n1 | sed 's/.*: //' | grep . || echo 0; }

# run TARGET: fuzz it; its summary line and exit status into logs/TARGET.result
run() {
	local t=$1 log=$dir/logs/$1.log work=$dir/corpus/$1 seeds=tests/fuzz/corpus/$1
	local t0 rc ms runs dirs=("$work")
	local args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3
		-print_final_stats=1 -artifact_prefix="$dir/crashes/$t-")

	mkdir -p "$work"
	[ -d "$seeds" ] && dirs+=("$seeds")
	[ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
	t0=$(date +%s%N)
	"$dir/$t" "${args[@]}" "${dirs[@]}" >"$log" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	echo "$rc fuzz: $t: ${runs:-0} runs in $((ms / 1000)).$((ms % 1000 / 100)) s," \
		"cov $(value cov "$log"), ft $(value ft "$log"), corpus $(value corp "$log")," \
		"crashes $((rc != 0))" >"$dir/logs/$t.result"
}

rm -f "$dir"/logs/*.result
for t in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run "$t" &
done
wait

failed=0 total=0
for t in "$@"; do
	read -r rc line <"$dir/logs/$t.result"
	echo "$line"
	runs=${line#*: *: }
	runs=${runs%% *}
	total=$((total + runs))
	[ "$rc" = 0 ] && [ "$runs" -gt 0 ] && continue
	failed=1
	if [ "$rc" = 0 ]; then
		echo "fuzz: FAILED: $t ran no input (0 runs); the end of its log ($dir/logs/$t.log):" >&2
		tail -n 4 "$dir/logs/$t.log" | sed 's/^/fuzz:   /' >&2
		continue
	fi
	echo "fuzz: FAILED: $t exited with status $rc; from its log ($dir/logs/$t.log):" >&2
	grep -a -E '^(fuzz: oracle|==[0-9]+==ERROR|SUMMARY|artifact_prefix|.*runtime error)' \
		"$dir/logs/$t.log" | head -n 8 | sed 's/^/fuzz:   /' >&2
done
echo "fuzz: $# targets, $total runs, $([ "$failed" = 0 ] && echo "no crashes" || echo FAILED)"
exit "$failed"
