// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// arrival is the first entity event of a kind for a pid and service.
type arrival struct {
	pid     int
	kind    string // "state" or "delete"
	service string // state: the published service.name
}

// arrivals records when entity events reach the next consumer.
type arrivals struct {
	mu      sync.Mutex
	at      map[arrival]time.Time
	changed chan struct{}
}

func newArrivals() *arrivals {
	return &arrivals{at: map[arrival]time.Time{}, changed: make(chan struct{}, 1)}
}

func (a *arrivals) consume(_ context.Context, ld plog.Logs) error {
	now := time.Now()
	a.mu.Lock()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if entityTypeOf(lr) != "process" {
					continue // its service and instance
				}
				attrs := lr.Attributes()
				kind, _ := attrs.Get(legacyEventType)
				id, _ := attrs.Get(legacyEntityID)
				pid, _ := id.Map().Get("process.pid")
				k := arrival{pid: int(pid.Int()), kind: "delete"}
				if kind.Str() == legacyEventState {
					k.kind = "state"
					desc, _ := attrs.Get(legacyEntityAttrs)
					svc, _ := desc.Map().Get("service.name")
					k.service = svc.Str()
				}
				if _, seen := a.at[k]; !seen {
					a.at[k] = now
				}
			}
		}
	}
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
	return nil
}

// wait returns when k arrived, or false after timeout.
func (a *arrivals) wait(k arrival, timeout time.Duration) (time.Time, bool) {
	deadline := time.After(timeout)
	for {
		a.mu.Lock()
		at, ok := a.at[k]
		a.mu.Unlock()
		if ok {
			return at, true
		}
		select {
		case <-a.changed:
		case <-time.After(10 * time.Millisecond): // others share changed
		case <-deadline:
			return time.Time{}, false
		}
	}
}

// startBenchReceiver starts a receiver with the default settings but for
// discovery, feeding a.
func startBenchReceiver(b *testing.B, discovery hostopen.Discovery, a *arrivals) (*processContextReceiver, *tracker.Tracker) {
	b.Helper()
	tc := hostopen.DefaultConfig()
	tc.Discovery = discovery
	if discovery == hostopen.DiscoveryEvents {
		tc.PublicationEvents = trackertest.PublicationEvents(b)
	}
	tr := startTracker(b, tc)
	cfg := createDefaultConfig()
	cfg.ReportInterval = time.Hour
	next, err := consumer.NewLogs(a.consume)
	if err != nil {
		b.Fatal(err)
	}
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, next)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background(), sharedtrackertest.Host(tr)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	<-tr.Ready()
	if discovery == hostopen.DiscoveryEvents && tr.LiveSources() != tracker.ProcessEvents|tracker.PublicationEvents {
		b.Fatalf("events: live sources %s", tr.LiveSources())
	}
	return r, tr
}

// latencies is one phase's latencies.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// phase runs act on every publisher at a random time within spread, and
// returns how long each took to show as the arrival it names.
func phase(b *testing.B, pubs []*pubtest.Proc, a *arrivals, spread, timeout time.Duration,
	act func(i int, p *pubtest.Proc) arrival) latencies {
	b.Helper()
	out := make(latencies, len(pubs))
	errs := make(chan error, len(pubs))
	var wg sync.WaitGroup
	for i, p := range pubs {
		wg.Go(func() {
			time.Sleep(rand.N(spread))
			began := time.Now()
			k := act(i, p)
			at, ok := a.wait(k, timeout)
			if !ok {
				errs <- fmt.Errorf("no %s event for pid %d (%s) within %s", k.kind, k.pid, k.service, timeout)
				return
			}
			out[i] = at.Sub(began)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return out
}

// BenchmarkEventLatency measures, over 100 publishers (the C reference
// publisher) started after the receiver, with the receiver's default
// settings: the time from a publication (at a random time within 3 s of
// the publisher's start) to its entity state event, from an update to the
// new state, and from a kill to the entity delete event; with every kernel
// event source (the cheapest eBPF source the kernel allows), at the
// defaults (auto: no eBPF source where the kernel refuses fexit), then
// polling. Run it with -benchtime=1x: a round without publication events
// waits for the re-reads (up to collection_interval, 10 s, per phase).
func BenchmarkEventLatency(b *testing.B) {
	pubtest.RequireRoot(b)
	const publishers = 100
	for _, discovery := range []hostopen.Discovery{hostopen.DiscoveryEvents, hostopen.DiscoveryAuto, hostopen.DiscoveryPoll} {
		b.Run(string(discovery), func(b *testing.B) {
			var publish, update, exit latencies
			for b.Loop() {
				a := newArrivals()
				startBenchReceiver(b, discovery, a)
				pubs := make([]*pubtest.Proc, publishers)
				for i := range pubs {
					pubs[i] = pubtest.Start(b, pubtest.C, pubtest.Options{})
				}
				timeout := time.Minute
				publish = append(publish, phase(b, pubs, a, 3*time.Second, timeout, func(i int, p *pubtest.Proc) arrival {
					svc := fmt.Sprintf("latency-%d-v1", i)
					p.Publish(otep.EncodeStrings(map[string]string{"service.name": svc}))
					return arrival{pid: p.Pid, kind: "state", service: svc}
				})...)
				update = append(update, phase(b, pubs, a, 3*time.Second, timeout, func(i int, p *pubtest.Proc) arrival {
					svc := fmt.Sprintf("latency-%d-v2", i)
					p.Update(otep.EncodeStrings(map[string]string{"service.name": svc}))
					return arrival{pid: p.Pid, kind: "state", service: svc}
				})...)
				exit = append(exit, phase(b, pubs, a, 3*time.Second, timeout, func(_ int, p *pubtest.Proc) arrival {
					_ = unix.Kill(p.Pid, unix.SIGKILL)
					return arrival{pid: p.Pid, kind: "delete"}
				})...)
			}
			for _, m := range []struct {
				name string
				l    latencies
			}{{"publish", publish}, {"update", update}, {"exit", exit}} {
				b.ReportMetric(float64(m.l.quantile(0.5).Microseconds())/1000, m.name+"-p50-ms")
				b.ReportMetric(float64(m.l.quantile(0.99).Microseconds())/1000, m.name+"-p99-ms")
			}
		})
	}
}

// rss returns this process's resident set in bytes.
func rss(b *testing.B) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
