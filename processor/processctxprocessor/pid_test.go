// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

func TestPidFromValue(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(pcommon.Value)
		want int
	}{
		{"int", func(v pcommon.Value) { v.SetInt(1234) }, 1234},
		{"int max", func(v pcommon.Value) { v.SetInt(tracker.MaxPID - 1) }, tracker.MaxPID - 1},
		{"int at the limit", func(v pcommon.Value) { v.SetInt(tracker.MaxPID) }, 0},
		{"int over max", func(v pcommon.Value) { v.SetInt(tracker.MaxPID + 1) }, 0},
		{"int zero", func(v pcommon.Value) { v.SetInt(0) }, 0},
		{"int negative", func(v pcommon.Value) { v.SetInt(-1) }, 0},
		{"int64 huge", func(v pcommon.Value) { v.SetInt(1 << 62) }, 0},
		{"string", func(v pcommon.Value) { v.SetStr("1234") }, 1234},
		{"string leading zeros", func(v pcommon.Value) { v.SetStr("007") }, 7},
		{"string zero", func(v pcommon.Value) { v.SetStr("0") }, 0},
		{"string empty", func(v pcommon.Value) { v.SetStr("") }, 0},
		{"string sign", func(v pcommon.Value) { v.SetStr("-12") }, 0},
		{"string plus", func(v pcommon.Value) { v.SetStr("+12") }, 0},
		{"string space", func(v pcommon.Value) { v.SetStr(" 12") }, 0},
		{"string garbage", func(v pcommon.Value) { v.SetStr("12a") }, 0},
		{"string max", func(v pcommon.Value) { v.SetStr("4194303") }, tracker.MaxPID - 1},
		{"string at the limit", func(v pcommon.Value) { v.SetStr("4194304") }, 0},
		{"string over max", func(v pcommon.Value) { v.SetStr("4194305") }, 0},
		{"string overflow", func(v pcommon.Value) { v.SetStr("99999999999999999999999") }, 0},
		{"string 10 digits", func(v pcommon.Value) { v.SetStr("9999999999") }, 0},
		{"double", func(v pcommon.Value) { v.SetDouble(12) }, 0},
		{"bool", func(v pcommon.Value) { v.SetBool(true) }, 0},
		{"bytes", func(v pcommon.Value) { v.SetEmptyBytes().FromRaw([]byte("12")) }, 0},
		{"slice", func(v pcommon.Value) { v.SetEmptySlice().AppendEmpty().SetInt(12) }, 0},
		{"empty", func(pcommon.Value) {}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := pcommon.NewValueEmpty()
			tt.set(v)
			pid, ok := pidFromValue(v)
			assert.Equal(t, tt.want, pid)
			assert.Equal(t, tt.want != 0, ok)
		})
	}
}

// The pid under the best key wins, wherever it is in the attributes; an
// invalid value under a key is invalidPID, unless some key holds a pid.
func TestPidRanking(t *testing.T) {
	ranking := pidRanking{"process.pid", "pid"}
	for _, tt := range []struct {
		name          string
		attrs         map[string]any
		wantPid       int
		wantContainer string
	}{
		{"second key", map[string]any{"pid": 2}, 2, ""},
		{"first key wins", map[string]any{"pid": 2, "process.pid": 1}, 1, ""},
		{"first key wins, listed last", map[string]any{"process.pid": "1", "pid": 2}, 1, ""},
		{"an invalid first key falls back to the next", map[string]any{"process.pid": "garbage", "pid": 2}, 2, ""},
		{"no valid pid", map[string]any{"process.pid": "garbage", "other": 3}, invalidPID, ""},
		{"an invalid second key does not win over a valid first", map[string]any{"process.pid": 4, "pid": "x"}, 4, ""},
		{"no valid pid under either key", map[string]any{"process.pid": 0, "pid": " 7"}, invalidPID, ""},
		{"no pid key", map[string]any{"other": 3}, 0, ""},
		{"container.id", map[string]any{"container.id": "c0ffee", "pid": int64(7)}, 7, "c0ffee"},
		{"container.id not a string", map[string]any{"container.id": 12}, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := pcommon.NewMap()
			require.NoError(t, m.FromRaw(tt.attrs))
			facts := ranking.factsOf(m)
			assert.Equal(t, resourceFacts{pid: tt.wantPid, containerID: tt.wantContainer}, facts)
			assert.Equal(t, tt.wantPid, ranking.pidOf(m))
		})
	}
}

func TestSamplePIDTableRank(t *testing.T) {
	ranking := pidRanking{"process.pid", "pid"}
	pb := newProfileBuilder()
	d := pb.pd.Dictionary()
	alt := d.AttributeTable().AppendEmpty()
	alt.SetKeyStrindex(pb.str("pid"))
	alt.Value().SetStr("77")
	altIdx := int32(d.AttributeTable().Len() - 1)
	p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
	pb.sample(p, 0, 55)
	p.Samples().At(0).AttributeIndices().Append(altIdx)
	pb.sample(p, 1, nil)
	p.Samples().At(1).AttributeIndices().Append(altIdx)

	table := ranking.samplePIDTable(d)
	assert.Equal(t, 55, pidOfSample(p.Samples().At(0), table), "process.pid ranks first")
	assert.Equal(t, 77, pidOfSample(p.Samples().At(1), table))

	empty := newProfileBuilder()
	assert.Empty(t, ranking.samplePIDTable(empty.pd.Dictionary()), "no pid attribute: no table")
}

// A sample whose pid attribute is no pid is invalidPID, unless another of
// its attributes holds a pid, under any key.
func TestSamplePIDTableInvalid(t *testing.T) {
	ranking := pidRanking{"process.pid", "pid"}
	pb := newProfileBuilder()
	d := pb.pd.Dictionary()
	alt := d.AttributeTable().AppendEmpty()
	alt.SetKeyStrindex(pb.str("pid"))
	alt.Value().SetStr("77")
	altIdx := int32(d.AttributeTable().Len() - 1)
	p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
	pb.sample(p, 0, "abc")
	pb.sample(p, 1, "abc")
	p.Samples().At(1).AttributeIndices().Append(altIdx)
	pb.sample(p, 2, nil)

	table := ranking.samplePIDTable(d)
	require.NotNil(t, table, "a pid key with no pid makes a table")
	assert.Equal(t, invalidPID, pidOfSample(p.Samples().At(0), table))
	assert.Equal(t, 77, pidOfSample(p.Samples().At(1), table), "a valid pid under the second key wins")
	assert.Equal(t, 0, pidOfSample(p.Samples().At(2), table))
}

// TestPIDMemo: pids are found at the positions they were added in, until
// a reset.
func TestPIDMemo(t *testing.T) {
	var m pidMemo
	for round := range 2 {
		for i := range 100 {
			pid := 1000 + 4096*i // pids that share low bits
			assert.Nil(t, m.find(pid))
			assert.Equal(t, i, m.add(pid, resolved{host: i}).host)
			assert.Same(t, &m.resolved[i], m.find(pid))
		}
		for i := range 100 {
			r := m.find(1000 + 4096*i)
			require.NotNil(t, r, "round %d", round)
			assert.Equal(t, i, r.host, "round %d", round)
			assert.Same(t, &m.resolved[i], r)
		}
		m.reset()
		assert.Nil(t, m.find(1000))
		assert.Empty(t, m.resolved)
	}
}
