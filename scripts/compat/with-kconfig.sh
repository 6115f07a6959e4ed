#!/bin/sh
# Runs COMMAND with the kernel config libarena's runner needs, inside the
# guest (scripts/compat/run-guest.sh, bench-guest.sh): libbpf resolves
# libarena's __kconfig externs (CONFIG_NR_CPUS, CONFIG_X86_64) from
# /boot/config-$(uname -r) or /proc/config.gz, and the guest has neither
# (Debian's 7.3 package ships no config; /boot is the host's, read-only).
# Its arena spin lock also refuses CONFIG_NR_CPUS > 1024 (its queue nodes
# are sized for 1024 CPUs; Debian's kernel says 8192), so it would
# allocate nothing. A kernel config written to a tmpfs over /boot, in a
# mount namespace of the command's own, says CONFIG_NR_CPUS=1024: true
# enough for a guest of at most 64 CPUs, and the peers' sources stay
# unmodified (libbpf's kconfig option would need a change to the runner's
# open_and_load).
#   sh scripts/compat/with-kconfig.sh COMMAND [ARG]...
exec unshare -m sh -c '
	mount -t tmpfs -o mode=755 tmpfs /boot &&
	printf "CONFIG_X86_64=y\nCONFIG_NR_CPUS=1024\n" >"/boot/config-$(uname -r)" &&
	exec "$0" "$@"' "$@"
