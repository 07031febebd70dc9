// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// testReader reads through one memory access method.
type testReader struct {
	*Reader
	via Via
}

func newTestReader(t testing.TB) *testReader {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	r, err := New(fs, otep.DefaultLimits())
	require.NoError(t, err)
	return &testReader{Reader: r, via: ViaAuto}
}

// memFileReader reads memory only through /proc/<pid>/mem, as a collector
// in another pid namespace does.
func memFileReader(t testing.TB) *testReader {
	r := newTestReader(t)
	r.via = ViaMemFile
	return r
}

func (r *testReader) Read(pid int) (otep.Context, otep.Mapping, error) {
	m, err := r.FindMapping(pid)
	if err != nil {
		return otep.Context{}, otep.Mapping{}, err
	}
	ctx, err := r.ReadContext(pid, m.Start)
	return ctx, m, err
}

func (r *testReader) ReadContext(pid int, addr uint64) (otep.Context, error) {
	ctx, _, err := r.Reader.ReadContext(pid, addr, 0, r.via)
	return ctx, err
}

func (r *testReader) ReadIfChanged(pid int, addr, last uint64) (otep.Context, bool, error) {
	return r.Reader.ReadContext(pid, addr, last, r.via)
}

func errorIsAny(err error, kinds ...error) bool {
	for _, k := range kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func encode(t testing.TB, resource, attributes pcommon.Map) []byte {
	t.Helper()
	b, err := otep.Encode(resource, attributes)
	require.NoError(t, err)
	return b
}

func serviceContext(t testing.TB, name string) []byte {
	t.Helper()
	return otep.EncodeStrings(map[string]string{"service.name": name})
}
