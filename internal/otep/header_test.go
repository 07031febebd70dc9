// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SPEC.md's header test vector: v2, size 80, ts 123456789, payload at 0x2000.
const headerVector = "4f54454c5f435458020000005000000015cd5b07000000000020000000000000"

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

func TestParseHeaderVector(t *testing.T) {
	h, err := ParseHeader(mustHex(t, headerVector), 64<<10)
	require.NoError(t, err)
	assert.Equal(t, Header{Version: 2, PayloadSize: 80, PublishedAt: 123456789, PayloadAddress: 0x2000}, h)
}

func TestParseHeaderRejects(t *testing.T) {
	vector := mustHex(t, headerVector)
	with := func(off int, b ...byte) []byte {
		h := append([]byte(nil), vector...)
		copy(h[off:], b)
		return h
	}
	tests := []struct {
		name   string
		header []byte
		max    uint32
		kind   error
		reason string
	}{
		{"short", vector[:31], 64 << 10, ErrInvalid, "header is 31 bytes"},
		{"signature", with(0, 'o'), 64 << 10, ErrInvalid, "signature"},
		{"signature with NUL", with(7, 0), 64 << 10, ErrInvalid, "signature"},
		{"version 1", with(8, 1), 64 << 10, ErrInvalid, "version 1"},
		{"version 999", with(8, 0xe7, 3), 64 << 10, ErrInvalid, "version 999"},
		{"size 0", with(12, 0), 64 << 10, ErrInvalid, "payload size 0"},
		{"size over limit", with(12, 0x51), 80, ErrTooLarge, "81 exceeds the limit of 80"},
		{"size 4 GiB", with(12, 0xff, 0xff, 0xff, 0xff), 64 << 10, ErrTooLarge, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeader(tt.header, tt.max)
			require.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), tt.reason)
		})
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(mustHex(f, headerVector), uint32(64<<10))
	f.Add(make([]byte, 32), uint32(1))
	f.Add([]byte("OTEL_CTX"), uint32(80))
	f.Fuzz(func(t *testing.T, b []byte, max uint32) {
		h, err := ParseHeader(b, max)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if h.Version != 2 || h.PayloadSize == 0 || h.PayloadSize > max || string(b[:8]) != "OTEL_CTX" {
			t.Fatalf("accepted bad header %+v", h)
		}
	})
}
