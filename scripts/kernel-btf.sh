#!/usr/bin/env bash
# The BTF of one of the Debian kernels scripts/get-kernel.sh fetches, for
# a vmlinux.h of a kernel this host does not run (the sched_ext example
# builds against 7.3's): prints the path of an ELF vmlinux with its .BTF,
# decompressed once from the package's vmlinuz into the kernel's cache dir.
#   scripts/kernel-btf.sh KERNEL      e.g. 7.3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# = 1 ] || { echo "usage: $0 KERNEL (e.g. 7.3)" >&2; exit 2; }
dir=$(bash scripts/get-kernel.sh "$1" | tail -n1)
img=$(ls "$dir"/boot/vmlinuz-* | head -n1)
out=$dir/boot/vmlinux-btf
if [ ! -s "$out" ] || [ "$out" -ot "$img" ]; then
	# the compressed payload starts at the first zstd, xz or gzip magic
	for m in '\x28\xb5\x2f\xfd' '\xfd7zXZ\x00' '\x1f\x8b\x08'; do
		off=$(LC_ALL=C grep -obUaP -m1 "$m" "$img" | head -n1 | cut -d: -f1) || true
		[ -n "$off" ] || continue
		case $m in
		'\x28\xb5\x2f\xfd') dec='zstd -dcq' ;;
		'\xfd7zXZ\x00') dec='xz -dcq' ;;
		*) dec='gzip -dcq' ;;
		esac
		tail -c +$((off + 1)) "$img" | $dec > "$out.tmp" 2>/dev/null || true
		if [ -s "$out.tmp" ] && bpftool btf dump file "$out.tmp" >/dev/null 2>&1; then
			mv "$out.tmp" "$out"
			break
		fi
		rm -f "$out.tmp"
	done
	[ -s "$out" ] || { echo "kernel-btf: no BTF found in $img" >&2; exit 1; }
fi
echo "$out"
