// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubevents

// The BPF object and its Go loader are generated and committed (CI has no
// clang): run tools/generate-bpf.sh after changing bpf/, not this directly.
//go:generate go tool bpf2go -cc clang-16 -strip llvm-strip-16 -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -tags linux -type tracked_range pubevents bpf/pubevents.c -- -I/usr/include
