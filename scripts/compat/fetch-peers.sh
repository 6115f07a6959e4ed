#!/usr/bin/env bash
# Fetch the peers' arena test suites from Debian's kernel source packages
# and unpack only what `make compat-test` (mk/compat.mk) builds. Prints the
# source dir of each VERSION (one line each, in order) on stdout; all else
# goes to stderr. Nothing fetched here is ever committed to this repo.
set -euo pipefail

usage() {
	cat >&2 <<'EOF'
usage: scripts/compat/fetch-peers.sh [--refresh] VERSION...

VERSION is 6.12 (linux-source-6.12 from the machine's apt sources:
bookworm-security / bookworm-backports) or 7.3 (linux-source-7.3 from
Debian 13's trixie-backports, through scripts/debian-apt.sh's private apt
configuration, the one scripts/get-kernel.sh uses for 7.x kernels). The
package is fetched with `apt-get download`; from its tarball only these
files are unpacked into
  ${AA_PEER_CACHE:-$HOME/.cache/arena-alloc/peers}/<VERSION>/src/
  tools/testing/selftests/bpf/: bpf_arena_*.h, bpf_experimental.h,
    progs/arena_{list,htab,htab_asm}.c, prog_tests/arena_{list,htab}.c;
    7.3 also libarena/ and prog_tests/libarena.c
  tools/lib/bpf/*.h
  7.3: what `make -C tools/bpf/bpftool` needs; that bpftool (and its
    bundled libbpf.a) is built there once, for libarena's objects (Debian's
    bpftool 7.5 cannot link them).
A complete copy in the cache (a .complete file) is reused without any
network or apt access; --refresh fetches the newest package again.
EOF
}

refresh=0 versions=()
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--refresh) refresh=1 ;;
	6.12 | 7.3) versions+=("$1") ;;
	*) echo "fetch-peers: unknown argument '$1' (versions: 6.12 7.3)" >&2; usage; exit 2 ;;
	esac
	shift
done
[ ${#versions[@]} -gt 0 ] || { usage; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${AA_PEER_CACHE:-$HOME/.cache/arena-alloc/peers}
log() { echo "fetch-peers: $*" >&2; }
die() { log "$*"; exit 1; }

# Members of the tarball (under linux-source-<version>/), as tar wildcards.
ST=tools/testing/selftests/bpf
members_common=(
	"$ST/bpf_arena_*.h" "$ST/bpf_experimental.h"
	"$ST/progs/arena_list.c" "$ST/progs/arena_htab.c" "$ST/progs/arena_htab_asm.c"
	"$ST/prog_tests/arena_list.c" "$ST/prog_tests/arena_htab.c"
	"tools/lib/bpf/*.h"
)
# bpftool's build: its sources, libbpf's, the tools/ headers and build
# system, the kernel's BPF disassembler and uapi headers.
members_7=(
	"$ST/libarena" "$ST/prog_tests/libarena.c"
	tools/bpf tools/lib tools/include tools/build tools/scripts tools/arch
	scripts kernel/bpf/disasm.c kernel/bpf/disasm.h include/uapi
	include/linux/build_bug.h Makefile
)

# fetch VERSION: the package, downloaded into $tmp, and its version on stdout
fetch() {
	local v=$1 pkg=linux-source-$1 apt=() pv
	if [ "${v%%.*}" -ge 7 ]; then
		. "$here/debian-apt.sh"
		aa_apt_private trixie-backports
		apt=("${AA_APT[@]}")
	fi
	pv=$(apt-cache "${apt[@]}" show --no-all-versions "$pkg" 2>/dev/null | awk '/^Version:/ {print $2; exit}') || true
	if [ -z "$pv" ]; then
		log "$pkg is not in the apt lists; running apt-get update"
		[ ${#apt[@]} -gt 0 ] || bash "$here/install-deps.sh" --vmtest >&2
		apt-get "${apt[@]}" update -q >&2 || die "apt-get update failed (need root and network to the Debian mirror)"
		pv=$(apt-cache "${apt[@]}" show --no-all-versions "$pkg" 2>/dev/null | awk '/^Version:/ {print $2; exit}')
		[ -n "$pv" ] || die "no $pkg package in Debian's apt lists"
	fi
	log "downloading $pkg ($pv)"
	(cd "$tmp" && apt-get "${apt[@]}" download -q "$pkg=$pv" >&2) || die "apt-get download $pkg=$pv failed"
	echo "$pv"
}

# unpack VERSION DEB DIR: the members above, from the .deb's source tarball
unpack() {
	local v=$1 deb=$2 dir=$3 top=linux-source-$1 m pats=()
	for m in "${members_common[@]}"; do pats+=("$top/$m"); done
	if [ "${v%%.*}" -ge 7 ]; then
		for m in "${members_7[@]}"; do pats+=("$top/$m"); done
	fi
	log "unpacking the selftests' arena files from $(basename "$deb")"
	mkdir -p "$dir"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$top.tar.xz" | xz -dc -T2 |
		tar -x -C "$dir" --strip-components=1 --wildcards "${pats[@]}" ||
		die "unpacking $top.tar.xz failed"
}

for v in "${versions[@]}"; do
	dir=$cache/$v
	if [ "$refresh" = 0 ] && [ -f "$dir/.complete" ]; then
		log "using cached linux-source-$v $(cat "$dir/.version")"
		echo "$dir/src"
		continue
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch-peers.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# apt-get download drops privileges to _apt: give it a directory it can write.
	chown _apt "$tmp" 2>/dev/null || true
	pv=$(fetch "$v")
	rm -rf "$dir.part" && mkdir -p "$dir.part"
	unpack "$v" "$tmp"/linux-source-"$v"_*.deb "$dir.part/src"
	rm -rf "$tmp"; trap - EXIT
	if [ "${v%%.*}" -ge 7 ]; then
		log "building bpftool from linux-source-$v (for libarena's objects)"
		make -s -C "$dir.part/src/tools/bpf/bpftool" -j"$(nproc)" >&2 ||
			die "building bpftool from linux-source-$v failed"
		"$dir.part/src/tools/bpf/bpftool/bpftool" version >&2
	fi
	echo "$pv" >"$dir.part/.version"
	touch "$dir.part/.complete"
	rm -rf "$dir" && mv "$dir.part" "$dir"
	log "linux-source-$v $pv ready in $dir"
	echo "$dir/src"
done
