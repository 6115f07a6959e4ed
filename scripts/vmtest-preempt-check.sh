#!/bin/sh
# Run inside a vmtest guest before its command (make vmtest-preempt):
#   sh scripts/vmtest-preempt-check.sh N
# prints `nproc` and the kernel's preemption model, and passes when N CPUs
# are online and the model is full (/sys/kernel/debug/sched/preempt, or
# preempt=full on /proc/cmdline where that file is missing).
f=/sys/kernel/debug/sched/preempt
n=$(nproc)
echo "vmtest-preempt: nproc $n"
[ "$n" = "$1" ] || { echo "vmtest-preempt: FAILED: $n CPUs online, not $1"; exit 1; }
if [ -r $f ]; then
	m=$(cat $f)
	echo "vmtest-preempt: preempt model: $m ($f)"
	case "$m" in *"(full)"*) exit 0 ;; esac
	echo "vmtest-preempt: FAILED: the preemption model is not full (boot with preempt=full)"
	exit 1
fi
echo "vmtest-preempt: no $f, checking /proc/cmdline instead"
case " $(cat /proc/cmdline) " in *" preempt=full "*)
	echo "vmtest-preempt: preempt model: (full) (preempt=full on /proc/cmdline)"
	exit 0 ;;
esac
echo "vmtest-preempt: FAILED: no preempt=full on /proc/cmdline: $(cat /proc/cmdline)"
exit 1
