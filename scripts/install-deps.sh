#!/usr/bin/env bash
# Install everything arena-alloc needs to build and test. Made for Debian 12
# (bookworm), where it is verified; --vmtest adds what `make vmtest` needs,
# --arm64 what `make ARCH=arm64` needs (cross-building for aarch64 with the
# target's libraries from Debian multiarch) and the arm64 guest.
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
# --arm64: the target's libraries, installed beside the host's (multiarch;
# libbpf-dev from bookworm-backports on bookworm), and the aarch64 guest.
ARM64_PKGS=(libelf-dev:arm64 zlib1g-dev:arm64 libjansson-dev:arm64 libffi8:arm64 libgit2-1.5:arm64
	qemu-system-arm)
ARM64_BP_PKGS=(libbpf-dev:arm64)
# Not co-installable with their amd64 twins on bookworm (libnanomsg5's amd64
# build is a binNMU: installing the arm64 one removes Criterion): unpacked
# into ARM64_ROOT instead, where the arm64 build links them and its guest
# finds them (rpath). busybox-static:arm64: the aarch64 guest's initramfs.
ARM64_UNPACK=(libcriterion3:arm64 libcriterion-dev:arm64 libnanomsg5:arm64 busybox-static:arm64)
ARM64_ROOT=${AA_ARM64_ROOT:-$HOME/.cache/arena-alloc/arm64-root}

usage() {
	echo "usage: scripts/install-deps.sh [--vmtest] [--arm64]" >&2
}
want_vmtest=0 want_arm64=0
for a in "$@"; do
	case "$a" in
	--vmtest) want_vmtest=1 ;;
	--arm64) want_arm64=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "install-deps: unknown argument '$a'" >&2; usage; exit 2 ;;
	esac
done

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

# --arm64: the packages that go into ARM64_ROOT, unpacked (no dpkg state)
arm64_unpack() {
	local tmp
	[ -f "$ARM64_ROOT/.complete" ] && return
	log "unpacking ${ARM64_UNPACK[*]} into $ARM64_ROOT"
	tmp=$(mktemp -d)
	chmod 755 "$tmp"	# apt's download user writes there
	(cd "$tmp" && apt-get download -q "${ARM64_UNPACK[@]}" >&2)
	mkdir -p "$ARM64_ROOT"
	for d in "$tmp"/*.deb; do dpkg -x "$d" "$ARM64_ROOT"; done
	rm -rf "$tmp"
	touch "$ARM64_ROOT/.complete"
}

if [ "$want_arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	log "adding the arm64 architecture (dpkg multiarch)"
	$SUDO dpkg --add-architecture arm64
	NEED_UPDATE=1
fi
pkgs=$(missing "${BOOKWORM_PKGS[@]}")
[ "$want_vmtest" = 1 ] && pkgs="$pkgs $(missing "${VMTEST_PKGS[@]}")"
[ "$want_arm64" = 1 ] && pkgs="$pkgs $(missing "${ARM64_PKGS[@]}")"
bp_arm64=
[ "$want_arm64" = 1 ] && bp_arm64=$(missing "${ARM64_BP_PKGS[@]}")
bp_needed=0
libbpf_ok || bp_needed=1
if [ "$bookworm" = 1 ]; then
	# --vmtest: get-kernel.sh finds the 6.12 kernel in bookworm-backports.
	if [ "$bp_needed" = 1 ] || [ "$want_vmtest" = 1 ] || [ -n "$bp_arm64" ]; then add_backports; fi
elif [ "$bp_needed" = 1 ]; then
	log "$os_id $codename is not Debian 12: taking libbpf-dev and bpftool from its own archive"
	pkgs="$pkgs $(missing "${BACKPORTS_PKGS[@]}")"
fi

pkgs=$(echo $pkgs)
if [ -z "$pkgs" ] && [ "$bp_needed" = 0 ] && [ -z "$bp_arm64" ] && [ "$NEED_UPDATE" = 0 ]; then
	[ "$want_arm64" = 1 ] && arm64_unpack
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
if [ -n "$bp_arm64" ]; then
	log "installing $bp_arm64"
	suite=()
	[ "$bookworm" = 0 ] || suite=(-t bookworm-backports)
	$SUDO apt-get install -y -q --no-install-recommends "${suite[@]}" $bp_arm64
fi
[ "$want_arm64" = 1 ] && arm64_unpack
if ! libbpf_ok; then
	log "libbpf >= 1.4 with a bpftool on PATH is still missing"
	log "  libbpf: $(pkg-config --modversion libbpf 2>/dev/null || echo none)," \
		"bpftool: $( (bpftool version 2>/dev/null || echo none) | head -n1)"
	[ "$bookworm" = 1 ] ||
		log "  $os_id $codename's archive does not have them: use Debian 12 (+ backports) or 13"
	exit 1
fi
