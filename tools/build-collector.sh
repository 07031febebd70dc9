#!/bin/sh
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Builds a collector distribution with ocb, saying first what is about to
# happen (the first build downloads the collector's modules and compiles
# about 1,200 packages for this distribution: minutes) and, every 15 s,
# how long it has been going, so that a first build does not look stuck.
#
#   tools/build-collector.sh BUILDER MANIFEST
#       ocb generates the distribution's sources in the manifest's
#       output_path and compiles them for this host (README.md: your own
#       collector);
#   tools/build-collector.sh -sources BUILDER MANIFEST
#       ocb only generates them (main.go, components.go, and go.mod with
#       every component's module: go mod tidy) — the Makefile's first step;
#   tools/build-collector.sh -arch ARCH MANIFEST OUT
#       compiles the generated sources for linux/ARCH into OUT as ocb
#       compiles them and as a release ships them: static (CGO_ENABLED=0),
#       -trimpath, stripped (-ldflags='-s -w') — the Makefile's
#       bin/linux_<arch>/otelcol-processctx.
set -eu
mode=all
case ${1:-} in
-sources | -arch)
	mode=$1
	shift
	;;
esac
[ $# -eq 2 ] || { [ "$mode" = -arch ] && [ $# -eq 3 ]; } || {
	echo "usage: $0 [-sources] BUILDER MANIFEST | -arch ARCH MANIFEST OUT" >&2
	exit 2
}

# run CMD...: runs CMD with a heartbeat, then says how long it took.
run() {
	start=$(date +%s)
	"$@" &
	pid=$!
	(
		while kill -0 "$pid" 2>/dev/null; do
			sleep 15
			kill -0 "$pid" 2>/dev/null && echo "... still building ($(($(date +%s) - start)) s)"
		done
	) &
	beat=$!
	status=0
	wait "$pid" || status=$?
	kill "$beat" 2>/dev/null || true
	wait "$beat" 2>/dev/null || true
	if [ "$status" -ne 0 ]; then
		echo "$1 failed (exit $status) after $(($(date +%s) - start)) s; see its output above" >&2
		exit "$status"
	fi
	echo "Done in $(($(date +%s) - start)) s."
}

# generated MANIFEST: the manifest's output directory.
generated() {
	out=$(sed -n 's/^[[:space:]]*output_path:[[:space:]]*//p' "$1" | head -n 1)
	echo "${out:-_build}"
}

if [ "$mode" = -arch ]; then
	arch=$1 manifest=$2 out=$3
	echo "Compiling the collector for linux/$arch (a first build for an architecture"
	echo "compiles about 1,200 packages: minutes; later ones reuse Go's cache)..."
	mkdir -p "$(dirname "$out")"
	abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
	(
		cd "$(generated "$manifest")"
		CGO_ENABLED=0 GOOS=linux GOARCH=$arch
		export CGO_ENABLED GOOS GOARCH
		run go build -trimpath -ldflags='-s -w' -o "$abs.new" .
	)
	# A rename, not a copy over: a running collector keeps its binary.
	mv -f "$abs.new" "$abs"
	exit 0
fi

builder=$1 manifest=$2
# What this build is about to do, as far as can be told before it runs:
# the manifest's output directory is absent before its first build, and
# the module cache holds the manifest's last module once a build of these
# versions downloaded them (Go's build cache, which decides between
# seconds and minutes of compiling, cannot be asked).
out=$(generated "$manifest")
last=$(sed -n 's/^[[:space:]]*-[[:space:]]*gomod:[[:space:]]*//p' "$manifest" | tail -n 1)
zip="$(go env GOMODCACHE)/cache/download/${last% *}/@v/${last#* }.zip"
if [ "$mode" = -sources ] && [ -e "$zip" ]; then
	echo "Generating the collector's sources with ocb (its modules are in Go's module cache: seconds)..."
elif [ "$mode" = -sources ]; then
	echo "Generating the collector's sources with ocb: downloading its modules"
	echo "(about 700 MB) takes minutes (docs/deployment.md, Build time)..."
elif [ -d "$out" ]; then
	echo "Building the collector with ocb (incremental: usually under a minute)..."
elif [ ! -e "$zip" ]; then
	echo "Building the collector with ocb for the first time: downloading its"
	echo "modules (about 700 MB) and compiling about 1,200 packages takes several"
	echo "minutes (docs/deployment.md, Build time). Later builds take seconds."
else
	echo "Building the collector with ocb: its modules are in Go's module cache;"
	echo "compiling takes seconds when Go's build cache holds an earlier build"
	echo "of them, a few minutes when it does not."
fi

# -e lets the `go mod tidy` ocb runs pass over test-only dependencies of
# contrib modules that a module proxy does not serve (this project's lacks
# go.opentelemetry.io/collector/scraper/scrapertest v0.165.0 and contrib's
# pkg/semconvtest v0.165.1, which only hostmetricsreceiver's and the
# journald input's tests import); the build itself needs none of them, and
# fails as usual when a module it does need is missing. Go's own GOFLAGS
# (go env) are kept.
GOFLAGS="$(go env GOFLAGS) -e" CGO_ENABLED=0
export GOFLAGS CGO_ENABLED
if [ "$mode" = -sources ]; then
	run "$builder" --config "$manifest" --skip-compilation
else
	run "$builder" --config "$manifest"
fi
