#!/bin/sh
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Copies the build host's journalctl and the shared libraries it loads
# (as ldd lists them: libsystemd-shared, libc and the rest) into DIR, at
# the same paths, for the image (Containerfile): the journald receiver runs
# journalctl, and an image FROM scratch has none. No registry is needed;
# the build host needs systemd's journalctl (Debian, Ubuntu: package
# systemd), whose version the image then has: journalctl reads journals of
# its own and older systemd versions.
#
# usage: tools/stage-journalctl.sh DIR
set -eu
dest=$1

jctl=$(command -v journalctl || true)
if [ -z "$jctl" ]; then
	echo "journalctl is missing: the image carries the build host's (Debian, Ubuntu: apt-get install systemd)" >&2
	exit 1
fi
copy() {
	mkdir -p "$dest$(dirname "$2")"
	cp -L "$1" "$dest$2"
}
copy "$jctl" /usr/bin/journalctl
# "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and the loader's
# "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
libs=$(ldd "$jctl" | grep -o '/[^ ]*' || true)
if [ -z "$libs" ]; then
	echo "ldd lists no libraries of $jctl" >&2
	exit 1
fi
for lib in $libs; do
	copy "$lib" "$lib"
done

# Their licenses: the Debian copyright file of each package they come from
# (journalctl is systemd's, LGPL-2.1-or-later; the libraries' vary), at
# /usr/share/doc/<package>/copyright in the image as on the host. dpkg
# knows a file by the path its package ships, before or after /usr merged.
owner() {
	for p in "$1" "$(readlink -f "$1")" "${1#/usr}" "/usr$1"; do
		pkg=$(dpkg -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1)
		[ -n "$pkg" ] && echo "$pkg" && return
	done
	echo "no package ships $1: the image carries it without its copyright file" >&2
}
if command -v dpkg >/dev/null; then
	pkgs=$(for f in "$jctl" $libs; do owner "$f"; done | sort -u)
	for pkg in $pkgs; do
		[ -f "/usr/share/doc/$pkg/copyright" ] && copy "/usr/share/doc/$pkg/copyright" "/usr/share/doc/$pkg/copyright"
	done
	echo "copyright files of $(echo "$pkgs" | wc -w) packages staged in $dest/usr/share/doc"
else
	echo "no dpkg: the image carries journalctl and its libraries without their copyright files" >&2
fi
echo "journalctl $("$jctl" --version | head -n 1 | cut -d' ' -f2) and $(echo "$libs" | wc -w) libraries staged in $dest"
