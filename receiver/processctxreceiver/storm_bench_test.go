package processctxreceiver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// BenchmarkStorm runs a storm of short-lived processes (testdata/storm:
// STORM_RATE per second, every tenth an exec of /bin/true, for
// STORM_SECONDS) beside 100 publishers that come and go (each lives 0.5 to
// 4 s, then is killed and replaced), through a receiver with kernel events
// and the default settings. It reports the growth of this process's
// resident set over the storm, its CPU time per storm process, and the
// events the tracker dropped; it fails when a publisher that lived at
// least a second lacks its state or delete event. Run it with
// -benchtime=1x.
func BenchmarkStorm(b *testing.B) {
	pubtest.RequireRoot(b)
	rate, seconds := envInt(b, "STORM_RATE", 5000), envInt(b, "STORM_SECONDS", 30)
	storm := filepath.Join(b.TempDir(), "storm")
	cc := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-o", storm,
		filepath.Join(pubtest.RepoRoot(), "testdata", "storm", "storm.c"))
	if out, err := cc.CombinedOutput(); err != nil {
		b.Fatalf("build storm (gcc is required): %v\n%s", err, out)
	}
	for b.Loop() {
		a := newArrivals()
		r := startBenchReceiver(b, tracker.DiscoveryEvents, a)
		rssStart, cpuStart := rss(b), cpuTime()
		lostStart := r.tracker.Events().Lost

		cmd := exec.Command(storm, strconv.Itoa(rate), strconv.Itoa(seconds), "10")
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		stormDone := make(chan error, 1)
		go func() { stormDone <- cmd.Wait() }()

		// 100 publisher slots, each replacing its publisher when it ends.
		type lived struct {
			pid     int
			service string
			life    time.Duration
		}
		var (
			mu   sync.Mutex
			all  []lived
			stop = make(chan struct{})
			wg   sync.WaitGroup
		)
		for slot := range 100 {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					p := pubtest.Start(b, pubtest.C, pubtest.Options{})
					svc := fmt.Sprintf("storm-%d-%d", slot, n)
					p.Publish(otep.EncodeStrings(map[string]string{"service.name": svc}))
					began := time.Now()
					time.Sleep(500*time.Millisecond + rand.N(3500*time.Millisecond))
					p.Kill()
					mu.Lock()
					all = append(all, lived{pid: p.Pid, service: svc, life: time.Since(began)})
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
		cpu := cpuTime() - cpuStart
		started, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(out.String()), "started "))

		missing := 0
		for _, l := range all {
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
			b.Fatalf("%d of %d publishers that lived at least a second lack an event", missing, len(all))
		}
		b.ReportMetric(float64(peak-rssStart)/(1<<20), "rss-growth-MiB")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(started, 1)), "cpu-ns/process")
		b.ReportMetric(float64(started)/float64(seconds), "processes/s")
		b.ReportMetric(float64(len(all)), "publishers")
		b.ReportMetric(float64(r.tracker.Events().Lost-lostStart), "events-lost")
	}
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
