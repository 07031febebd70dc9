// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package processctxprocessor implements the process_context processor: it
// adds to telemetry the resource attributes that the process it came from
// published as its OpenTelemetry process context (OTEP 4719).
//
// Tools outside a process (the eBPF profiler, journald log shippers, the
// hostmetrics process scraper) only know its pid. The processor finds that
// pid in the telemetry (a resource attribute, or a log record or profile
// sample attribute), looks it up in the snapshot of the process tracker of
// the process_context extension (internal/tracker, shared with the
// receiver; the processor fails to start without the extension), and adds
// the published resource attributes (service.name, service.instance.id,
// ...) to the resource, with the process's process.creation.time and
// (entity_refs) references to the entities they describe: the process and
// its service, service instance and namespace. A process that publishes
// nothing but names its service in its SDK environment (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES) is identified by that instead, and enriched
// the same way. Records or samples of different processes under one
// resource are regrouped into one resource per process, through pdata's
// public API. It does no /proc I/O itself: pids the tracker does not know
// are read by the tracker, and a batch waits for them at most
// lookup_timeout. Telemetry whose process has no identity, cannot be read,
// or is not read in time passes through unchanged.
package processctxprocessor
