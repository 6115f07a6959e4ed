#!/usr/bin/env bash
# The BTF of a kernel this host does not run, taken from its boot image: the
# raw blob /sys/kernel/btf/vmlinux gives on that kernel, which bpftool turns
# into a vmlinux.h. An arm64 BPF build needs arm64's vmlinux.h (struct
# pt_regs and user_pt_regs differ per architecture) and the host runs x86;
# the sched_ext example builds against 7.3's.
#
#   scripts/kernel-btf.sh [--arch ARCH] KERNEL
#       the BTF of scripts/get-kernel.sh's KERNEL (e.g. 7.3) of ARCH (amd64,
#       the default, arm64 or arm64-16k), written once into the kernel's
#       cache dir: prints that file's path
#
# Kernel images, as Debian ships them (file, od; 6.12 and 7.3):
#   arm64  vmlinuz is the uncompressed Image (a PE header for the EFI stub,
#          "ARMd" at 0x38), the BTF in it as is;
#   amd64  vmlinuz is a bzImage: its setup header's payload_offset and
#          payload_length give the compressed ELF vmlinux (zstd; gzip and
#          xz taken too), its uncompressed size appended.
# An ELF vmlinux is taken as well.
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
usage() { echo "usage: $0 [--arch amd64|arm64|arm64-16k] KERNEL (e.g. 7.3)" >&2; exit 2; }

# extract IMAGE OUT
extract() {
	python3 - "$1" "$2" "${BPFTOOL:-bpftool}" <<'EOF'
import lzma, os, struct, subprocess, sys, zlib

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
    if d[0x38:0x3c] == b"ARMd":  # arm64 Image, uncompressed
        return d
    if d[0x202:0x206] == b"HdrS":  # x86 bzImage
        if struct.unpack_from("<H", d, 0x206)[0] < 0x208:
            die(f"{what}: bzImage boot protocol before 2.08 (no payload_offset)")
        start = ((d[0x1f1] or 4) + 1) * 512 + u32(d, 0x248)
        what += "'s bzImage payload"
        return kernel(decompress(d[start:start + u32(d, 0x24c)], what), what)
    die(f"{what}: not an arm64 Image, x86 bzImage or ELF vmlinux")

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

arch=amd64
[ "${1:-}" != --arch ] || { [ $# -ge 2 ] || usage; arch=$2; shift 2; }
[ $# = 1 ] || usage
dir=$(bash "$here/get-kernel.sh" --arch "$arch" "$1" | tail -n1)
img=$(ls "$dir"/boot/vmlinuz-* | head -n1)
out=$dir/boot/vmlinux.btf
if [ ! -s "$out" ] || [ "$out" -ot "$img" ]; then
	extract "$img" "$out"
fi
echo "$out"
