#!/usr/bin/env bash
# Install everything arena-alloc needs to build and test on Debian 12 (bookworm).
# Idempotent: packages already present are not reinstalled, the backports
# apt source is added only when missing. Needs root (or sudo).
set -euo pipefail

BOOKWORM_PKGS=(clang-19 llvm-19 libelf-dev zlib1g-dev libcriterion-dev pkg-config make gcc)
BACKPORTS_PKGS=(libbpf-dev bpftool)
# Only needed for `make vmtest`; installed with --vmtest.
VMTEST_PKGS=(qemu-system-x86 busybox-static cpio kmod)

SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo" >&2; exit 1; }
	SUDO=sudo
fi

want_vmtest=0
[ "${1:-}" = "--vmtest" ] && want_vmtest=1

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

add_backports() {
	if grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		return
	fi
	src=/etc/apt/sources.list.d/debian.sources
	uri=http://deb.debian.org/debian
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	if [ -f "$src" ]; then
		u=$(awk '/^URIs:/ {print $2; exit}' "$src"); [ -n "$u" ] && uri=$u
		k=$(awk '/^Signed-By:/ {print $2; exit}' "$src"); [ -n "$k" ] && key=$k
	fi
	echo "install-deps: adding bookworm-backports apt source ($uri)"
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
[ "$bp_needed" = 1 ] && add_backports

pkgs=$(echo $pkgs)
if [ -z "$pkgs" ] && [ "$bp_needed" = 0 ]; then
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if [ "$NEED_UPDATE" = 1 ] || [ -n "$pkgs" ] || [ "$bp_needed" = 1 ]; then
	$SUDO apt-get update -q
fi
if [ -n "$pkgs" ]; then
	echo "install-deps: installing $pkgs"
	$SUDO apt-get install -y -q --no-install-recommends $pkgs
fi
if [ "$bp_needed" = 1 ]; then
	echo "install-deps: installing ${BACKPORTS_PKGS[*]} from bookworm-backports"
	$SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports "${BACKPORTS_PKGS[@]}"
fi
libbpf_ok || { echo "install-deps: libbpf >= 1.4 and bpftool still missing" >&2; exit 1; }
