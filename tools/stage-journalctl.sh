#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Stages journalctl for linux/ARCH and the shared libraries it loads into
# DIR, for the image (Containerfile): the journald receiver runs
# journalctl, and an image FROM scratch has none. Everything comes from
# Debian 12's packages of ARCH (tools/debian-apt.sh: apt-get download and
# dpkg-deb -x, nothing installed, no emulation: readelf reads any
# architecture's ELF), so each architecture's image is made the same way
# and none depends on what the build host has installed:
#
#   journalctl (package systemd) at /usr/bin/journalctl, where the image's
#   PATH finds it; then each library an ELF NEEDED entry names (and the
#   dynamic loader), found as the loader finds it (RUNPATH, then the
#   multiarch directories: the image has no ld.so.cache) in the packages
#   fetched so far, else in the packages the needing file's package
#   depends on (dpkg-shlibdeps puts a library's package there), at the
#   path its package ships it, symbolic links kept; and each of those
#   packages' copyright file at /usr/share/doc/<package>/copyright.
#
# The .debs are kept in DEBIAN_APT_CACHE (tools/debian-apt.sh's) under
# debs-ARCH, checked against the index's SHA256 before use. DEBIAN_SUITES
# names the suites (default "bookworm bookworm-security": Debian 12 with its
# security updates, whose systemd the journald receiver is tested with;
# journalctl reads journals of its own and older systemd versions).
#
# usage: tools/stage-journalctl.sh ARCH DIR
set -euo pipefail
[ $# -eq 2 ] || {
	echo "usage: $0 ARCH DIR" >&2
	exit 2
}
arch=$1 dest=$2
case $arch in
amd64) triplet=x86_64-linux-gnu ;;
arm64) triplet=aarch64-linux-gnu ;;
*)
	echo "$0: no multiarch triplet known for $arch (amd64, arm64)" >&2
	exit 2
	;;
esac
suites=${DEBIAN_SUITES:-bookworm bookworm-security}
here=$(cd "$(dirname "$0")" && pwd)
cache=${DEBIAN_APT_CACHE:-$HOME/.cache/processctx-apt}/debs-$arch
work=$(mktemp -d "${TMPDIR:-/tmp}/stage-journalctl.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache" "$dest"

fail() {
	echo "stage-journalctl ($arch): $*" >&2
	exit 1
}
apt() { "$here/debian-apt.sh" "$arch" "$suites" "$@"; }

declare -A tree    # package -> the directory it is extracted in
declare -A used    # package -> 1 when a staged file comes from it
declare -A found   # soname -> the path it was staged at
declare -A deb sum deps
libs=0

# What each package is (its .deb's name as apt-get download writes it, its
# SHA256, what it depends on: Depends and Pre-Depends, the first of
# alternatives), for systemd and every package it depends on, directly or
# not: two apt calls (each reads the package lists anew).
# shellcheck disable=SC2046 # one package name a word
apt apt-cache show --no-all-versions $(apt apt-cache depends --recurse --no-recommends --no-suggests \
	--no-conflicts --no-breaks --no-replaces --no-enhances systemd | grep -v '^[[:space:]<]') |
	awk '
	function flush() {
		if (p != "") printf "%s\t%s_%s_%s.deb\t%s\t%s\n", p, p, v, a, h, d
		p = v = a = h = d = ""
	}
	/^Package: / { flush(); p = $2 }
	/^Version: / { v = $2; gsub(/:/, "%3a", v) }
	/^Architecture: / { a = $2 }
	/^SHA256: / { h = $2 }
	/^(Pre-)?Depends: / {
		sub(/^[^:]*: /, "")
		n = split($0, alts, ",")
		for (i = 1; i <= n; i++) {
			dep = alts[i]; sub(/\|.*/, "", dep); gsub(/\([^)]*\)|:any|[[:space:]]/, "", dep)
			if (dep != "") d = d " " dep
		}
	}
	END { flush() }' >"$work/packages"
while IFS=$'\t' read -r p file hash dep; do
	deb[$p]=$cache/$file sum[$p]=$hash deps[$p]=$dep
done <"$work/packages"
[ -n "${deb[systemd]:-}" ] || fail "no package systemd in $suites for $arch"

# fetch PKG...: downloads (into the cache, once) and extracts the packages
# not fetched yet.
fetch() {
	local p missing=()
	for p; do
		[ -z "${tree[$p]:-}" ] || continue
		[ -n "${deb[$p]:-}" ] || fail "package $p: not among systemd's dependencies"
		echo "${sum[$p]}  ${deb[$p]}" | sha256sum --check --status 2>/dev/null || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		(cd "$cache" && apt apt-get -q download "${missing[@]}" >&2)
	fi
	for p; do
		[ -z "${tree[$p]:-}" ] || continue
		echo "${sum[$p]}  ${deb[$p]}" | sha256sum --check --status ||
			fail "${deb[$p]} is not the package the index names (SHA256 ${sum[$p]})"
		mkdir -p "$work/pkg/$p"
		dpkg-deb -x "${deb[$p]}" "$work/pkg/$p"
		tree[$p]=$work/pkg/$p
	done
}

# ships PATH: the fetched package that has PATH (an image path), if any.
ships() {
	local p
	for p in "${!tree[@]}"; do
		if [ -L "${tree[$p]}$1" ] || [ -e "${tree[$p]}$1" ]; then
			echo "$p"
			return
		fi
	done
}

# fetch_depends PKG: fetches the packages PKG depends on, once.
declare -A depsfetched
fetch_depends() {
	[ -z "${depsfetched[$1]:-}" ] || return 0
	depsfetched[$1]=1
	# shellcheck disable=SC2086 # one package name a word
	fetch ${deps[$1]}
}

# copy PKG FROM TO: PKG's file FROM at TO in the image (a symbolic link as
# one, and what it points to), then, for an ELF file, what it loads.
copy() {
	local pkg=$1 from=$2 to=$3 src target
	src=${tree[$pkg]}$from
	if [ -L "$dest$to" ] || [ -e "$dest$to" ]; then return; fi
	mkdir -p "$dest$(dirname "$to")"
	cp -P "$src" "$dest$to"
	used[$pkg]=1
	if [ -L "$src" ]; then
		target=$(readlink "$src")
		case $target in /*) ;; *) target=$(dirname "$from")/$target ;; esac
		target=$(realpath -m -s "$target")
		stage "$target" "$pkg"
		return
	fi
	[ "$(head -c 4 "$src" | od -An -c | tr -d ' ')" = '177ELF' ] || return 0
	load "$pkg" "$to" "$src"
}

# stage PATH PKG: PATH at its own path in the image, from the fetched
# package that ships it (PKG's dependencies fetched when none does).
stage() {
	local path=$1 pkg=$2 owner
	owner=$(ships "$path")
	if [ -z "$owner" ]; then
		fetch_depends "$pkg"
		owner=$(ships "$path")
		[ -n "$owner" ] || fail "$path: neither $pkg nor a package it depends on has it"
	fi
	copy "$owner" "$path" "$path"
}

# load PKG PATH SRC: the loader and the libraries SRC (PKG's file at PATH in
# the image) names, each where the dynamic loader looks for it.
load() {
	local pkg=$1 path=$2 src=$3 interp soname dir dirs owner elf
	elf=$(readelf -d -l "$src")
	interp=$(sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p' <<<"$elf")
	[ -z "$interp" ] || stage "$interp" "$pkg"
	dirs=()
	for dir in $(sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p' <<<"$elf" | tr ':' ' '); do
		dirs+=("${dir//\$ORIGIN/$(dirname "$path")}")
	done
	dirs+=("/lib/$triplet" "/usr/lib/$triplet" /lib /usr/lib)
	for soname in $(sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' <<<"$elf"); do
		[ -z "${found[$soname]:-}" ] || continue
		for attempt in fetched dependencies; do
			for dir in "${dirs[@]}"; do
				owner=$(ships "$dir/$soname")
				[ -n "$owner" ] || continue
				found[$soname]=$dir/$soname
				libs=$((libs + 1))
				copy "$owner" "$dir/$soname" "$dir/$soname"
				continue 3
			done
			[ $attempt = dependencies ] || fetch_depends "$pkg"
		done
		fail "$path ($pkg) loads $soname, which no package it depends on has in ${dirs[*]}"
	done
}

fetch systemd
for jctl in /usr/bin/journalctl /bin/journalctl ''; do
	[ -z "$jctl" ] || [ ! -f "${tree[systemd]}$jctl" ] || break
done
[ -n "$jctl" ] || fail "package systemd has no journalctl"
copy systemd "$jctl" /usr/bin/journalctl

# Their licenses: each package's copyright file, where Debian puts it (a
# package whose doc directory is a link to another package's has the
# other's; policy makes it depend on that package).
for pkg in "${!used[@]}"; do
	doc=/usr/share/doc/$pkg
	if [ -L "${tree[$pkg]}$doc" ]; then
		other=$(basename "$(readlink "${tree[$pkg]}$doc")")
		fetch "$other"
		mkdir -p "$dest/usr/share/doc"
		cp -P "${tree[$pkg]}$doc" "$dest$doc"
		pkg=$other doc=/usr/share/doc/$other
	fi
	[ -f "${tree[$pkg]}$doc/copyright" ] || fail "package $pkg has no $doc/copyright"
	mkdir -p "$dest$doc"
	cp "${tree[$pkg]}$doc/copyright" "$dest$doc/copyright"
done
echo "journalctl $(dpkg-deb -f "${deb[systemd]}" Version) for $arch and $libs libraries, from ${#used[@]} Debian packages (${#tree[@]} fetched), staged in $dest"
