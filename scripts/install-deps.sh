#!/usr/bin/env bash
# Install everything arena-alloc needs to build and test. Made for Debian 12
# (bookworm), where it is verified; --vmtest adds what `make vmtest` needs.
# Idempotent: packages already present are not reinstalled, the backports
# apt source is added only when missing. Needs root (or sudo).
#
# Other apt-based hosts (Debian 13, Ubuntu, ...) get the same packages from
# their own archive, without touching their apt sources. The real requirement
# is libbpf >= 1.4 with a bpftool on PATH: where the distro has none (Ubuntu
# 24.04 noble ships libbpf 1.3), the script says so and fails instead of
# half-installing; build in a debian:bookworm container instead (see
# .github/workflows/ci.yml).
set -euo pipefail

# libclang-rt-19-dev: libFuzzer and the sanitizer runtimes of clang-19
# (tests/fuzz/, `make fuzz`; `make test` runs the short fuzz run).
BOOKWORM_PKGS=(clang-19 llvm-19 libclang-rt-19-dev libelf-dev zlib1g-dev libcriterion-dev libjansson-dev
	pkg-config make gcc g++ gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
BACKPORTS_PKGS=(libbpf-dev bpftool)
# Only needed for `make vmtest`; installed with --vmtest. The 6.12 kernel that
# scripts/get-kernel.sh fetches also comes from bookworm-backports.
VMTEST_PKGS=(qemu-system-x86 busybox-static cpio kmod xz-utils)

usage() {
	echo "usage: scripts/install-deps.sh [--vmtest]" >&2
}
want_vmtest=0
case "${1:-}" in
"") ;;
--vmtest) want_vmtest=1 ;;
-h | --help) usage; exit 0 ;;
*) echo "install-deps: unknown argument '$1'" >&2; usage; exit 2 ;;
esac

log() { echo "install-deps: $*" >&2; }

command -v dpkg-query >/dev/null && command -v apt-get >/dev/null || {
	log "this script needs an apt/dpkg system (Debian 12 is the supported one)."
	log "needed: clang 19 (with libFuzzer: libclang-rt-19-dev), llvm 19, libelf, zlib, Criterion, pkg-config, gcc, g++, libbpf >= 1.4, bpftool"
	[ "$want_vmtest" = 1 ] && log "and for vmtest: qemu-system-x86_64, a static busybox, cpio, kmod, xz"
	exit 1
}

SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { log "need root or sudo"; exit 1; }
	SUDO=sudo
fi

# Which distribution: bookworm gets libbpf/bpftool from bookworm-backports.
os_id=unknown codename=unknown
if [ -r /etc/os-release ]; then
	os_id=$(. /etc/os-release && echo "${ID:-unknown}")
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
fi
bookworm=0
[ "$os_id" = debian ] && [ "$codename" = bookworm ] && bookworm=1

missing() { # print the packages of "$@" that dpkg does not have installed
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
	done
}

# libbpf >= 1.4 is the real requirement: bookworm's libbpf-dev 1.1 is too old.
libbpf_ok() {
	pkg-config --atleast-version=1.4 libbpf 2>/dev/null && command -v bpftool >/dev/null &&
		bpftool version 2>/dev/null | grep -q 'libbpf v1\.[4-9]'
}

has_backports() {
	grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/
}

add_backports() { # bookworm only
	has_backports && return
	src=/etc/apt/sources.list.d/debian.sources
	uri=http://deb.debian.org/debian
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	if [ -f "$src" ]; then
		u=$(awk '/^URIs:/ {print $2; exit}' "$src"); [ -n "$u" ] && uri=$u
		k=$(awk '/^Signed-By:/ {print $2; exit}' "$src"); [ -n "$k" ] && key=$k
	fi
	log "adding bookworm-backports apt source ($uri)"
	$SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<SRC
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: $key
SRC
	NEED_UPDATE=1
}

NEED_UPDATE=0
[ -d /var/lib/apt/lists ] && [ -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial)" ] && NEED_UPDATE=1

pkgs=$(missing "${BOOKWORM_PKGS[@]}")
[ "$want_vmtest" = 1 ] && pkgs="$pkgs $(missing "${VMTEST_PKGS[@]}")"
bp_needed=0
libbpf_ok || bp_needed=1
if [ "$bookworm" = 1 ]; then
	# --vmtest: get-kernel.sh finds the 6.12 kernel in bookworm-backports.
	if [ "$bp_needed" = 1 ] || [ "$want_vmtest" = 1 ]; then add_backports; fi
elif [ "$bp_needed" = 1 ]; then
	log "$os_id $codename is not Debian 12: taking libbpf-dev and bpftool from its own archive"
	pkgs="$pkgs $(missing "${BACKPORTS_PKGS[@]}")"
fi

pkgs=$(echo $pkgs)
if [ -z "$pkgs" ] && [ "$bp_needed" = 0 ] && [ "$NEED_UPDATE" = 0 ]; then
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
if [ -n "$pkgs" ]; then
	log "installing $pkgs"
	$SUDO apt-get install -y -q --no-install-recommends $pkgs
fi
if [ "$bookworm" = 1 ] && [ "$bp_needed" = 1 ]; then
	log "installing ${BACKPORTS_PKGS[*]} from bookworm-backports"
	$SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports "${BACKPORTS_PKGS[@]}"
fi
if ! libbpf_ok; then
	log "libbpf >= 1.4 with a bpftool on PATH is still missing"
	log "  libbpf: $(pkg-config --modversion libbpf 2>/dev/null || echo none)," \
		"bpftool: $( (bpftool version 2>/dev/null || echo none) | head -n1)"
	[ "$bookworm" = 1 ] ||
		log "  $os_id $codename's archive does not have them: use Debian 12 (+ backports) or 13"
	exit 1
fi
