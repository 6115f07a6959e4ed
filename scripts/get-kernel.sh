#!/usr/bin/env bash
# Fetch a Debian kernel package (by name, through apt) and unpack it into a
# cache dir, for scripts/vmtest.sh. Prints the kernel dir as the last stdout
# line; all other output goes to stderr.
set -euo pipefail

usage() {
	cat >&2 <<'EOF'
usage: scripts/get-kernel.sh [--refresh] [VERSION_PREFIX]

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

A kernel already in the cache that matches the prefix is reused without any
network or apt access; --refresh asks apt for the newest version instead.
EOF
}

refresh=0
prefix=
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--refresh) refresh=1 ;;
	-*) echo "get-kernel: unknown option '$1'" >&2; usage; exit 2 ;;
	*) [ -z "$prefix" ] || { echo "get-kernel: too many arguments" >&2; exit 2; }; prefix=$1 ;;
	esac
	shift
done
prefix=${prefix:-6.12}
[[ "$prefix" =~ ^[0-9]+(\.[0-9]+)*$ ]] || { echo "get-kernel: bad version prefix '$prefix'" >&2; exit 2; }

cache=${AA_KERNEL_CACHE:-$HOME/.cache/arena-alloc/kernels}
log() { echo "get-kernel: $*" >&2; }

# A kernel release matches the prefix when the next character is '.' or '-'
# (so 6.1 matches 6.1.0-57-amd64 but not 6.12.x) and it is a plain -amd64 flavour.
kver_re="^${prefix//./\\.}[.-][^ ]*-amd64\$"
is_plain() { [[ "$1" =~ $kver_re ]] && [[ "$1" != *-cloud-amd64 && "$1" != *-rt-amd64 ]]; }

# Newest complete cached kernel for this prefix (dirs are named by package version).
cached_dir() {
	local best='' bestv='' d v k
	for d in "$cache"/*/; do
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

# 7.x: Debian 13's backports, through a private apt configuration
# (scripts/debian-apt.sh, under $cache/apt-<suite>); 6.x: the machine's.
APT=()
major=${prefix%%.*}
if [ "$major" -ge 7 ]; then
	. "$(dirname "$0")/debian-apt.sh"
	aa_apt_private trixie-backports
	APT=("${AA_APT[@]}")
fi

# Print "version name" for the newest linux-image-<prefix>*-amd64[-unsigned]
# package apt knows (its candidate version). Names are sorted so a signed image
# precedes its -unsigned twin; only a strictly newer version replaces the pick.
newest_pkg() {
	local names=() best='' bestv='' k n v
	while read -r k n; do is_plain "$k" && names+=("$n"); done < <(
		apt-cache "${APT[@]}" pkgnames linux-image- 2>/dev/null | LC_ALL=C sort |
			sed -n 's/^linux-image-\(.*-amd64\)\(-unsigned\)\{0,1\}$/\1 &/p')
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
	pick=$(newest_pkg) || { log "no linux-image-$prefix*-amd64 package in Debian's apt lists (is bookworm-backports/-security configured?)"; exit 1; }
fi
ver=${pick%% *}; name=${pick#* }
dir=$cache/$ver
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
