// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package publisher publishes an OpenTelemetry process context (OTEP 4719)
// from the current process, exactly as SPEC.md's publishing protocol says:
// a memfd (or anonymous) mapping named OTEL_CTX holding a 32-byte header, the
// timestamp written last behind a barrier, in-place updates and unpublish.
//
// It is the reference publisher of this repository: tests, the demo and the
// benchmarks publish with it. A process holds at most one context.
package publisher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
)

const (
	headerSize = otep.HeaderSize
	// minInlineCapacity leaves room for updates to grow in place.
	minInlineCapacity = 8 << 10
)

// Placement says where the payload lives.
type Placement int

const (
	// Inline puts the payload right after the header, inside the mapping.
	Inline Placement = iota
	// Separate puts the payload in its own heap allocation, as SDKs that
	// encode into a buffer do.
	Separate
)

func (p Placement) String() string {
	if p == Separate {
		return "separate"
	}
	return "inline"
}

// Options tune how a context is published.
type Options struct {
	Placement Placement
	// Anonymous skips memfd_create, as on a system where it is unavailable:
	// the mapping is then only named when PR_SET_VMA_ANON_NAME works.
	Anonymous bool
}

// Publication is a published context.
type Publication struct {
	mu       sync.Mutex
	opts     Options
	mapping  []byte
	payloads [2][]byte // current and previous separate payloads, kept alive for readers
}

// ErrUnpublished is returned by operations on an unpublished context.
var ErrUnpublished = errors.New("context is not published")

// Publish creates the context mapping and publishes payload (an encoded
// ProcessContext, see otep.Encode).
func Publish(payload []byte, opts Options) (*Publication, error) {
	if len(payload) == 0 {
		return nil, errors.New("publish: empty payload")
	}
	size := headerSize + max(len(payload), minInlineCapacity)
	page := os.Getpagesize()
	size = (size + page - 1) / page * page

	mapping, err := createMapping(size, opts.Anonymous)
	if err != nil {
		return nil, err
	}
	// Forked children must not inherit a context that describes the parent.
	if err := unix.Madvise(mapping, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(mapping)
		return nil, fmt.Errorf("publish: madvise: %w", err)
	}
	p := &Publication{opts: opts, mapping: mapping}
	copy(mapping[:8], otep.Signature)
	binary.LittleEndian.PutUint32(mapping[otep.OffsetVersion:], otep.Version)
	p.placePayload(payload)
	p.storeTimestamp(nextTimestamp(0))
	p.name()
	return p, nil
}

func createMapping(size int, anonymous bool) ([]byte, error) {
	if !anonymous {
		fd, err := unix.MemfdCreate(otep.Signature, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
		if errors.Is(err, unix.EINVAL) { // kernels before 6.3 lack MFD_NOEXEC_SEAL
			fd, err = unix.MemfdCreate(otep.Signature, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		}
		if err == nil {
			defer func() { _ = unix.Close(fd) }()
			if err := unix.Ftruncate(fd, int64(size)); err != nil {
				return nil, fmt.Errorf("publish: ftruncate memfd: %w", err)
			}
			m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
			if err != nil {
				return nil, fmt.Errorf("publish: mmap memfd: %w", err)
			}
			return m, nil
		}
	}
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("publish: mmap anonymous: %w", err)
	}
	return m, nil
}

// Addr returns the address of the header (the mapping's start).
func (p *Publication) Addr() uintptr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapping == nil {
		return 0
	}
	return uintptr(unsafe.Pointer(&p.mapping[0]))
}

// PublishedAt returns the current timestamp (0 after Unpublish).
func (p *Publication) PublishedAt() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapping == nil {
		return 0
	}
	return p.timestamp().Load()
}

// Update replaces the payload in place: the mapping keeps its address and
// the timestamp moves forward.
func (p *Publication) Update(payload []byte) error {
	if len(payload) == 0 {
		return errors.New("update: empty payload")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapping == nil {
		return ErrUnpublished
	}
	old := p.timestamp().Load()
	p.storeTimestamp(0) // seq-cst store: a full barrier before the payload changes
	p.placePayload(payload)
	p.storeTimestamp(nextTimestamp(old))
	p.name()
	return nil
}

// Unpublish removes the context: readers see timestamp 0, then no mapping.
func (p *Publication) Unpublish() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapping == nil {
		return ErrUnpublished
	}
	p.storeTimestamp(0)
	err := unix.Munmap(p.mapping)
	p.mapping = nil
	p.payloads = [2][]byte{}
	if err != nil {
		return fmt.Errorf("unpublish: munmap: %w", err)
	}
	return nil
}

// RawHeader holds header fields written verbatim by OverwriteHeader.
type RawHeader struct {
	Signature      [8]byte
	Version        uint32
	PayloadSize    uint32
	PublishedAt    uint64
	PayloadAddress uint64
}

// OverwriteHeader writes h verbatim (timestamp last, as a publisher would),
// to test readers against hostile or buggy publishers.
func (p *Publication) OverwriteHeader(h RawHeader) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapping == nil {
		return ErrUnpublished
	}
	p.storeTimestamp(0)
	copy(p.mapping[:8], h.Signature[:])
	binary.LittleEndian.PutUint32(p.mapping[otep.OffsetVersion:], h.Version)
	binary.LittleEndian.PutUint32(p.mapping[otep.OffsetPayloadSize:], h.PayloadSize)
	binary.LittleEndian.PutUint64(p.mapping[otep.OffsetPayloadAddress:], h.PayloadAddress)
	p.storeTimestamp(h.PublishedAt)
	return nil
}

// InlineAddr returns the address right after the header.
func (p *Publication) InlineAddr() uint64 {
	return uint64(p.Addr()) + headerSize
}

// placePayload writes the payload and its address and size; the caller holds
// the timestamp at 0 (or has not published yet).
func (p *Publication) placePayload(payload []byte) {
	var addr uintptr
	if p.opts.Placement == Inline && headerSize+len(payload) <= len(p.mapping) {
		copy(p.mapping[headerSize:], payload)
		addr = uintptr(unsafe.Pointer(&p.mapping[headerSize]))
	} else {
		buf := make([]byte, len(payload)) // Go's heap does not move objects
		copy(buf, payload)
		p.payloads[1] = p.payloads[0]
		p.payloads[0] = buf
		addr = uintptr(unsafe.Pointer(&buf[0]))
	}
	binary.LittleEndian.PutUint32(p.mapping[otep.OffsetPayloadSize:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(p.mapping[otep.OffsetPayloadAddress:], uint64(addr))
}

func (p *Publication) timestamp() *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&p.mapping[otep.OffsetPublishedAt]))
}

// storeTimestamp is a sequentially consistent store: every write before it
// is visible to a reader that sees the new value.
func (p *Publication) storeTimestamp(ts uint64) { p.timestamp().Store(ts) }

// name attempts PR_SET_VMA_ANON_NAME; kernels without CONFIG_ANON_VMA_NAME
// refuse it and the memfd name stays visible instead.
func (p *Publication) name() {
	label := []byte(otep.Signature + "\x00")
	_ = unix.Prctl(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME,
		uintptr(unsafe.Pointer(&p.mapping[0])), uintptr(len(p.mapping)),
		uintptr(unsafe.Pointer(&label[0])))
}

// nextTimestamp returns CLOCK_BOOTTIME now, or previous+1 if the clock has
// not moved past previous: every update must publish a larger value.
func nextTimestamp(previous uint64) uint64 {
	var ts unix.Timespec
	now := uint64(1)
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err == nil {
		now = uint64(ts.Nano())
	}
	return max(now, previous+1)
}
