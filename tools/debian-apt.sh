#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# apt for another architecture or Debian release, without changing the
# machine's: runs an apt command (apt-get or apt-cache) with a private
# configuration — Debian's archive for ARCH and SUITES, its own package
# lists and cache under DEBIAN_APT_CACHE — and the machine's apt.conf.d
# (proxies, mirrors). Nothing is installed: an empty dpkg status, so apt
# resolves as for an empty system, which is what a download for an image
# or a guest wants. The lists are fetched on first use and again when a
# day old (Debian replaces its kernel and security packages often), or
# with -update.
#
#   tools/debian-apt.sh [-update] ARCH SUITES apt-get|apt-cache ARGS...
#
#   tools/debian-apt.sh arm64 "bookworm bookworm-security" apt-get download busybox-static
#   tools/debian-apt.sh arm64 trixie apt-cache pkgnames linux-image-
#
# A suite ending in -security is fetched from Debian's security archive.
# Users: the kernel matrix (test/kernel/run.sh) and the image
# (tools/stage-journalctl.sh).
set -euo pipefail

update=
if [ "${1:-}" = -update ]; then
	update=1
	shift
fi
[ $# -ge 3 ] || {
	echo "usage: $0 [-update] ARCH SUITES apt-get|apt-cache ARGS..." >&2
	exit 2
}
arch=$1 suites=$2 cmd=$3
shift 3
case $cmd in
apt-get | apt-cache) ;;
*)
	echo "$0: runs apt-get or apt-cache, not $cmd" >&2
	exit 2
	;;
esac
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cache=${DEBIAN_APT_CACHE:-$HOME/.cache/processctx-apt}
dir=$cache/$arch-${suites// /+}
mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/parts"
{
	for s in $suites; do
		case $s in
		*-security) echo "deb [arch=$arch signed-by=$keyring] $security $s main" ;;
		*) echo "deb [arch=$arch signed-by=$keyring] $mirror $s main" ;;
		esac
	done
} >"$dir/sources.list.new"
# A changed list of suites or mirrors: the lists are fetched again.
if ! cmp -s "$dir/sources.list.new" "$dir/sources.list" 2>/dev/null; then
	mv "$dir/sources.list.new" "$dir/sources.list"
	rm -f "$dir/updated"
	update=1
else
	rm -f "$dir/sources.list.new"
fi
touch "$dir/status"
opts=(
	-o "Dir::State=$dir"
	-o "Dir::State::Lists=$dir/lists"
	-o "Dir::State::status=$dir/status"
	-o "Dir::Cache=$dir"
	-o "Dir::Cache::archives=$dir/archives"
	-o "Dir::Etc::SourceList=$dir/sources.list"
	-o "Dir::Etc::SourceParts=$dir/parts"
	-o "APT::Architecture=$arch"
	-o "APT::Architectures::=$arch"
	-o "Debug::NoLocking=1"
	# (root downloads as root: apt's sandbox user may not reach $dir)
	-o "APT::Sandbox::User=root"
)
if [ -n "$update" ] || [ -z "$(find "$dir/updated" -mmin -1440 2>/dev/null)" ]; then
	echo "debian-apt: fetching the package lists of $suites for $arch" >&2
	apt-get "${opts[@]}" -q update >&2
	touch "$dir/updated"
fi
exec "$cmd" "${opts[@]}" "$@"
