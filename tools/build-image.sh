#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# The collector's OCI image for each ARCH (make image; Containerfile), with
# podman, from any host: the image is FROM scratch plus files, so nothing
# runs inside it while it is built and no emulation is needed. For each
# architecture a context _image/<arch>/ holds what the Containerfile copies
# (bin/linux_<arch>/otelcol-processctx, journalctl with its libraries from
# Debian's packages of <arch>: tools/stage-journalctl.sh; the default
# config, the build host's CA bundle, the licenses), built with
# --platform linux/<arch> and tagged IMAGE-<arch>; then a manifest list
# naming them all is left at IMAGE.
#
# podman 4.3 (Debian 12's), what this is written for:
#   - `podman run IMAGE`, `podman image inspect IMAGE` and `podman inspect
#     IMAGE` take the list's image of this host's architecture; `--arch` /
#     `--platform` do not choose another from a local list (they run this
#     host's anyway): run IMAGE-<arch>, or REPOSITORY@<digest> from `podman
#     manifest inspect IMAGE`.
#   - `podman rmi IMAGE` does not remove a list (`podman manifest rm` does).
#   - The list's images need a tag of their own: `podman image prune`
#     removes untagged ones, even a list's.
#   - While a list is stored, `podman images` fails ("fetching target
#     platform image selected from image index") if the store also holds an
#     image without layers (podman#19757; fixed by containers/common#1651,
#     in podman 4.8), such as what `podman build --layers` leaves for
#     a Containerfile's instructions before its first COPY: these images
#     are built with --layers=false, which leaves none.
#
# Environment: IMAGE, VERSION, REVISION (make image sets them; REVISION
# may be empty).
#
# usage: tools/build-image.sh ARCH...
set -euo pipefail
cd "$(dirname "$0")/.."
: "${IMAGE:?IMAGE is required}" "${VERSION:?VERSION is required}"
# The commit (empty outside a git work tree: the label says unknown then).
revision=()
[ -z "${REVISION:-}" ] || revision=(--build-arg REVISION="$REVISION")
[ $# -gt 0 ] || {
	echo "usage: $0 ARCH..." >&2
	exit 2
}
command -v podman >/dev/null || {
	echo "podman is needed for the image (apt-get install podman; see .ci/run)" >&2
	exit 1
}

# The images of the same files, names and build arguments are kept: a make
# test after a make image (as .ci/run runs them) builds nothing. (A newer
# Debian package alone does not rebuild them; a new commit does.)
# id NAME: the id of the image NAME, if there is one.
id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }
# ids ARCH...: those of the images IMAGE-<arch>.
ids() {
	local arch
	for arch; do id "$IMAGE-$arch"; done
}
key=$(
	{
		printf '%s\n' "$IMAGE" "$VERSION" "${REVISION:-}" "$*"
		cat Containerfile tools/build-image.sh tools/stage-journalctl.sh deploy/container/config.yaml \
			/etc/ssl/certs/ca-certificates.crt LICENSE LICENSES/*
		for arch; do cat "bin/linux_$arch/otelcol-processctx"; done
	} | sha256sum | cut -d' ' -f1
)
if [ -f _image/built ] && [ "$(head -n 1 _image/built)" = "$key" ] &&
	podman manifest exists "$IMAGE" 2>/dev/null && [ "$(sed 1d _image/built)" = "$(ids "$@")" ]; then
	echo "image $IMAGE (${*/#/linux/}): up to date"
	exit 0
fi

rm -rf _image
for arch; do
	ctx=_image/$arch
	mkdir -p "$ctx/rootfs/licenses"
	cp "bin/linux_$arch/otelcol-processctx" "$ctx/otelcol-processctx"
	cp deploy/container/config.yaml /etc/ssl/certs/ca-certificates.crt "$ctx/"
	cp -r LICENSE LICENSES "$ctx/rootfs/licenses/"
	tools/stage-journalctl.sh "$arch" "$ctx/rootfs"
done

# The images the tags pointed to before: removed once nothing names them.
mapfile -t old < <(ids "$@")
if podman manifest exists "$IMAGE" 2>/dev/null; then
	podman manifest rm "$IMAGE" >/dev/null
elif podman image exists "$IMAGE"; then
	# An image of one architecture, as make image built before.
	old+=("$(id "$IMAGE")")
	podman untag "$IMAGE" "$IMAGE"
fi

for arch; do
	# --layers=false: no intermediate images (see above), and no layer cache,
	# which would not tell the build arguments apart (a cached layer kept the
	# revision of the build before).
	podman build --quiet --layers=false --platform "linux/$arch" --tag "$IMAGE-$arch" \
		--build-arg VERSION="$VERSION" "${revision[@]}" \
		--file Containerfile "_image/$arch" >/dev/null
	echo "image $IMAGE-$arch: $(podman image inspect --format '{{.Os}}/{{.Architecture}} {{.Digest}}' "$IMAGE-$arch")"
done
podman manifest create "$IMAGE" >/dev/null
for arch; do
	podman manifest add "$IMAGE" "containers-storage:$IMAGE-$arch" >/dev/null
done
# (each platform's architecture comes before its os)
echo "manifest list $IMAGE: $(podman manifest inspect "$IMAGE" |
	awk -F'"' '$2 == "architecture" { arch = $4 } $2 == "os" { printf "%s%s/%s", sep, $4, arch; sep = " " }')"

{ echo "$key"; ids "$@"; } >_image/built
new=" $(ids "$@" | paste -sd' ') "

for id in "${old[@]}"; do
	if [[ $new != *" $id "* ]] && podman image exists "$id"; then
		# Still in use (a container, another tag): kept.
		podman rmi "$id" >/dev/null 2>&1 || true
	fi
done
if ! podman images --quiet >/dev/null 2>&1; then
	echo "warning: podman images fails while the manifest list $IMAGE is stored: an image without" >&2
	echo "layers is in the store (podman before 4.8, podman#19757); podman image prune removes the dangling ones" >&2
fi
