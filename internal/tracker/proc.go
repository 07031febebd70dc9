// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import "time"

// proc is what the tracker knows of one process: one incarnation of a pid,
// until an exec or the pid's reuse makes another (newIncarnation). Kept
// small: a host runs thousands, most publishing nothing.
type proc struct {
	// Who it is.
	serial   uint32 // names this incarnation: a read of another is of the past
	listedIn uint32 // the generation of the last scan whose listing found the pid
	start    uint64 // start time in clock ticks, (pid, start) the key; 0 until read
	ino      uint64 // inode of /proc/<pid> when last listed; another one: maybe another process

	// Who it says it is: identity while it publishes a context
	// (hasContext), or while its environment names it; otherwise found says
	// what its last read found (AnswerUnknown: not read yet).
	identity *Publication
	found    Outcome
	kernel   bool // a kernel thread: no user memory, never read again
	// env says whether its environment, fixed at exec, was read: what it
	// said is identity, unless a context replaced it. A context published makes
	// it unread: when the context ends, the environment is read again, in
	// the same read.
	env envState
	// deniedForGood: its denial was said, once, to be one no setting
	// lifts; the reports leave it out.
	deniedForGood bool
	// vsize: its address space's size at its last maps read (pages; 0:
	// unknown), which young re-reads compare. It fills a padding.
	vsize uint32

	// imageAt is the kernel time (Event.Time's clock) of the newest look
	// at its current image: its last publication event, or the start of a
	// read that found its identity. An exec or exit reported older than
	// that is a previous image's or process's, late (the sources are
	// other paths than the reads).
	imageAt uint64

	// Its reads: the scheduler's alone.
	sched schedule
}

// cause is why a process is read. The planner says whether and when; what
// follows the read differs (afterRead).
type cause uint8

// causeListing: a listing found a pid not known, or its /proc entry
// changed: its start time tells whether it is still the same process.
// causeProbe: a lookup cannot answer yet (not read, or envDue,
// contextDue). causeYoung: while no publication events come, after an
// exec or when a scan first met it. causeEnviron: after a fork or exec,
// the new image's environment, not its maps (publication events tell of
// its context).
const (
	causeNone cause = iota
	causeListing
	causeRefresh    // a scan checks a publisher's timestamp
	causeRescan     // a scan reads a process without a context again, for late publishers
	causeProbe      // telemetry names the pid
	causeEvent      // a publication event (publish, memfd, unmap)
	causeRetry      // a publication event's read found nothing yet (memfd not written, mid-update)
	causeYoung      // a young process's next read
	causeQuarantine // a quarantined process's backoff has passed
	causeEnviron
)

// urgent reports whether reads for c go before scan work: something is
// waiting for them, or the kernel just said the process changed.
func (c cause) urgent() bool {
	return c == causeProbe || c == causeEvent || c == causeRetry
}

const (
	minEventGap      = 10 * time.Millisecond // between two reads of one process its events cause
	publishRetries   = 4                     // reads after a publication event that found no context yet
	rescanFastChecks = 4                     // re-reads at RescanInterval before the wait doubles
	quarantineGrowth = 20                    // bounds the quarantine backoff: QuarantineBackoff times this
)

// youngDelays are the waits between the reads of a young process: one
// that exec'd, or one a scan met for the first time, while no publication
// events come. SDKs publish during start-up, often seconds in; the rescan
// schedule takes over after the last.
var youngDelays = [...]time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second}

// youngReads is the length of the young series: young at it ends it.
const youngReads = uint8(len(youngDelays))

// planGrid is the grid the young reads (and a fork's environment read)
// fall due on, and the rechecks: a young read is planned for the grid
// point nearest its time (within planGrid/2 of it), a recheck for the
// first grid point at or after its time, so that the reads and rechecks
// of processes started or read together fall due together, in one wake-up
// of the loop and one job (scheduler.runDue), not one each.
const planGrid = 250 * time.Millisecond

// onGrid returns the point of the loop clock's planGrid nearest at.
func onGrid(at int64) int64 {
	g := int64(planGrid)
	return (at + g/2) / g * g
}

// upToGrid returns the first point of the loop clock's planGrid at or
// after at.
func upToGrid(at int64) int64 {
	g := int64(planGrid)
	return (at + g - 1) / g * g
}

// envState says whether a process's environment was read.
type envState uint8

// envTried: a read asked for it and did not read it (empty: mid-exec, or
// none at all; or the read ended before it, at a context it could not
// read): the next read asks again, but lookups do not wait for that.
const (
	envUnread envState = iota
	envTried
	envRead
)

// awaitsEvent reports whether a publication event's read of a process
// without a publication is out or planned: it may have just published, so
// lookups say it is not known yet and probes wait for that read.
func (p *proc) awaitsEvent() bool {
	return p.identity == nil && (p.sched.reading == causeEvent || p.sched.planned == causeEvent)
}

// hasContext reports whether p publishes a context (and is not only named
// by its environment).
func (p *proc) hasContext() bool { return p.identity != nil && p.identity.Source == SourceContext }
