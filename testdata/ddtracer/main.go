// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Command ddtracer runs dd-trace-go's tracer, a widely deployed tracer that
// publishes an OpenTelemetry process context (OTEP 4719) from
// tracer.Start() by default: its resource (service.*, telemetry.sdk.*,
// deployment.environment.name, and host.name and container.id as its
// configuration and cgroup say) and ProcessContext.attributes
// (datadog.process_tags). It says "ready <pid>" once the context is
// published, and stops the tracer and exits when its standard input
// closes.
//
// A module of its own, so that the repository's module does not depend on
// dd-trace-go: internal/pubtest builds it (DDTracer) for the tests that
// check the collector against a real publisher of the field.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/DataDog/dd-trace-go/v2/ddtrace/tracer"
)

func main() {
	if err := tracer.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "ddtracer: start the tracer:", err)
		os.Exit(1)
	}
	defer tracer.Stop()
	fmt.Printf("ready %d\n", os.Getpid())
	_, _ = io.Copy(io.Discard, os.Stdin)
}
