// Package processctxreceiver implements the process_context receiver: it
// turns the changes of a process tracker (internal/tracker: the
// process_context extension's, shared with the processor, or its own) into
// entity events (log records), one per process entity: a state event when a
// context is first seen, when it changes and every report interval, and a
// delete event when the process exits, unpublishes or publishes something
// unreadable.
//
// The tracker's scans are incremental, so that hosts with thousands of
// processes stay cheap: a new pid costs one maps scan, a known publisher one
// 8-byte timestamp read per scan, and processes without a context are
// re-checked for late publishing on a bounded schedule. No read of a process
// can stall the events of the others.
package processctxreceiver
