// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e tests the built collector (bin/otelcol-processctx, `make
// build`) as users run it: a subprocess with a YAML configuration, real
// publisher processes, OTLP over loopback into the collector, and a test
// OTLP server receiving what the collector exports.
package e2e
