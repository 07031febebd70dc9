// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// The first batch a process sends is the one users look for (a service's
// start-up errors, its first spans): it must come out with the process's
// identity even when the process was started after the collector and sends
// at once, at the defaults, with kernel events or without (issue 30).
const (
	firstBatchPerKind = 20                     // processes of each kind, per mode
	firstBatchAfter   = 300 * time.Millisecond // from ready to the first batch
	// firstBatchConcurrency processes run at a time: each lives until its
	// first batch is out and its entity state has arrived.
	firstBatchConcurrency = 12
	firstBatchStagger     = 50 * time.Millisecond // between two starts
	// Bounded waits, far above what they wait for: a batch leaves the
	// processor within lookup_timeout (50ms), and an entity state comes
	// from a read at the process's exec, its young re-reads (1, 3, 8 s) or
	// the next scan (collection_interval, 10s).
	firstBatchOutWithin = 10 * time.Second
	entityStateWithin   = 30 * time.Second
	firstBatchEnv       = "firstbatch"
)

var firstBatchKinds = []string{"c-publisher", "go-publisher", "environment"}

// firstBatchProc is one process of the test and what became of it.
type firstBatchProc struct {
	kind, service, body string
	pid                 int
	started, ready      time.Time
	stop                func()

	sent    time.Time
	sendErr error
	out     map[string]any // its first batch's resource as exported (nil: not out)
	outAt   time.Time
	state   map[string]any // its first entity state's attributes (nil: none)
	stateAt time.Time
}

// firstBatchRecorder keeps what the collector exports, with when it
// arrived: entity states by pid, and the resource of every record of a
// first batch by the record's body.
type firstBatchRecorder struct {
	mu      sync.Mutex
	states  map[int64][]arrived
	batches map[string]arrived
}

type arrived struct {
	at    time.Time
	attrs map[string]any
}

func (r *firstBatchRecorder) onLogs(ld plog.Logs) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			if v, ok := sl.Scope().Attributes().Get("otel.entity.event_as_log"); ok && v.Bool() {
				for _, lr := range sl.LogRecords().All() {
					if e := entityEventOf(lr); e.kind == "entity_state" {
						r.states[e.pid] = append(r.states[e.pid], arrived{now, e.attrs})
					}
				}
				continue
			}
			for _, lr := range sl.LogRecords().All() {
				if body := lr.Body().Str(); strings.HasPrefix(body, "firstbatch/") {
					if _, dup := r.batches[body]; !dup {
						r.batches[body] = arrived{now, rl.Resource().Attributes().AsRaw()}
					}
				}
			}
		}
	}
}

// batch returns the exported resource of the record body, if out yet.
func (r *firstBatchRecorder) batch(body string) (arrived, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.batches[body]
	return a, ok
}

// state returns the first entity state of pid that arrived after since (a
// pid of an earlier process is not this one's).
func (r *firstBatchRecorder) state(pid int, since time.Time) (arrived, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.states[int64(pid)] {
		if a.at.After(since) {
			return a, true
		}
	}
	return arrived{}, false
}

// startFirstBatchProc starts one process of kind and returns it once it is
// ready: a publisher once it has published its context, an
// environment-only process (sleep) once started.
func startFirstBatchProc(t *testing.T, kind, service string) *firstBatchProc {
	t.Helper()
	p := &firstBatchProc{kind: kind, service: service, started: time.Now()}
	switch kind {
	case "environment":
		cmd := startWithEnv(t, []string{
			"OTEL_SERVICE_NAME=" + service,
			"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=" + firstBatchEnv,
		}, "sleep", "600")
		p.pid = cmd.Process.Pid
		p.stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	default:
		k := map[string]pubtest.Kind{"c-publisher": pubtest.C, "go-publisher": pubtest.Go}[kind]
		pub := pubtest.Start(t, k, pubtest.Options{})
		pub.Publish(otep.EncodeStrings(map[string]string{
			"service.name":                service,
			"deployment.environment.name": firstBatchEnv,
		}))
		p.pid = pub.Pid
		p.stop = pub.Kill
	}
	p.ready = time.Now()
	return p
}

// sendFirstBatch sends p's first batch: one log record under a resource
// naming p's pid, its body naming p.
func sendFirstBatch(conn *grpc.ClientConn, p *firstBatchProc) error {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutInt("process.pid", int64(p.pid))
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(p.body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}

// Processes of each kind started after the collector, each sending its
// first batch 0.3 s after it is ready, through the built collector at
// default settings: every first batch comes out enriched, and every
// process's entity state arrives.
func TestFirstBatchIsEnriched(t *testing.T) {
	for _, mode := range []struct{ name, extension string }{
		{"default", ""},
		{"poll", "    discovery: poll\n"},
	} {
		t.Run(mode.name, func(t *testing.T) { testFirstBatch(t, mode.name, mode.extension) })
	}
}

func testFirstBatch(t *testing.T, mode, extensionKeys string) {
	rec := &firstBatchRecorder{states: map[int64][]arrived{}, batches: map[string]arrived{}}
	server := startObservingServer(t, rec.onLogs, nil)
	otlpPort, promPort := pubtest.FreePort(t), pubtest.FreePort(t)
	cfg := environmentConfig(t, otlpPort, promPort, server)
	const ext = "extensions:\n  process_context:\n"
	require.True(t, strings.HasPrefix(strings.TrimLeft(cfg, "\n"), ext), "environmentConfig changed:\n%s", cfg)
	cfg = strings.Replace(cfg, ext, ext+extensionKeys, 1)
	c := startCollector(t, cfg)
	for _, line := range strings.Split(c.Output.String(), "\n") {
		if strings.Contains(line, "process_context") && strings.Contains(line, "discovery") {
			t.Logf("collector: %s", line)
		}
	}
	conn := dial(t, otlpPort)

	// Kinds interleaved, at most firstBatchConcurrency alive at a time:
	// the test goroutine starts each process (pubtest fails the test from
	// there), a goroutine sends its first batch, waits for what it is
	// owed and ends it.
	var procs []*firstBatchProc
	sem := make(chan struct{}, firstBatchConcurrency)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the processes' cleanups: no goroutine outlives the test
	begin := time.Now()
	for i := range firstBatchPerKind {
		for _, kind := range firstBatchKinds {
			sem <- struct{}{}
			p := startFirstBatchProc(t, kind, fmt.Sprintf("fb-%s-%s-%d", mode, kind, i))
			p.body = fmt.Sprintf("firstbatch/%s/%s/%d", mode, kind, i)
			procs = append(procs, p)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer p.stop()
				time.Sleep(time.Until(p.ready.Add(firstBatchAfter)))
				p.sent = time.Now()
				if p.sendErr = sendFirstBatch(conn, p); p.sendErr == nil {
					waitFor(context.Background(), firstBatchOutWithin, 10*time.Millisecond, func() bool {
						a, ok := rec.batch(p.body)
						p.out, p.outAt = a.attrs, a.at
						return ok
					})
				}
				waitFor(context.Background(), time.Until(p.started.Add(entityStateWithin)), 10*time.Millisecond, func() bool {
					a, ok := rec.state(p.pid, p.started)
					p.state, p.stateAt = a.attrs, a.at
					return ok
				})
			}()
			time.Sleep(firstBatchStagger)
		}
	}
	wg.Wait()
	t.Logf("%s: %d processes in %v", mode, len(procs), time.Since(begin).Round(time.Millisecond))

	for _, kind := range firstBatchKinds {
		var enriched, states int
		var toState, readyToState, batchOut []time.Duration
		var misses []string
		for _, p := range procs {
			if p.kind != kind {
				continue
			}
			switch {
			case p.sendErr != nil:
				misses = append(misses, fmt.Sprintf("pid %d: send: %v", p.pid, p.sendErr))
			case p.out == nil:
				misses = append(misses, fmt.Sprintf("pid %d: its first batch did not come out within %v", p.pid, firstBatchOutWithin))
			case p.out["service.name"] != p.service || p.out["deployment.environment.name"] != firstBatchEnv || p.out["process.creation.time"] == nil:
				misses = append(misses, fmt.Sprintf("pid %d: first batch out as %v", p.pid, p.out))
			default:
				enriched++
			}
			if p.out != nil {
				batchOut = append(batchOut, p.outAt.Sub(p.sent))
			}
			if p.state != nil {
				states++
				toState = append(toState, p.stateAt.Sub(p.started))
				readyToState = append(readyToState, p.stateAt.Sub(p.ready))
				assert.Equal(t, p.service, p.state["service.name"], "%s pid %d: its entity state", kind, p.pid)
			}
		}
		t.Logf("%s %-12s: first batches enriched %d/%d; entity states %d/%d, from start %s, from ready %s; first batch out after sending %s",
			mode, kind, enriched, firstBatchPerKind, states, firstBatchPerKind,
			durationSpread(toState), durationSpread(readyToState), durationSpread(batchOut))
		if len(misses) > 5 {
			misses = append(misses[:5], fmt.Sprintf("... and %d more", len(misses)-5))
		}
		assert.Equal(t, firstBatchPerKind, enriched, "%s %s: first batches enriched\n%s", mode, kind, strings.Join(misses, "\n"))
		assert.Equal(t, firstBatchPerKind, states, "%s %s: entity states within %v of the start", mode, kind, entityStateWithin)
	}
	for _, name := range []string{"otelcol_processor_process_context_enriched", "otelcol_processor_process_context_no_context", "otelcol_processor_process_context_errors"} {
		series, err := scrapeSeries(promPort, name)
		t.Logf("%s %s: %v %v", mode, name, series, err)
	}
}

// durationSpread is "min/median/max" of ds, or "-" when empty.
func durationSpread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%v/%v/%v (min/median/max)", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}
