#!/bin/sh
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Builds the collector distribution with ocb, saying first what is about to
# happen (the first build downloads the collector's modules and compiles
# about 1,200 packages for this distribution: minutes) and how long it has
# been going, so that a first `make run` does not look stuck.
#
# usage: tools/build-collector.sh BUILDER MANIFEST
set -eu
builder=$1
manifest=$2

# What this build is about to do, as far as can be told before it runs:
# the manifest's output directory is absent before its first build, and
# the module cache holds the manifest's last module once a build of these
# versions downloaded them (Go's build cache, which decides between
# seconds and minutes of compiling, cannot be asked).
out=$(sed -n 's/^[[:space:]]*output_path:[[:space:]]*//p' "$manifest" | head -n 1)
last=$(sed -n 's/^[[:space:]]*-[[:space:]]*gomod:[[:space:]]*//p' "$manifest" | tail -n 1)
zip="$(go env GOMODCACHE)/cache/download/${last% *}/@v/${last#* }.zip"
if [ -d "${out:-_build}" ]; then
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
goflags="$(go env GOFLAGS) -e"

start=$(date +%s)
CGO_ENABLED=0 GOFLAGS="$goflags" "$builder" --config "$manifest" &
pid=$!
# A heartbeat while ocb works: its own log says which step it is at.
(
	while kill -0 "$pid" 2>/dev/null; do
		sleep 15
		kill -0 "$pid" 2>/dev/null && echo "... still building ($(( $(date +%s) - start )) s)"
	done
) &
beat=$!
status=0
wait "$pid" || status=$?
kill "$beat" 2>/dev/null || true
wait "$beat" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
	echo "ocb failed (exit $status) after $(( $(date +%s) - start )) s; see its output above" >&2
	exit "$status"
fi
echo "Built in $(( $(date +%s) - start )) s."
