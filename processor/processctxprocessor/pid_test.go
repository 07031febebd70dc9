package processctxprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestPidFromValue(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(pcommon.Value)
		want int
	}{
		{"int", func(v pcommon.Value) { v.SetInt(1234) }, 1234},
		{"int max", func(v pcommon.Value) { v.SetInt(maxPID) }, maxPID},
		{"int over max", func(v pcommon.Value) { v.SetInt(maxPID + 1) }, 0},
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

func TestPidOfKeyOrder(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.PIDAttributes = []string{"process.pid", "pid"}
	c := newCore(cfg)
	m := pcommon.NewMap()
	m.PutInt("pid", 2)
	pid, ok := c.pidOf(m)
	assert.True(t, ok)
	assert.Equal(t, 2, pid, "second key")
	m.PutInt("process.pid", 1)
	pid, _ = c.pidOf(m)
	assert.Equal(t, 1, pid, "first key wins")
	m.PutStr("process.pid", "garbage")
	pid, _ = c.pidOf(m)
	assert.Equal(t, 2, pid, "an invalid first key falls back to the next")
	m.Remove("pid")
	_, ok = c.pidOf(m)
	assert.False(t, ok)
}

func TestSamplePIDTableRank(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.PIDAttributes = []string{"process.pid", "pid"}
	c := newCore(cfg)
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

	table := c.samplePIDTable(d)
	assert.Equal(t, 55, pidOfSample(p.Samples().At(0), table), "process.pid ranks first")
	assert.Equal(t, 77, pidOfSample(p.Samples().At(1), table))

	empty := newProfileBuilder()
	assert.Empty(t, c.samplePIDTable(empty.pd.Dictionary()), "no pid attribute: no table")
}

func TestPIDIndex(t *testing.T) {
	var x pidIndex
	for round := range 2 {
		for i := range 3 * linearPIDs {
			assert.Equal(t, int32(-1), x.find(1000+i))
			assert.Equal(t, int32(i), x.add(1000+i))
		}
		for i := range 3 * linearPIDs {
			assert.Equal(t, int32(i), x.find(1000+i), "round %d", round)
		}
		assert.True(t, x.mapped)
		x.reset()
		assert.False(t, x.mapped)
		assert.Equal(t, int32(-1), x.find(1000))
	}
}
