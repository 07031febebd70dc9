#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# The kernel matrix (make kernel-test; docs/testing.md, "Kernel matrix"):
# boots stock Debian kernels in qemu (TCG: no KVM needed) with an
# initramfs holding static test binaries, the publishers and the built
# collector, runs them inside (init.sh), and prints per kernel which event
# sources loaded and what passed. Fails when a test fails or a kernel does
# not load the event sources it is expected to.
#
# Environment:
#   KERNELS              names of the matrix to run (default: all), e.g. "6.1-cloud"
#   KERNEL_CACHE         downloaded kernels (default ~/.cache/processctx-kernels)
#   KERNEL_BOOT_TIMEOUT  seconds one boot may take (default 600; about 90 s is usual)
#   KERNEL_QEMU_MEM      guest memory (default 2G)
#   KERNEL_JOBS          kernels booted at once (default 2: a guest's single
#                        TCG thread waits on its tests' sleeps about half of
#                        the time; the report keeps the matrix's order)
#   KERNEL_GUEST_ENV     NAME=value words for the guest's tests (the kernel
#                        hands parameters it does not know to init's
#                        environment), e.g. "HOSTCOST_ROUNDS=2 KMATRIX_TEST_TIMEOUT=20m"
#   KERNEL_FETCH_ONLY    set: download the kernels into KERNEL_CACHE and stop
#   KERNEL_PLAN          what runs in the guests instead of PLAN below (to
#                        chase one test: "tracker -test.run=^TestX$ -test.count=5")
set -euo pipefail
cd "$(dirname "$0")/../.."

# The matrix. One kernel a line: its name; the Debian package, a regular
# expression over the package names apt serves (the newest match is taken:
# Debian replaces its kernel packages with every security update); the
# publication event source the collector should load at its defaults; the
# process event source.
MATRIX='
6.1-generic   ^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$           fexit  proc_connector
6.1-cloud     ^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$     fexit  proc_connector
6.12-generic  ^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$     fexit  proc_connector
6.12-cloud    ^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$  fexit  proc_connector
'

# What runs in each guest: a package (its test binary) and go test flags.
# Kept lean for TCG (guests run some 10-50 times slower than the host):
# the tests that need the kernel's events and real processes. Tests that
# compile C helpers with gcc at run time cannot run there (no compiler):
# TestCompatSyscallsAreIgnored (pubevents) and TestLiveStorm (tracker).
PLAN='
pubevents   -test.skip=^TestCompatSyscallsAreIgnored$
procevents
e2e         -test.run=^TestUnprivilegedUserWithCapabilities$
tracker     -test.run=^(TestLive|TestSteadyState|TestPidReuse|TestPermissionDenied|TestHostile|TestStopWhileAReadIsStuck|TestEnvironmentOfARealProcess|TestRealUnchangeableDenial) -test.skip=^TestLiveStorm$
hostopen    -test.run=^TestOpen
kernel
'
PLAN=${KERNEL_PLAN:-$PLAN}
# Where each package's sources are (for go test -c and its testdata).
declare -A PKGDIR=([pubevents]=internal/pubevents [procevents]=internal/procevents [tracker]=internal/tracker [hostopen]=internal/hostopen [e2e]=test/e2e [kernel]=test/kernel)

CACHE=${KERNEL_CACHE:-$HOME/.cache/processctx-kernels}
WORK=_build/kernel-test
BOOT_TIMEOUT=${KERNEL_BOOT_TIMEOUT:-600}
MEM=${KERNEL_QEMU_MEM:-2G}
JOBS=${KERNEL_JOBS:-2}
COLLECTOR=bin/otelcol-processctx
GO=${GO:-go}

log() { printf '%s kernel-test: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }

# --- What the host needs (Debian packages), installed when missing.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# A static busybox: the guest's shell and tools.
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v gcc >/dev/null || need+=(gcc)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || need+=(libc6-dev) # gcc -static
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q "${need[@]}"
fi

# --- Kernels: the newest package matching each line, its vmlinuz (and
# config) cached by package and version.
newest() { apt-cache pkgnames linux-image- | grep -E "$1" | sort -V | tail -1 || true; }
# fetch dir package version: download the package, keep its vmlinuz.
fetch() {
	local dir=$1 pkg=$2 ver=$3 tmp
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/.download.XXXXXX")
	# (apt warns that root downloads unsandboxed: harmless)
	(cd "$tmp" && apt-get download -q "$pkg=$ver" 2>&1 | grep -v unsandboxed >&2) || true
	local deb
	deb=$(ls "$tmp"/*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ] && dpkg-deb -x "$deb" "$tmp/x"; then
		mkdir -p "$dir"
		cp "$tmp"/x/boot/config-* "$dir/config"
		cp "$tmp"/x/boot/vmlinuz-* "$dir/vmlinuz.new" && mv "$dir/vmlinuz.new" "$dir/vmlinuz"
	fi
	rm -rf "$tmp"
	[ -s "$dir/vmlinuz" ]
}
declare -A VMLINUZ VERSION PACKAGE EXPECT_PUB EXPECT_PROC
names=()
apt_updated=
while read -r name re pub proc; do
	[ -n "$name" ] || continue
	if [ -n "${KERNELS:-}" ] && [[ " $KERNELS " != *" $name "* ]]; then continue; fi
	for try in 1 2; do
		pkg=$(newest "$re")
		ver=
		[ -z "$pkg" ] || ver=$(apt-cache show --no-all-versions "$pkg" | awk '/^Version:/ { print $2; exit }')
		dir="$CACHE/${pkg}_$ver"
		if [ -n "$pkg" ] && [ -s "$dir/vmlinuz" ]; then break; fi
		if [ -n "$pkg" ]; then
			log "$name: downloading $pkg $ver"
			fetch "$dir" "$pkg" "$ver" && break
		fi
		# No match, or a version the archive no longer has: stale lists.
		[ -z "$apt_updated" ] || die "$name: no package matching $re could be downloaded"
		log "$name: updating apt's package lists"
		apt-get update -q >&2
		apt_updated=1
	done
	names+=("$name")
	VMLINUZ[$name]=$dir/vmlinuz VERSION[$name]=$ver PACKAGE[$name]=$pkg
	EXPECT_PUB[$name]=$pub EXPECT_PROC[$name]=$proc
done <<<"$MATRIX"
[ ${#names[@]} -gt 0 ] || die "no kernel selected (KERNELS=$KERNELS)"
# KERNEL_FETCH_ONLY: the downloads alone, before the collector is built
# (.ci/run fetches while it compiles).
if [ -n "${KERNEL_FETCH_ONLY:-}" ]; then
	log "kernels in $CACHE: ${names[*]}"
	exit 0
fi
[ -e "$COLLECTOR" ] || die "$COLLECTOR missing: make build"
if readelf -l "$COLLECTOR" | grep -q INTERP; then
	die "$COLLECTOR is not static: the guests have no libc"
fi

# --- The initramfs, shared by every kernel (Debian's kernels have all the
# tests need built in: BPF, BTF, the proc connector, tracefs, cgroup2).
log "building the test binaries and the initramfs"
root=$WORK/root
rm -rf "$root" && mkdir -p "$root"/{bin,etc,proc,sys,dev,tmp,root,opt/tests,opt/publishers,opt/bin}
while read -r pkg _; do
	[ -n "$pkg" ] || continue
	src=${PKGDIR[$pkg]}
	CGO_ENABLED=0 "$GO" test -c -o "$root/opt/tests/$pkg.test" "./$src"
	mkdir -p "$root/opt/pkg/$pkg"
	[ -d "$src/testdata" ] && cp -r "$src/testdata" "$root/opt/pkg/$pkg/"
done <<<"$PLAN"
CGO_ENABLED=0 "$GO" build -o "$root/opt/publishers/go-publisher" ./cmd/ctxpublisher
# pubtest's flags, static: the guest has no libc.
gcc -static -O2 -Wall -Wextra -Werror -std=gnu11 -pthread -o "$root/opt/publishers/c-publisher" testdata/cpublisher/publisher.c
# BenchmarkHostCost's syscall loop (HOSTCOST_GETPPID), for KERNEL_PLAN runs.
gcc -static -O2 -o "$root/opt/publishers/getppid" test/e2e/testdata/getppid/getppid.c
cp "$COLLECTOR" "$root/opt/bin/otelcol-processctx"
# test/e2e (KERNEL_PLAN runs) runs the collector at <repository>/bin
# (pubtest.RepoRoot: the checkout's path, compiled into the test
# binaries): the same path inside, which may well be under /tmp (the guest
# keeps the initramfs's /tmp: no tmpfs over it).
mkdir -p "$root$PWD/bin"
ln "$root/opt/bin/otelcol-processctx" "$root$PWD/bin/otelcol-processctx"
cp /bin/busybox "$root/bin/busybox"
# util-linux's setpriv (test/e2e switches users with it; busybox's lacks
# --reuid), with the shared libraries it loads.
for f in /usr/bin/setpriv $(ldd /usr/bin/setpriv | grep -o '/[^ ]*'); do
	mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f"
done
cp test/kernel/init.sh "$root/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
echo "$PLAN" >"$root/opt/plan"
chmod 1777 "$root/tmp"
# Uncompressed: decompressing under TCG would cost more than the copy.
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) >"$WORK/initramfs.cpio"
log "initramfs: $(du -h "$WORK/initramfs.cpio" | cut -f1)"

# --- Boots. One attempt: its serial console in $WORK/logs/<name>.<n>.log.
rm -rf "$WORK/logs" && mkdir -p "$WORK/logs"
# A kernel's own report of trouble (printk lines carry a timestamp).
KERNEL_TROUBLE='^\[ *[0-9]+\.[0-9]+\] .*(Oops|BUG:|Kernel panic|WARNING:)'
boot() { # name attempt
	local name=$1 n=$2 out="$WORK/logs/$1.$2.log"
	# Single-threaded TCG: QEMU 7.2's multi-threaded TCG oopses guests at
	# jump-label patching. -no-reboot with panic=-1: a panic ends qemu.
	timeout --foreground -k 10 "$BOOT_TIMEOUT" qemu-system-x86_64 \
		-accel tcg,thread=single -m "$MEM" -smp 2 -nographic -no-reboot \
		-kernel "${VMLINUZ[$name]}" -initrd "$WORK/initramfs.cpio" \
		-append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init ${KERNEL_GUEST_ENV:-}" \
		</dev/null 2>&1 | sed -u 's/\r$//' >"$out" || true
	echo "$out"
}

# emulator_failure log: why the boot says nothing about the kernel, or "".
emulator_failure() {
	local out=$1
	if ! grep -q '^KMATRIX-BOOTED' "$out"; then
		if grep -qE "$KERNEL_TROUBLE" "$out"; then echo "kernel oops/panic before the tests started"; else echo "no boot marker (timeout or crash)"; fi
	elif ! grep -q '^KMATRIX-DONE' "$out"; then
		echo "no result marker (timeout or crash during the tests: $(grep '^KMATRIX-START' "$out" | tail -1 | cut -d' ' -f2) running)"
	fi
}

# source_of "<start-up line value>": the short name of an event source
# (the line's process_events / publication_events: "proc connector",
# "eBPF <mechanism>" or "none").
source_of() {
	case $1 in
	"eBPF fexit"*) echo fexit ;;
	"eBPF syscall_tracepoints"*) echo syscall_tracepoints ;;
	"eBPF raw_sys_exit"*) echo raw_sys_exit ;;
	"proc connector"*) echo proc_connector ;;
	*) echo none ;;
	esac
}

# run_kernel name: boots it, once more when the first boot failed for the
# emulator's sake, and writes what the report needs to $WORK/logs/<name>.run
# (the log of the last boot, why it gave no result, the seconds, a note).
run_kernel() {
	local name=$1 t0 note= out why
	log "$name: booting ${PACKAGE[$name]} ${VERSION[$name]}"
	t0=$(date +%s)
	out=$(boot "$name" 1)
	why=$(emulator_failure "$out")
	if [ -n "$why" ]; then
		log "$name: boot 1 failed for the emulator's sake ($why; $out): retrying once"
		note="retried: $why"
		out=$(boot "$name" 2)
		why=$(emulator_failure "$out")
	fi
	printf '%s\n%s\n%s\n%s\n' "$out" "$why" "$(($(date +%s) - t0))" "$note" >"$WORK/logs/$name.run"
	log "$name: done"
}

failed=0
summary=()
start_all=$(date +%s)
# Up to JOBS boots at once; each writes its own files. An interrupted run
# stops the boots under way.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
running=()
for name in "${names[@]}"; do
	while [ ${#running[@]} -ge "$JOBS" ]; do
		wait -n || true
		alive=()
		for pid in "${running[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
		running=("${alive[@]}")
	done
	run_kernel "$name" &
	running+=($!)
done
wait
for name in "${names[@]}"; do
	out=$WORK/logs/$name.1.log why="the boot's job ended without a result" secs=0 note=
	[ ! -s "$WORK/logs/$name.run" ] || { read -r out; read -r why; read -r secs; read -r note; } <"$WORK/logs/$name.run"
	echo "=== $name (${PACKAGE[$name]} ${VERSION[$name]}, $(grep -m1 '^KMATRIX-BOOTED' "$out" | cut -d' ' -f2)): ${secs}s${note:+, $note}"
	if [ -n "$why" ]; then
		echo "    FAIL: no result: $why (log: $out)"
		failed=1
		summary+=("$name: NO RESULT ($why)")
		continue
	fi
	ok=1
	# Event sources, from the collector's start-up line.
	line=$(grep -m1 '^KMATRIX sources ' "$out" || true)
	proc_v=$(sed -n 's/.* process="\([^"]*\)".*/\1/p' <<<"$line")
	pub_v=$(sed -n 's/.* publication="\(.*\)"$/\1/p' <<<"$line")
	proc=$(source_of "$proc_v") pub=$(source_of "$pub_v")
	echo "    publication events: $pub${pub_v:+ ($(cut -c1-300 <<<"$pub_v"))}"
	echo "    process events:     $proc${proc_v:+ ($proc_v)}"
	if ! grep -q '^KMATRIX-START kernel$' "$out"; then
		echo "    (event sources not checked: KERNEL_PLAN runs no test/kernel)"
	elif [ -z "$line" ]; then
		echo "    FAIL: the collector's start-up line was not seen"
		ok=0
	else
		[ "$pub" = "${EXPECT_PUB[$name]}" ] || { echo "    FAIL: publication events: expected ${EXPECT_PUB[$name]}, loaded $pub"; ok=0; }
		[ "$proc" = "${EXPECT_PROC[$name]}" ] || { echo "    FAIL: process events: expected ${EXPECT_PROC[$name]}, loaded $proc"; ok=0; }
	fi
	# Why a source is missing, from the start-up line that says it.
	grep '^KMATRIX missing ' "$out" | cut -c1-300 | sed 's/^KMATRIX /    /' || true
	grep '^KMATRIX latency ' "$out" | sed 's/^KMATRIX /    /' || true
	# Per package: the result, the tests skipped and why (but the helper
	# processes' bodies, which skip when run as tests), a failed package's
	# output.
	while read -r _ pkg result took; do
		echo "    $pkg: $result ($took)"
		segment=$(awk -v p="$pkg" '$0 == "KMATRIX-START " p { on = 1; next } /^KMATRIX-RESULT/ { on = 0 } on' "$out")
		# (go test -v prints a test's log, its reason, before its SKIP line)
		awk '/^ +[^ ]+\.go:[0-9]+: / { why = $0; sub(/^ +/, "", why) }
			/^ *--- SKIP: / { if (why !~ /only runs as a helper process/) print "skipped " $3 ": " substr(why, 1, 200); why = "" }' <<<"$segment" |
			sed 's/^/        /'
		if [ "$result" != PASS ]; then
			ok=0
			# Its tests' messages (go test -v prints a failure's before its
			# FAIL line), each with at most 3 continuation lines, and the
			# FAIL lines.
			awk '/^ *--- FAIL|^FAIL$|^panic:/ { print; more = 0; next }
				/^ +[^ ]+\.go:[0-9]+: / { print; more = 3; next }
				/^ *--- SKIP/ { more = 0; next }
				more > 0 { print; more-- }' <<<"$segment" | head -40 | cut -c1-300 | sed 's/^/        /'
		fi
	done < <(grep '^KMATRIX-RESULT ' "$out")
	# An oops while the tests ran is the kernel's (or ours), not the emulator's.
	if grep -qE "$KERNEL_TROUBLE" "$out"; then
		echo "    FAIL: the kernel reported trouble while the tests ran:"
		grep -E -A3 "$KERNEL_TROUBLE" "$out" | head -20 | sed 's/^/        /'
		ok=0
	fi
	if [ $ok = 1 ]; then
		summary+=("$name: PASS (publication $pub, process $proc, ${secs}s${note:+, $note})")
	else
		failed=1
		summary+=("$name: FAIL (publication $pub, process $proc; log: $out)")
	fi
done

echo "=== kernel matrix, $(($(date +%s) - start_all))s"
printf '    %s\n' "${summary[@]}"
exit $failed
