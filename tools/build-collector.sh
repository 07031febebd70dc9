#!/bin/sh
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# The collector distribution's two build steps (the Makefile's), each
# saying first what is about to happen and, every 15 s, how long it has
# been going, so that a first build does not look stuck:
#
#   tools/build-collector.sh generate BUILDER MANIFEST
#       ocb writes the distribution's sources into the manifest's
#       output_path (main.go, components.go, and go.mod with every
#       component's module: go mod tidy, which downloads them on a first
#       build) and compiles nothing (--skip-compilation);
#   tools/build-collector.sh compile ARCH MANIFEST OUT
#       compiles those sources for linux/ARCH into OUT as ocb compiles them
#       and as a release ships them: static (CGO_ENABLED=0), -trimpath,
#       stripped (-ldflags='-s -w'). A first compile for an architecture
#       compiles about 1,200 packages (minutes); later ones take Go's cache.
set -eu
mode=$1
shift

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

# The manifest's output directory.
generated() {
	out=$(sed -n 's/^[[:space:]]*output_path:[[:space:]]*//p' "$1" | head -n 1)
	echo "${out:-_build}"
}

case $mode in
generate)
	builder=$1 manifest=$2
	if [ -f "$(generated "$manifest")/go.sum" ]; then
		echo "Generating the collector's sources with ocb (incremental: seconds)..."
	else
		echo "Generating the collector's sources with ocb for the first time: it"
		echo "downloads the collector's modules (minutes; README.md, Build time)."
	fi
	# -e lets the `go mod tidy` ocb runs pass over test-only dependencies of
	# contrib modules that a module proxy does not serve (this project's
	# lacks go.opentelemetry.io/collector/scraper/scrapertest v0.165.0 and
	# contrib's pkg/semconvtest v0.165.1, which only hostmetricsreceiver's
	# and the journald input's tests import); the build itself needs none of
	# them, and fails as usual when a module it does need is missing. Go's
	# own GOFLAGS (go env) are kept.
	GOFLAGS="$(go env GOFLAGS) -e" CGO_ENABLED=0
	export GOFLAGS CGO_ENABLED
	run "$builder" --config "$manifest" --skip-compilation
	;;
compile)
	arch=$1 manifest=$2 out=$3
	echo "Compiling the collector for linux/$arch (a first build for an architecture compiles"
	echo "about 1,200 packages: minutes; later ones reuse Go's cache)..."
	mkdir -p "$(dirname "$out")"
	abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
	# A rename, not a copy over: a running collector keeps its binary.
	(
		cd "$(generated "$manifest")"
		CGO_ENABLED=0 GOOS=linux GOARCH=$arch
		export CGO_ENABLED GOOS GOARCH
		run go build -trimpath -ldflags='-s -w' -o "$abs.new" .
	)
	mv -f "$abs.new" "$abs"
	;;
*)
	echo "usage: $0 generate BUILDER MANIFEST | compile ARCH MANIFEST OUT" >&2
	exit 2
	;;
esac
