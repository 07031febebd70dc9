#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Build mdatagen from the copy of its source in tools/mdatagen-src (see
# SOURCE.md there: cmd/mdatagen is not served by the Go module proxy).
# Dependencies come from the module proxy.
# Usage: tools/build-mdatagen.sh [output-path]   (default: ./bin/mdatagen)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-./bin/mdatagen}"
case "$out" in /*) ;; *) out="$PWD/${out#./}" ;; esac
mkdir -p "$(dirname "$out")"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod -buildvcs=false"
export GOWORK=off
cd "$here/mdatagen-src/cmd/mdatagen"
go build -trimpath -o "$out" .
echo "built $out"
