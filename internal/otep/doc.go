// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package otep is the OpenTelemetry process context format (OTEP 4719), with
// nothing of where the bytes come from: the names under which a context
// mapping shows up in /proc/<pid>/maps, the 32-byte header, the seqlock
// protocol readers follow over another process's memory, and the protobuf
// ProcessContext payload (decoder for readers, encoder for publishers, one
// set of field numbers).
//
// Memory is read through the Memory interface, so the protocol is tested on
// fakes; internal/reader implements it over process_vm_readv and
// /proc/<pid>/mem.
//
// # Errors
//
// Errors of FindMapping, ParseHeader, DecodePayload and Reader.Read wrap at
// most one of the kinds below (test with errors.Is), with the reason in the
// message. Reader.Read also passes on, wrapped, whatever error the Memory
// returned for a reason other than a bad address (the process is gone,
// permission denied: see internal/procfs). FindMapping passes on the read
// error of its io.Reader. Limits.Validate and Encode return plain errors
// describing what is wrong.
//
//   - ErrNoContext: no context mapping, or the mapping's header is no longer
//     mapped (the process unpublished, or exec'd).
//   - ErrTorn: every try met an update in progress (retry later).
//   - ErrInvalid: the mapping holds something that is not a valid context.
//   - ErrTooLarge: the context exceeds a limit.
//
// A Memory reports an unmapped or unreadable address by wrapping
// ErrBadAddress.
package otep
