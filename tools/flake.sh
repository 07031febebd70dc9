#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Finds flaky tests: runs Go test packages with -race -count=N while a CPU
# hog occupies every core, then prints each test that failed and how often.
#
#   tools/flake.sh [-count N] [-run REGEXP] [-hogs K] [-p P] PACKAGE...
#
# The hogs are busy loops at normal priority, one per core unless -hogs says
# otherwise: the tests get what is left, as on a CI machine that builds beside
# them. The packages run side by side as go test runs them (-p, default the
# number of cores), so that tests that read the whole host meet the other
# packages' hostile processes, as they do in make test. Exit status 1 when any test failed. The whole output is kept in
# _build/flake/<time>.log. See docs/testing.md, "Flaky tests".
set -euo pipefail
GO=${GO:-go}
count=20 run= hogs=$(nproc) par=$(nproc)
while [ $# -gt 0 ]; do
	case $1 in
	-count) count=$2; shift 2 ;;
	-run) run=$2; shift 2 ;;
	-hogs) hogs=$2; shift 2 ;;
	-p) par=$2; shift 2 ;;
	-*) echo "unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-count N] [-run REGEXP] [-hogs K] [-p P] PACKAGE..." >&2; exit 2; }

mkdir -p _build/flake
log=_build/flake/$(date +%Y%m%d-%H%M%S).log

# Build first, without the hogs: a compile is not what is being tested.
$GO test -race -count=1 -run '^$' "$@" >/dev/null

pids=()
stop_hogs() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done

echo "go test -race -p $par -count=$count ${run:+-run '$run'} $* beside $hogs CPU hog(s); log: $log"
start=$(date +%s)
status=0
$GO test -race -p "$par" -count="$count" ${run:+-run "$run"} -timeout 60m -v "$@" >"$log" 2>&1 || status=$?
stop_hogs
pids=()

echo "took $(( $(date +%s) - start )) s"
grep -E '^(ok|FAIL|panic:)' "$log" | grep -v '^FAIL$' || true
passes=$(grep -cE '^\s*--- PASS' "$log" || true)
fails=$(grep -E '^\s*--- FAIL' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort | uniq -c | sort -rn || true)
echo "test runs passed: $passes"
if [ -n "$fails" ]; then
	echo "failed (runs, test):"
	echo "$fails"
fi
if [ "$status" -ne 0 ] && [ -z "$fails" ]; then
	echo "go test failed without a failing test (a build error, a panic or a timeout): see $log"
fi
exit "$status"
