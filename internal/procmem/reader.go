package procmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxTries bounds the seqlock loop (SPEC.md: at most 3 tries).
const maxTries = 3

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

// Reader reads process contexts through one procfs. It is safe for
// concurrent use.
type Reader struct {
	fs     *FS
	limits Limits
	bufs   sync.Pool // *[]byte scratch for maps chunks and payloads
	stats  readStats
}

type readStats struct {
	mapsFiles, mapsBytes, memoryReads, memoryBytes atomic.Uint64
}

// Stats counts what a Reader has read since it was created.
type Stats struct {
	MapsFiles   uint64 // maps files opened
	MapsBytes   uint64 // bytes read from maps files
	MemoryReads uint64 // reads of other processes' memory
	MemoryBytes uint64 // bytes requested from other processes' memory
}

// Stats returns the reader's counters.
func (r *Reader) Stats() Stats {
	return Stats{
		MapsFiles:   r.stats.mapsFiles.Load(),
		MapsBytes:   r.stats.mapsBytes.Load(),
		MemoryReads: r.stats.memoryReads.Load(),
		MemoryBytes: r.stats.memoryBytes.Load(),
	}
}

// NewReader returns a reader bound by limits.
func NewReader(fs *FS, limits Limits) (*Reader, error) {
	if err := limits.Validate(); err != nil {
		return nil, fmt.Errorf("reader limits: %w", err)
	}
	return &Reader{fs: fs, limits: limits}, nil
}

// FS returns the procfs the reader reads.
func (r *Reader) FS() *FS { return r.fs }

// Limits returns the reader's limits.
func (r *Reader) Limits() Limits { return r.limits }

// Read finds the context mapping of pid and reads its context.
func (r *Reader) Read(pid int) (Context, Mapping, error) {
	m, err := r.FindMapping(pid)
	if err != nil {
		return Context{}, Mapping{}, err
	}
	ctx, err := r.ReadContext(pid, m.Start)
	return ctx, m, err
}

// ReadContext reads the context whose header is at addr (a mapping's start,
// as FindMapping returned it) with the seqlock protocol.
func (r *Reader) ReadContext(pid int, addr uint64) (Context, error) {
	ctx, _, err := r.ReadIfChanged(pid, addr, 0)
	return ctx, err
}

// ReadIfChanged is ReadContext for a caller that already holds the context
// published at lastPublishedAt: when the timestamp is still the same it
// returns changed == false after one 8-byte read and nothing else.
// lastPublishedAt == 0 means "nothing held" and always reads.
func (r *Reader) ReadIfChanged(pid int, addr, lastPublishedAt uint64) (ctx Context, changed bool, err error) {
	mem := r.memory(pid)
	defer mem.close()

	if lastPublishedAt != 0 {
		ts, err := mem.readUint64(addr + offsetPublishedAt)
		if err != nil {
			return Context{}, false, headerReadError(pid, addr, err)
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
		ctx, err := r.readOnce(&mem, pid, addr)
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
func (r *Reader) readOnce(mem *remoteMemory, pid int, addr uint64) (Context, error) {
	var raw [HeaderSize]byte
	if err := mem.readAt(raw[:], addr); err != nil {
		return Context{}, headerReadError(pid, addr, err)
	}
	if binary.LittleEndian.Uint64(raw[offsetPublishedAt:]) == 0 {
		// Being written: the other fields may be half updated.
		return Context{}, fmt.Errorf("header of pid %d: timestamp 0: %w", pid, ErrTorn)
	}
	h, err := ParseHeader(raw[:], r.limits.MaxPayloadSize)
	if err != nil {
		return Context{}, fmt.Errorf("header of pid %d at %#x: %w", pid, addr, err)
	}

	buf := r.getBuffer(int(h.PayloadSize))
	defer r.putBuffer(buf)
	payload := (*buf)[:h.PayloadSize]
	payloadErr := mem.readAt(payload, h.PayloadAddress)

	again, err := mem.readUint64(addr + offsetPublishedAt)
	if err != nil {
		return Context{}, headerReadError(pid, addr, err)
	}
	if again != h.PublishedAt {
		return Context{}, fmt.Errorf("pid %d: timestamp changed while reading: %w", pid, ErrTorn)
	}
	if payloadErr != nil {
		if errors.Is(payloadErr, errBadAddress) {
			return Context{}, fmt.Errorf("payload of pid %d: %w: %d bytes at %#x not readable", pid, ErrInvalid, h.PayloadSize, h.PayloadAddress)
		}
		return Context{}, fmt.Errorf("payload of pid %d: %w", pid, payloadErr)
	}

	ctx := Context{
		PublishedAt: h.PublishedAt,
		PayloadSize: h.PayloadSize,
		Resource:    pcommon.NewMap(),
		Attributes:  pcommon.NewMap(),
	}
	if err := DecodePayload(payload, r.limits, ctx.Resource, ctx.Attributes); err != nil {
		return Context{}, fmt.Errorf("payload of pid %d: %w", pid, err)
	}
	return ctx, nil
}

// headerReadError classifies a failed header read: an unmapped header means
// the mapping is gone (unpublished, or the process exec'd).
func headerReadError(pid int, addr uint64, err error) error {
	if errors.Is(err, errBadAddress) {
		return fmt.Errorf("header of pid %d at %#x: mapping gone: %w", pid, addr, ErrNoContext)
	}
	return fmt.Errorf("header of pid %d: %w", pid, err)
}

func (r *Reader) getBuffer(n int) *[]byte {
	if b, ok := r.bufs.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	size := max(n, mapsBufferSize)
	b := make([]byte, n, size)
	return &b
}

func (r *Reader) putBuffer(b *[]byte) { r.bufs.Put(b) }
