// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

func TestMoveItems(t *testing.T) {
	for _, tt := range []struct {
		name     string
		groups   []int32
		wantKept []string
		wantDst  [2][]string
	}{
		{"mixed", []int32{-1, 0, 1, 0, -1}, []string{"0", "4"}, [2][]string{{"1", "3"}, {"2"}}},
		{"every item moves", []int32{1, 0, 1}, nil, [2][]string{{"1"}, {"0", "2"}}},
		{"the whole leaf to one group", []int32{1, 1, 1}, nil, [2][]string{nil, {"0", "1", "2"}}},
		{"the first stays", []int32{-1, 0, 0}, []string{"0"}, [2][]string{{"1", "2"}, nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := plog.NewLogRecordSlice()
			for i := range tt.groups {
				src.AppendEmpty().Body().SetStr(strconv.Itoa(i))
			}
			dst := []plog.LogRecordSlice{plog.NewLogRecordSlice(), plog.NewLogRecordSlice()}
			dst[1].AppendEmpty().Body().SetStr("there before")
			moveItems[plog.LogRecord](src, tt.groups, dst)
			assert.Equal(t, tt.wantKept, recordBodies(src))
			assert.Equal(t, tt.wantDst[0], recordBodies(dst[0]))
			assert.Equal(t, append([]string{"there before"}, tt.wantDst[1]...), recordBodies(dst[1]))
		})
	}
}

func recordBodies(s plog.LogRecordSlice) []string {
	var out []string
	for _, lr := range s.All() {
		out = append(out, lr.Body().Str())
	}
	return out
}

// Journald-like logs (one resource without a pid, a pid per record) and
// the old eBPF profiler's profiles (a pid per sample) are regrouped into a
// resource per process, every item counted once.
func TestRegroupRecordsAndSamples(t *testing.T) {
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), retryHost())

	t.Run("logs", func(t *testing.T) {
		ld := recordPidLogs(entitymodel.ProcessPIDKey, retryCart, retryPay, retryNoContext, 0)
		// A scope of one process: its records move at once.
		sl := ld.ResourceLogs().At(0).ScopeLogs().AppendEmpty()
		sl.Scope().SetName("pay only")
		addRecord(sl, "pay only", retryPay)
		records := ld.LogRecordCount()

		out := h.consumeLogs(ld)
		assert.Equal(t, records, out.LogRecordCount(), "no record lost or duplicated")
		// By service and host: the second resource (node-2) is emptied.
		got := map[string]map[string][]string{}
		for _, rl := range out.ResourceLogs().All() {
			attrs := rl.Resource().Attributes()
			host, _ := attrs.Get("host.name")
			key := serviceOf(attrs) + "@" + host.Str()
			require.NotContains(t, got, key)
			got[key] = bodies(rl)
			if serviceOf(attrs) != "" {
				pid, _ := attrs.Get(entitymodel.ProcessPIDKey)
				assert.Equal(t, map[string]int64{"cart": retryCart, "pay": retryPay}[serviceOf(attrs)], pid.Int(), key)
			}
		}
		assert.Equal(t, map[string]map[string][]string{
			"@node-1": {
				"scope-0": {"0/0/12", "0/0/0", "0/1/12", "0/1/0", "0/none"},
				"scope-1": {"1/0/12", "1/0/0", "1/1/12", "1/1/0", "1/none"},
			},
			"cart@node-1": {"scope-0": {"0/0/10", "0/1/10"}, "scope-1": {"1/0/10", "1/1/10"}},
			"pay@node-1":  {"scope-0": {"0/0/11", "0/1/11"}, "scope-1": {"1/0/11", "1/1/11"}, "pay only": {"pay only"}},
			"cart@node-2": {"": {"all/10"}},
			"pay@node-2":  {"": {"all/11"}},
		}, got)
		assert.Equal(t, int64(11), counter(t, h, "otelcol_processor_process_context_enriched")["logs/context"])
		assert.Equal(t, int64(4), counter(t, h, "otelcol_processor_process_context_no_context")["logs"])
	})

	t.Run("profiles", func(t *testing.T) {
		pd := samplePidProfiles(entitymodel.ProcessPIDKey, retryCart, retryPay, retryNoContext, 0)
		samples := pd.SampleCount()
		dict := pd.Dictionary().AttributeTable().Len()

		out := h.consumeProfiles(pd)
		assert.Equal(t, samples, out.SampleCount(), "no sample lost or duplicated")
		assert.Equal(t, dict, out.Dictionary().AttributeTable().Len(), "the dictionary stays as it is")
		require.Equal(t, 3, out.ResourceProfiles().Len())
		byService := map[string]pprofile.ResourceProfiles{}
		for _, rp := range out.ResourceProfiles().All() {
			byService[serviceOf(rp.Resource().Attributes())] = rp
		}
		for svc, want := range map[string][]string{
			"":     {strconv.Itoa(retryNoContext), "-", strconv.Itoa(retryNoContext), "-", "-"},
			"cart": {strconv.Itoa(retryCart), strconv.Itoa(retryCart), strconv.Itoa(retryCart)},
			"pay":  {strconv.Itoa(retryPay), strconv.Itoa(retryPay), strconv.Itoa(retryPay)},
		} {
			require.Contains(t, byService, svc)
			assert.Equal(t, want, samplePIDs(t, out, byService[svc]), "service %q", svc)
		}
		orig := byService[""].ScopeProfiles().At(0).Profiles()
		require.Equal(t, 1, orig.Len(), "the profile all of whose samples moved is removed")
		assert.Equal(t, pprofile.ProfileID{1, 0xaa}, orig.At(0).ProfileID())
		// The removed profile's identity and payload went to its first
		// fragment, cart's (its first sample is cart's).
		var carried []string
		for _, sp := range byService["cart"].ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				if p.ProfileID() == (pprofile.ProfileID{2, 0xaa}) {
					carried = append(carried, string(p.OriginalPayload().AsRaw()))
				}
			}
		}
		assert.Equal(t, []string{"\xde\xad\x02"}, carried)
		assert.Equal(t, int64(6), counter(t, h, "otelcol_processor_process_context_enriched")["profiles/context"])
		assert.Equal(t, int64(2), counter(t, h, "otelcol_processor_process_context_no_context")["profiles"])
		assertMarshals(t, out)
	})
}

// A record pid under a resource's container.id is the container's pid.
func TestRegroupContainerPids(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(20)
	host.Publish(20, "boxed")
	host.Set(20, func(p *trackertest.Proc) { p.ContainerID, p.NSpid = retryContainer, []int{20, 1} })
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr(entitymodel.ContainerIDKey, retryContainer)
	sl := rl.ScopeLogs().AppendEmpty()
	addRecord(sl, "in the container", 1)
	addRecord(sl, "none", nil)
	out := h.consumeLogs(ld)
	byService := logsByService(t, out)
	assert.Equal(t, map[string][]string{"": {"in the container"}}, bodies(byService["boxed"]))
	attrs := byService["boxed"].Resource().Attributes().AsRaw()
	assert.Equal(t, int64(20), attrs[entitymodel.ProcessPIDKey])
	assert.Equal(t, int64(1), attrs[entitymodel.ProcessVPIDKey])
}
