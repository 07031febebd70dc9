// Package procmem reads OpenTelemetry process contexts (OTEP 4719) out of other
// live processes on this host.
//
// A publishing SDK leaves a small mapping named OTEL_CTX in its address space:
// a 32-byte header followed (anywhere in its memory) by a protobuf
// ProcessContext payload. This package finds that mapping in
// <root>/proc/<pid>/maps, reads the header and payload from the target's
// memory with the seqlock protocol of the spec, and decodes the payload into
// pdata maps, bounding every size, read, allocation and decode step because the
// publisher is untrusted. It also reads the cheap parts of a process's identity
// (pid + start time, executable, owner, container id) that callers attach to
// the context.
//
// Both the process_context receiver and processor are built on it.
package procmem
