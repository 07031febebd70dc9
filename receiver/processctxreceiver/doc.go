// Package processctxreceiver implements the process_context receiver: it
// scans the host's processes, reads every OpenTelemetry process context
// (OTEP 4719) they publish, and emits one entity event (as a log record) per
// process entity: a state event when a context is first seen, when it
// changes and every report interval, and a delete event when the process
// exits or unpublishes.
//
// Scans are incremental so that hosts with thousands of processes stay
// cheap: a new pid costs one maps scan, a known publisher one 8-byte
// timestamp read per scan, and processes without a context are re-checked
// for late publishing on a bounded schedule.
package processctxreceiver
