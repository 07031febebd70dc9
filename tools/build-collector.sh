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

# The manifest's output directory: absent before a first build.
out=$(sed -n 's/^[[:space:]]*output_path:[[:space:]]*//p' "$manifest" | head -n 1)
if [ -d "${out:-_build}" ]; then
	echo "Building the collector with ocb (incremental: usually under a minute)..."
else
	echo "Building the collector with ocb for the first time: downloading the"
	echo "collector's modules and compiling about 1,200 packages takes several"
	echo "minutes (README.md, Build time). Later builds reuse Go's caches."
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
