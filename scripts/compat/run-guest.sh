#!/bin/sh
# Runs inside the guest (mk/compat.mk's compat-run, through RUN_BPF): every
# peer suite built in DIR (build/compat/<kernel>/<alloc>/), one after the
# other in this one boot. Each runner prints its own subtest lines and
# summary; this adds a line per suite with its exit status. Exit status: 0
# when every suite passed, 1 otherwise.
# A suite still running after TIMEOUT seconds (default 300; the stock
# suites take seconds) is killed and fails: a broken allocator can leave a
# cyclic list for the runner to walk forever.
#   sh scripts/compat/run-guest.sh DIR [LIBARENA_REPEAT [TIMEOUT]]
dir=$1 reps=${2:-1} tmo=${3:-300}
[ -d "$dir" ] || { echo "run-guest: no directory '$dir'" >&2; exit 2; }
rc=0

suite() {
	name=$1
	shift
	echo "=== $name (Linux $(uname -r), $(nproc) CPUs)"
	t0=$(date +%s)
	timeout -k 5 "$tmo" "$@"
	r=$?
	[ "$r" != 124 ] && [ "$r" != 137 ] || echo "=== $name: TIMEOUT after ${tmo} s"
	echo "=== $name: exit $r ($(($(date +%s) - t0)) s)"
	[ "$r" = 0 ] || rc=1
}

# The kernel selftests' arena suites; arena_htab_asm is out of scope
# (docs/TESTING.md). On arena-alloc, 6.12's arena_list_1 and
# arena_list_1000 are denied: that tree's list_del() (bpf_arena_list.h)
# stores the next pointer into a local instead of *pprev, so the list
# keeps its freed elements, and the test's walk after arena_list_del
# reads them. The page-frag allocator hides it (a page whose objects are
# all freed goes back to the kernel, and reads as zeros when the walk
# faults it in again); an allocator that keeps freed memory gives the
# walk its free-list words. 7.x's tree has the fix (WRITE_ONCE(*pprev,
# next)), and its arena_list runs on arena-alloc in the 7.3 guest.
deny=
case "$dir" in
*/6.12/aa) deny="-d arena_list_1 -d arena_list_1000"
	echo "=== 6.12 on arena-alloc: arena_list_1, arena_list_1000 denied (the 6.12 tree's" \
		"list_del() leaves freed elements on the list: scripts/compat/run-guest.sh)" ;;
esac
# shellcheck disable=SC2086
suite "kernel selftests arena_list, arena_htab" \
	"$dir/compat_kernel" -d arena_htab_asm $deny arena_list arena_htab

# libarena, with the kernel config its runner needs (with-kconfig.sh).
if [ -x "$dir/compat_libarena" ]; then
	i=1
	while [ "$i" -le "$reps" ]; do
		suite "libarena ($i/$reps)" sh scripts/compat/with-kconfig.sh \
			"$dir/compat_libarena" libarena
		i=$((i + 1))
	done
fi
exit $rc
