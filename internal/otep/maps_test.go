// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	heapLine  = "55d0c0a4e000-55d0c0a6f000 rw-p 00000000 00:00 0                          [heap]"
	libcLine  = "7f2b4c428000-7f2b4c5bd000 r-xp 00028000 fe:01 1315070                    /usr/lib/x86_64-linux-gnu/libc.so.6"
	stackLine = "7ffd5d5e1000-7ffd5d602000 rw-p 00000000 00:00 0                          [stack]"
)

func ctxLine(perms, name string) string {
	return "7f2b4c7d1000-7f2b4c7d3000 " + perms + " 00000000 00:01 2053                       " + name
}

func TestParseMapsLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string // matched name, "" for no match
	}{
		{"memfd deleted", ctxLine("rw-p", "/memfd:OTEL_CTX (deleted)"), MappingMemfd},
		{"memfd", ctxLine("rw-p", "/memfd:OTEL_CTX"), MappingMemfd},
		{"anon_shmem", ctxLine("rw-s", "[anon_shmem:OTEL_CTX]"), MappingMemfdNamed},
		{"anon", ctxLine("rw-p", "[anon:OTEL_CTX]"), MappingAnonNamed},
		{"read only", ctxLine("r--p", "[anon:OTEL_CTX]"), MappingAnonNamed},
		{"OTEL_CTX2", ctxLine("rw-p", "/memfd:OTEL_CTX2 (deleted)"), ""},
		{"anon OTEL_CTX2", ctxLine("rw-p", "[anon:OTEL_CTX2]"), ""},
		{"executable", ctxLine("r-xp", "/memfd:OTEL_CTX (deleted)"), ""},
		{"not readable", ctxLine("-w-p", "[anon:OTEL_CTX]"), ""},
		{"inside a longer path", ctxLine("rw-p", "/tmp/x/memfd:OTEL_CTX"), ""},
		{"file named like it", ctxLine("rw-p", "/OTEL_CTX"), ""},
		{"prefix of the name", ctxLine("rw-p", "/memfd:OTEL_CT"), ""},
		{"anon deleted is not a name", ctxLine("rw-p", "[anon:OTEL_CTX] (deleted)"), ""},
		{"trailing space", ctxLine("rw-p", "[anon:OTEL_CTX] "), ""},
		{"no path", "7f2b4c7d1000-7f2b4c7d3000 rw-p 00000000 00:00 0", ""},
		{"heap", heapLine, ""},
		{"garbage", "OTEL_CTX OTEL_CTX OTEL_CTX", ""},
		{"empty range", "7f2b4c7d1000-7f2b4c7d1000 rw-p 00000000 00:01 2053 [anon:OTEL_CTX]", ""},
		{"address too long", "117f2b4c7d1000000-127f2b4c7d1000000 rw-p 00000000 00:01 2053 [anon:OTEL_CTX]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := parseMapsLine([]byte(tt.line))
			if tt.want == "" {
				assert.False(t, ok, "matched %+v", m)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, m.Name)
			assert.Equal(t, uint64(0x7f2b4c7d1000), m.Start)
			assert.Equal(t, uint64(0x7f2b4c7d3000), m.End)
		})
	}
}

// mapsFile builds a maps file of n filler lines with extra inserted at line at.
func mapsFile(n, at int, extra string) string {
	var b strings.Builder
	for i := range n {
		if i == at {
			b.WriteString(extra + "\n")
		}
		fmt.Fprintf(&b, "%x-%x r--p 00000000 fe:01 1315070                    /usr/lib/libfoo-%d.so\n", 0x10000+i*0x2000, 0x11000+i*0x2000, i)
	}
	if at >= n {
		b.WriteString(extra + "\n")
	}
	return b.String()
}

// findMapping is FindMapping with "not found" as a result rather than an
// error.
func findMapping(r io.Reader, buf []byte) (Mapping, bool, error) {
	m, _, err := FindMapping(r, buf)
	if errors.Is(err, ErrNoContext) {
		return m, false, nil
	}
	return m, err == nil, err
}

func TestFindMapping(t *testing.T) {
	hit := ctxLine("rw-p", "/memfd:OTEL_CTX (deleted)")
	long := "7f0000000000-7f0000001000 rw-p 00000000 00:01 1 /" + strings.Repeat("OTEL_CTX/", 10000)
	tests := []struct {
		name  string
		input string
		found bool
	}{
		{"empty", "", false},
		{"only heap", heapLine + "\n" + libcLine + "\n" + stackLine + "\n", false},
		{"first line", mapsFile(100, 0, hit), true},
		{"middle", mapsFile(5000, 2500, hit), true},
		{"last line without newline", strings.TrimSuffix(mapsFile(3000, 3000, hit), "\n"), true},
		{"near misses only", mapsFile(1000, 500, ctxLine("rw-p", "/memfd:OTEL_CTX2 (deleted)")) + ctxLine("r-xp", "[anon:OTEL_CTX]") + "\n", false},
		{"after a line longer than the buffer", mapsFile(10, 5, long) + hit + "\n", true},
		{"long line without newline at end", mapsFile(10, 10, long), false},
		{"miss then hit", ctxLine("rw-p", "[anon:OTEL_CTX2]") + "\n" + hit + "\n", true},
	}
	for _, tt := range tests {
		for _, chunk := range []string{"whole", "one byte", "half"} {
			t.Run(tt.name+"/"+chunk, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tt.input)
				switch chunk {
				case "one byte":
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				}
				m, found, err := findMapping(r, make([]byte, 4096))
				require.NoError(t, err)
				require.Equal(t, tt.found, found)
				if found {
					assert.Equal(t, MappingMemfd, m.Name)
					assert.Equal(t, uint64(0x7f2b4c7d1000), m.Start)
				}
			})
		}
	}
}

func TestFindMappingChunkBoundaries(t *testing.T) {
	hit := ctxLine("rw-p", "[anon:OTEL_CTX]")
	base := mapsFile(200, 200, "")
	// Slide the context line across every offset of a small buffer.
	for pad := range 300 {
		input := strings.Repeat("x", pad) + "\n" + base + hit + "\n" + stackLine + "\n"
		m, found, err := findMapping(strings.NewReader(input), make([]byte, 512))
		require.NoError(t, err)
		require.True(t, found, "pad %d", pad)
		require.Equal(t, MappingAnonNamed, m.Name)
	}
}

func TestFindMappingReadError(t *testing.T) {
	_, _, err := FindMapping(iotest.ErrReader(io.ErrUnexpectedEOF), make([]byte, 4096))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestFindMappingDoesNotAllocate(t *testing.T) {
	input := []byte(mapsFile(2000, 1999, ctxLine("rw-p", "[anon:OTEL_CTX]")))
	buf := make([]byte, MapsBufferSize)
	r := bytes.NewReader(input)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(input)
		if _, _, err := FindMapping(r, buf); err != nil {
			t.Fatal("not found")
		}
	})
	assert.Zero(t, allocs)
}

func FuzzParseMapsLine(f *testing.F) {
	for _, s := range []string{
		ctxLine("rw-p", "/memfd:OTEL_CTX (deleted)"), ctxLine("rw-p", "[anon:OTEL_CTX]"),
		ctxLine("r-xp", "[anon_shmem:OTEL_CTX]"), heapLine, libcLine, "", "-", "0-1 rw-p 0 0 0 [anon:OTEL_CTX]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, ok := parseMapsLine(line)
		if ok {
			if m.End <= m.Start || !bytes.Contains(line, mapsNeedle) {
				t.Fatalf("bad match %+v for %q", m, line)
			}
		}
		// The streaming scanner must agree with the line parser.
		_, found, err := findMapping(bytes.NewReader(line), make([]byte, 256))
		oneLine := len(line) < 200 && !bytes.ContainsAny(line, "\n")
		if err != nil || (oneLine && found != ok) {
			t.Fatalf("FindMapping found=%v err=%v, parseMapsLine ok=%v for %q", found, err, ok, line)
		}
	})
}
