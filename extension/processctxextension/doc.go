// Package processctxextension implements the process_context extension: it
// runs the one process tracker that the process_context receiver and
// processor of a collector share, so that the host's processes are read
// once, on one schedule, with one set of warnings. The components find it
// through the collector's host; without it each runs a tracker of its own.
package processctxextension
