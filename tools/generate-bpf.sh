#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Regenerates the BPF object and Go loader of internal/pubevents (bpf2go)
# when their sources changed, and only then: the outputs are committed
# because CI has no clang. The sources' hash is kept in a committed stamp;
# an unchanged hash needs no compiler at all.
#
#   tools/generate-bpf.sh          regenerate if needed
#   tools/generate-bpf.sh -force   regenerate anyway
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pkg=internal/pubevents
stamp=$root/$pkg/bpf/.source-sha256

# The C sources, in a fixed order, by path relative to the root, and the
# bpf2go command line of gen.go (its flags change the output too; the rest
# of that file, its comments and license header, does not).
sources_hash() {
	(
		cd "$root"
		shopt -s nullglob
		files=("$pkg"/bpf/*.c "$pkg"/bpf/*.h)
		printf '%s\n' "${files[@]}" | LC_ALL=C sort | xargs sha256sum
		grep '^//go:generate' "$pkg"/gen.go
	) | sha256sum | cut -d' ' -f1
}

want=$(sources_hash)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "${1:-}" != "-force" ] && [ "$want" = "$have" ]; then
	echo "$pkg: BPF object up to date"
	exit 0
fi

missing=()
command -v clang-16 >/dev/null || missing+=(clang-16)
command -v llvm-strip-16 >/dev/null || missing+=(llvm-strip-16)
[ -f /usr/include/bpf/bpf_helpers.h ] || missing+=(/usr/include/bpf/bpf_helpers.h)
if [ ${#missing[@]} -gt 0 ]; then
	echo "$pkg: regenerating the BPF object (its sources differ from bpf/.source-sha256) needs ${missing[*]}: apt-get install clang-16 llvm-16 libbpf-dev" >&2
	exit 1
fi

echo "$pkg: generating the BPF object"
(cd "$root" && go generate ./$pkg/)
echo "$want" >"$stamp"
