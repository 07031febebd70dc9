#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# The license header of every source file: checks it (make lint) or adds it
# where it is missing (make spdx). Idempotent: run `tools/spdx.sh add` again
# after a merge brings files without it.
#
#   tools/spdx.sh check [FILE...]   exit 1, naming them, when files lack it
#   tools/spdx.sh add [FILE...]     add it to the files that lack it
#
# Without FILEs: the repository's files (tracked, and untracked ones that
# .gitignore does not ignore). The header is, at the top of the file (after
# a #! line), followed by a blank line:
#
#   // Copyright The otelcol-processctx Authors     (# in shell and Makefiles)
#   // SPDX-License-Identifier: Apache-2.0
#
# Source files are Go (*.go), C (*.c, *.h), shell (*.sh, and files without
# a suffix whose #! line names sh or bash) and Makefiles (Makefile, *.mk).
# Not checked, and never changed:
#   - generated Go files: a line "// Code generated ... DO NOT EDIT." before
#     the package clause, Go's own rule (mdatagen's generated_*.go, bpf2go's
#     *_bpfel.go): their generator writes them, and golangci-lint skips them
#     by that line wherever it is among the leading comments;
#   - tools/mdatagen-src/: a copy of the collector's mdatagen, which keeps
#     its own headers and LICENSE.
# A file whose header names another license with its own SPDX line (the
# eBPF program, GPL-2.0-only OR BSD-2-Clause as the kernel's GPL-only
# helpers need) passes, is left alone and is listed.
set -euo pipefail

holder='Copyright The otelcol-processctx Authors'
spdx='SPDX-License-Identifier: Apache-2.0'

usage() {
	echo "usage: $0 check|add [FILE...]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in check | add) ;; *) usage ;; esac

# comment_of FILE: the line-comment leader of a source file, or nothing for
# a file that is not source.
comment_of() {
	local f=$1 base=${1##*/} first
	case $f in tools/mdatagen-src/* | ./tools/mdatagen-src/*) return ;; esac
	case $base in
	*.go | *.c | *.h) echo '//' ;;
	*.sh | Makefile | *.mk) echo '#' ;;
	*.*) ;;
	*)
		IFS= read -r first <"$f" 2>/dev/null || true
		case $first in '#!'*sh | '#!'*bash | '#!'*'sh '* | '#!'*'bash '*) echo '#' ;; esac
		;;
	esac
}

# generated FILE: a Go file that says it is generated before its package
# clause.
generated() {
	case $1 in *.go) ;; *) return 1 ;; esac
	awk '/^\/\/ Code generated .* DO NOT EDIT\.$/ { generated = 1; exit } /^package[ \t]/ { exit } END { exit !generated }' "$1"
}

# header_state FILE LEADER: "ok" (the header at the top), "own" (an SPDX
# line of another license among the first lines), "missing" (no SPDX line
# at all) or "misplaced" (an Apache-2.0 SPDX line, not as the header).
header_state() {
	local f=$1 c=$2 skip=0 first l1 l2
	IFS= read -r first <"$f" || true
	case $first in '#!'*) skip=1 ;; esac
	l1=$(sed -n "$((skip + 1))p" "$f")
	l2=$(sed -n "$((skip + 2))p" "$f")
	if [ "$l1" = "$c $holder" ] && [ "$l2" = "$c $spdx" ]; then
		echo ok
		return
	fi
	local found
	found=$(head -n 12 "$f" | grep -o 'SPDX-License-Identifier:.*' | head -n 1 || true)
	case $found in
	'') echo missing ;;
	"$spdx") echo misplaced ;;
	*) echo own ;;
	esac
}

# add_header FILE LEADER: the header after the #! line or at the top, then a
# blank line unless one follows already.
add_header() {
	local f=$1 c=$2 skip=0 first tmp next
	IFS= read -r first <"$f" || true
	case $first in '#!'*) skip=1 ;; esac
	next=$(sed -n "$((skip + 1))p" "$f")
	tmp=$(mktemp "$(dirname "$f")/.spdx.XXXXXX")
	{
		[ $skip -eq 1 ] && printf '%s\n' "$first"
		printf '%s %s\n%s %s\n' "$c" "$holder" "$c" "$spdx"
		[ -n "$next" ] && echo
		tail -n +$((skip + 1)) "$f"
	} >"$tmp"
	chmod --reference="$f" "$tmp"
	mv "$tmp" "$f"
}

if [ $# -eq 0 ]; then
	cd "$(git rev-parse --show-toplevel)"
	mapfile -t files < <(git ls-files --cached --others --exclude-standard | LC_ALL=C sort -u)
else
	files=("$@")
fi

checked=0 generated_n=0 added=0
declare -a missing=() misplaced=() own=()
for f in "${files[@]}"; do
	[ -f "$f" ] || continue # deleted in the work tree
	c=$(comment_of "$f")
	[ -n "$c" ] || continue
	if generated "$f"; then
		generated_n=$((generated_n + 1))
		continue
	fi
	checked=$((checked + 1))
	case $(header_state "$f" "$c") in
	ok) ;;
	own) own+=("$f: $(head -n 12 "$f" | grep -o 'SPDX-License-Identifier:.*' | head -n 1 | sed 's/^SPDX-License-Identifier: *//; s/ *\*\/$//')") ;;
	misplaced) misplaced+=("$f") ;;
	missing)
		if [ "$mode" = add ]; then
			add_header "$f" "$c"
			added=$((added + 1))
		else
			missing+=("$f")
		fi
		;;
	esac
done

for f in "${own[@]}"; do
	echo "spdx: under a license of its own: $f"
done
if [ "$mode" = add ]; then
	echo "spdx: added the header to $added of $checked source files ($generated_n generated ones not checked)"
else
	echo "spdx: $((checked - ${#missing[@]} - ${#misplaced[@]})) of $checked source files carry a license header ($generated_n generated ones not checked)"
fi
status=0
if [ ${#misplaced[@]} -gt 0 ]; then
	echo "spdx: an Apache-2.0 SPDX line but not as the header (the first two lines,"
	echo "after any #! line, exactly '$holder' and '$spdx') in:"
	printf '  %s\n' "${misplaced[@]}"
	status=1
fi >&2
if [ ${#missing[@]} -gt 0 ]; then
	echo "spdx: no SPDX-License-Identifier line in (run tools/spdx.sh add):"
	printf '  %s\n' "${missing[@]}"
	status=1
fi >&2
exit $status
