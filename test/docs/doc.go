// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package docs keeps the repository's documentation true: every shell
// block of its Markdown files is run by a test of this package as the
// Markdown has it (the test reads the block from the file, so an edit of
// the doc is what is tested), or is marked as not run here, with why; and
// every relative link of every Markdown file resolves.
//
// A shell block (```sh, bash, shell, console) is preceded, on the nearest
// line that is not blank, by one of
//
//	<!-- doc-test: TestQuickStart -->
//	<!-- not run here: it needs a Kubernetes cluster -->
//
// TestShellBlocksAreRunOrMarked fails on a block with neither, on one
// naming a test this package does not have, and on a fenced block that
// says no language. docs/history is left out of that rule: it records what
// was run then. TestLinksResolve checks every Markdown file, docs/history
// included.
//
// The blocks that listen on the shipped ports (4317, 4318, 13133, 8888)
// run in a network namespace of their own (root), so that they meet no
// other test or collector of the machine; a block "from another terminal"
// runs in the same namespaces.
package docs
