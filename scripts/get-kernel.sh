#!/usr/bin/env bash
# Fetch a Debian kernel package (by name, through apt) and unpack it into a
# cache dir, for scripts/vmtest.sh. Prints the kernel dir as the last stdout
# line; all other output goes to stderr.
set -euo pipefail

usage() {
	cat >&2 <<'EOF'
usage: scripts/get-kernel.sh [--refresh] [--arch amd64|arm64|arm64-16k] [VERSION_PREFIX]

Fetch the newest Debian linux-image-<VERSION_PREFIX>*-amd64 kernel (default
prefix 6.12; 6.1 is bookworm's kernel, which has no BPF arena) with
`apt-get download`, unpack it with `dpkg -x` into
  ${AA_KERNEL_CACHE:-$HOME/.cache/arena-alloc/kernels}/<package-version>/
and print that directory (holding boot/vmlinuz-<kver> and lib/modules/<kver>).

6.x kernels come from the machine's apt sources (bookworm-backports, which
scripts/install-deps.sh --vmtest adds). 7.x kernels come from Debian 13's
trixie-backports through an apt configuration of our own in the cache dir
(the machine's Debian archive URI and keyring; its apt sources are left
alone): the image package there only depends on linux-binary-<kver> (the
vmlinuz, under usr/lib/modules/<kver>/) and linux-modules-<kver>, which
are fetched and laid out as above.

--arch arm64 or arm64-16k fetches Debian's arm64 kernel of that flavour
(4K or 16K pages) instead, for qemu-system-aarch64 and an arm64 vmlinux.h
(scripts/kernel-btf.sh): 6.12 from Debian 13 trixie, 7.x from
trixie-backports, both through one apt configuration of our own with
APT::Architecture=arm64 (lists under the cache dir's apt-arm64/). These
unpack into <cache>/<arch>/<package-version>/: both arm64 flavours are built
from one source package, and amd64 and arm64 share version numbers, so each
architecture has a directory of its own (amd64 keeps the one above).

A kernel already in the cache that matches the prefix is reused without any
network or apt access; --refresh asks apt for the newest version instead.
EOF
}

refresh=0
prefix=
arch=amd64
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--refresh) refresh=1 ;;
	--arch) [ $# -ge 2 ] || { echo "get-kernel: --arch needs a value" >&2; exit 2; }; arch=$2; shift ;;
	--arch=*) arch=${1#--arch=} ;;
	-*) echo "get-kernel: unknown option '$1'" >&2; usage; exit 2 ;;
	*) [ -z "$prefix" ] || { echo "get-kernel: too many arguments" >&2; exit 2; }; prefix=$1 ;;
	esac
	shift
done
prefix=${prefix:-6.12}
[[ "$prefix" =~ ^[0-9]+(\.[0-9]+)*$ ]] || { echo "get-kernel: bad version prefix '$prefix'" >&2; exit 2; }
case "$arch" in
amd64 | arm64 | arm64-16k) ;;
*) echo "get-kernel: bad --arch '$arch' (amd64, arm64 or arm64-16k)" >&2; exit 2 ;;
esac

cache=${AA_KERNEL_CACHE:-$HOME/.cache/arena-alloc/kernels}
# where this architecture's kernels unpack: amd64's in the cache dir itself
# (as before --arch), the others' in a subdirectory named after the flavour
kcache=$cache
[ "$arch" = amd64 ] || kcache=$cache/$arch
log() { echo "get-kernel: $*" >&2; }

# A kernel release matches the prefix when the next character is '.' or '-'
# (so 6.1 matches 6.1.0-57-amd64 but not 6.12.x) and it is a plain flavour of
# the architecture: -amd64 (not -cloud-amd64 or -rt-amd64), -arm64 (not
# -rt-arm64, and the anchored regex keeps -arm64-16k out) or -arm64-16k.
kver_re="^${prefix//./\\.}[.-][^ ]*-$arch\$"
is_plain() { [[ "$1" =~ $kver_re ]] && [[ "$1" != *-cloud-$arch && "$1" != *-rt-$arch ]]; }

# Newest complete cached kernel for this prefix (dirs are named by package version).
cached_dir() {
	local best='' bestv='' d v k
	for d in "$kcache"/*/; do
		[ -f "$d/.complete" ] || continue
		k=$(cat "$d/.kver") || continue
		is_plain "$k" || continue
		v=$(basename "$d")
		if [ -z "$bestv" ] || dpkg --compare-versions "$v" gt "$bestv"; then best=${d%/}; bestv=$v; fi
	done
	[ -n "$best" ] && echo "$best"
}

if [ "$refresh" = 0 ] && dir=$(cached_dir); then
	log "using cached kernel $(cat "$dir/.kver")"
	echo "$dir"; exit 0
fi

# What fetching needs (the 6.x kernels' apt source, depmod of kmod): the
# same packages as vmtest.sh's, installed once by install-deps.sh.
bash "$(dirname "$0")/install-deps.sh" --vmtest >&2

# Private apt configurations (scripts/debian-apt.sh, under $cache/apt-NAME):
# 7.x amd64 from Debian 13's backports; arm64 from trixie and its
# backports. 6.x amd64: the machine's.
APT=()
major=${prefix%%.*}
. "$(dirname "$0")/debian-apt.sh"
if [ "$arch" != amd64 ]; then
	aa_apt_private --arch arm64 arm64 trixie trixie-backports
	APT=("${AA_APT[@]}")
elif [ "$major" -ge 7 ]; then
	aa_apt_private trixie-backports
	APT=("${AA_APT[@]}")
fi

# Print "version name" for the newest linux-image-<prefix>*-<arch>[-unsigned]
# package apt knows (its candidate version). Names are sorted so a signed image
# precedes its -unsigned twin; only a strictly newer version replaces the pick.
newest_pkg() {
	local names=() best='' bestv='' k n v
	while read -r k n; do is_plain "$k" && names+=("$n"); done < <(
		apt-cache "${APT[@]}" pkgnames linux-image- 2>/dev/null | LC_ALL=C sort |
			sed -n 's/^linux-image-\(.*-'"$arch"'\)\(-unsigned\)\{0,1\}$/\1 &/p')
	[ ${#names[@]} -gt 0 ] || return 1
	while read -r n v; do
		if [ -z "$bestv" ] || dpkg --compare-versions "$v" gt "$bestv"; then best=$n; bestv=$v; fi
	done < <(apt-cache "${APT[@]}" show --no-all-versions "${names[@]}" 2>/dev/null |
		awk '/^Package:/ {p=$2} /^Version:/ {print p, $2}')
	[ -n "$best" ] && echo "$bestv $best"
}

if ! pick=$(newest_pkg); then
	log "no linux-image-$prefix* package in the apt lists; running apt-get update"
	apt-get "${APT[@]}" update -q >&2 || { log "apt-get update failed (need root and network to the Debian mirror)"; exit 1; }
	where='is bookworm-backports/-security configured?'
	[ "$arch" = amd64 ] || where='Debian 13 trixie and trixie-backports'
	pick=$(newest_pkg) || { log "no linux-image-$prefix*-$arch package in Debian's apt lists ($where)"; exit 1; }
fi
ver=${pick%% *}; name=${pick#* }
dir=$kcache/$ver
if [ -f "$dir/.complete" ]; then
	log "using cached kernel $(cat "$dir/.kver")"
	echo "$dir"; exit 0
fi

log "downloading $name ($ver)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/get-kernel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# apt-get download drops privileges to _apt: give it a directory it can write.
chown _apt "$tmp" 2>/dev/null || true
# download PKG: the package, or its signed/-unsigned twin (the signed image
# is built from the -unsigned one)
download() {
	local alt=${1%-unsigned}
	(cd "$tmp" && apt-get "${APT[@]}" download -q "$1=$ver" >&2) && return
	[ "$alt" = "$1" ] && alt=$1-unsigned
	case $1 in
	linux-binary-unsigned-*) alt=linux-binary-${1#linux-binary-unsigned-} ;;
	linux-binary-*) alt=linux-binary-unsigned-${1#linux-binary-} ;;
	esac
	log "download of $1 failed; trying $alt"
	(cd "$tmp" && apt-get "${APT[@]}" download -q "$alt=$ver" >&2) || { log "apt-get download failed"; exit 1; }
}
download "$name"
# 7.x: the image package holds no kernel; it depends on these two
k=${name#linux-image-}; k=${k%-unsigned}
if dpkg-deb -f "$tmp"/*.deb Depends | grep -q "linux-binary-$k"; then
	download "linux-binary-$k"
	download "linux-modules-$k"
fi
rm -rf "$dir.part" && mkdir -p "$dir.part"
for deb in "$tmp"/*.deb; do
	log "unpacking $(basename "$deb")"
	dpkg -x "$deb" "$dir.part"
done
# Debian 13's packages install under usr/ (merged /usr), the vmlinuz beside
# the modules: lay them out as the 6.x packages do.
if [ -d "$dir.part/usr/lib/modules" ] && [ ! -d "$dir.part/lib/modules" ]; then
	mkdir -p "$dir.part/lib" "$dir.part/boot"
	mv "$dir.part/usr/lib/modules" "$dir.part/lib/modules"
	for v in "$dir.part"/lib/modules/*/vmlinuz; do
		[ -f "$v" ] && mv "$v" "$dir.part/boot/vmlinuz-$(basename "$(dirname "$v")")"
	done
fi
kver=$(ls "$dir.part/lib/modules" 2>/dev/null | head -n1 || true)
[ -n "$kver" ] && [ -f "$dir.part/boot/vmlinuz-$kver" ] ||
	{ log "package $name has no boot/vmlinuz-* or lib/modules/*"; exit 1; }
log "running depmod for $kver"  # the package leaves modules.dep to postinst
depmod -b "$dir.part" "$kver"
echo "$kver" >"$dir.part/.kver"
echo "$name" >"$dir.part/.package"
touch "$dir.part/.complete"
rm -rf "$dir" && mv "$dir.part" "$dir"
log "kernel $kver ready"
echo "$dir"
