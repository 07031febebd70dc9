// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"encoding/binary"
	"fmt"
)

// Header layout (SPEC.md): 32 bytes, native little-endian. Publishers
// write these offsets, readers read them.
const (
	HeaderSize = 32

	// Signature is the header's first 8 bytes, and the name publishers give
	// the memfd and the mapping.
	Signature = "OTEL_CTX"
	// Version is the format version readers accept.
	Version = 2

	OffsetVersion        = 8
	OffsetPayloadSize    = 12
	OffsetPublishedAt    = 16
	OffsetPayloadAddress = 24

	developmentVersionOne = 1
)

// Header is the decoded 32-byte header at the start of a context mapping.
type Header struct {
	Version     uint32
	PayloadSize uint32
	// PublishedAt is monotonic_published_at_ns (CLOCK_BOOTTIME); 0 while the
	// publisher is writing. It is the change key of the context.
	PublishedAt uint64
	// PayloadAddress is an address in the publisher's address space.
	PayloadAddress uint64
}

// ParseHeader decodes and validates a header. A zero PublishedAt is not an
// error here (the caller retries); everything else is checked: signature,
// version, and 0 < payload size <= maxPayload.
func ParseHeader(b []byte, maxPayload uint32) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header is %d bytes, want %d", ErrInvalid, len(b), HeaderSize)
	}
	if string(b[:8]) != Signature {
		return Header{}, fmt.Errorf("%w: signature %q, want %q", ErrInvalid, b[:8], Signature)
	}
	h := Header{
		Version:        binary.LittleEndian.Uint32(b[OffsetVersion:]),
		PayloadSize:    binary.LittleEndian.Uint32(b[OffsetPayloadSize:]),
		PublishedAt:    binary.LittleEndian.Uint64(b[OffsetPublishedAt:]),
		PayloadAddress: binary.LittleEndian.Uint64(b[OffsetPayloadAddress:]),
	}
	switch {
	case h.Version == developmentVersionOne:
		return Header{}, fmt.Errorf("%w: version 1 is the pre-release format, want %d", ErrInvalid, Version)
	case h.Version != Version:
		return Header{}, fmt.Errorf("%w: unsupported version %d, want %d", ErrInvalid, h.Version, Version)
	case h.PayloadSize == 0:
		return Header{}, fmt.Errorf("%w: payload size 0", ErrInvalid)
	case h.PayloadSize > maxPayload:
		return Header{}, fmt.Errorf("%w: payload size %d exceeds the limit of %d", ErrTooLarge, h.PayloadSize, maxPayload)
	}
	return h, nil
}
