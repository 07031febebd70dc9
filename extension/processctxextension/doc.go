// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package processctxextension implements the process_context extension: it
// runs the one process tracker of a collector (internal/tracker), which
// the process_context receiver and processor use. The host's processes are
// read once, on one schedule, with one set of warnings; the components
// find the extension through the collector's host and fail to start
// without it.
package processctxextension
