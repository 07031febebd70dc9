// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// The load's pipelines: through the process_context processor, and a
// baseline without it (same receiver, batch and exporter settings) that
// tells what the processor adds.
const (
	pipeEnriched = iota
	pipeBaseline
	numPipes
)

var pipeNames = [numPipes]string{"enriched", "baseline"}

const (
	sigLogs = iota
	sigProfiles
	numSignals
)

var signalNames = [numSignals]string{"logs", "profiles"}

// Pid classes of the records.
const (
	classStable  = iota // a publisher alive all along: must be enriched
	classLive           // a publisher that published ≥ 1 s before the send: must be enriched
	classYoung          // published < 1 s before the send: reported
	classExited         // exited before the send: passes through (enriched in the grace period)
	classStopped        // a SIGSTOPped publisher (faults): reported
	classIdle           // a process without a context: passes through unchanged
	classUnknown        // no such process: passes through unchanged
	numClasses
)

var classNames = [numClasses]string{"stable", "live", "young", "exited", "stopped", "idle", "unknown"}

// sentRecord is what the sender knows of a record; its id is its index + 1.
type sentRecord struct {
	at                  int64 // send time, Unix ns
	pid                 int32
	svc                 uint16 // the service it must get (0: none)
	pipe, signal, class uint8
	ack                 uint8 // ackPending, ackOK, ackFailed
}

const (
	ackPending = iota
	ackOK
	ackFailed
)

type recvRecord struct {
	at  int64  // first receipt, Unix ns
	svc uint16 // service.name of its resource at the first receipt
	n   uint32 // receipts
}

// loadLedger is every record sent and what the server received of it.
type loadLedger struct {
	mu       sync.Mutex
	sent     []sentRecord
	recv     []recvRecord
	services []string
	svcIdx   map[string]uint16
	strays   int // records received with an id never sent
	noID     int // records received without a soak id
}

func newLoadLedger() *loadLedger {
	return &loadLedger{services: []string{""}, svcIdx: map[string]uint16{"": 0}}
}

func (l *loadLedger) serviceLocked(name string) uint16 {
	i, ok := l.svcIdx[name]
	if !ok {
		i = uint16(len(l.services))
		l.services = append(l.services, name)
		l.svcIdx[name] = i
	}
	return i
}

// add registers records and returns the id of the first.
func (l *loadLedger) add(recs []sentRecord, services []string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := int64(len(l.sent)) + 1
	for i := range recs {
		recs[i].svc = l.serviceLocked(services[i])
	}
	l.sent = append(l.sent, recs...)
	l.recv = append(l.recv, make([]recvRecord, len(recs))...)
	return first
}

func (l *loadLedger) acked(first int64, n int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := uint8(ackFailed)
	if ok {
		a = ackOK
	}
	for i := first - 1; i < first-1+int64(n); i++ {
		l.sent[i].ack = a
	}
}

// received records receipts: ids[i] under a resource with services[i].
func (l *loadLedger) received(ids []int64, services []string) {
	now := time.Now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range ids {
		switch {
		case id == 0:
			l.noID++
		case id < 0 || id > int64(len(l.recv)):
			l.strays++
		default:
			r := &l.recv[id-1]
			if r.n == 0 {
				r.at, r.svc = now, l.serviceLocked(services[i])
			}
			r.n++
		}
	}
}

func (l *loadLedger) observeLogs(ld plog.Logs) {
	var ids []int64
	var services []string
	for _, rl := range ld.ResourceLogs().All() {
		svc, _ := rl.Resource().Attributes().Get("service.name")
		for _, sl := range rl.ScopeLogs().All() {
			if _, entity := sl.Scope().Attributes().Get("otel.entity.event_as_log"); entity {
				continue
			}
			for _, lr := range sl.LogRecords().All() {
				id, _ := lr.Attributes().Get("soak.id")
				ids = append(ids, id.Int())
				services = append(services, svc.Str())
			}
		}
	}
	l.received(ids, services)
}

func (l *loadLedger) observeProfiles(pd pprofile.Profiles) {
	var ids []int64
	var services []string
	for _, rp := range pd.ResourceProfiles().All() {
		svc, _ := rp.Resource().Attributes().Get("service.name")
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				for _, s := range prof.Samples().All() {
					var id int64
					if s.Values().Len() > 0 {
						id = s.Values().At(0)
					}
					ids = append(ids, id)
					services = append(services, svc.Str())
				}
			}
		}
	}
	l.received(ids, services)
}

// pidPool is where the sender takes the pids of its records from.
type pidPool struct {
	mu       sync.Mutex
	stable   []*soakPub
	rotating []*soakPub // started during the run; alive, or exited not yet moved
	exited   []*soakPub // the latest that exited (or were killed)
	stopped  *soakPub
	idle     []int
}

const youngAge = time.Second

// pick returns the pid, class and expected service of the n-th record.
func (p *pidPool) pick(n uint64, now time.Time) (int32, uint8, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pub := func(pb *soakPub, class uint8) (int32, uint8, string) { return int32(pb.pid), class, pb.service }
	stable := func() (int32, uint8, string) { return pub(p.stable[(n/8)%uint64(len(p.stable))], classStable) }
	switch n % 8 {
	case 0, 1:
		return stable()
	case 2, 3:
		if len(p.rotating) == 0 {
			return stable()
		}
		pb := p.rotating[(n/8)%uint64(len(p.rotating))]
		switch {
		case !pb.alive():
			return pub(pb, classExited)
		case now.Sub(pb.started) < youngAge:
			return pub(pb, classYoung)
		default:
			return pub(pb, classLive)
		}
	case 4:
		if len(p.exited) == 0 {
			return stable()
		}
		return pub(p.exited[(n/8)%uint64(len(p.exited))], classExited)
	case 5:
		return int32(p.idle[(n/8)%uint64(len(p.idle))]), classIdle, ""
	case 6:
		return unknownPid, classUnknown, ""
	default:
		if p.stopped != nil {
			return pub(p.stopped, classStopped)
		}
		return stable()
	}
}

func (p *pidPool) addRotating(pb *soakPub) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotating = append(p.rotating, pb)
}

// retire moves the rotating publishers that exited to exited (keeping the
// latest 16) and returns how many rotating ones are alive.
func (p *pidPool) retire() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	alive := p.rotating[:0]
	for _, pb := range p.rotating {
		if pb.alive() {
			alive = append(alive, pb)
		} else {
			p.exited = append(p.exited, pb)
		}
	}
	clear(p.rotating[len(alive):])
	p.rotating = alive
	if len(p.exited) > 16 {
		p.exited = append([]*soakPub(nil), p.exited[len(p.exited)-16:]...)
	}
	return len(alive)
}

// loadRun is one run of OTLP load through the built collector.
type loadRun struct {
	t        *testing.T
	p        soakParams
	ledger   *loadLedger
	entities *entityLedger
	pool     *pidPool
	pubs     *soakPubs
	server   string
	ports    [numPipes]int
	prom     int
	conns    [numPipes]*grpc.ClientConn
	errs     [numPipes][numSignals]errorsSeen
	offered  [numPipes][numSignals]atomic.Int64
	sendFrom time.Time
	sendFor  time.Duration
	counter  atomic.Uint64
	// extension holds settings of the process_context extension (YAML
	// lines at its indentation); empty: its defaults.
	extension string
}

func newLoadRun(t *testing.T, p soakParams, stable int) *loadRun {
	t.Helper()
	r := &loadRun{t: t, p: p, ledger: newLoadLedger(), entities: newEntityLedger(), pool: &pidPool{}, pubs: newSoakPubs(t)}
	r.server = startObservingServer(t, func(ld plog.Logs) {
		r.ledger.observeLogs(ld)
		r.entities.observe(ld)
	}, r.ledger.observeProfiles)
	r.ports = [numPipes]int{pubtest.FreePort(t), pubtest.FreePort(t)}
	r.prom = pubtest.FreePort(t)
	r.pool.idle = startIdle(t, 10)
	for i := range stable {
		pb, err := r.pubs.start(fmt.Sprintf("load-stable-%d", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		r.pool.stable = append(r.pool.stable, pb)
	}
	for i, port := range r.ports {
		conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			// Reconnect quickly after a collector restart.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond},
				MinConnectTimeout: time.Second,
			}))
		if err != nil {
			t.Fatalf("client of %s pipeline: %v", pipeNames[i], err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		r.conns[i] = conn
	}
	return r
}

// loadConfig: otlp (→ batch → process_context) and otlp/baseline
// (→ batch) to one otlp_grpc exporter without a sending queue, so that an
// acknowledged record is one the batch processor holds or has delivered
// (the batch processor flushes at shutdown). Profiles skip batch: the
// batch processor has no profiles support at v0.165. With entities, the
// receiver's entity events go to the same server.
func (r *loadRun) config(entities bool) string {
	cfg := fmt.Sprintf(`
extensions:
  process_context:
%s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
  otlp/baseline:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
  process_context:
processors:
  batch:
    timeout: 200ms
    send_batch_size: 1024
  batch/baseline:
    timeout: 200ms
    send_batch_size: 1024
  process_context:
`, r.extension, r.ports[pipeEnriched], r.ports[pipeBaseline]) + soakExporting(r.t, r.server, r.prom, false, `  extensions: [process_context]
  pipelines:
    logs:
      receivers: [otlp]
      processors: [batch, process_context]
      exporters: [otlp_grpc]
    profiles:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
    logs/baseline:
      receivers: [otlp/baseline]
      processors: [batch/baseline]
      exporters: [otlp_grpc]
    profiles/baseline:
      receivers: [otlp/baseline]
      exporters: [otlp_grpc]
`)
	if entities {
		cfg += `    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`
	} else {
		cfg = strings.Replace(cfg, "  process_context:\nprocessors:", "processors:", 1)
	}
	return cfg
}

// send starts the senders (each pipeline × signal at the offered rate)
// for d and returns a function that waits for them.
func (r *loadRun) send(d time.Duration) (wait func()) {
	r.sendFrom, r.sendFor = time.Now(), d
	ctx, cancel := context.WithTimeout(context.Background(), d)
	var wg sync.WaitGroup
	for pipe := range numPipes {
		for sig := range numSignals {
			rate := r.p.logsRate
			if sig == sigProfiles {
				rate = r.p.profilesRate
			}
			wg.Go(func() { r.sendStream(ctx, uint8(pipe), uint8(sig), rate) })
		}
	}
	return func() { wg.Wait(); cancel() }
}

func (r *loadRun) sendStream(ctx context.Context, pipe, sig uint8, rate int) {
	logs := plogotlp.NewGRPCClient(r.conns[pipe])
	profiles := pprofileotlp.NewGRPCClient(r.conns[pipe])
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	offered := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		n := min(int(float64(rate)*now.Sub(start).Seconds())-offered, rate) // at most 1 s worth after a stall
		if n <= 0 {
			continue
		}
		offered += n
		recs := make([]sentRecord, n)
		services := make([]string, n)
		for i := range recs {
			pid, class, svc := r.pool.pick(r.counter.Add(1), now)
			recs[i] = sentRecord{at: now.UnixNano(), pid: pid, pipe: pipe, signal: sig, class: class}
			services[i] = svc
		}
		first := r.ledger.add(recs, services)
		r.offered[pipe][sig].Add(int64(n))
		callCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		if sig == sigLogs {
			_, err = logs.Export(callCtx, plogotlp.NewExportRequestFromLogs(soakLogs(recs, first, pipeNames[pipe])))
		} else {
			_, err = profiles.Export(callCtx, pprofileotlp.NewExportRequestFromProfiles(soakProfiles(recs, first, pipeNames[pipe])))
		}
		cancel()
		r.ledger.acked(first, n, err == nil)
		r.errs[pipe][sig].add(err)
	}
}

// soakLogs builds records recs (ids from first): the even ones under a
// resource with their process.pid, the odd ones with process.pid on the
// record under a resource without one.
func soakLogs(recs []sentRecord, first int64, pipe string) plog.Logs {
	ld := plog.NewLogs()
	byPid := map[int32]plog.LogRecordSlice{}
	shared := ld.ResourceLogs().AppendEmpty()
	shared.Resource().Attributes().PutStr("soak.pipeline", pipe)
	sharedRecords := shared.ScopeLogs().AppendEmpty().LogRecords()
	for i, rec := range recs {
		var lr plog.LogRecord
		if i%2 == 0 {
			slice, ok := byPid[rec.pid]
			if !ok {
				rl := ld.ResourceLogs().AppendEmpty()
				rl.Resource().Attributes().PutStr("soak.pipeline", pipe)
				rl.Resource().Attributes().PutInt("process.pid", int64(rec.pid))
				slice = rl.ScopeLogs().AppendEmpty().LogRecords()
				byPid[rec.pid] = slice
			}
			lr = slice.AppendEmpty()
		} else {
			lr = sharedRecords.AppendEmpty()
			lr.Attributes().PutInt("process.pid", int64(rec.pid))
		}
		lr.SetTimestamp(pcommon.Timestamp(rec.at))
		lr.Attributes().PutInt("soak.id", first+int64(i))
		lr.Body().SetStr("soak")
	}
	return ld
}

// soakProfiles builds one sample per record (its value is the id): the
// even ones in a profile under a resource with their process.pid, the odd
// ones with process.pid on the sample (the older eBPF profiler layout).
func soakProfiles(recs []sentRecord, first int64, pipe string) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	dict.StringTable().Append("", "samples", "count", "process.pid")
	dict.AttributeTable().AppendEmpty()
	dict.StackTable().AppendEmpty()
	pidAttr := map[int32]int32{}
	newProfile := func(pid int32) pprofile.Profile {
		rp := pd.ResourceProfiles().AppendEmpty()
		rp.Resource().Attributes().PutStr("soak.pipeline", pipe)
		if pid != 0 {
			rp.Resource().Attributes().PutInt("process.pid", int64(pid))
		}
		prof := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
		prof.SampleType().SetTypeStrindex(1)
		prof.SampleType().SetUnitStrindex(2)
		prof.SetPeriod(10_000_000)
		prof.SetTime(pcommon.Timestamp(recs[0].at))
		return prof
	}
	byPid := map[int32]pprofile.Profile{}
	shared := newProfile(0)
	for i, rec := range recs {
		var s pprofile.Sample
		if i%2 == 0 {
			prof, ok := byPid[rec.pid]
			if !ok {
				prof = newProfile(rec.pid)
				byPid[rec.pid] = prof
			}
			s = prof.Samples().AppendEmpty()
		} else {
			idx, ok := pidAttr[rec.pid]
			if !ok {
				kv := dict.AttributeTable().AppendEmpty()
				kv.SetKeyStrindex(3)
				kv.Value().SetInt(int64(rec.pid))
				idx = int32(dict.AttributeTable().Len() - 1)
				pidAttr[rec.pid] = idx
			}
			s = shared.Samples().AppendEmpty()
			s.AttributeIndices().Append(idx)
		}
		s.Values().Append(first + int64(i))
	}
	return pd
}

// rotate starts a rotating publisher every `every` until ctx ends: each
// lives 2–6 s (extra: more publisher arguments, life 0: until killed).
func (r *loadRun) rotate(ctx context.Context, every time.Duration, life func() time.Duration, extra ...string) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 0; ; n++ {
		r.pool.retire()
		pb, err := r.pubs.start(fmt.Sprintf("load-rotating-%d", n), life(), extra...)
		if err != nil {
			return err
		}
		r.pool.addRotating(pb)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// loadFigures is what a run's ledger says.
type loadFigures struct {
	sent, acked, failed, received, lost, dups [numPipes][numSignals]int
	failedReceived                            [numPipes][numSignals]int
	latency                                   [numPipes][numSignals][]time.Duration
	classSent, classEnriched, classWrong      [numClasses]int
	classMissing                              [numClasses]int // must be enriched, was not
	classStray                                [numClasses]int // must not be enriched, was
	lostExamples                              []string
	strays, noID                              int
	lastReceipt                               time.Time
}

func (r *loadRun) figures() loadFigures {
	l := r.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	var f loadFigures
	f.strays, f.noID = l.strays, l.noID
	for i, s := range l.sent {
		rc := l.recv[i]
		f.sent[s.pipe][s.signal]++
		switch s.ack {
		case ackOK:
			f.acked[s.pipe][s.signal]++
		default:
			f.failed[s.pipe][s.signal]++
		}
		if rc.n == 0 {
			if s.ack == ackOK {
				f.lost[s.pipe][s.signal]++
				if len(f.lostExamples) < 20 {
					f.lostExamples = append(f.lostExamples, fmt.Sprintf("id %d (%s %s, pid %d %s, sent at +%.3fs)",
						i+1, pipeNames[s.pipe], signalNames[s.signal], s.pid, classNames[s.class], time.Duration(s.at-r.sendFrom.UnixNano()).Seconds()))
				}
			}
			continue
		}
		f.received[s.pipe][s.signal]++
		if s.ack != ackOK {
			f.failedReceived[s.pipe][s.signal]++
		}
		f.dups[s.pipe][s.signal] += int(rc.n - 1)
		if at := time.Unix(0, rc.at); at.After(f.lastReceipt) {
			f.lastReceipt = at
		}
		f.latency[s.pipe][s.signal] = append(f.latency[s.pipe][s.signal], time.Duration(rc.at-s.at))
		if s.pipe != pipeEnriched {
			if rc.svc != 0 {
				f.classStray[s.class]++ // the baseline never enriches
			}
			continue
		}
		f.classSent[s.class]++
		switch {
		case rc.svc == s.svc && s.svc != 0:
			f.classEnriched[s.class]++
		case rc.svc != 0 && s.svc != 0:
			f.classWrong[s.class]++
		case rc.svc != 0:
			f.classStray[s.class]++
		case s.class == classStable || s.class == classLive:
			f.classMissing[s.class]++
		}
	}
	return f
}

func roundLatency(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

func sum2(a [numPipes][numSignals]int) int {
	n := 0
	for _, row := range a {
		for _, v := range row {
			n += v
		}
	}
	return n
}

// rows reports a run's figures.
func (r *loadRun) rows(f loadFigures) [][2]string {
	var rows [][2]string
	secs := r.sendFor.Seconds()
	for pipe := range numPipes {
		for sig := range numSignals {
			rate := r.p.logsRate
			if sig == sigProfiles {
				rate = r.p.profilesRate
			}
			lat := f.latency[pipe][sig]
			sortDurations(lat)
			rows = append(rows, [2]string{fmt.Sprintf("%s %s", pipeNames[pipe], signalNames[sig]),
				fmt.Sprintf("offered %d/s, held %.0f/s; sent %d, acked %d, failed %d, received %d (of the failed: %d), lost (acked, not received) %d, duplicates %d; latency p50 %s p99 %s max %s",
					rate, float64(f.received[pipe][sig])/secs, f.sent[pipe][sig], f.acked[pipe][sig], f.failed[pipe][sig], f.received[pipe][sig], f.failedReceived[pipe][sig],
					f.lost[pipe][sig], f.dups[pipe][sig], roundLatency(percentile(lat, 50)), roundLatency(percentile(lat, 99)), roundLatency(percentile(lat, 100)))})
		}
	}
	for sig := range numSignals {
		with, without := percentile(f.latency[pipeEnriched][sig], 99), percentile(f.latency[pipeBaseline][sig], 99)
		rows = append(rows, [2]string{"p99 added by the processor, " + signalNames[sig],
			fmt.Sprintf("%s (p99 %s with, %s without)", roundLatency(with-without), roundLatency(with), roundLatency(without))})
	}
	var cls []string
	for c := range numClasses {
		if f.classSent[c] == 0 {
			continue
		}
		cls = append(cls, fmt.Sprintf("%s %d/%d", classNames[c], f.classEnriched[c], f.classSent[c]))
	}
	rows = append(rows,
		[2]string{"enriched/received by pid class", strings.Join(cls, ", ")},
		[2]string{"records sent / received (all)", fmt.Sprintf("%d / %d (lost %d, duplicates %d, strays %d)", sum2(f.sent), sum2(f.received), sum2(f.lost), sum2(f.dups), f.strays)},
	)
	var errs []string
	for pipe := range numPipes {
		for sig := range numSignals {
			errs = append(errs, fmt.Sprintf("%s %s: %s", pipeNames[pipe], signalNames[sig], r.errs[pipe][sig].String()))
		}
	}
	rows = append(rows, [2]string{"export errors", strings.Join(errs, "; ")})
	return rows
}

// waitDelivered waits until every acknowledged record was received, and
// returns the figures.
func (r *loadRun) waitDelivered(d time.Duration) loadFigures {
	var f loadFigures
	waitFor(context.Background(), d, 250*time.Millisecond, func() bool {
		f = r.figures()
		return sum2(f.lost) == 0
	})
	return r.figures()
}

// checkEnrichment fails the test for wrong enrichment: a record of a live
// publisher without its service, a record with another's service, a
// record of a process without a context enriched.
func checkEnrichment(t *testing.T, f loadFigures, strict bool) {
	t.Helper()
	for c := range numClasses {
		if f.classWrong[c] > 0 {
			t.Errorf("%d %s records got another publisher's service.name", f.classWrong[c], classNames[c])
		}
		if f.classStray[c] > 0 {
			t.Errorf("%d %s records got a service.name they must not have (no context, or the baseline pipeline)", f.classStray[c], classNames[c])
		}
		if strict && f.classMissing[c] > 0 {
			t.Errorf("%d of %d %s records not enriched", f.classMissing[c], f.classSent[c], classNames[c])
		}
	}
}

// TestSoakLoad sends OTLP logs and profiles with pids at a fixed offered
// rate through the built collector (otlp → batch → process_context →
// otlp_grpc to a counting server, and a baseline pipeline without the
// processor) while publishers come and go: every record arrives (sent =
// received), records of live publishers are enriched, the others pass
// through; the rate held and the p99 latency the processor adds are
// reported.
func TestSoakLoad(t *testing.T) {
	pubtest.RequireRoot(t)
	p := soakParameters(t)
	r := newLoadRun(t, p, 4)
	col := startCollector(t, r.config(false))
	rss := sampleRSS(t, col.Cmd.Process.Pid, 2*time.Second)

	rng := rand.New(rand.NewPCG(14, uint64(time.Now().UnixNano())))
	ctx, cancel := context.WithTimeout(context.Background(), p.load)
	defer cancel()
	wait := r.send(p.load)
	rotateErr := r.rotate(ctx, 500*time.Millisecond, func() time.Duration {
		return 2*time.Second + time.Duration(rng.Int64N(int64(4*time.Second)))
	})
	wait()
	f := r.waitDelivered(30 * time.Second)
	rssEnd := rss.last()
	rssStart := rss.at(0)
	rss.halt()
	stopCollectorCleanly(t, col, "load")

	rows := append([][2]string{
		{"command", soakCommand("TestSoakLoad", p)},
		{"duration", fmt.Sprintf("%s; %d stable publishers, %d rotating (2–6 s lives, one every 500ms), 10 idle processes, an unknown pid", r.sendFor, len(r.pool.stable), len(r.pubs.list())-len(r.pool.stable))},
	}, r.rows(f)...)
	rows = append(rows, [2]string{"collector RSS start / end / max", fmt.Sprintf("%s / %s / %s", mib(rssStart.rss), mib(rssEnd.rss), mib(rss.max().rss))})
	soakSummary(t, "load ("+p.mode()+")", rows)

	if rotateErr != nil {
		t.Errorf("rotating publishers: %v", rotateErr)
	}
	if n := sum2(f.failed); n > 0 {
		t.Errorf("%d records not acknowledged by the collector (no fault was injected)", n)
	}
	if n := sum2(f.lost); n > 0 {
		t.Errorf("%d acknowledged records never reached the server, e.g. %s", n, strings.Join(f.lostExamples, "; "))
	}
	if f.strays > 0 || f.noID > 0 {
		t.Errorf("the server got %d records with unknown ids and %d without one", f.strays, f.noID)
	}
	checkEnrichment(t, f, true)
}
