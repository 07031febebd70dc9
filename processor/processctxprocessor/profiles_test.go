// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// profileBuilder builds Profiles with one shared dictionary, the way the
// eBPF profiler does.
type profileBuilder struct {
	pd      pprofile.Profiles
	strs    map[string]int32
	pidAttr map[any]int32
	thread  int32
}

func newProfileBuilder() *profileBuilder {
	b := &profileBuilder{pd: pprofile.NewProfiles(), strs: map[string]int32{}, pidAttr: map[any]int32{}}
	d := b.pd.Dictionary()
	b.str("")
	d.AttributeTable().AppendEmpty() // index 0: the zero attribute
	d.StackTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	for i := range 3 { // stacks 1..3 of one location each
		loc := d.LocationTable().AppendEmpty()
		loc.SetAddress(uint64(0x1000 * (i + 1)))
		st := d.StackTable().AppendEmpty()
		st.LocationIndices().Append(int32(d.LocationTable().Len() - 1))
	}
	link := d.LinkTable().AppendEmpty()
	link.SetTraceID(pcommon.TraceID{1, 2, 3})
	link.SetSpanID(pcommon.SpanID{4, 5})
	thread := d.AttributeTable().AppendEmpty()
	thread.SetKeyStrindex(b.str("thread.name"))
	thread.Value().SetStr("main")
	b.thread = int32(d.AttributeTable().Len() - 1)
	return b
}

func (b *profileBuilder) str(s string) int32 {
	if i, ok := b.strs[s]; ok {
		return i
	}
	st := b.pd.Dictionary().StringTable()
	st.Append(s)
	b.strs[s] = int32(st.Len() - 1)
	return b.strs[s]
}

// pidIndex returns the attribute table index of process.pid=pid (int or
// string) in the dictionary.
func (b *profileBuilder) pidIndex(pid any) int32 {
	if i, ok := b.pidAttr[pid]; ok {
		return i
	}
	at := b.pd.Dictionary().AttributeTable()
	kv := at.AppendEmpty()
	kv.SetKeyStrindex(b.str("process.pid"))
	switch v := pid.(type) {
	case int:
		kv.Value().SetInt(int64(v))
	case string:
		kv.Value().SetStr(v)
	}
	b.pidAttr[pid] = int32(at.Len() - 1)
	return b.pidAttr[pid]
}

// profile appends a profile with every profile-level field set.
func (b *profileBuilder) profile(sp pprofile.ScopeProfiles, id byte) pprofile.Profile {
	p := sp.Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(b.str("samples"))
	p.SampleType().SetUnitStrindex(b.str("count"))
	p.PeriodType().SetTypeStrindex(b.str("cpu"))
	p.PeriodType().SetUnitStrindex(b.str("nanoseconds"))
	p.SetPeriod(50_000_000)
	p.SetTime(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(id)))
	p.SetDurationNano(5_000_000_000)
	p.AttributeIndices().Append(b.thread)
	p.SetDroppedAttributesCount(2)
	p.SetOriginalPayloadFormat("pprof")
	p.OriginalPayload().FromRaw([]byte{0xde, 0xad, id})
	p.SetProfileID(pprofile.ProfileID{id, 0xaa})
	return p
}

// sample appends a sample with a distinct value; pid nil means no pid.
func (b *profileBuilder) sample(p pprofile.Profile, n int, pid any) {
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(int32(n%3 + 1))
	if n%2 == 0 {
		s.SetLinkIndex(1)
	}
	s.Values().Append(int64(n+1), int64(100*(n+1)))
	s.TimestampsUnixNano().Append(uint64(1_700_000_000_000_000_000 + n))
	if pid != nil {
		s.AttributeIndices().Append(b.pidIndex(pid))
	}
	s.AttributeIndices().Append(b.thread)
}

// sampleSignature identifies a sample by everything it carries.
func sampleSignature(s pprofile.Sample) string {
	return fmt.Sprintf("stack=%d link=%d attrs=%v values=%v ts=%v",
		s.StackIndex(), s.LinkIndex(), s.AttributeIndices().AsRaw(), s.Values().AsRaw(), s.TimestampsUnixNano().AsRaw())
}

// allSamples lists the signatures of every sample and the sum of values.
func allSamples(pd pprofile.Profiles) (sigs []string, sum int64) {
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					sigs = append(sigs, sampleSignature(s))
					for _, v := range s.Values().All() {
						sum += v
					}
				}
			}
		}
	}
	slices.Sort(sigs)
	return sigs, sum
}

// samplePIDs returns the pid attribute of each sample of rp as a string.
func samplePIDs(t *testing.T, pd pprofile.Profiles, rp pprofile.ResourceProfiles) []string {
	t.Helper()
	var out []string
	for _, sp := range rp.ScopeProfiles().All() {
		for _, p := range sp.Profiles().All() {
			for _, s := range p.Samples().All() {
				m, err := pprofile.FromAttributeIndices(pd.Dictionary().AttributeTable(), s, pd.Dictionary())
				require.NoError(t, err)
				v, ok := m.Get("process.pid")
				if !ok {
					out = append(out, "-")
					continue
				}
				out = append(out, v.AsString())
			}
		}
	}
	return out
}

func serviceOf(attrs pcommon.Map) string {
	if v, ok := attrs.Get("service.name"); ok {
		return v.Str()
	}
	return ""
}

func TestProfilesSamplePids(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "cart")
	b := startPublisher(t, pubtest.C, "payment")
	gone := unusedPID(t)
	self := noContextPID()
	h := newHarness(t, testConfig())

	pb := newProfileBuilder()
	rp := pb.pd.ResourceProfiles().AppendEmpty()
	rp.SetSchemaUrl("schema-r")
	rp.Resource().Attributes().PutStr("host.name", "node-1")
	rp.Resource().Attributes().PutStr("profiler", "ebpf")
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("otel-ebpf-profiler")
	sp.Scope().SetVersion("0.1")
	sp.SetSchemaUrl("schema-s")
	// Profile 1: samples of both publishers and of pids without a context.
	p1 := pb.profile(sp, 1)
	for n, pid := range []any{a.Pid, strconv.Itoa(b.Pid), a.Pid, nil, gone, self, "bogus"} {
		pb.sample(p1, n, pid)
	}
	// Profile 2: only publisher b: moves whole, keeping its ID and payload.
	p2 := pb.profile(sp, 2)
	for n := range 3 {
		pb.sample(p2, 10+n, b.Pid)
	}
	// Profile 3: samples of a only, but under another scope.
	sp2 := rp.ScopeProfiles().AppendEmpty()
	sp2.Scope().SetName("other")
	p3 := pb.profile(sp2, 3)
	pb.sample(p3, 20, a.Pid)

	in := pprofile.NewProfiles()
	pb.pd.CopyTo(in)
	inSigs, inSum := allSamples(in)

	out := h.consumeProfiles(pb.pd)

	// Nothing is lost: every sample, with its indices and values.
	outSigs, outSum := allSamples(out)
	assert.Equal(t, inSigs, outSigs)
	assert.Equal(t, inSum, outSum)
	assert.Equal(t, in.SampleCount(), out.SampleCount())
	// One dictionary, unchanged: indices stay valid.
	assert.Equal(t, in.Dictionary().AttributeTable().Len(), out.Dictionary().AttributeTable().Len())
	assert.Equal(t, in.Dictionary().StringTable().AsRaw(), out.Dictionary().StringTable().AsRaw())

	require.Equal(t, 3, out.ResourceProfiles().Len())
	byService := map[string]pprofile.ResourceProfiles{}
	for _, r := range out.ResourceProfiles().All() {
		byService[serviceOf(r.Resource().Attributes())] = r
	}

	// The original keeps the samples without a context, in profile 1 only.
	orig := byService[""]
	assert.Equal(t, map[string]any{"host.name": "node-1", "profiler": "ebpf"}, orig.Resource().Attributes().AsRaw())
	assert.Equal(t, []string{"-", strconv.Itoa(gone), strconv.Itoa(self), "bogus"}, samplePIDs(t, out, orig))
	require.Equal(t, 1, orig.ScopeProfiles().Len())
	require.Equal(t, 1, orig.ScopeProfiles().At(0).Profiles().Len())
	kept := orig.ScopeProfiles().At(0).Profiles().At(0)
	assert.Equal(t, pprofile.ProfileID{1, 0xaa}, kept.ProfileID(), "the original keeps its ID")
	assert.Equal(t, []byte{0xde, 0xad, 1}, kept.OriginalPayload().AsRaw())

	for _, tc := range []struct {
		pub  *publishing
		pids []string
	}{
		{a, []string{strconv.Itoa(a.Pid), strconv.Itoa(a.Pid), strconv.Itoa(a.Pid)}},
		{b, []string{strconv.Itoa(b.Pid), strconv.Itoa(b.Pid), strconv.Itoa(b.Pid), strconv.Itoa(b.Pid)}},
	} {
		got, ok := byService[tc.pub.resource["service.name"].(string)]
		require.True(t, ok)
		want := withAttrs(tc.pub.published(), map[string]any{"host.name": "node-1", "profiler": "ebpf", "process.pid": int64(tc.pub.Pid)})
		assert.Equal(t, want, got.Resource().Attributes().AsRaw())
		assertNoThreadlocal(t, got.Resource().Attributes())
		assert.Equal(t, "schema-r", got.SchemaUrl())
		assert.Equal(t, tc.pids, samplePIDs(t, out, got))
		for _, gsp := range got.ScopeProfiles().All() {
			assert.Contains(t, []string{"otel-ebpf-profiler", "other"}, gsp.Scope().Name())
			if gsp.Scope().Name() == "otel-ebpf-profiler" {
				assert.Equal(t, "0.1", gsp.Scope().Version())
				assert.Equal(t, "schema-s", gsp.SchemaUrl())
			}
			for _, p := range gsp.Profiles().All() {
				// Every profile-level field is carried over.
				assert.Equal(t, pb.str("samples"), p.SampleType().TypeStrindex())
				assert.Equal(t, pb.str("count"), p.SampleType().UnitStrindex())
				assert.Equal(t, pb.str("cpu"), p.PeriodType().TypeStrindex())
				assert.Equal(t, pb.str("nanoseconds"), p.PeriodType().UnitStrindex())
				assert.Equal(t, int64(50_000_000), p.Period())
				assert.Equal(t, uint64(5_000_000_000), p.DurationNano())
				assert.Equal(t, []int32{pb.thread}, p.AttributeIndices().AsRaw())
				assert.Equal(t, uint32(2), p.DroppedAttributesCount())
				assert.Equal(t, "pprof", p.OriginalPayloadFormat())
				assert.False(t, p.ProfileID().IsEmpty())
			}
		}
	}

	// Profile IDs: the fragments of profile 1 get derived IDs; profiles 2
	// and 3, which moved whole, keep theirs and their payloads. Every ID and
	// every original payload exists once.
	ids := map[pprofile.ProfileID]int{}
	payloads := map[string]int{}
	for _, r := range out.ResourceProfiles().All() {
		for _, s := range r.ScopeProfiles().All() {
			for _, p := range s.Profiles().All() {
				ids[p.ProfileID()]++
				if p.OriginalPayload().Len() > 0 {
					payloads[string(p.OriginalPayload().AsRaw())]++
				}
			}
		}
	}
	assert.Len(t, ids, 5, "1 kept + 2 fragments of profile 1, profiles 2 and 3")
	for id, n := range ids {
		assert.Equal(t, 1, n, "profile ID %s used twice", id)
	}
	assert.Equal(t, 1, ids[pprofile.ProfileID{2, 0xaa}])
	assert.Equal(t, 1, ids[pprofile.ProfileID{3, 0xaa}])
	assert.Equal(t, map[string]int{"\xde\xad\x01": 1, "\xde\xad\x02": 1, "\xde\xad\x03": 1}, payloads)

	assertMarshals(t, out)
}

// assertMarshals checks that the output is valid for the pdata marshaler and
// survives a round trip.
func assertMarshals(t *testing.T, pd pprofile.Profiles) {
	t.Helper()
	m := &pprofile.ProtoMarshaler{}
	buf, err := m.MarshalProfiles(pd)
	require.NoError(t, err)
	back, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(buf)
	require.NoError(t, err)
	sigs, sum := allSamples(pd)
	backSigs, backSum := allSamples(back)
	assert.Equal(t, sigs, backSigs)
	assert.Equal(t, sum, backSum)
}

func TestProfilesResourcePid(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			pub := startPublisher(t, kind, "checkout")
			other := startPublisher(t, kind, "search")
			h := newHarness(t, testConfig())

			pb := newProfileBuilder()
			for _, pid := range []any{pub.Pid, strconv.Itoa(other.Pid), unusedPID(t)} {
				rp := pb.pd.ResourceProfiles().AppendEmpty()
				putPID(rp.Resource().Attributes(), pid)
				rp.Resource().Attributes().PutStr("host.name", "node-1")
				p := pb.profile(rp.ScopeProfiles().AppendEmpty(), 1)
				for n := range 4 {
					pb.sample(p, n, nil)
				}
			}
			in := pprofile.NewProfiles()
			pb.pd.CopyTo(in)

			out := h.consumeProfiles(pb.pd)
			require.Equal(t, 3, out.ResourceProfiles().Len())
			inSigs, inSum := allSamples(in)
			outSigs, outSum := allSamples(out)
			assert.Equal(t, inSigs, outSigs)
			assert.Equal(t, inSum, outSum)
			for i, p := range []*publishing{pub, other} {
				attrs := out.ResourceProfiles().At(i).Resource().Attributes()
				want := withAttrs(p.published(), map[string]any{"host.name": "node-1"})
				pidV, _ := in.ResourceProfiles().At(i).Resource().Attributes().Get("process.pid")
				want["process.pid"] = pidV.AsRaw()
				assert.Equal(t, want, attrs.AsRaw())
				assertNoThreadlocal(t, attrs)
			}
			assert.Equal(t, in.ResourceProfiles().At(2).Resource().Attributes().AsRaw(),
				out.ResourceProfiles().At(2).Resource().Attributes().AsRaw(), "no context: unchanged")
			assertMarshals(t, out)
		})
	}
}

func TestProfilesEverySampleOneProcess(t *testing.T) {
	a := startPublisher(t, pubtest.C, "cart")
	h := newHarness(t, testConfig())
	pb := newProfileBuilder()
	rp := pb.pd.ResourceProfiles().AppendEmpty()
	p := pb.profile(rp.ScopeProfiles().AppendEmpty(), 1)
	for n := range 5 {
		pb.sample(p, n, a.Pid)
	}
	out := h.consumeProfiles(pb.pd)
	require.Equal(t, 1, out.ResourceProfiles().Len(), "enriched in place")
	assert.Equal(t, withAttrs(a.published(), map[string]any{"process.pid": int64(a.Pid)}), out.ResourceProfiles().At(0).Resource().Attributes().AsRaw())
	assert.Equal(t, pprofile.ProfileID{1, 0xaa}, out.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).ProfileID())
	assert.Equal(t, 5, out.SampleCount())
}

func TestProfilesMalformedIndices(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "cart")
	h := newHarness(t, testConfig())
	pb := newProfileBuilder()
	rp := pb.pd.ResourceProfiles().AppendEmpty()
	p := pb.profile(rp.ScopeProfiles().AppendEmpty(), 1)
	pb.sample(p, 0, a.Pid)
	// Out-of-range attribute indices, and a pid attribute whose key index is
	// out of the string table: no pid, no panic.
	bad := p.Samples().AppendEmpty()
	bad.AttributeIndices().Append(-1, 1_000_000)
	bad.Values().Append(1)
	kv := pb.pd.Dictionary().AttributeTable().AppendEmpty()
	kv.SetKeyStrindex(1_000_000)
	kv.Value().SetInt(int64(a.Pid))
	worse := p.Samples().AppendEmpty()
	worse.AttributeIndices().Append(int32(pb.pd.Dictionary().AttributeTable().Len() - 1))
	worse.Values().Append(1)

	out := h.consumeProfiles(pb.pd)
	assert.Equal(t, 3, out.SampleCount())
	require.Equal(t, 2, out.ResourceProfiles().Len())
	assert.Equal(t, 2, out.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().Len())
	assert.Equal(t, "cart", serviceOf(out.ResourceProfiles().At(1).Resource().Attributes()))
}

// TestCopyProfileFieldsIsComplete guards copyProfileFields against fields
// added to Profile in later pdata versions: a profile copied with CopyTo and
// stripped of what a fragment does not take must equal the fragment.
func TestCopyProfileFieldsIsComplete(t *testing.T) {
	pb := newProfileBuilder()
	src := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 9)
	pb.sample(src, 1, 42)

	wrap := func(fill func(pprofile.Profile)) []byte {
		pd := pprofile.NewProfiles()
		fill(pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty())
		buf, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
		require.NoError(t, err)
		return buf
	}
	want := wrap(func(p pprofile.Profile) {
		src.CopyTo(p)
		p.Samples().RemoveIf(func(pprofile.Sample) bool { return true })
		p.SetProfileID(pprofile.NewProfileIDEmpty())
		p.OriginalPayload().FromRaw(nil)
	})
	got := wrap(func(p pprofile.Profile) { copyProfileFields(src, p) })
	assert.Equal(t, want, got)
	assert.Greater(t, len(got), 40, "the fields are set")
}

func TestFragmentID(t *testing.T) {
	assert.True(t, fragmentID(pprofile.NewProfileIDEmpty(), 1).IsEmpty())
	id := pprofile.ProfileID{1, 2, 3}
	a, b := fragmentID(id, 100), fragmentID(id, 101)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, id, a)
	assert.Equal(t, a, fragmentID(id, 100), "stable")
	assert.False(t, a.IsEmpty())
}
