// Package processctxprocessor implements the process_context processor: it
// adds to telemetry the resource attributes that the process it came from
// published as its OpenTelemetry process context (OTEP 4719).
//
// Tools outside a process (the eBPF profiler, journald log shippers, the
// hostmetrics process scraper) only know its pid. The processor finds that
// pid in the telemetry (a resource attribute, or a log record or profile
// sample attribute), reads the process's context through internal/procmem, or
// takes it from the registry the process_context receiver of the same
// collector fills, caches it per (pid, start time), and adds the published
// resource attributes (service.name, service.instance.id, ...) to the
// resource. Records or samples of different processes under one resource are
// regrouped into one resource per process. Telemetry whose process publishes
// nothing, or cannot be read, passes through unchanged.
package processctxprocessor
