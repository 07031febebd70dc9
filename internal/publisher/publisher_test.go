// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package publisher

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
)

// payloadAt returns the payload bytes the header points to, found among the
// publication's own buffers (the pointer must be one of them).
func payloadAt(t *testing.T, p *Publication, ptr uintptr, n int) []byte {
	t.Helper()
	if ptr == p.Addr()+headerSize {
		return p.mapping[headerSize : headerSize+n]
	}
	for _, b := range p.payloads {
		if len(b) > 0 && uintptr(unsafe.Pointer(&b[0])) == ptr {
			return b[:n]
		}
	}
	t.Fatalf("payload pointer %#x points to none of the publication's buffers", ptr)
	return nil
}

func mapsLine(t *testing.T, addr uintptr) string {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	prefix := fmt.Sprintf("%x-", addr)
	for line := range strings.SplitSeq(string(maps), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

func TestPublishUpdateUnpublish(t *testing.T) {
	for _, placement := range []Placement{Inline, Separate} {
		t.Run(fmt.Sprint(placement), func(t *testing.T) {
			payload := otep.EncodeStrings(map[string]string{"service.name": "a"})
			p, err := Publish(payload, Options{Placement: placement})
			require.NoError(t, err)

			h := p.mapping[:headerSize]
			assert.Equal(t, "OTEL_CTX", string(h[:8]))
			assert.Equal(t, uint32(2), binary.LittleEndian.Uint32(h[8:]))
			assert.Equal(t, uint32(len(payload)), binary.LittleEndian.Uint32(h[12:]))
			ts := binary.LittleEndian.Uint64(h[16:])
			assert.NotZero(t, ts)
			ptr := uintptr(binary.LittleEndian.Uint64(h[24:]))
			if placement == Inline {
				assert.Equal(t, p.Addr()+headerSize, ptr)
			} else {
				assert.NotEqual(t, p.Addr()+headerSize, ptr)
			}
			assert.Equal(t, payload, payloadAt(t, p, ptr, len(payload)))

			line := mapsLine(t, p.Addr())
			assert.Regexp(t, `rw-p .*(/memfd:OTEL_CTX \(deleted\)|\[anon_shmem:OTEL_CTX\])$`, line)

			// Update in place: same address, larger timestamp, new payload.
			addr := p.Addr()
			bigger := otep.EncodeStrings(map[string]string{"service.name": strings.Repeat("b", 20000)})
			require.NoError(t, p.Update(bigger))
			assert.Equal(t, addr, p.Addr())
			assert.Greater(t, p.PublishedAt(), ts)
			ptr = uintptr(binary.LittleEndian.Uint64(h[24:]))
			assert.Equal(t, bigger, payloadAt(t, p, ptr, len(bigger)))

			require.NoError(t, p.Unpublish())
			assert.Empty(t, mapsLine(t, addr))
			assert.ErrorIs(t, p.Update(payload), ErrUnpublished)
			assert.ErrorIs(t, p.Unpublish(), ErrUnpublished)
			assert.Zero(t, p.PublishedAt())
		})
	}
}

func TestTimestampsOnlyMoveForward(t *testing.T) {
	assert.Equal(t, uint64(1<<62+1), nextTimestamp(1<<62))
	now := nextTimestamp(0)
	assert.Greater(t, nextTimestamp(now), now)
}

func TestRejectsEmptyPayload(t *testing.T) {
	_, err := Publish(nil, Options{})
	require.Error(t, err)
}
