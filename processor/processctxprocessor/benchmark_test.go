// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// benchPids is the number of processes in the benchmarks' telemetry.
const benchPids = 100

// benchPublishers starts benchPids real publishers, both implementations.
func benchPublishers(b *testing.B) []*publishing {
	var pubs []*publishing
	for i := range benchPids {
		kind := pubtest.C
		if i%2 == 0 {
			kind = pubtest.Go
		}
		pubs = append(pubs, startPublisher(b, kind, "svc-"+strconv.Itoa(i)))
	}
	return pubs
}

// benchLogs builds 10,000 records under 100 resources, each resource
// carrying the pid of one of the publishers.
func benchLogs(pubs []*publishing) plog.Logs {
	pids := make([]int, len(pubs))
	for i, p := range pubs {
		pids[i] = p.Pid
	}
	return benchLogsOf(pids)
}

// benchLogsOf is benchLogs for pids.
func benchLogsOf(pids []int) plog.Logs {
	ld := plog.NewLogs()
	for r := range 100 {
		rl := ld.ResourceLogs().AppendEmpty()
		attrs := rl.Resource().Attributes()
		attrs.PutInt("process.pid", int64(pids[r%len(pids)]))
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

// stripKeys removes the added keys and entity references again, which
// restores enriched copies exactly (added keys are appended last; the
// inputs have no references).
func stripKeys(lds []plog.Logs, added []string) {
	for _, ld := range lds {
		for _, rl := range ld.ResourceLogs().All() {
			attrs := rl.Resource().Attributes()
			for _, k := range added {
				attrs.Remove(k)
			}
			entity.ResourceEntityRefs(rl.Resource()).RemoveIf(func(entity.EntityRef) bool { return true })
		}
	}
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
	strip := func(lds []plog.Logs) { stripKeys(lds, added) }
	// Check once that a round trip restores the data.
	enrich(batch[0])
	strip(batch[:1])
	if first := batch[0].ResourceLogs().At(0).Resource(); !first.Attributes().Equal(src.ResourceLogs().At(0).Resource().Attributes()) ||
		entity.ResourceEntityRefs(first).Len() != 0 {
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

// warmUp processes a copy of src once, so that the tracker knows its pids,
// and returns the processed copy.
func warmUp(b *testing.B, h *harness, src plog.Logs) plog.Logs {
	warm := plog.NewLogs()
	src.CopyTo(warm)
	if _, err := h.direct.processLogs(context.Background(), warm); err != nil {
		b.Fatal(err)
	}
	return warm
}

// entityRefsVariants runs bench with entity_refs on and off, on the same
// publishers.
func entityRefsVariants(b *testing.B, bench func(b *testing.B, pubs []*publishing, cfg *Config)) {
	pubs := benchPublishers(b)
	for _, on := range []bool{true, false} {
		b.Run("entity_refs="+strconv.FormatBool(on), func(b *testing.B) {
			cfg := testConfig()
			cfg.EntityRefs = on
			bench(b, pubs, cfg)
		})
	}
}

// BenchmarkLogsResourcePid: the hot path of the common case, 10,000
// records under 100 resources with the pids of 100 real publishers the
// tracker knows.
func BenchmarkLogsResourcePid(b *testing.B) {
	entityRefsVariants(b, benchLogsResourcePid)
}

func benchLogsResourcePid(b *testing.B, pubs []*publishing, cfg *Config) {
	h := newHarness(b, cfg)
	ctx := context.Background()
	src := benchLogs(pubs)
	warmUp(b, h, src)
	pids := make([]int, len(pubs))
	for i, p := range pubs {
		pids[i] = p.Pid
	}
	before := h.mapsReads.of(pids...)

	logsRounds(b, src, publishedKeys(pubs), func(ld plog.Logs) {
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	})
	b.StopTimer()
	if after := h.mapsReads.of(pids...); after != before {
		b.Fatalf("the publishers' maps were read %d times while the processor ran", after-before)
	}
}

// BenchmarkLogsResourcePidBaseline is the floor: a plain upsert of the same
// keys and values (process.creation.time included) on the same resources,
// as contrib's resourceprocessor does with static attributes; no entity
// references.
func BenchmarkLogsResourcePidBaseline(b *testing.B) {
	pubs := benchPublishers(b)
	logsRounds(b, benchLogs(pubs), publishedKeys(pubs), plainUpsert(b, pubs))
}

// plainUpsert returns the baseline's enrichment: each resource gets the
// attributes its pid's process published, upserted from a prepared map.
func plainUpsert(b *testing.B, pubs []*publishing) func(plog.Logs) {
	published := make(map[int]pcommon.Map, len(pubs))
	for _, p := range pubs {
		m := pcommon.NewMap()
		if err := m.FromRaw(p.published()); err != nil {
			b.Fatal(err)
		}
		published[p.Pid] = m
	}
	return func(ld plog.Logs) {
		rls := ld.ResourceLogs()
		for i := range rls.Len() {
			attrs := rls.At(i).Resource().Attributes()
			pid, _ := attrs.Get("process.pid")
			for k, v := range published[int(pid.Int())].All() {
				v.CopyTo(attrs.PutEmpty(k))
			}
		}
	}
}

// BenchmarkLogsResourcePidVsBaseline runs the processor and the plain upsert
// alternately on the same data, so that both see the same machine (this VM
// is shared: back-to-back benchmarks differ by more than the ratio sought),
// and reports the ratio of their times, with entity_refs on (the default:
// each resource also gets its process, service and service.instance
// references) and off (attributes only, as the upsert).
func BenchmarkLogsResourcePidVsBaseline(b *testing.B) {
	entityRefsVariants(b, benchLogsResourcePidVsBaseline)
}

func benchLogsResourcePidVsBaseline(b *testing.B, pubs []*publishing, cfg *Config) {
	h := newHarness(b, cfg)
	ctx := context.Background()
	src := benchLogs(pubs)
	wantRefs := 0
	if cfg.EntityRefs {
		wantRefs = 3 // process, service, service.instance
	}
	if got := entity.ResourceEntityRefs(warmUp(b, h, src).ResourceLogs().At(0).Resource()).Len(); got != wantRefs {
		b.Fatalf("got %d entity references, want %d", got, wantRefs)
	}
	upsert := plainUpsert(b, pubs)
	keys := publishedKeys(pubs)
	copies := [2]plog.Logs{plog.NewLogs(), plog.NewLogs()}
	for _, c := range copies {
		src.CopyTo(c)
	}
	process := func() {
		if _, err := h.direct.processLogs(ctx, copies[0]); err != nil {
			b.Fatal(err)
		}
	}
	vsBaseline(b, "processor", process, func() { upsert(copies[1]) }, func() { stripKeys(copies[:], keys) })
}

// vsBaseline times measured against baseline in one b.Loop, alternating
// which goes first, with reset (untimed) after each pair, and reports
// both per batch (measured as name-ns/batch) and their ratio
// (x-baseline).
func vsBaseline(b *testing.B, name string, measured, baseline, reset func()) {
	var m, base time.Duration
	run := func(f func()) time.Duration { t := time.Now(); f(); return time.Since(t) }
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			m += run(measured)
			base += run(baseline)
		} else {
			base += run(baseline)
			m += run(measured)
		}
		b.StopTimer()
		reset()
		b.StartTimer()
	}
	b.ReportMetric(float64(m.Nanoseconds())/float64(b.N), name+"-ns/batch")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/batch")
	b.ReportMetric(float64(m)/float64(base), "x-baseline")
}

// benchSamples is the number of samples in the profiles benchmark.
const benchSamples = 100_000

// benchProfiles builds the pre-2026-03 eBPF profiler layout: one resource,
// 10 profiles of benchSamples/10 samples each, samples of the publishers and
// of a pid without a context interleaved.
func benchProfiles(pubs []*publishing, other int) pprofile.Profiles {
	pb := newProfileBuilder()
	sp := pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty()
	for p := range 10 {
		prof := pb.profile(sp, byte(p))
		k := 0 // the next publisher, so that every one gets samples
		for n := range benchSamples / 10 {
			pid := other
			if n%5 != 0 {
				pid = pubs[k%len(pubs)].Pid
				k++
			}
			pb.sample(prof, n, pid)
		}
	}
	return pb.pd
}

// BenchmarkProfilesSamplePids: regrouping 100,000 samples of 101 pids (100
// with a context) under one resource into one resource per process.
func BenchmarkProfilesSamplePids(b *testing.B) {
	pubs := benchPublishers(b)
	h := newHarness(b, testConfig())
	src := benchProfiles(pubs, noContextPID())
	ctx := context.Background()
	p, err := newInstance(processortest.NewNopSettings(metadata.Type), testConfig(), signalProfiles)
	if err != nil {
		b.Fatal(err)
	}
	startAll(b, h.extHost, p)
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
		runtime.GC() // the copy's garbage is not the processor's
		b.StartTimer()
		if _, err := p.processProfiles(ctx, pd); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSamples), "ns/sample")
}

// benchRecordLogs builds 10,000 records under one resource, each carrying
// the pid of one of the publishers (journald-like), every fifth one a pid
// without a context.
func benchRecordLogs(pubs []*publishing) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("host.name", "node-1")
	sl := rl.ScopeLogs().AppendEmpty()
	k := 0 // the next publisher, so that every one gets records
	for i := range 10_000 {
		pid := noContextPID()
		if i%5 != 0 {
			pid = pubs[k%len(pubs)].Pid
			k++
		}
		addRecord(sl, "log line "+strconv.Itoa(i), pid)
	}
	return ld
}

// BenchmarkLogsRecordPids: regrouping 10,000 records of 101 pids under one
// resource into one resource per process, warm cache.
func BenchmarkLogsRecordPids(b *testing.B) {
	pubs := benchPublishers(b)
	h := newHarness(b, testConfig())
	ctx := context.Background()
	src := benchRecordLogs(pubs)
	warm := warmUp(b, h, src)
	if warm.ResourceLogs().Len() != len(pubs)+1 {
		b.Fatalf("got %d resources", warm.ResourceLogs().Len())
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		ld := plog.NewLogs()
		src.CopyTo(ld)
		runtime.GC() // the copy's garbage is not the processor's
		b.StartTimer()
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*src.LogRecordCount()), "ns/record")
}

// BenchmarkLogsResourcePidCold: the batch of BenchmarkLogsResourcePid met
// by a new processor, whose tracker has not seen the 100 pids yet (its
// first scan of the host runs meanwhile): the batch probes them, each a
// stat read, a maps scan, a seqlock read and decode and an identity read,
// and waits for them. Compare with BenchmarkLogsResourcePid (warm).
func BenchmarkLogsResourcePidCold(b *testing.B) {
	pubs := benchPublishers(b)
	src := benchLogs(pubs)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, testConfig()) // a new tracker and processor
		ld := plog.NewLogs()
		src.CopyTo(ld)
		b.StartTimer()
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPids), "ns/pid")
}

// BenchmarkLogsUnknownPidsWhileStalled: batches of 100 pids never seen
// before while every read of the host is stuck (a fake host whose maps
// reads never return): each batch leaves the processor once lookup_timeout
// has passed, unenriched, whatever the reads do. ms/batch is the time a
// batch is held; bound-ms the configured bound.
func BenchmarkLogsUnknownPidsWhileStalled(b *testing.B) {
	host := trackertest.NewHost()
	cfg := testConfig()
	cfg.LookupTimeout = defaultLookupTimeout
	tc := fakeTrackerConfig()
	tc.ReadTimeout = time.Hour
	h := newFakeHarness(b, cfg, tc, host)
	ctx := context.Background()
	next := 1000
	b.ReportAllocs()
	var worst time.Duration
	for b.Loop() {
		b.StopTimer()
		pids := make([]int, 100)
		for i := range pids {
			pids[i] = next
			host.Add(next).Block = trackertest.MethodMaps
			next++
		}
		ld := resourceLogs(pids...)
		b.StartTimer()
		began := time.Now()
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(began))
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/batch")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms/batch")
	b.ReportMetric(float64(cfg.LookupTimeout.Milliseconds()), "bound-ms")
}

// BenchmarkEntityRefsFloor is the least entity references can cost
// through pdata's public API, with no processor around them: the plain
// upsert of BenchmarkLogsResourcePidVsBaseline's keys on 100 resources,
// alone and followed by appending the three references the processor adds
// there (process, service, service.instance) from prebuilt key lists,
// alternately on the same machine. The ratio bounds what
// BenchmarkLogsResourcePidVsBaseline/entity_refs=true can reach.
func BenchmarkEntityRefsFloor(b *testing.B) {
	published := pcommon.NewMap()
	published.PutStr("service.name", "svc")
	published.PutStr("service.instance.id", "svc-go-1")
	published.PutStr("deployment.environment.name", "test")
	published.PutInt("service.shard", 7)
	published.PutStr("process.creation.time", "2026-12-01T12:00:00.5Z")
	refs := []entityRef{
		{typ: entitymodel.Process, idKeys: []string{entitymodel.ProcessPIDKey, entitymodel.ProcessCreationTimeKey}, descriptionKeys: []string{"deployment.environment.name", "service.shard"}},
		{typ: entitymodel.Service, idKeys: []string{entitymodel.ServiceNameKey}},
		{typ: entitymodel.ServiceInstance, idKeys: []string{entitymodel.ServiceInstanceIDKey}},
	}
	pids := make([]int, benchPids)
	for i := range pids {
		pids[i] = 1000 + i
	}
	upsert := func(ld plog.Logs, withRefs bool) {
		for _, rl := range ld.ResourceLogs().All() {
			attrs := rl.Resource().Attributes()
			for k, v := range published.All() {
				v.CopyTo(attrs.PutEmpty(k))
			}
			if withRefs {
				appendRefs(entity.ResourceEntityRefs(rl.Resource()), refs)
			}
		}
	}
	var keys []string
	for k := range published.All() {
		keys = append(keys, k)
	}
	copies := [2]plog.Logs{plog.NewLogs(), plog.NewLogs()}
	for _, c := range copies {
		benchLogsOf(pids).CopyTo(c)
	}
	vsBaseline(b, "refs", func() { upsert(copies[1], true) }, func() { upsert(copies[0], false) },
		func() { stripKeys(copies[:], keys) })
}
