#!/bin/busybox sh
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# /init of the kernel matrix's guests (run.sh packs it into the initramfs
# with busybox, the static test binaries, the publishers and the built
# collector). Everything is in the initramfs: no disk, no network, no
# kernel module. It runs each test binary from its package's directory and
# reports over the serial console, one marker line each, which run.sh reads:
#   KMATRIX-BOOTED <uname -r>
#   KMATRIX-START <package>, its tests' output, then
#   KMATRIX-RESULT <package> PASS|FAIL <seconds>s
#   KMATRIX-DONE
# then powers the guest off.
/bin/busybox --install -s /bin
set -f # the test flags hold regular expressions: no globbing
set -o pipefail
export PATH=/usr/bin:/bin HOME=/root TMPDIR=/tmp

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up

# The tests' prebuilt publishers (see internal/pubtest), the collector.
export PUBTEST_PUBLISHERS=/opt/publishers
export KERNEL_MATRIX_COLLECTOR=/opt/bin/otelcol-processctx
export HOSTCOST_GETPPID=/opt/publishers/getppid

# After a newline: the firmware's screen clearing ends without one.
echo
echo "KMATRIX-BOOTED $(uname -r)"
# /opt/plan: one "<package> <go test flags>" a line (run.sh's PLAN).
while read -r pkg flags; do
	[ -n "$pkg" ] || continue
	echo "KMATRIX-START $pkg"
	start=$(date +%s)
	# Package directory as working directory: the tests read testdata/.
	# The flags are word-split on purpose (no quoting inside them).
	# Verbose for the skipped tests and their reasons, without the lines
	# of every test run and passed.
	if (cd "/opt/pkg/$pkg" && "/opt/tests/$pkg.test" -test.v -test.timeout=${KMATRIX_TEST_TIMEOUT:-4m} $flags </dev/null 2>&1 |
		grep -v -E '^ *(=== (RUN|PAUSE|CONT|NAME)|--- PASS)'); then
		result=PASS
	else
		result=FAIL
	fi
	echo "KMATRIX-RESULT $pkg $result $(($(date +%s) - start))s"
done </opt/plan
echo "KMATRIX-DONE"
sync
poweroff -f
