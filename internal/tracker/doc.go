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
// Tracker is a handle; one goroutine, the loop, acts on one trigger at a
// time (a kernel event, a scan's tick, a probe, a planned read falling
// due, a read back, a call) over a few parts, each a type that alone
// touches its fields: loop.go lists them, docs/internals.md draws them.
// Every decision of what to read and when is the planner's (plan.go),
// carried out by the scheduler (schedule.go). Then the loop publishes what
// changed (flush): a new Snapshot, the changes to subscribers, and the
// probes whose reads are in.
//
// Nothing a process does can stall the tracker: only the listing of
// <root>/proc and the collector's own credentials are read on the loop;
// the reads of processes run on a pool of goroutines under a deadline
// (Config.ReadTimeout), and a process whose read does not return in time
// is quarantined (read again after a backoff, through /proc/<pid>/mem, or
// after as long again as the read took once it returns late), its reader
// replaced up to Config.MaxStalled stuck at once.
//
// Readers of its state take no lock: Snapshot returns an immutable view,
// published atomically after every change. Where a read may tell what a
// lookup should wait for, Lookup says AnswerUnknown and Probe reads it and
// waits: the first telemetry of a process that published at start-up gets
// its identity on every kernel. Subscribers (the receiver) are told every
// change; a View computes what a consumer needs per publication once. The
// tracker reads processes through the Host and EventSource interfaces
// (internal/hostopen opens the real ones), so its logic is tested on fakes
// (trackertest).
//
// # Errors
//
// New and Config.Validate return errors naming the settings that are
// wrong. Reads are classified into Outcomes, never returned as errors.
// Health returns what keeps the tracker from its job, for the components'
// status: an error wrapping ErrCannotList (the procfs cannot be listed) or
// ErrCannotRead (the collector's privileges keep it from reading some
// processes; it wraps procfs.ErrPermissionDenied too).
package tracker
