#!/usr/bin/env bash
# Run a command inside a QEMU guest booting a Debian kernel, with the host's
# root filesystem as the guest's root (9p, read-only) and the project tree
# shared read-write at the same path. Exits with the command's status.
set -euo pipefail

usage() {
	cat >&2 <<'EOF'
usage: scripts/vmtest.sh [-A ARCH] [-k KERNEL] [-c CPUS] [-m MEM] [-a ARGS] [-t TIMEOUT_SEC] -- COMMAND...

Boot KERNEL under qemu-system-x86_64 (qemu-system-aarch64 for arm64) and
run COMMAND (with `sh -c`, as root) in the project directory. The guest
sees the host's / read-only (tmpfs on /tmp, /run, /var/tmp) and the
project tree read-write at the same path, so binaries built on the host
run unchanged. bpffs, debugfs and tracefs are
mounted; `ulimit -l unlimited` is set. The command's stdin is /dev/null;
its stdout and stderr go to a file in the shared tree that is streamed to
our stdout as it grows (the emulated serial port moves only ~0.3 MB/s under
TCG, and verifier logs can run to hundreds of MB), the kernel's console (the
serial port) to stdout too.

  -A ARCH    amd64 (default), arm64 or arm64-16k (16-KiB pages): the
             kernel's architecture (scripts/get-kernel.sh --arch). An
             arm64 guest runs the arm64 build (make ARCH=arm64); the
             host's root has no arm64 shell, so its command runs under
             the static arm64 busybox of scripts/install-deps.sh --arm64
             (its applets first on PATH)
  -k KERNEL  kernel dir made by scripts/get-kernel.sh, or a version prefix
             for it (6.12, 7.3, 6.1, ...; default 6.12)
  -c CPUS    guest vCPUs, 1..64 (default 2)
  -m MEM     guest memory (default 2G)
  -a ARGS    extra kernel command-line arguments, appended after ours
             (e.g. 'preempt=full'); letters, digits, spaces and _.,=:+-
             only; aa_* names are reserved for the guest's /init
  -t SEC     wall-clock limit for the whole VM run (default 2400)

Exit status: COMMAND's status; 124 if the VM timed out; 125 if the guest
stopped without reporting a status (panic, boot failure); 2 on usage errors.
A guest that stops before the command has started is booted once more.

Environment: AA_VMTEST_ACCEL=kvm|tcg forces the accelerator; AA_VMTEST_CPU
is the -cpu model under TCG (default max,-cx16 for 6.x, max for 7.x: see
below). The command
finds AA_VMTEST_ACCEL (kvm or tcg) and AA_VMTEST_CPUS in its environment.
EOF
}

kernel=6.12 cpus=2 mem=2G append= tmo=2400 arch=amd64
while getopts ":A:k:c:m:a:t:h" opt; do
	case $opt in
	A) arch=$OPTARG ;;
	k) kernel=$OPTARG ;;
	c) cpus=$OPTARG ;;
	m) mem=$OPTARG ;;
	a) append=$OPTARG ;;
	t) tmo=$OPTARG ;;
	h) usage; exit 0 ;;
	:) echo "vmtest: -$OPTARG needs an argument" >&2; usage; exit 2 ;;
	*) echo "vmtest: unknown option -$OPTARG" >&2; usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "vmtest: no COMMAND given" >&2; usage; exit 2; }
[[ "$tmo" =~ ^[0-9]+$ ]] || { echo "vmtest: bad timeout '$tmo'" >&2; exit 2; }
case $arch in amd64 | arm64 | arm64-16k) ;; *) echo "vmtest: bad -A '$arch' (amd64, arm64 or arm64-16k)" >&2; exit 2 ;; esac
[[ "$cpus" =~ ^[1-9][0-9]?$ ]] && [ "$cpus" -le 64 ] || { echo "vmtest: bad CPU count '$cpus' (an integer, 1..64)" >&2; exit 2; }
# -a travels on the kernel command line too: no quotes, no shell or init
# metacharacters, and nothing that would override our own aa_* parameters.
append_re='^[A-Za-z0-9_.,=:+ -]*$'
[[ "$append" =~ $append_re ]] || { echo "vmtest: bad -a '$append': only letters, digits, spaces and _.,=:+- are allowed" >&2; exit 2; }
[[ " $append" != *" aa_"* ]] || { echo "vmtest: bad -a '$append': aa_* parameters are reserved for the guest's /init" >&2; exit 2; }
read -ra words <<<"$append" && append="${words[*]}" # one space between arguments
cmd="$*"

log() { echo "vmtest: $*" >&2; }
die() { log "$*"; exit 2; }
# The guest's machine: QEMU, its console, and the static busybox of its
# initramfs (an arm64 one for arm64: install-deps.sh --arm64 unpacks it).
busybox=/bin/busybox
if [ "$arch" = amd64 ]; then
	qemu=qemu-system-x86_64 console=ttyS0 foreign=0 deps=--vmtest
else
	qemu=qemu-system-aarch64 console=ttyAMA0 foreign=1 deps='--vmtest --arm64'
	busybox=${AA_ARM64_ROOT:-$HOME/.cache/arena-alloc/arm64-root}/bin/busybox
	[ -x "$busybox" ] || die "no arm64 busybox at $busybox (run scripts/install-deps.sh --arm64)"
fi
for t in "$qemu" cpio gzip xz modprobe depmod timeout; do
	command -v "$t" >/dev/null || die "$t not found (run scripts/install-deps.sh $deps)"
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
proj=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/.." && pwd))
# The paths travel on the kernel command line: keep them simple.
[[ "$proj$PWD" =~ ^[A-Za-z0-9_./+@:-]+$ ]] || die "project path '$proj' or cwd '$PWD' has characters unsafe for the kernel command line"
[ "$proj" != / ] || die "project dir cannot be /"
# Run in the caller's cwd when it is inside the project, else at its top.
case "$PWD/" in "$proj"/*) gcwd=$PWD ;; *) gcwd=$proj ;; esac

# --- kernel ----------------------------------------------------------------
if [ -d "$kernel" ]; then
	kdir=$(cd "$kernel" && pwd)
else
	kdir=$("$here/get-kernel.sh" --arch "$arch" "$kernel" | tail -n1) || die "could not get kernel '$kernel'"
fi
kver=$(ls "$kdir/lib/modules" 2>/dev/null | head -n1 || true)
[ -n "$kver" ] && [ -f "$kdir/boot/vmlinuz-$kver" ] || die "$kdir has no boot/vmlinuz-<kver> + lib/modules/<kver>"
[ -f "$kdir/lib/modules/$kver/modules.dep" ] || { log "running depmod for $kver"; depmod -b "$kdir" "$kver"; }

# --- initramfs: static busybox + 9p modules + /init --------------------------
# /init is PID 1: it loads the modules, mounts the shares and pseudo
# filesystems, chroots into the host root to run the command, writes the
# status into the run dir and powers off. Parameters come from the kernel
# command line (aa_* variables in init's environment).
read -r -d '' INIT <<'INIT_EOF' || true
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
fail() { echo "vmtest-init: FAILED: $*"; sync; poweroff -f; echo o >/proc/sysrq-trigger; sleep 10; }
for m in $(cat /modules.list); do insmod /lib/modules/$m || fail "insmod $m"; done
R=/newroot
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,cache=loose,ro hostroot $R || fail "mount host root over 9p"
mount -t proc proc $R/proc && mount -t sysfs sys $R/sys && mount -t devtmpfs dev $R/dev || fail "mount proc/sys/dev"
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts; mount -t tmpfs tmpfs $R/dev/shm
for d in tmp var/tmp; do mount -t tmpfs -o mode=1777 tmpfs $R/$d || fail "tmpfs on /$d"; done
mount -t tmpfs -o mode=755 tmpfs $R/run || fail "tmpfs on /run"
# The project last: a tree under /tmp (a CI clone, say) must not be hidden
# by the tmpfs; its mount point then lives in that tmpfs.
mkdir -p $R$aa_proj && mount -t 9p -o $o,cache=mmap aaproj $R$aa_proj || fail "mount project share at $aa_proj"
mount -t bpf bpf $R/sys/fs/bpf || fail "mount bpffs"
mount -t debugfs debugfs $R/sys/kernel/debug || echo "vmtest-init: no debugfs"
[ -d $R/sys/kernel/tracing ] && mount -t tracefs tracefs $R/sys/kernel/tracing
ulimit -l unlimited
# A guest of another architecture than the host's root (aa_foreign=1) gets
# its shell and tools from our busybox, its applets first on PATH, and
# /bin/sh too (popen() and system() run it by that name).
sh=/bin/sh
if [ "$aa_foreign" = 1 ]; then
	b=$R/run/aa-bin
	mkdir -p $b && cp /bin/busybox $b/busybox || fail "copy busybox to /run/aa-bin"
	for a in $(/bin/busybox --list); do [ $a = busybox ] || ln -s busybox $b/$a; done
	t=$(chroot $R /run/aa-bin/readlink -f /bin/sh)	# a chain of links on Debian
	mount --bind $b/busybox $R$t || fail "bind busybox over /bin/sh ($t)"
	sh=/run/aa-bin/sh
	echo "export PATH=/run/aa-bin:\$PATH" >>$R$aa_run/env
fi
# The command's output goes to $aa_run/out, which the host streams: 9p writes
# are synchronous, so nothing is lost at poweroff (a virtio-serial port loses
# what the host has not read yet).
exec </dev/null >>$R$aa_run/out 2>&1 || fail "cannot write $aa_run/out"
echo "vmtest-init: $(uname -r) up $(cut -d' ' -f1 /proc/uptime)s, running command"
chroot $R $sh -c '. "$1/env"; cd "$2" && exec "$3" -c "$(cat "$1/cmd")"' vmtest $aa_run $aa_cwd $sh
rc=$?
echo "vmtest-init: command exited with status $rc after $(cut -d' ' -f1 /proc/uptime)s"
echo $rc >$R$aa_run/status.tmp && mv $R$aa_run/status.tmp $R$aa_run/status || echo "vmtest-init: could not write status"
exec >/dev/console 2>&1
sync
umount $R$aa_proj || umount -l $R$aa_proj
poweroff -f
INIT_EOF

# The cache key covers /init, busybox and the module set. virtio_pci is a
# module on 6.1 and built in since (Debian 13's packages ship no
# modules.builtin to say so: a module not found is taken as built in).
mods=(9p 9pnet_virtio) maybe_mods=(virtio_pci)
key=$( { echo "$INIT"; echo "${maybe_mods[*]} ${mods[*]}"; sha256sum "$busybox"; } | sha256sum | cut -c1-12)
initrd=$kdir/vmtest-initramfs-$key.cpio.gz
if [ ! -f "$initrd" ]; then
	log "building initramfs for $kver"
	[ "$foreign" = 1 ] || [[ "$(LC_ALL=C ldd "$busybox" 2>&1 || true)" == *"not a dynamic"* ]] ||
		die "$busybox is not static (install busybox-static)"
	w=$(mktemp -d "${TMPDIR:-/tmp}/vmtest-initrd.XXXXXX")
	trap 'rm -rf "$w"' EXIT
	mkdir -p "$w"/{bin,dev,proc,sys,newroot,lib/modules}
	cp "$busybox" "$w/bin/busybox"
	printf '%s\n' "$INIT" >"$w/init" && chmod 755 "$w/init"
	: >"$w/modules.list"
	for m in "${maybe_mods[@]}" "${mods[@]}"; do
		# --show-depends prints "insmod PATH" lines in load order (deps first)
		if ! deps=$(modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null); then
			[[ " ${maybe_mods[*]} " == *" $m "* ]] || die "module $m not found for $kver"
			log "$m: no module for $kver, taken as built in"
			continue
		fi
		for p in $(awk '$1 == "insmod" {print $2}' <<<"$deps"); do
			b=$(basename "$p"); b=${b%.xz}; b=${b%.zst}; b=${b%.gz}
			grep -qx "$b" "$w/modules.list" && continue
			case $p in
			*.xz) xz -dc "$p" >"$w/lib/modules/$b" ;;
			*.zst) zstd -qdc "$p" >"$w/lib/modules/$b" ;;
			*.gz) gzip -dc "$p" >"$w/lib/modules/$b" ;;
			*) cp "$p" "$w/lib/modules/$b" ;;
			esac
			echo "$b" >>"$w/modules.list"
		done
	done
	log "modules: $(tr '\n' ' ' <"$w/modules.list")"
	(cd "$w" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$initrd.$$"
	mv "$initrd.$$" "$initrd"
	for f in "$kdir"/vmtest-initramfs-*.cpio.gz; do [ "$f" = "$initrd" ] || rm -f "$f"; done
	rm -rf "$w"; trap - EXIT
fi

# --- run dir in the shared tree: command, env, status -------------------------
mkdir -p "$proj/build/vmtest"
run=$(mktemp -d "$proj/build/vmtest/run.XXXXXX")
follow_pids=
trap 'kill $follow_pids 2>/dev/null || true; rm -rf "$run"' EXIT
printf '%s\n' "$cmd" >"$run/cmd"
printf 'export PATH=%q HOME=%q TERM=%q\nunset aa_proj aa_run aa_cwd aa_foreign\n' \
	"$PATH" "${HOME:-/root}" "${TERM:-dumb}" >"$run/env"

# --- accelerator: KVM only where the CPU exposes VMX/SVM (a /dev/kvm without
# them, as on this project's VMs, cannot run a normal guest); AA_VMTEST_ACCEL=
# kvm|tcg overrides.
accel=${AA_VMTEST_ACCEL:-}
if [ -z "$accel" ]; then
	accel=tcg
	[ "$foreign" = 0 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qw -e vmx -e svm /proc/cpuinfo && accel=kvm
fi
# Under TCG a 6.x guest CPU has no CMPXCHG16B (cx16): with it, Debian's
# QEMU 7.2 occasionally hands the guest garbage flags right after the SLUB
# fast path's `cmpxchg16b %gs:(%rsi)` (three "double fault" panics in
# __kmalloc_node_track_caller while the preemption stress ran its hard-IRQ
# programs; each time the reported EFLAGS were the low 32 bits of RAX, which
# no real CPU can push). Without cx16 the kernel uses its own emulation.
# Linux 7.x needs cx16 for arena maps (their page array comes from
# kmalloc_nolock(), which fails without it): `max` there. AA_VMTEST_CPU
# overrides the -cpu model. arm64: `max` on QEMU's virt machine (4-KiB and
# 16-KiB pages both), with pointer authentication by QEMU's
# implementation-defined algorithm instead of QARMA: Debian's arm64 kernels
# sign every return address, and QARMA under TCG costs the guest several
# times its speed (CHANGELOG has the measurements).
tcg_cpu=max,-cx16
[ "${kver%%.*}" -lt 7 ] || tcg_cpu=max
[ "$foreign" = 0 ] || tcg_cpu=max,pauth-impdef=on
# Under TCG the clocksource watchdog sees the TSC drift (vCPUs are host
# threads) and switches clocksource while tests run; the switch patches
# kernel text, and a vCPU was seen executing the int3 left at a patch site
# (in ktime_get_mono_fast_ns, 7.3). tsc=reliable keeps the TSC: the
# guest's timings are only compared with each other.
kargs=
case $accel in
kvm) accel_args=(-enable-kvm -cpu host) ;;
tcg) accel_args=(-accel tcg -cpu "${AA_VMTEST_CPU:-$tcg_cpu}") kargs=" tsc=reliable" ;;
*) die "AA_VMTEST_ACCEL must be kvm or tcg" ;;
esac
machine=()
if [ "$foreign" = 1 ]; then
	[ "$accel" = tcg ] || die "an $arch guest needs TCG on this host"
	machine=(-M virt) kargs=
fi
# The command learns where it runs (benchmarks print it with their tables).
printf 'export AA_VMTEST_ACCEL=%q AA_VMTEST_CPUS=%q\n' "$accel" "$cpus" >>"$run/env"

log "booting $kver (${accel^^}, -cpu ${accel_args[-1]}, $cpus CPUs, $mem, timeout ${tmo}s${append:+, append '$append'}): $cmd"
for try in 1 2; do
	start=$EPOCHREALTIME
	set +e
	# Stream the command's output file while the VM runs; tail --pid drains it
	# and stops once the sentinel is gone (killed after QEMU exits).
	: >"$run/out"
	sleep infinity &
	sentinel=$!
	tail -n +1 -s 0.2 -f --pid="$sentinel" "$run/out" &
	follower=$!
	follow_pids="$sentinel $follower"
	# sed -u strips the serial console's \r without buffering the stream.
	timeout --foreground -k 10 "$tmo" "$qemu" "${machine[@]}" "${accel_args[@]}" -smp "$cpus" -m "$mem" \
		-nodefaults -no-reboot -display none -monitor none -serial stdio \
		-kernel "$kdir/boot/vmlinuz-$kver" -initrd "$initrd" \
		-append "console=$console quiet panic=-1$kargs aa_foreign=$foreign aa_proj=$proj aa_run=$run aa_cwd=$gcwd${append:+ $append}" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$proj",mount_tag=aaproj,security_model=none,multidevs=remap \
		</dev/null | sed -u 's/\r$//'
	qrc=${PIPESTATUS[0]}
	kill "$sentinel" 2>/dev/null
	wait "$follower" 2>/dev/null
	follow_pids=
	set -e
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
	# A guest that stopped before /init started the command (seen under TCG:
	# an int3 oops in early boot while the kernel patches its own text) is
	# booted once more: nothing has run yet.
	[ "$try" = 1 ] && [ ! -f "$run/status" ] && [ ! -s "$run/out" ] &&
		[ "$qrc" != 124 ] && [ "$qrc" != 137 ] || break
	log "guest stopped before running the command (qemu exit $qrc, ${secs}s): booting once more"
done
if [ -f "$run/status" ]; then
	rc=$(cat "$run/status")
	log "guest command exited with status $rc (VM run ${secs}s)"
	exit "$rc"
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	log "TIMEOUT: VM killed after ${tmo}s without a command status"
	exit 124
else
	log "FAILED: guest stopped without reporting a status (qemu exit $qrc; kernel panic or boot failure?)"
	exit 125
fi
