// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxTries bounds the seqlock loop (SPEC.md: at most 3 tries).
const maxTries = 3

// Memory reads another process's memory.
type Memory interface {
	// ReadAt fills p from the target's address addr. An unmapped or
	// unreadable range is an error wrapping ErrBadAddress; any other error
	// (the process is gone, permission denied) is passed on by Reader.Read.
	ReadAt(p []byte, addr uint64) error
}

// Context is one consistent read of a process context.
type Context struct {
	// PublishedAt is the header's monotonic_published_at_ns: the change key.
	PublishedAt uint64
	// PayloadSize is the size of the protobuf payload in bytes.
	PayloadSize uint32
	// Resource holds the published resource attributes (service.name, ...).
	Resource pcommon.Map
	// Attributes holds ProcessContext.attributes: facts about the process
	// (threadlocal.*) that are not resource attributes and must never be
	// stamped onto telemetry resources.
	Attributes pcommon.Map
}

// Reader reads contexts with the seqlock protocol, within its limits. It is
// safe for concurrent use.
type Reader struct {
	limits Limits
	bufs   sync.Pool // *[]byte: header, timestamp and payload of one read
}

// NewReader returns a reader bound by limits.
func NewReader(limits Limits) (*Reader, error) {
	if err := limits.Validate(); err != nil {
		return nil, fmt.Errorf("reader limits: %w", err)
	}
	return &Reader{limits: limits}, nil
}

// Limits returns the reader's limits.
func (r *Reader) Limits() Limits { return r.limits }

// Read reads the context whose header is at addr (a mapping's start, as
// FindMapping returned it) from mem. A caller that holds the context
// published at lastPublishedAt gets changed == false after one 8-byte read
// when the timestamp is still the same; lastPublishedAt == 0 means "nothing
// held" and always reads.
func (r *Reader) Read(mem Memory, addr, lastPublishedAt uint64) (ctx Context, changed bool, err error) {
	buf := r.getBuffer(HeaderSize + 8 + int(r.limits.MaxPayloadSize))
	defer r.bufs.Put(buf)
	if lastPublishedAt != 0 {
		ts, err := readTimestamp(mem, addr, (*buf)[:8])
		if err != nil {
			return Context{}, false, err
		}
		if ts == lastPublishedAt {
			return Context{}, false, nil
		}
	}
	var lastErr error
	for try := range maxTries {
		if try > 0 {
			// A publisher's update takes microseconds: let it run, then retry.
			runtime.Gosched()
		}
		ctx, err := r.readOnce(mem, addr, *buf)
		if err == nil {
			return ctx, ctx.PublishedAt != lastPublishedAt, nil
		}
		if !errors.Is(err, ErrTorn) {
			return Context{}, false, err
		}
		lastErr = err
	}
	return Context{}, false, fmt.Errorf("%w after %d tries", lastErr, maxTries)
}

// readOnce is one pass of the seqlock: header, payload, timestamp again.
func (r *Reader) readOnce(mem Memory, addr uint64, buf []byte) (Context, error) {
	raw := buf[:HeaderSize]
	if err := mem.ReadAt(raw, addr); err != nil {
		return Context{}, headerReadError(addr, err)
	}
	if binary.LittleEndian.Uint64(raw[OffsetPublishedAt:]) == 0 {
		// Being written: the other fields may be half updated.
		return Context{}, fmt.Errorf("header at %#x: timestamp 0: %w", addr, ErrTorn)
	}
	h, err := ParseHeader(raw, r.limits.MaxPayloadSize)
	if err != nil {
		return Context{}, fmt.Errorf("header at %#x: %w", addr, err)
	}
	payload := buf[HeaderSize+8 : HeaderSize+8+int(h.PayloadSize)]
	payloadErr := mem.ReadAt(payload, h.PayloadAddress)

	again, err := readTimestamp(mem, addr, buf[HeaderSize:HeaderSize+8])
	if err != nil {
		return Context{}, err
	}
	if again != h.PublishedAt {
		return Context{}, fmt.Errorf("header at %#x: timestamp changed while reading: %w", addr, ErrTorn)
	}
	if payloadErr != nil {
		if errors.Is(payloadErr, ErrBadAddress) {
			return Context{}, fmt.Errorf("payload: %w: %d bytes at %#x not readable", ErrInvalid, h.PayloadSize, h.PayloadAddress)
		}
		return Context{}, fmt.Errorf("payload: %w", payloadErr)
	}
	ctx := Context{
		PublishedAt: h.PublishedAt,
		PayloadSize: h.PayloadSize,
		Resource:    pcommon.NewMap(),
		Attributes:  pcommon.NewMap(),
	}
	if err := DecodePayload(payload, r.limits, ctx.Resource, ctx.Attributes); err != nil {
		return Context{}, fmt.Errorf("payload: %w", err)
	}
	return ctx, nil
}

// readTimestamp reads the header's change key through scratch (8 bytes).
func readTimestamp(mem Memory, addr uint64, scratch []byte) (uint64, error) {
	if err := mem.ReadAt(scratch, addr+OffsetPublishedAt); err != nil {
		return 0, headerReadError(addr, err)
	}
	return binary.LittleEndian.Uint64(scratch), nil
}

// headerReadError classifies a failed header read: an unmapped header means
// the mapping is gone (unpublished, or the process exec'd).
func headerReadError(addr uint64, err error) error {
	if errors.Is(err, ErrBadAddress) {
		return fmt.Errorf("header at %#x: mapping gone: %w", addr, ErrNoContext)
	}
	return fmt.Errorf("header at %#x: %w", addr, err)
}

func (r *Reader) getBuffer(n int) *[]byte {
	if b, ok := r.bufs.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}
