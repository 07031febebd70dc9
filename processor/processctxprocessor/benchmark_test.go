package processctxprocessor

import (
	"context"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// benchPublishers starts a few real publishers, both implementations.
func benchPublishers(b *testing.B) []*publishing {
	var pubs []*publishing
	for i, kind := range []pubtest.Kind{pubtest.Go, pubtest.C, pubtest.Go, pubtest.C} {
		pubs = append(pubs, startPublisher(b, kind, "svc-"+strconv.Itoa(i)))
	}
	return pubs
}

// benchLogs builds 10,000 records under 100 resources, each resource
// carrying the pid of one of the publishers.
func benchLogs(pubs []*publishing) plog.Logs {
	ld := plog.NewLogs()
	for r := range 100 {
		rl := ld.ResourceLogs().AppendEmpty()
		attrs := rl.Resource().Attributes()
		attrs.PutInt("process.pid", int64(pubs[r%len(pubs)].Pid))
		attrs.PutStr("host.name", "node-1")
		sl := rl.ScopeLogs().AppendEmpty()
		for i := range 100 {
			lr := sl.LogRecords().AppendEmpty()
			lr.Body().SetStr("log line " + strconv.Itoa(i))
			lr.Attributes().PutStr("log.iostream", "stdout")
		}
	}
	return ld
}

// logsRounds runs enrich on copies of src b.N times in all. Copying 10,000
// records costs far more than enriching them, so the copies are reused:
// between rounds, with the timer stopped, the added keys are removed again,
// which restores the copies exactly (added keys are appended last).
func logsRounds(b *testing.B, src plog.Logs, added []string, enrich func(plog.Logs)) {
	const perRound = 16
	batch := make([]plog.Logs, perRound)
	for i := range batch {
		batch[i] = plog.NewLogs()
		src.CopyTo(batch[i])
	}
	strip := func(lds []plog.Logs) {
		for _, ld := range lds {
			for _, rl := range ld.ResourceLogs().All() {
				attrs := rl.Resource().Attributes()
				for _, k := range added {
					attrs.Remove(k)
				}
			}
		}
	}
	// Check once that a round trip restores the data.
	enrich(batch[0])
	strip(batch[:1])
	if !batch[0].ResourceLogs().At(0).Resource().Attributes().Equal(src.ResourceLogs().At(0).Resource().Attributes()) {
		b.Fatal("stripping does not restore the input")
	}

	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(b.N-done, perRound)
		for _, ld := range batch[:n] {
			enrich(ld)
		}
		done += n
		b.StopTimer()
		strip(batch[:n])
		b.StartTimer()
	}
}

func publishedKeys(pubs []*publishing) []string {
	var keys []string
	for k := range pubs[0].published() {
		keys = append(keys, k)
	}
	return keys
}

// BenchmarkLogsResourcePid: the warm-cache hot path of the common case,
// 10,000 records under 100 resources with the pids of 4 real publishers.
func BenchmarkLogsResourcePid(b *testing.B) {
	pubs := benchPublishers(b)
	h := newHarness(b, testConfig())
	ctx := context.Background()
	src := benchLogs(pubs)
	warm := plog.NewLogs()
	src.CopyTo(warm)
	if _, err := h.direct.processLogs(ctx, warm); err != nil {
		b.Fatal(err)
	}
	io := h.io()

	logsRounds(b, src, publishedKeys(pubs), func(ld plog.Logs) {
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	})
	b.StopTimer()
	if h.io() != io {
		b.Fatalf("the warm cache read /proc: %+v -> %+v", io, h.io())
	}
}

// BenchmarkLogsResourcePidBaseline is the floor: a plain upsert of the same
// keys and values on the same resources, as contrib's resourceprocessor does
// with static attributes.
func BenchmarkLogsResourcePidBaseline(b *testing.B) {
	pubs := benchPublishers(b)
	src := benchLogs(pubs)
	published := make(map[int]pcommon.Map, len(pubs))
	for _, p := range pubs {
		m := pcommon.NewMap()
		if err := m.FromRaw(p.published()); err != nil {
			b.Fatal(err)
		}
		published[p.Pid] = m
	}

	logsRounds(b, src, publishedKeys(pubs), func(ld plog.Logs) {
		rls := ld.ResourceLogs()
		for i := range rls.Len() {
			attrs := rls.At(i).Resource().Attributes()
			pid, _ := attrs.Get("process.pid")
			for k, v := range published[int(pid.Int())].All() {
				v.CopyTo(attrs.PutEmpty(k))
			}
		}
	})
}

// benchProfiles builds the pre-2026-03 eBPF profiler layout: one resource,
// 10 profiles of 1,000 samples each, samples of the publishers and of a pid
// without a context interleaved.
func benchProfiles(pubs []*publishing, other int) pprofile.Profiles {
	pb := newProfileBuilder()
	sp := pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty()
	for p := range 10 {
		prof := pb.profile(sp, byte(p))
		for n := range 1000 {
			pid := other
			if n%5 != 0 {
				pid = pubs[n%len(pubs)].Pid
			}
			pb.sample(prof, n, pid)
		}
	}
	return pb.pd
}

// BenchmarkProfilesSamplePids: regrouping 10,000 samples of 5 pids (4 with
// a context) under one resource into one resource per process.
func BenchmarkProfilesSamplePids(b *testing.B) {
	pubs := benchPublishers(b)
	h := newHarness(b, testConfig())
	src := benchProfiles(pubs, noContextPID())
	ctx := context.Background()
	p, err := newInstance(h.core, processortestSettings().TelemetrySettings, "profiles", func() {})
	if err != nil {
		b.Fatal(err)
	}
	warm := pprofile.NewProfiles()
	src.CopyTo(warm)
	if _, err := p.processProfiles(ctx, warm); err != nil {
		b.Fatal(err)
	}
	if warm.ResourceProfiles().Len() != len(pubs)+1 {
		b.Fatalf("got %d resources", warm.ResourceProfiles().Len())
	}

	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		pd := pprofile.NewProfiles()
		src.CopyTo(pd)
		b.StartTimer()
		if _, err := p.processProfiles(ctx, pd); err != nil {
			b.Fatal(err)
		}
	}
}
