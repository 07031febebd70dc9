#!/usr/bin/env bash
# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# A release of the distribution (make release VERSION=x.y.z; see
# docs/contributing.md, "Releasing"): checks that the version, the
# manifest, CHANGELOG.md and the work tree agree, then writes into
# RELEASE_DIR
#
#   otelcol-processctx_<v>_linux_amd64.tar.gz   the collector, ctxdump and
#   otelcol-processctx_<v>_linux_arm64.tar.gz   ctxpublisher (static), the
#                                               licenses, README, CHANGELOG
#   otelcol-processctx_<v>_image.tar            the image IMAGE: an OCI archive
#                                               whose index names linux/amd64
#                                               and linux/arm64
#   SHA256SUMS                                  of the three (sha256sum -c)
#   RELEASE_NOTES.md                            CHANGELOG.md's section for <v>
#
# and leaves the image in podman's store (make image: the manifest list
# IMAGE, each architecture's image at IMAGE-<arch>). All or nothing: the
# files are built aside and moved into RELEASE_DIR at the end.
#
# Environment (make release sets it): VERSION, IMAGE, RELEASE_DIR, GO, MAKE;
# RELEASE_ALLOW_DIRTY=1 releases a work tree with uncommitted changes, its
# revision marked -dirty (the release test does; a real release does not).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?VERSION is required}" "${IMAGE:?IMAGE is required}" "${RELEASE_DIR:?RELEASE_DIR is required}"
GO=${GO:-go}
MAKE=${MAKE:-make}
name=otelcol-processctx
arches=(amd64 arm64)

fail() {
	echo "release: $*" >&2
	exit 1
}

# What must agree before anything is built.
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	fail "VERSION=$VERSION is not a version x.y.z (or x.y.z-pre)"
manifest=$(awk '/^dist:/ {d = 1; next} /^[^ \t#]/ {d = 0} d && $1 == "version:" {print $2}' builder-config.yaml)
[ "$manifest" = "$VERSION" ] ||
	fail "builder-config.yaml's dist.version is $manifest, not $VERSION: the collector reports that version. Set it to $VERSION (and the other places TestVersionsAgree in test/manifests names), commit, then release."
section=$(awk -v v="$VERSION" '
	index($0, "## [" v "]") == 1 { on = 1; print; next }
	on && (/^## \[/ || /^\[[^]]*\]: /) { exit }
	on { print }' CHANGELOG.md)
[ -n "$(printf '%s\n' "$section" | sed 1d | grep '[^[:space:]]')" ] ||
	fail "CHANGELOG.md has no section '## [$VERSION] - <date>' with entries: move the entries of [Unreleased] there (docs/contributing.md)."
revision=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain)" ]; then
	[ "${RELEASE_ALLOW_DIRTY:-}" = 1 ] ||
		fail "the work tree has uncommitted changes (git status): a release is built from a commit. Commit them, or RELEASE_ALLOW_DIRTY=1 for a release marked $revision-dirty."
	revision=$revision-dirty
	echo "release: the work tree has uncommitted changes: revision $revision" >&2
fi
if [ -d "$RELEASE_DIR" ] && [ -n "$(ls -A "$RELEASE_DIR")" ]; then
	fail "$RELEASE_DIR is not empty: remove it, or name another RELEASE_DIR."
fi
command -v podman >/dev/null || fail "podman is needed for the image (apt-get install podman; see .ci/run)"

work=$(mktemp -d "${TMPDIR:-/tmp}/$name-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=$work/out
mkdir -p "$out"
start=$(date +%s)

# The collector of each architecture is the Makefile's one build of it
# (bin/linux_<arch>/, from ocb's generated sources: static, -trimpath,
# stripped), which the image and the kernel matrix's guests carry too.
echo "release: building for ${arches[*]/#/linux/} ($(($(date +%s) - start)) s)"
collectors=()
for arch in "${arches[@]}"; do collectors+=("bin/linux_$arch/$name"); done
"$MAKE" --no-print-directory "${collectors[@]}"
for arch in "${arches[@]}"; do
	dir=$work/${name}_${VERSION}_linux_$arch
	mkdir -p "$dir"
	cp "bin/linux_$arch/$name" "$dir/$name"
	for tool in ctxdump ctxpublisher; do
		CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$GO" build -trimpath -ldflags='-s -w' -o "$dir/$tool" ./cmd/$tool
	done
	cp -r LICENSE LICENSES README.md CHANGELOG.md "$dir/"
done

# The image of every architecture, with the same collectors; its OCI
# archive holds the manifest list as an OCI index (named IMAGE) and each
# architecture's image.
echo "release: building the image $IMAGE ($(($(date +%s) - start)) s)"
"$MAKE" --no-print-directory image IMAGE="$IMAGE" VERSION="$VERSION" REVISION="$revision"
image_archive=${name}_${VERSION}_image.tar
podman manifest push --quiet --all --format oci "$IMAGE" "oci-archive:$out/$image_archive:$IMAGE"

# Archives that do not depend on when or by whom they were made.
epoch=$(git log -1 --format=%ct)
for arch in "${arches[@]}"; do
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
		-C "$work" -cf - "${name}_${VERSION}_linux_$arch" | gzip -9n >"$out/${name}_${VERSION}_linux_$arch.tar.gz"
done
(cd "$out" && sha256sum -- *.tar.gz "$image_archive" >SHA256SUMS)

{
	printf '# %s %s\n\n' "$name" "$VERSION"
	printf 'Built from commit %s of https://github.com/processctx/otelcol-processctx.\n\n' "$revision"
	# The section without its heading and leading blank lines, its
	# subsections a level up, its links to this repository's files at the
	# version's tag.
	printf '%s\n' "$section" | sed 1d | sed -e '/./,$!d' -e 's/^### /## /' \
		-e "s#\](\([^):\#][^):]*\))#](https://github.com/processctx/otelcol-processctx/blob/v$VERSION/\1)#g"
	printf '\n## Artifacts\n\n'
	printf 'Verify them with `sha256sum -c SHA256SUMS`.\n\n'
	printf '| file | sha256 |\n|---|---|\n'
	while read -r sum file; do printf '| `%s` | `%s` |\n' "$file" "$sum"; done <"$out/SHA256SUMS"
	printf '\nThe archives hold the collector (`otelcol-processctx`), `ctxdump` and\n'
	printf '`ctxpublisher`, statically linked, for linux/amd64 and linux/arm64.\n\n'
	printf 'The image `%s`, for linux/amd64 and linux/arm64, is `%s`: an OCI\n' "$IMAGE" "$image_archive"
	printf 'archive whose index names both. Push both to your registry with\n'
	printf '`skopeo copy --all oci-archive:%s docker://<registry>/%s:%s`\n' "$image_archive" "$name" "$VERSION"
	printf '(deploy/helm/values.yaml `image.repository`, deploy/kubernetes/kustomization.yaml `images`);\n'
	printf '`podman load -i %s` loads the image of this host'"'"'s architecture.\n' "$image_archive"
} >"$out/RELEASE_NOTES.md"

mkdir -p "$RELEASE_DIR"
mv "$out"/* "$RELEASE_DIR/"
echo "release: $name $VERSION in $RELEASE_DIR, image $IMAGE ($(($(date +%s) - start)) s):"
ls -l "$RELEASE_DIR"
echo "Next: git tag -a v$VERSION -m '$name $VERSION' $revision; podman manifest push --all $IMAGE docker://$IMAGE (both architectures); publish $RELEASE_DIR."
