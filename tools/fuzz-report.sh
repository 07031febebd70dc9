#!/bin/sh
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Runs Go fuzz targets one after the other for FUZZTIME each and prints a
# summary table at the end. Used by `make fuzz`.
#
#   tools/fuzz-report.sh FUZZTIME ./pkg:FuzzName [./pkg:FuzzName ...]
#
# GO names the go command (default go). Each target's full output goes to
# the terminal as it runs; the table is taken from its last progress line
# ("fuzz: elapsed: 1m0s, execs: N (R/sec), new interesting: I (total: T)"):
#   execs      executions in the run (the fuzzing phase, after the baseline)
#   execs/s    execs divided by the elapsed time the engine reports, which
#              includes gathering the baseline coverage
#   seeds      committed seed files in <pkg>/testdata/fuzz/<FuzzName>
#   cache      entries kept in $(go env GOCACHE)/fuzz/<import path>/<FuzzName>
#              after the run (earlier runs' and this run's new ones)
#   new        "new interesting" inputs this run added to the cache
#   total      the engine's corpus size at the end ("total": seeds, f.Add
#              seeds and cache entries)
# A target that fails (a crasher: the engine writes it to
# testdata/fuzz/<FuzzName>/) shows FAIL; the script exits 1 after the table.
# A run that ends with "context deadline exceeded" at the end of a
# duration FUZZTIME without writing a crasher is Go's own fuzzing
# coordinator racing its deadline (golang/go#75804, fixed in Go 1.27), not
# a finding: it shows "ok (deadline race)". Count budgets (FUZZTIME=10000x)
# do not race.
set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 FUZZTIME ./pkg:FuzzName..." >&2
	exit 2
fi
fuzztime=$1
shift
go=${GO:-go}
cache=$($go env GOCACHE)/fuzz
log=$(mktemp)
rows=$(mktemp)
trap 'rm -f "$log" "$rows"' EXIT

# seconds converts a Go duration as the engine prints it (1m0s, 59s, 1h2m3s).
seconds() {
	echo "$1" | awk '{
		s = 0; d = $0
		if (match(d, /[0-9]+h/)) { s += substr(d, RSTART, RLENGTH - 1) * 3600 }
		if (match(d, /[0-9]+m/)) { s += substr(d, RSTART, RLENGTH - 1) * 60 }
		if (match(d, /[0-9.]+s/)) { s += substr(d, RSTART, RLENGTH - 1) }
		print s
	}'
}

failed=0
for t in "$@"; do
	pkg=${t%%:*}
	name=${t##*:}
	echo "== fuzz $name ($pkg, $fuzztime)"
	status=ok
	dir=$($go list -f '{{.Dir}}' "$pkg")
	before=$(find "$dir/testdata/fuzz/$name" -type f 2>/dev/null | wc -l)
	$go test -run='^$' -fuzz="^$name\$" -fuzztime="$fuzztime" "$pkg" 2>&1 | tee "$log"
	# The pipeline's status is tee's: look for go test's own verdict.
	if ! grep -q '^ok' "$log"; then
		after=$(find "$dir/testdata/fuzz/$name" -type f 2>/dev/null | wc -l)
		if [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log"; then
			status="ok (deadline race)"
		else
			status=FAIL
			failed=1
		fi
	fi
	last=$(grep '^fuzz: elapsed:' "$log" | tail -n 1)
	elapsed=$(echo "$last" | sed -n 's/^fuzz: elapsed: \([^,]*\),.*/\1/p')
	execs=$(echo "$last" | sed -n 's/.* execs: \([0-9]*\) .*/\1/p')
	new=$(echo "$last" | sed -n 's/.*new interesting: \([0-9]*\).*/\1/p')
	total=$(echo "$last" | sed -n 's/.*(total: \([0-9]*\)).*/\1/p')
	secs=$(seconds "${elapsed:-0s}")
	rate=$(awk -v e="${execs:-0}" -v s="$secs" 'BEGIN { if (s > 0) printf "%.0f", e / s; else print "-" }')
	ipath=$($go list -f '{{.ImportPath}}' "$pkg")
	seeds=$(find "$dir/testdata/fuzz/$name" -type f 2>/dev/null | wc -l)
	kept=$(find "$cache/$ipath/$name" -type f 2>/dev/null | wc -l)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$pkg" "${elapsed:--}" "${execs:--}" "$rate" \
		"$seeds" "$kept" "${new:--}" "${total:--}" >>"$rows"
	[ "$status" = ok ] || sed -i "\$ s/\$/\t$status/" "$rows"
done

echo
echo "fuzz summary (FUZZTIME=$fuzztime each; corpus kept = seeds committed + cache entries in $cache/<import path>/<target>)"
{
	printf 'target\tpackage\telapsed\texecs\texecs/s\tseeds\tcache\tnew\ttotal\tresult\n'
	awk -F'\t' 'BEGIN { OFS = "\t" } { print $1, $2, $3, $4, $5, $6, $7, $8, $9, ($10 == "" ? "ok" : $10) }' "$rows"
} | awk -F'\t' '
	# Align the columns (column(1) is not everywhere).
	{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n[NR] = NF }
	END { for (r = 1; r <= NR; r++) { line = ""; for (i = 1; i <= n[r]; i++) line = line sprintf("%-" w[i] "s  ", cell[r, i]); sub(/ +$/, "", line); print line } }'

exit $failed
