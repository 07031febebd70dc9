// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package release tests make release: a release into a temporary
// directory whose checksums sha256sum -c accepts, archives holding static
// binaries of both architectures (the arm64 ones identified as such by
// their ELF header), an image tagged with the version and carrying the OCI
// labels, and release notes from CHANGELOG.md. It builds the collector for
// two architectures, minutes: it runs only when asked
// (PROCESSCTX_RELEASE_TEST=1, as make release-test sets it). What make
// release refuses before building anything is tested always.
package release
