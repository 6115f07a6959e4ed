#!/usr/bin/env bash
# Run a command that creates BPF arena maps where the kernel lets it: on
# this host when its kernel creates them, else inside a QEMU guest
# (scripts/vmtest.sh) booting Debian's kernel. Every make target that loads
# the allocator's BPF (test, run, stress, examples, bench) goes through here.
#
#   scripts/run-bpf.sh [VMTEST OPTIONS] -- COMMAND...   run COMMAND where it can
#   scripts/run-bpf.sh --where                          print host or guest
#
# AA_TEST_WHERE picks the place: host, guest, or auto (the default): host
# when `arena-alloc probe` (the library's aa_probe_arena()) says this
# process can create an arena map, guest otherwise, after printing the
# probe's diagnosis once on stderr. AA_CLI names the arena-alloc binary
# (default build/arena-alloc). VMTEST OPTIONS (-k -c -m -a -t) go to
# scripts/vmtest.sh as they are; --name TEXT says what runs, in the lines
# printed. Exit status: COMMAND's (vmtest.sh's codes in a guest); 2 on
# usage errors or when the probe cannot run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
	sed -n 's/^#   //p' "${BASH_SOURCE[0]}" >&2
	echo "  (AA_TEST_WHERE=host|guest|auto; VMTEST OPTIONS: -k KERNEL -c CPUS -m MEM -a ARGS -t SEC)" >&2
}
log() { echo "run-bpf: $*" >&2; }

vm_args=() where_only=0 name=
while [ $# -gt 0 ]; do
	case $1 in
	--where) where_only=1; shift ;;
	--name) [ $# -ge 2 ] || { usage; exit 2; }; name=$2; shift 2 ;;
	-k | -c | -m | -a | -t)
		[ $# -ge 2 ] || { log "$1 needs an argument"; usage; exit 2; }
		vm_args+=("$1" "$2"); shift 2 ;;
	--) shift; break ;;
	-h | --help) usage; exit 0 ;;
	*) log "unknown argument '$1'"; usage; exit 2 ;;
	esac
done
[ "$where_only" = 1 ] || [ $# -gt 0 ] || { log "no COMMAND given"; usage; exit 2; }

# where: host or guest, from AA_TEST_WHERE; auto asks the probe (whose
# line goes to stderr when the host refuses, once).
where=${AA_TEST_WHERE:-auto}
case $where in
host) ;;
guest)	# AA_TEST_WHERE_SAID=1: a --where call before said it already
	[ "$where_only" = 1 ] || [ "${AA_TEST_WHERE_SAID:-}" = 1 ] ||
		log "${name:-the command} will run in a QEMU guest" ;;
auto)
	cli=${AA_CLI:-build/arena-alloc}
	[ -x "$cli" ] || { log "$cli is not built: cannot probe for BPF arena (make cli)"; exit 2; }
	errf=$(mktemp)
	set +e
	line=$("$cli" probe 2>"$errf")
	rc=$?
	set -e
	err=$(cat "$errf"); rm -f "$errf"
	case $rc in
	0) where=host ;;
	1)
		where=guest
		log "$line (this host, Linux $(uname -r))"
		log "so ${name:-the command} will run in a QEMU guest instead (AA_TEST_WHERE=host runs it here anyway)"
		;;
	*) log "'$cli probe' failed (status $rc): $line $err"; exit 2 ;;
	esac
	;;
*) log "AA_TEST_WHERE must be host, guest or auto, not '$where'"; exit 2 ;;
esac

if [ "$where_only" = 1 ]; then
	echo "$where"
	exit 0
fi
if [ "$where" = host ]; then
	exec "$@"
fi
bash scripts/install-deps.sh --vmtest
# One string for the guest's `sh -c`: each word quoted, so that
# `run-bpf.sh -- env A='x y' cmd` means the same in the guest.
cmd=$(printf '%q ' "$@")
exec bash scripts/vmtest.sh "${vm_args[@]}" -- "${cmd% }"
