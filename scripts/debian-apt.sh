# shellcheck shell=bash
# Sourced by scripts that fetch Debian packages the machine's apt sources do
# not carry (scripts/get-kernel.sh: 7.x kernels; scripts/compat/
# fetch-peers.sh: linux-source-7.3; arm64 kernels): a private apt
# configuration for Debian suites of one architecture, the machine's Debian
# archive URI and keyring, its sources, lists and package cache under one
# directory. The machine's own apt configuration is left alone.
#
#   aa_apt_private [--arch ARCH] NAME SUITE...
#                          sets the array AA_APT to the apt-get/apt-cache
#                          options of a configuration of SUITE... for ARCH
#                          (default amd64), under
#                          ${AA_KERNEL_CACHE:-~/.cache/arena-alloc/kernels}/apt-NAME
#                          (one set of lists for every script that uses it);
#                          NAME alone: the one suite NAME

aa_apt_private() {
	local arch=amd64 name adir uri key src u k suite
	[ "$1" != --arch ] || { arch=$2; shift 2; }
	name=$1
	[ $# -gt 1 ] && shift
	adir=${AA_KERNEL_CACHE:-$HOME/.cache/arena-alloc/kernels}/apt-$name
	uri=http://deb.debian.org/debian key=/usr/share/keyrings/debian-archive-keyring.gpg
	src=/etc/apt/sources.list.d/debian.sources
	if [ -f "$src" ]; then
		u=$(awk '/^URIs:/ {print $2; exit}' "$src"); [ -n "$u" ] && uri=$u
		k=$(awk '/^Signed-By:/ {print $2; exit}' "$src"); [ -n "$k" ] && key=$k
	fi
	mkdir -p "$adir/lists/partial" "$adir/cache/archives/partial"
	for suite in "$@"; do echo "deb [signed-by=$key] $uri $suite main"; done >"$adir/sources.list"
	# apt fetches as _apt when it can
	chown -R _apt "$adir/lists/partial" "$adir/cache/archives/partial" 2>/dev/null || true
	AA_APT=(-o Dir::Etc::SourceList="$adir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
		-o Dir::State::Lists="$adir/lists" -o Dir::Cache="$adir/cache"
		-o APT::Architecture="$arch" -o APT::Architectures="$arch")
}
