// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package kernel is the kernel matrix (make kernel-test): run.sh boots
// stock Debian kernels in qemu with an initramfs holding static test
// binaries, and init.sh runs them inside each guest. This package's test,
// built with go test -c, is the part that runs the built collector at its
// default settings inside a guest; on any other machine it skips.
// docs/testing.md, "Kernel matrix", says what the matrix covers.
package kernel
