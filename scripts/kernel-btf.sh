#!/usr/bin/env bash
# The BTF of a kernel this host does not run, taken from its boot image: the
# raw blob /sys/kernel/btf/vmlinux gives on that kernel, which bpftool turns
# into a vmlinux.h. An arm64 BPF build needs arm64's vmlinux.h (struct
# pt_regs and user_pt_regs differ per architecture) and the host runs x86;
# the sched_ext example builds against 7.3's.
#
#   scripts/kernel-btf.sh KERNEL_IMAGE OUT  write KERNEL_IMAGE's BTF to OUT
#   scripts/kernel-btf.sh KERNEL            the BTF of scripts/get-kernel.sh's
#                                           (amd64) KERNEL, e.g. 7.3, written
#                                           once into its cache dir: prints
#                                           that file's path
#
# Kernel images, as Debian ships them (file, od; 6.12 and 7.3):
#   arm64  vmlinuz is the uncompressed Image (a PE header for the EFI stub,
#          "ARMd" at 0x38), the BTF in it as is;
#   amd64  vmlinuz is a bzImage: its setup header's payload_offset and
#          payload_length give the compressed ELF vmlinux (zstd, its
#          uncompressed size appended).
# Also taken, for other kernels: an EFI zboot image ("zimg" at 4, a
# compressed Image inside a PE; its header gives the payload's offset and
# size; Debian's have CONFIG_EFI_ZBOOT off), a gzip'd Image, an ELF vmlinux.
#
# The BTF starts with its header: magic 0xeB9F, version 1, flags 0 (bytes
# 9f eb 01 00), then the u32s hdr_len, type_off, type_len, str_off,
# str_len; it is hdr_len + max(type_off + type_len, str_off + str_len)
# bytes long. Debian's kernels hold one such header; a kernel may hold
# other BTF blobs (BPF programs built in, such as bpf_preload's), so the
# blob taken is the largest that bpftool dumps as C with a struct
# task_struct in it.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
usage() { echo "usage: $0 KERNEL_IMAGE OUT | $0 KERNEL (e.g. 7.3)" >&2; exit 2; }

# extract IMAGE OUT
extract() {
	python3 - "$1" "$2" "${BPFTOOL:-bpftool}" <<'EOF'
import bz2, lzma, os, struct, subprocess, sys, zlib

img, out, bpftool = sys.argv[1:4]

def die(msg):
    sys.exit(f"kernel-btf: {msg}")

def u32(d, off):
    return struct.unpack_from("<I", d, off)[0]

def decompress(d, what):
    """The stream at the start of d; the kernel may append its size after it."""
    if d[:2] == b"\x1f\x8b":
        return zlib.decompressobj(31).decompress(d)
    if d[:6] == b"\xfd7zXZ\0":
        return lzma.LZMADecompressor().decompress(d)
    if d[:3] == b"BZh":
        return bz2.BZ2Decompressor().decompress(d)
    if d[:4] == b"\x28\xb5\x2f\xfd":
        for end in (len(d), len(d) - 4):  # the zstd CLI refuses trailing bytes
            r = subprocess.run(["zstd", "-dcq"], input=d[:end], capture_output=True)
            if r.returncode == 0:
                return r.stdout
        die(f"{what}: zstd could not decompress it")
    die(f"{what}: compression not handled here (magic {d[:4].hex()})")

def kernel(d, what):
    """The kernel (arm64 Image or ELF vmlinux) inside image d."""
    if d[:4] == b"\x7fELF":
        return d
    if d[:2] == b"MZ" and d[4:8] == b"zimg":  # EFI zboot
        off, size = u32(d, 8), u32(d, 12)
        what += "'s EFI zboot payload"
        return kernel(decompress(d[off:off + size], what), what)
    if d[0x38:0x3c] == b"ARMd":  # arm64 Image, uncompressed
        return d
    if d[0x202:0x206] == b"HdrS":  # x86 bzImage
        if struct.unpack_from("<H", d, 0x206)[0] < 0x208:
            die(f"{what}: bzImage boot protocol before 2.08 (no payload_offset)")
        start = ((d[0x1f1] or 4) + 1) * 512 + u32(d, 0x248)
        what += "'s bzImage payload"
        return kernel(decompress(d[start:start + u32(d, 0x24c)], what), what)
    if d[:2] == b"\x1f\x8b":  # Image.gz
        what += "'s gzip stream"
        return kernel(decompress(d, what), what)
    die(f"{what}: not an arm64 Image, EFI zboot, gzip'd Image, x86 bzImage or ELF vmlinux")

def blobs(k):
    """(size, offset) of every well-formed BTF header in k."""
    pos = k.find(b"\x9f\xeb\x01\x00")
    while pos >= 0:
        if pos + 24 <= len(k):
            hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<5I", k, pos + 4)
            size = hdr_len + max(type_off + type_len, str_off + str_len)
            if 24 <= hdr_len <= 256 and type_len and str_len and pos + size <= len(k):
                yield size, pos
        pos = k.find(b"\x9f\xeb\x01\x00", pos + 1)

k = kernel(open(img, "rb").read(), img)
tmp = out + ".tmp"
for size, pos in sorted(blobs(k), reverse=True):
    with open(tmp, "wb") as f:
        f.write(k[pos:pos + size])
    r = subprocess.run([bpftool, "btf", "dump", "file", tmp, "format", "c"], capture_output=True)
    if r.returncode == 0 and b"struct task_struct {" in r.stdout:
        os.replace(tmp, out)
        sys.exit(0)
if os.path.exists(tmp):
    os.remove(tmp)
die(f"{img}: no BTF with a struct task_struct in it (a kernel built without CONFIG_DEBUG_INFO_BTF?)")
EOF
}

case $# in
2)
	[ -f "$1" ] || { echo "kernel-btf: no file '$1'" >&2; exit 1; }
	extract "$1" "$2"
	;;
1)
	dir=$(bash "$here/get-kernel.sh" "$1" | tail -n1)
	img=$(ls "$dir"/boot/vmlinuz-* | head -n1)
	out=$dir/boot/vmlinux.btf
	if [ ! -s "$out" ] || [ "$out" -ot "$img" ]; then
		extract "$img" "$out"
	fi
	echo "$out"
	;;
*) usage ;;
esac
