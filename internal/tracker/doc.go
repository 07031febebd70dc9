// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package tracker is the one store of per-process facts of a collector,
// which the process_context extension runs and the receiver and processor
// use: which processes on the host publish a context, what they published,
// who they are (identity, container id, pid in their namespace), when they
// changed, exited or stopped answering.
//
// # How it works
//
// Tracker is a handle; one goroutine, the loop (loop.go), does the work
// over a few parts, each a type that alone touches its fields (the loop's
// doc lists them, docs/internals.md draws them). It acts on one trigger at
// a time: a kernel event (events.go: the proc connector's fork, exec and
// exit; an eBPF program's publish, memfd and unmap of a context), a scan
// (a listing of <root>/proc every Config.CollectionInterval, which finds
// what no event told), a probe from the processor's telemetry, a planned
// read falling due, or a read's result (apply.go). Then it publishes what
// changed (flush): a new Snapshot, the changes to subscribers, and the
// probes whose reads are in.
//
// What the tracker knows of a process is one proc (proc.go): its
// incarnation (a serial; an exec or the reuse of its pid makes a new one,
// and reads of the old one are of the past), what it publishes (or what its
// last read found), and its schedule: the read out and the read planned.
// Every decision of what to read and when is the planner's: per process,
// planner.next says which read a trigger asks for and when; of the host,
// whether a scan lists it, which late publishers fit the rescan budget,
// the quarantine backoff, the pace of the scans dropped events and
// ScanSoon start. The scheduler carries them out; what a read does follows
// from what is known of the process (discover a start time, locate a
// context in the maps, or refresh a publisher's timestamp). The reads run
// on a small pool of goroutines under a deadline (Config.ReadTimeout);
// what a read does against the Host is read.go.
//
// Nothing a process does can stall the tracker: only the listing of
// <root>/proc, which no process can make wait, and the collector's own
// credentials (Host.Access) are read on the loop. A read that does not
// return in time is abandoned, its process quarantined (read again after
// a backoff, from then on through /proc/<pid>/mem), counted and reported,
// and the abandoned reader replaced, up to Config.MaxStalled readers stuck
// at once; beyond that, reads that no reader can run are handed back and
// tried when next due.
//
// While process and publication events both come, a scan lists the host
// once a minute and reads timestamps and rescans once per
// Config.ReconcileInterval; dropped events make the next scan read what
// they could have told. Without them, scans poll: a timestamp read per
// publisher, bounded rescans of processes without a context for late
// publishers, short re-reads of young processes. Ended publications are
// kept for Config.GracePeriod, so that late telemetry is still enriched.
//
// Readers of its state take no lock: Snapshot returns an immutable view,
// published atomically after every change, and Lookup answers from it.
// Where a read may tell what a lookup should wait for — a pid not read, a
// process whose environment was not read since its exec, or, while no
// publication events come, whose maps were not read since its exec or for
// Config.RecheckInterval (contextDue) — Lookup says AnswerUnknown, and
// Probe reads it and waits: the first telemetry of a process that
// published at start-up gets its identity on every kernel.
// Subscribers (the receiver) are told every change; derived data that a
// consumer needs per publication (the processor's filtered attributes) is
// computed once per publication by a View. The tracker reads processes
// through the Host and EventSource interfaces (internal/hostopen opens the
// real procfs and the kernel's event sources), so its logic is tested on fakes (trackertest: a host, a
// clock, an event source, a recorder of changes).
//
// # Errors
//
// New and Config.Validate return errors describing what is wrong. The
// tracker's reads are classified into Outcomes, never returned as errors;
// ErrStalled is the error of a read abandoned at its deadline. Health
// returns what keeps the tracker from its job, for the components' status:
// an error wrapping ErrCannotList (the procfs cannot be listed) or
// ErrCannotRead (the collector's privileges keep it from reading some
// processes; it wraps procfs.ErrPermissionDenied too).
package tracker
