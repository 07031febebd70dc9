// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package license checks what lets people use, package and contribute to
// this repository: the Apache-2.0 LICENSE at its root, and the license
// header of every source file, which tools/spdx.sh checks (make lint) and
// adds (make spdx). The script's own behaviour is tested on a repository
// of its own, file kind by file kind.
package license
