#!/bin/sh
# Runs inside the guest (mk/compat.mk's compat-bench, through RUN_BPF): the
# peers' suites timed on their own allocators and on arena-alloc's compat
# front ends, in this one boot, ROUNDS rounds, the order of the two
# swapped every round (so neither always runs on a warm cache), without
# arena-alloc's heap check (AA_COMPAT_NO_CHECK: tests/compat/aa_check.c);
# before them one untimed run of arena-alloc's side with the check, for
# its allocation counts. Each runner's -t lines (the BPF work of a
# subtest: runner.c) and the heap lines come out prefixed with the
# allocator; bench-table.py makes the table.
#   sh scripts/compat/bench-guest.sh STOCK_DIR AA_DIR ROUNDS
stock=$1 aa=$2 rounds=${3:-5}
[ -d "$stock" ] && [ -d "$aa" ] || { echo "bench-guest: no directory '$stock' or '$aa'" >&2; exit 2; }
echo "bench: Linux $(uname -r), $(nproc) CPUs, ${AA_VMTEST_ACCEL:-host}, $rounds rounds"

one() {	# MODE DIR
	sh scripts/compat/with-kconfig.sh "$2/compat_libarena" -t libarena 2>&1 | sed "s/^/$1: /"
	"$2/compat_kernel" -t -d arena_htab_asm arena_htab 2>&1 | sed "s/^/$1: /"
}

echo "bench: counts aa"
one aa "$aa"
export AA_COMPAT_NO_CHECK=1
r=1
while [ "$r" -le "$rounds" ]; do
	if [ $((r % 2)) = 1 ]; then first=stock second=aa; else first=aa second=stock; fi
	for m in $first $second; do
		echo "bench: round $r $m"
		if [ "$m" = stock ]; then one stock "$stock"; else one aa "$aa"; fi
	done
	r=$((r + 1))
done

