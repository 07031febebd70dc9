// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMemory is a target's address space: regions of bytes at addresses,
// with hooks to change it between reads as a concurrent publisher would.
type fakeMemory struct {
	regions map[uint64][]byte
	reads   int
	// before is called before each read with its number (from 1).
	before func(n int, addr uint64)
	// fail, when set, is returned for every read.
	fail error
}

func (m *fakeMemory) ReadAt(p []byte, addr uint64) error {
	m.reads++
	if m.before != nil {
		m.before(m.reads, addr)
	}
	if m.fail != nil {
		return m.fail
	}
	for start, b := range m.regions {
		if addr >= start && addr+uint64(len(p)) <= start+uint64(len(b)) {
			copy(p, b[addr-start:])
			return nil
		}
	}
	return fmt.Errorf("%d bytes at %#x: %w", len(p), addr, ErrBadAddress)
}

const (
	headerAddr  = 0x10000
	payloadAddr = 0x20000
)

// publishedMemory holds a header at headerAddr pointing at payload.
func publishedMemory(payload []byte, ts uint64) *fakeMemory {
	h := make([]byte, HeaderSize)
	copy(h, Signature)
	binary.LittleEndian.PutUint32(h[OffsetVersion:], Version)
	binary.LittleEndian.PutUint32(h[OffsetPayloadSize:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[OffsetPublishedAt:], ts)
	binary.LittleEndian.PutUint64(h[OffsetPayloadAddress:], payloadAddr)
	return &fakeMemory{regions: map[uint64][]byte{headerAddr: h, payloadAddr: append([]byte(nil), payload...)}}
}

func (m *fakeMemory) setTimestamp(ts uint64) {
	binary.LittleEndian.PutUint64(m.regions[headerAddr][OffsetPublishedAt:], ts)
}

func newReader(t *testing.T) *Reader {
	t.Helper()
	r, err := NewReader(DefaultLimits())
	require.NoError(t, err)
	return r
}

func TestReadSeqlock(t *testing.T) {
	payload := EncodeStrings(map[string]string{"service.name": "checkout"})
	errGone := errors.New("process gone")
	tests := []struct {
		name    string
		mem     func() *fakeMemory
		last    uint64
		want    error // nil: success
		changed bool
		reads   int
	}{
		{"first read", func() *fakeMemory { return publishedMemory(payload, 7) }, 0, nil, true, 3},
		{"unchanged costs one read", func() *fakeMemory { return publishedMemory(payload, 7) }, 7, nil, false, 1},
		{"changed", func() *fakeMemory { return publishedMemory(payload, 8) }, 7, nil, true, 4},
		{"update in progress on every try", func() *fakeMemory { return publishedMemory(payload, 0) }, 0, ErrTorn, false, 3},
		{"timestamp moves during every read", func() *fakeMemory {
			m := publishedMemory(payload, 1)
			m.before = func(n int, _ uint64) { m.setTimestamp(uint64(n)) }
			return m
		}, 0, ErrTorn, false, 9},
		{"timestamp moves once", func() *fakeMemory {
			m := publishedMemory(payload, 1)
			m.before = func(n int, _ uint64) {
				if n == 2 {
					m.setTimestamp(2)
				}
			}
			return m
		}, 0, nil, true, 6},
		{"header unmapped", func() *fakeMemory { return &fakeMemory{} }, 0, ErrNoContext, false, 1},
		{"header unmapped when checking", func() *fakeMemory { return &fakeMemory{} }, 7, ErrNoContext, false, 1},
		{"payload unmapped", func() *fakeMemory {
			m := publishedMemory(payload, 7)
			delete(m.regions, payloadAddr)
			return m
		}, 0, ErrInvalid, false, 3},
		{"process gone", func() *fakeMemory { return &fakeMemory{fail: errGone} }, 0, errGone, false, 1},
		{"payload too large", func() *fakeMemory {
			m := publishedMemory(payload, 7)
			binary.LittleEndian.PutUint32(m.regions[headerAddr][OffsetPayloadSize:], 1<<30)
			return m
		}, 0, ErrTooLarge, false, 1},
		{"garbage payload", func() *fakeMemory { return publishedMemory([]byte{0xff, 0xff, 0xff}, 7) }, 0, ErrInvalid, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := tt.mem()
			ctx, changed, err := newReader(t).Read(mem, headerAddr, tt.last)
			assert.Equal(t, tt.reads, mem.reads, "memory reads")
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.changed, changed)
			if changed {
				assert.Equal(t, "checkout", ctx.Resource.AsRaw()["service.name"])
				assert.NotZero(t, ctx.PublishedAt)
			}
		})
	}
}

func TestReadUnchangedDoesNotAllocate(t *testing.T) {
	mem := publishedMemory(EncodeStrings(map[string]string{"service.name": "x"}), 7)
	r := newReader(t)
	_, _, _ = r.Read(mem, headerAddr, 7) // fill the buffer pool
	allocs := testing.AllocsPerRun(100, func() {
		if _, changed, err := r.Read(mem, headerAddr, 7); err != nil || changed {
			t.Fatal(changed, err)
		}
	})
	assert.Zero(t, allocs)
}
