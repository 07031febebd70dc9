// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// BenchmarkStorm runs a storm of short-lived processes (testdata/storm:
// STORM_RATE per second, every tenth an exec of /bin/true, for
// STORM_SECONDS) beside 100 publishers that come and go (each lives 0.5 to
// 4 s, then is killed and replaced), through a receiver with kernel events
// and the default settings. It reports the growth of this process's
// resident set over the storm and the receiver's CPU time per storm
// process: this process's CPU time less that of the same storm and
// publishers without a receiver, run just before (the baseline). It fails
// when a publisher that lived at least a second lacks its state or delete
// event. Run it with -benchtime=1x.
func BenchmarkStorm(b *testing.B) {
	pubtest.RequireRoot(b)
	rate, seconds := pubtest.EnvInt(b, "STORM_RATE", 5000), pubtest.EnvInt(b, "STORM_SECONDS", 30)
	storm := filepath.Join(b.TempDir(), "storm")
	cc := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-o", storm,
		filepath.Join(pubtest.RepoRoot(), "testdata", "storm", "storm.c"))
	if out, err := cc.CombinedOutput(); err != nil {
		b.Fatalf("build storm (gcc is required): %v\n%s", err, out)
	}
	cpub := pubtest.Binary(b, pubtest.C)
	sr := stormRun{storm: storm, cpub: cpub, rate: rate, seconds: seconds}
	for b.Loop() {
		base := sr.run(b, nil)

		a := newArrivals()
		r, tr := startBenchReceiver(b, hostopen.DiscoveryEvents, a)
		lostStart := tr.Events().Lost
		got := sr.run(b, a)
		missing := 0
		for _, l := range got.publishers {
			if l.life < time.Second {
				continue
			}
			_, stated := a.wait(arrival{pid: l.pid, kind: "state", service: l.service}, 10*time.Second)
			_, deleted := a.wait(arrival{pid: l.pid, kind: "delete"}, 10*time.Second)
			if !stated || !deleted {
				missing++
				b.Logf("publisher %d (%s, lived %s): state %v, delete %v", l.pid, l.service, l.life.Round(time.Millisecond), stated, deleted)
			}
		}
		if missing > 0 {
			b.Fatalf("%d of %d publishers that lived at least a second lack an event", missing, len(got.publishers))
		}
		b.ReportMetric(float64(got.rssGrowth)/(1<<20), "rss-growth-MiB")
		b.ReportMetric(float64((got.cpu-base.cpu).Nanoseconds())/float64(max(got.started, 1)), "cpu-ns/process")
		b.ReportMetric(float64(base.cpu.Nanoseconds())/float64(max(base.started, 1)), "baseline-cpu-ns/process")
		b.ReportMetric(float64(got.started)/float64(seconds), "processes/s")
		b.ReportMetric(float64(len(got.publishers)), "publishers")
		b.ReportMetric(float64(tr.Events().Lost-lostStart), "events-lost")
		_ = r.Shutdown(context.Background())
		_ = tr.Stop(context.Background())
	}
}

// stormRun is the storm and the publishers' churn.
type stormRun struct {
	storm, cpub   string
	rate, seconds int
}

// lived is a publisher of the storm and how long it lived.
type lived struct {
	pid     int
	service string
	life    time.Duration
}

type stormResult struct {
	cpu        time.Duration // this process's CPU time over the storm
	rssGrowth  int64         // peak resident set over its start
	started    int           // short-lived processes started
	publishers []lived
}

// run runs one storm; a, when set, is where the receiver's events go (only
// so that its publishers' services are distinct per run).
func (sr stormRun) run(b *testing.B, a *arrivals) stormResult {
	b.Helper()
	rssStart, cpuStart := rss(b), cpuTime()
	cmd := exec.Command(sr.storm, strconv.Itoa(sr.rate), strconv.Itoa(sr.seconds), "10")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stormDone := make(chan error, 1)
	go func() { stormDone <- cmd.Wait() }()

	// 100 publisher slots, each replacing its publisher when it ends.
	var (
		mu   sync.Mutex
		all  []lived
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	tag := "base"
	if a != nil {
		tag = "rcv"
	}
	for slot := range 100 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				svc := fmt.Sprintf("storm-%s-%d-%d", tag, slot, n)
				pid, end := startShortPublisher(b, sr.cpub, svc)
				began := time.Now()
				time.Sleep(500*time.Millisecond + rand.N(3500*time.Millisecond))
				end()
				mu.Lock()
				all = append(all, lived{pid: pid, service: svc, life: time.Since(began)})
				mu.Unlock()
			}
		})
	}
	peak := rssStart
	ticker := time.NewTicker(100 * time.Millisecond)
storming:
	for {
		select {
		case err := <-stormDone:
			if err != nil {
				b.Fatalf("storm: %v", err)
			}
			break storming
		case <-ticker.C:
			peak = max(peak, rss(b))
		}
	}
	ticker.Stop()
	close(stop)
	wg.Wait()
	started, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(out.String()), "started "))
	return stormResult{cpu: cpuTime() - cpuStart, rssGrowth: peak - rssStart, started: started, publishers: all}
}

// startShortPublisher starts the C publisher publishing svc and returns its
// pid and a function that kills it and waits for it: unlike pubtest's, it
// keeps nothing once ended, so that the storm's publishers do not grow the
// resident set being measured.
func startShortPublisher(b *testing.B, cpub, svc string) (int, func()) {
	cmd := exec.Command(cpub)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Error(err)
		return 0, func() {}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Error(err)
		return 0, func() {}
	}
	if err := cmd.Start(); err != nil {
		b.Error(err)
		return 0, func() {}
	}
	end := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	rd := bufio.NewReader(out)
	if _, err := rd.ReadString('\n'); err != nil { // ready <pid>
		end()
		b.Error(err)
		return 0, func() {}
	}
	payload := hex.EncodeToString(otep.EncodeStrings(map[string]string{"service.name": svc}))
	if _, err := fmt.Fprintf(in, "publish %s\n", payload); err != nil {
		end()
		b.Error(err)
		return 0, func() {}
	}
	if reply, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(reply, "ok ") {
		end()
		b.Errorf("publish: %q, %v", reply, err)
		return 0, func() {}
	}
	return cmd.Process.Pid, end
}
