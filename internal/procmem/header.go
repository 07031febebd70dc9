package procmem

import (
	"encoding/binary"
	"fmt"
)

// Header layout (SPEC.md): 32 bytes, native little-endian.
const (
	HeaderSize = 32

	headerSignature       = "OTEL_CTX"
	headerVersion         = 2
	offsetVersion         = 8
	offsetPayloadSize     = 12
	offsetPublishedAt     = 16
	offsetPayloadAddress  = 24
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
	if string(b[:8]) != headerSignature {
		return Header{}, fmt.Errorf("%w: signature %q, want %q", ErrInvalid, b[:8], headerSignature)
	}
	h := Header{
		Version:        binary.LittleEndian.Uint32(b[offsetVersion:]),
		PayloadSize:    binary.LittleEndian.Uint32(b[offsetPayloadSize:]),
		PublishedAt:    binary.LittleEndian.Uint64(b[offsetPublishedAt:]),
		PayloadAddress: binary.LittleEndian.Uint64(b[offsetPayloadAddress:]),
	}
	switch {
	case h.Version == developmentVersionOne:
		return Header{}, fmt.Errorf("%w: version 1 is the pre-release format, want %d", ErrInvalid, headerVersion)
	case h.Version != headerVersion:
		return Header{}, fmt.Errorf("%w: unsupported version %d, want %d", ErrInvalid, h.Version, headerVersion)
	case h.PayloadSize == 0:
		return Header{}, fmt.Errorf("%w: payload size 0", ErrInvalid)
	case h.PayloadSize > maxPayload:
		return Header{}, fmt.Errorf("%w: payload size %d exceeds the limit of %d", ErrTooLarge, h.PayloadSize, maxPayload)
	}
	return h, nil
}
