// Package tracker is the one store of per-process facts under the
// process_context receiver and processor: which processes on the host
// publish a context, what they published, who they are (identity,
// container id, pid in their namespace), when they changed, exited or
// stopped answering.
//
// A Tracker acts on the kernel's events (EventSource: the proc connector's
// fork, exec and exit; an eBPF program's publish, update and unmap of a
// context) and polls the host for what no running source delivers
// (discovery of new pids, a timestamp read per publisher, bounded rescans
// of processes without a context for late publishers, short re-reads of
// young processes). While both sources run, a scan lists the host once a
// minute and reads timestamps and rescans once per Config.ReconcileInterval;
// dropped events make the next scan read what they could have told. It
// answers probes for pids it does not know yet, and keeps ended
// publications for a retention period so that late telemetry is still
// enriched. It reads processes through the Host interface (NewHost reads
// the real procfs; Open adds the event sources), so its logic is tested on
// fakes (trackertest: a host, a clock, an event source).
//
// Nothing a process does can stall it: every read of a process (its stat,
// maps, memory and identity files) runs on a reader goroutine under a
// deadline (Config.ReadTimeout); only the listing of <root>/proc, which no
// process can make wait, and the collector's own credentials (Host.Access)
// are read on the tracker's loop. A read that does not
// return in time is abandoned, its process quarantined (retried with
// backoff, from then on through /proc/<pid>/mem), counted and reported, and
// the abandoned reader replaced, up to Config.MaxStalled readers stuck at
// once; beyond that, reads that no reader can run are handed back and tried
// at the next scan.
//
// Readers of its state take no lock: Snapshot returns an immutable view,
// published atomically after every change, and Lookup answers from it.
// Consumers of changes (the receiver) Subscribe; derived data that a
// consumer needs per publication (the processor's filtered attributes) is
// computed once per publication by a View.
//
// # Errors
//
// New and Config.Validate return plain errors describing what is wrong. The
// tracker's reads are classified into Outcomes, never returned as errors;
// ErrStalled is the error of a read abandoned at its deadline. Health
// returns what keeps the tracker from its job, for the components' status:
// an error wrapping ErrCannotList (the procfs cannot be listed) or
// ErrCannotRead (the collector's privileges keep it from reading some
// processes; it wraps procfs.ErrPermissionDenied too).
package tracker
