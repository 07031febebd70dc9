#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# The kernel matrix (make kernel-test; docs/testing.md, "Kernel matrix"):
# boots stock Debian kernels, x86_64 and arm64, in qemu (TCG: no KVM
# needed) with an initramfs of the kernel's architecture holding static
# test binaries, the publishers and the release's collector
# (bin/linux_<arch>/otelcol-processctx), runs them inside (init.sh), and
# prints per kernel which event sources loaded and what passed. Fails when
# a test fails or a kernel does not load the event sources it is expected
# to.
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
#   KERNEL_ARM64_PLAN    what runs in the arm64 guests (default: PLAN); "short":
#                        SHORT_PLAN, the reader's tests and the collector's
#                        (CI: the arm64 guests' whole plan takes as long as
#                        the x86-64 ones', and CI's time is bound)
set -euo pipefail
cd "$(dirname "$0")/../.."

# The matrix. One kernel a line: its name; its architecture (amd64 or
# arm64); the Debian package, a regular expression over the package names
# apt serves for that architecture in bookworm and bookworm-security (the
# newest match is taken: Debian replaces its kernel packages with every
# security update); the publication event source the collector should
# load at its defaults; the process event source. arm64 has BPF
# trampolines for kernel functions only since Linux 6.4: on 6.1 the
# defaults take the kprobe source.
MATRIX='
6.1-generic     amd64  ^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$                 fexit   proc_connector
6.1-cloud       amd64  ^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$           fexit   proc_connector
6.12-generic    amd64  ^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$           fexit   proc_connector
6.12-cloud      amd64  ^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$     fexit   proc_connector
6.1-arm64       arm64  ^linux-image-6\.1\.0-[0-9]+-arm64-unsigned$                 kprobe  proc_connector
6.12-arm64      arm64  ^linux-image-6\.12\.[0-9]+\+deb12-arm64-unsigned$           fexit   proc_connector
6.12-arm64-16k  arm64  ^linux-image-6\.12\.[0-9]+\+deb12-arm64-16k-unsigned$       fexit   proc_connector
'
# Debian's suites the kernels (and the arm64 guests' busybox and setpriv)
# come from: tools/debian-apt.sh reads them for each architecture, leaving
# the machine's apt alone.
SUITES="bookworm bookworm-security"

# What runs in each guest: a package (its test binary) and go test flags.
# Kept lean for TCG (guests run some 10-50 times slower than the host):
# the tests that need the kernel's events and real processes, and the
# reader's (the page size: 16 KiB on arm64-16k) but for those that only
# compute (the fuzz seeds) or need real parallelism (torn reads: a
# single-threaded TCG runs one vCPU at a time, and would not show arm64's
# weaker memory ordering anyway). Tests that
# compile C helpers with gcc at run time cannot run there (no compiler):
# TestCompatSyscallsAreIgnored (pubevents), TestLiveStorm (tracker) and
# TestFindMappingManyMappings (reader).
PLAN='
pubevents   -test.skip=^TestCompatSyscallsAreIgnored$
procevents
e2e         -test.run=^TestUnprivilegedUserWithCapabilities$
tracker     -test.run=^(TestLive|TestSteadyState|TestPidReuse|TestPermissionDenied|TestHostile|TestStopWhileAReadIsStuck|TestEnvironmentOfARealProcess|TestRealUnchangeableDenial) -test.skip=^TestLiveStorm$
hostopen    -test.run=^TestOpen
reader      -test.skip=^(TestFindMappingManyMappings|TestTornReads|TestSeedCorpus)$
kernel
'
# The arm64 guests' plan in CI (KERNEL_ARM64_PLAN=short): the page size
# (the reader) and the collector at its defaults (publication events: a
# late publisher reported within 2 s, the first batch enriched, an exit).
SHORT_PLAN='
reader      -test.skip=^(TestFindMappingManyMappings|TestTornReads|TestSeedCorpus)$
kernel
'
PLAN=${KERNEL_PLAN:-$PLAN}
case ${KERNEL_ARM64_PLAN:-} in
short) ARM64_PLAN=$SHORT_PLAN ;;
"") ARM64_PLAN=$PLAN ;;
*) ARM64_PLAN=$KERNEL_ARM64_PLAN ;;
esac
# Where each package's sources are (for go test -c and its testdata).
declare -A PKGDIR=([pubevents]=internal/pubevents [procevents]=internal/procevents [tracker]=internal/tracker [hostopen]=internal/hostopen [e2e]=test/e2e [kernel]=test/kernel [reader]=internal/reader)

CACHE=${KERNEL_CACHE:-$HOME/.cache/processctx-kernels}
WORK=_build/kernel-test
BOOT_TIMEOUT=${KERNEL_BOOT_TIMEOUT:-600}
MEM=${KERNEL_QEMU_MEM:-2G}
JOBS=${KERNEL_JOBS:-2}
GO=${GO:-go}
MAKE=${MAKE:-make}
# util-linux's tools the tests run, which busybox's lack options of.
UTIL_LINUX="/usr/bin/setpriv /usr/bin/unshare"

log() { printf '%s kernel-test: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }
# apt_ arch apt-get|apt-cache args...: Debian's SUITES for arch.
DEBIAN_APT=$PWD/tools/debian-apt.sh
apt_() { "$DEBIAN_APT" "$1" "$SUITES" "${@:2}"; }

# --- Kernels: the newest package matching each line, its vmlinuz (and
# config) cached by package and version.
newest() { apt_ "$1" apt-cache pkgnames linux-image- | grep -E "$2" | sort -V | tail -1 || true; }
# fetch arch dir package version: download the package, keep its vmlinuz.
fetch() {
	local arch=$1 dir=$2 pkg=$3 ver=$4 tmp
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/.download.XXXXXX")
	(cd "$tmp" && apt_ "$arch" apt-get download -q "$pkg=$ver" >&2) || true
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
declare -A VMLINUZ VERSION PACKAGE EXPECT_PUB EXPECT_PROC ARCH
declare -A updated
names=()
arches=()
while read -r name arch re pub proc; do
	[ -n "$name" ] || continue
	if [ -n "${KERNELS:-}" ] && [[ " $KERNELS " != *" $name "* ]]; then continue; fi
	for try in 1 2; do
		pkg=$(newest "$arch" "$re")
		ver=
		[ -z "$pkg" ] || ver=$(apt_ "$arch" apt-cache show --no-all-versions "$pkg" | awk '/^Version:/ { print $2; exit }')
		dir="$CACHE/${pkg}_$ver"
		if [ -n "$pkg" ] && [ -s "$dir/vmlinuz" ]; then break; fi
		if [ -n "$pkg" ]; then
			log "$name: downloading $pkg $ver"
			fetch "$arch" "$dir" "$pkg" "$ver" && break
		fi
		# No match, or a version the archive no longer has: stale lists.
		[ -z "${updated[$arch]:-}" ] || die "$name: no package matching $re could be downloaded"
		log "$name: updating apt's package lists ($arch)"
		"$DEBIAN_APT" -update "$arch" "$SUITES" apt-cache policy >/dev/null
		updated[$arch]=1
	done
	names+=("$name")
	[[ " ${arches[*]} " == *" $arch "* ]] || arches+=("$arch")
	VMLINUZ[$name]=$dir/vmlinuz VERSION[$name]=$ver PACKAGE[$name]=$pkg ARCH[$name]=$arch
	EXPECT_PUB[$name]=$pub EXPECT_PROC[$name]=$proc
done <<<"$MATRIX"
[ ${#names[@]} -gt 0 ] || die "no kernel selected (KERNELS=$KERNELS)"
# KERNEL_FETCH_ONLY: the downloads alone, before the collector is built
# (.ci/run fetches while it compiles).
if [ -n "${KERNEL_FETCH_ONLY:-}" ]; then
	log "kernels in $CACHE: ${names[*]}"
	exit 0
fi

# --- What the host needs (Debian packages), installed when missing: qemu
# for each architecture, a C compiler that links static binaries for it.
need=()
for arch in "${arches[@]}"; do
	case $arch in
	amd64)
		command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
		command -v gcc >/dev/null || need+=(gcc)
		[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || need+=(libc6-dev) # gcc -static
		;;
	arm64)
		command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
		command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
		[ -e /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
		;;
	esac
done
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q "${need[@]}"
fi

# debs arch dir package...: Debian's packages of arch, downloaded and
# unpacked (not installed) into dir, cached by version in CACHE.
debs() {
	local arch=$1 dir=$2 pkg ver deb
	shift 2
	mkdir -p "$dir" "$CACHE/debs"
	for pkg in "$@"; do
		ver=$(apt_ "$arch" apt-cache show --no-all-versions "$pkg" | awk '/^Version:/ { print $2; exit }')
		[ -n "$ver" ] || die "no $pkg for $arch in $SUITES"
		deb=$CACHE/debs/${pkg}_${ver//:/%3a}_$arch.deb
		if [ ! -s "$deb" ]; then
			(cd "$CACHE/debs" && apt_ "$arch" apt-get download -q "$pkg:$arch=$ver" >&2) ||
				die "download $pkg:$arch $ver"
			[ -s "$deb" ] || die "download $pkg:$arch $ver: no $deb"
		fi
		dpkg-deb -x "$deb" "$dir"
	done
}

# --- The initramfs of each architecture, shared by its kernels (Debian's
# kernels have all the tests need built in: BPF, BTF, the proc connector,
# tracefs, cgroup2).
# initramfs arch plan: builds $WORK/initramfs-<arch>.cpio.
initramfs() {
	local arch=$1 plan=$2 root=$WORK/root-$1 cc collector=bin/linux_$1/otelcol-processctx
	log "$arch: building the test binaries and the initramfs"
	# The release's build of the collector (one build path: make release
	# ships this binary).
	"$MAKE" --no-print-directory "$collector" >&2
	if readelf -l "$collector" | grep -q INTERP; then
		die "$collector is not static: the guests have no libc"
	fi
	rm -rf "$root" && mkdir -p "$root"/{bin,etc,proc,sys,dev,tmp,root,opt/tests,opt/publishers,opt/bin}
	while read -r pkg _; do
		[ -n "$pkg" ] || continue
		src=${PKGDIR[$pkg]}
		CGO_ENABLED=0 GOARCH=$arch "$GO" test -c -o "$root/opt/tests/$pkg.test" "./$src"
		mkdir -p "$root/opt/pkg/$pkg"
		[ -d "$src/testdata" ] && cp -r "$src/testdata" "$root/opt/pkg/$pkg/"
	done <<<"$plan"
	CGO_ENABLED=0 GOARCH=$arch "$GO" build -o "$root/opt/publishers/go-publisher" ./cmd/ctxpublisher
	case $arch in
	amd64) cc=gcc ;;
	arm64) cc=aarch64-linux-gnu-gcc ;;
	esac
	# pubtest's flags, static: the guest has no libc.
	$cc -static -O2 -Wall -Wextra -Werror -std=gnu11 -pthread -o "$root/opt/publishers/c-publisher" testdata/cpublisher/publisher.c
	# BenchmarkHostCost's syscall loop (HOSTCOST_GETPPID), for KERNEL_PLAN runs.
	$cc -static -O2 -o "$root/opt/publishers/getppid" test/e2e/testdata/getppid/getppid.c
	cp "$collector" "$root/opt/bin/otelcol-processctx"
	# test/e2e (KERNEL_PLAN runs) runs the collector at <repository>/bin
	# (pubtest.RepoRoot: the checkout's path, compiled into the test
	# binaries): the same path inside, which may well be under /tmp (the guest
	# keeps the initramfs's /tmp: no tmpfs over it).
	mkdir -p "$root$PWD/bin"
	ln "$root/opt/bin/otelcol-processctx" "$root$PWD/bin/otelcol-processctx"
	# A static busybox: the guest's shell and tools. util-linux's setpriv
	# (test/e2e switches users with it; busybox's lacks --reuid) and
	# unshare (the reader's and pubtest's pid namespaces; busybox's lacks
	# --kill-child), with the shared libraries they load.
	case $arch in
	amd64)
		cp /bin/busybox "$root/bin/busybox"
		for f in $(ldd $UTIL_LINUX | grep -o '/[^ :]*' | sort -u); do
			mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f"
		done
		;;
	*)
		# Debian's packages of the architecture, unpacked: busybox-static's
		# busybox; the tools, their loader and the libraries their ELF
		# headers name, from util-linux, libcap-ng0 and libc6.
		local x=$WORK/debs-$arch lib f tool interp
		rm -rf "$x"
		debs "$arch" "$x" busybox-static util-linux libcap-ng0 libc6
		cp "$x/bin/busybox" "$root/bin/busybox"
		for tool in $UTIL_LINUX; do
			mkdir -p "$root$(dirname "$tool")" && cp "$x$tool" "$root$tool"
			interp=$(readelf -l "$x$tool" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
			mkdir -p "$root$(dirname "$interp")" && cp -L "$x$interp" "$root$interp"
			for lib in $(readelf -d "$x$tool" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
				f=$(cd "$x" && find lib usr/lib -name "$lib" 2>/dev/null | head -1)
				[ -n "$f" ] || die "$tool ($arch) needs $lib, which Debian's packages here lack"
				mkdir -p "$root/$(dirname "$f")" && cp -L "$x/$f" "$root/$f"
			done
		done
		;;
	esac
	cp test/kernel/init.sh "$root/init"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	echo "$plan" >"$root/opt/plan"
	chmod 1777 "$root/tmp"
	# Uncompressed: decompressing under TCG would cost more than the copy.
	(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) >"$WORK/initramfs-$arch.cpio"
	log "$arch: initramfs $(du -h "$WORK/initramfs-$arch.cpio" | cut -f1)"
}
mkdir -p "$WORK"
for arch in "${arches[@]}"; do
	case $arch in
	arm64) initramfs "$arch" "$ARM64_PLAN" ;;
	*) initramfs "$arch" "$PLAN" ;;
	esac
done

# --- Boots. One attempt: its serial console in $WORK/logs/<name>.<n>.log.
rm -rf "$WORK/logs" && mkdir -p "$WORK/logs"
# A kernel's own report of trouble (printk lines carry a timestamp).
KERNEL_TROUBLE='^\[ *[0-9]+\.[0-9]+\] .*(Oops|BUG:|Kernel panic|WARNING:)'
boot() { # name attempt
	local name=$1 n=$2 out="$WORK/logs/$1.$2.log" arch=${ARCH[$1]} qemu
	# Single-threaded TCG: QEMU 7.2's multi-threaded TCG oopses x86 guests
	# at jump-label patching. -no-reboot with panic=-1: a panic ends qemu.
	case $arch in
	amd64) qemu=(qemu-system-x86_64 -append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init ${KERNEL_GUEST_ENV:-}") ;;
	# -cpu max with pointer authentication's cheap implementation-defined
	# algorithm: Debian's arm64 kernels sign every return address, which
	# QARMA5 makes slow under TCG.
	arm64) qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -append "console=ttyAMA0 loglevel=4 panic=-1 rdinit=/init ${KERNEL_GUEST_ENV:-}") ;;
	esac
	timeout --foreground -k 10 "$BOOT_TIMEOUT" "${qemu[@]}" \
		-accel tcg,thread=single -m "$MEM" -smp 2 -nographic -no-reboot \
		-kernel "${VMLINUZ[$name]}" -initrd "$WORK/initramfs-$arch.cpio" \
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
	"eBPF kprobe"*) echo kprobe ;;
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
	echo "=== $name (${ARCH[$name]}, ${PACKAGE[$name]} ${VERSION[$name]}, $(grep -m1 '^KMATRIX-BOOTED' "$out" | cut -d' ' -f2)): ${secs}s${note:+, $note}"
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
