#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# inspect.sh OUT CLI - the installed arena-alloc CLI inspects a program that
# embeds the library while it runs: flowtab --hold (built into OUT/flowtab),
# found by its pid. Fails unless stats, dump, check, drain and the refill
# agent all work on it, and stats counts flowtab's 2 live flow records.
set -e
out=$1 cli=$2
log=$out/flowtab-hold.log
"$out/flowtab/flowtab" --hold >"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
# loading verifies the library's programs: seconds in an emulated guest
i=0
until grep -q "holding the heap" "$log"; do
	i=$((i + 1))
	kill -0 $pid 2>/dev/null ||
		{ echo "inspect: flowtab exited before --hold:"; cat "$log"; exit 1; }
	[ $i -lt 1200 ] ||
		{ echo "inspect: flowtab not at --hold after 120 s:"; cat "$log"; exit 1; }
	sleep 0.1
done
"$cli" --pid $pid stats | tee "$out/stats.txt"
"$cli" --pid $pid dump | head -3
"$cli" --pid $pid check
# stats: "in N live allocations": the program's (caches shown apart)
live=$(sed -n 's/.* in \([0-9]*\) live allocations.*/\1/p' "$out/stats.txt")
[ "$live" -eq 2 ] ||
	{ echo "inspect: stats count $live allocations, flowtab holds 2"; exit 1; }
"$cli" -j --pid $pid stats | grep -q '"source":"process '$pid'"' ||
	{ echo "inspect: stats --json does not name the process"; exit 1; }
"$cli" --pid $pid drain
# a second of the agent, then SIGTERM, on which it must exit 0 (a shell's
# job: busybox's timeout, an arm64 guest's, has no --preserve-status)
"$cli" --pid $pid refill-agent >"$out/agent.log" &
agent=$!
sleep 1
kill -TERM $agent
wait $agent
cat "$out/agent.log"
grep -q "waiting on the refill event ring" "$out/agent.log" ||
	{ echo "inspect: the agent did not find flowtab's refill ring"; exit 1; }
kill -TERM $pid
wait $pid
trap - EXIT
echo "inspect: arena-alloc --pid read flowtab's heap"
