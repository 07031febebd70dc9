// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// trackedMetric is the tracker's size (live processes plus retained ended
// publications), recorded after each scan.
const trackedMetric = "otelcol_extension_process_context_tracked_processes"

// contextsMetric is the number of processes publishing a context.
const contextsMetric = "otelcol_extension_process_context_contexts"

// churnConfig: the extension's tracker with event-driven discovery (the
// default), the receiver's entity events to server, internal metrics on
// promPort, retention grace; debug logs, which tell when kernel events
// were dropped.
func churnConfig(t *testing.T, server string, promPort int, grace time.Duration) string {
	return fmt.Sprintf(`
extensions:
  process_context:
    grace_period: %s
receivers:
  process_context:
`, grace) + soakExporting(t, server, promPort, true, `    logs:
      level: debug
  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`)
}

// churnPrefix begins the service names of this test process's churn
// publishers: another test run on the host (a benchmark's churn, say) may
// name its own "churn-N", and the collector reports every process.
var churnPrefix = fmt.Sprintf("churn-%d-", os.Getpid())

// churnLong is the lifetime from which a publisher must have exactly one
// state and one delete event.
const churnLong = 2 * time.Second

// churnVerdict is what the entity events say of the publishers started.
type churnVerdict struct {
	long, longOK                int
	short, shortNone, shortBoth int
	expected, received          int // events of long-lived publishers, events of all
	problems                    []string
	unexpectedDelay             time.Duration // last receipt − last exit
	deleteReasons               map[string]int
	otherSvcs, unmatched        int      // state events naming another service; churn entities that are no publisher's
	unpublished                 []string // exited publishers (none unpublishes) deleted for another reason
}

func judgeChurn(pubs []*soakPub, events *entityLedger, t0 time.Time) churnVerdict {
	v := churnVerdict{deleteReasons: map[string]int{}}
	var lastExit, lastEvent time.Time
	for _, p := range pubs {
		if p.created == "" || p.alive() {
			continue
		}
		c := events.counts(entityKey{int64(p.pid), p.created})
		v.received += c.state + c.delete
		for _, r := range c.reasons {
			v.deleteReasons[r]++
			if r != "process_exited" && len(v.unpublished) < 10 {
				v.unpublished = append(v.unpublished, fmt.Sprintf("pid %d (%s, life %s, exited at +%.2fs, delete received %s after the exit): %s",
					p.pid, p.service, p.life.Round(time.Millisecond), p.exited.Sub(t0).Seconds(), c.last.Sub(p.exited).Round(time.Millisecond), r))
			}
		}
		if c.state > 0 && c.service != p.service {
			v.otherSvcs++
		}
		if p.exited.After(lastExit) {
			lastExit = p.exited
		}
		if c.last.After(lastEvent) {
			lastEvent = c.last
		}
		describe := func() string {
			return fmt.Sprintf("pid %d (%s, created %s, published at +%.2fs, life %s, exited at +%.2fs, exit %v): %d state, %d delete %v",
				p.pid, p.service, p.created, p.started.Sub(t0).Seconds(), p.life, p.exited.Sub(t0).Seconds(), p.err, c.state, c.delete, c.reasons)
		}
		if p.life >= churnLong {
			v.long++
			v.expected += 2
			if c.state == 1 && c.delete == 1 {
				v.longOK++
			} else {
				v.problems = append(v.problems, "lived ≥ 2s: "+describe())
			}
			continue
		}
		v.short++
		switch {
		case c.state == 0 && c.delete == 0:
			v.shortNone++
		case c.state == 1 && c.delete == 1:
			v.shortBoth++
		default:
			v.problems = append(v.problems, "short-lived: "+describe())
		}
	}
	// Entities of a churn service whose id is none of the publishers': a
	// wrong pid or creation time. (The collector reports the whole host: the
	// prefix names this test process's publishers, not another run's.)
	ours := make(map[entityKey]bool, len(pubs))
	for _, p := range pubs {
		ours[entityKey{int64(p.pid), p.created}] = true
	}
	for k, c := range events.snapshot() {
		if strings.HasPrefix(c.service, churnPrefix) && !ours[k] {
			v.unmatched++
			v.problems = append(v.problems, fmt.Sprintf("entity %d/%s (%s) is none of the publishers: %d state, %d delete", k.pid, k.created, c.service, c.state, c.delete))
		}
	}
	if !lastEvent.IsZero() {
		v.unexpectedDelay = lastEvent.Sub(lastExit)
	}
	return v
}

// TestSoakChurn starts publishers at churnRate per second, each living
// 0.2–4 s, beside idle processes, for the churn duration: every publisher
// that lived ≥ 2 s has exactly one state and one delete event (by entity
// id: pid and creation time), no publisher has a state without a delete or
// duplicates; the collector's RSS and the tracker's size are reported
// (asserted in the full soak: RSS at the end within 10 MB of its value
// after the first minute, the tracker back to its baseline once the
// retention has passed).
func TestSoakChurn(t *testing.T) {
	pubtest.RequireRoot(t)
	p := soakParameters(t)
	pubs := newSoakPubs(t)
	idle := startIdle(t, p.idle)
	events := newEntityLedger()
	server := startObservingServer(t, events.observe, nil)
	prom := pubtest.FreePort(t)
	col := startCollector(t, churnConfig(t, server, prom, p.grace))
	pid := col.Cmd.Process.Pid
	sampleEvery := 5 * time.Second
	if !p.full {
		sampleEvery = time.Second
	}
	rss := sampleRSS(t, pid, sampleEvery)
	ctx := context.Background()

	// Baseline: the first scan has counted the idle processes.
	metric := func(name string) (float64, bool) {
		v, ok, err := scrapeMetric(prom, name)
		if err != nil {
			t.Logf("%v", err)
		}
		return v, ok
	}
	if !waitFor(ctx, 30*time.Second, 200*time.Millisecond, func() bool { _, ok := metric(contextsMetric); return ok }) {
		t.Fatalf("no %s at the collector's Prometheus endpoint after 30s", contextsMetric)
	}
	baseTracked, haveTracked := metric(trackedMetric)
	baseContexts, _ := metric(contextsMetric)
	baseHost := hostProcesses()
	t.Logf("baseline: %d idle processes, %d host processes, tracked %v (present: %v), contexts %v", len(idle), baseHost, baseTracked, haveTracked, baseContexts)

	// Churn: starts at a fixed rate (not catching up in bursts when late),
	// by a few starters: a start waits for the publisher's "ready".
	type job struct {
		seq  int
		life time.Duration
	}
	jobs := make(chan job, p.churnRate)
	var startErrs errorsSeen
	var starters sync.WaitGroup
	for range 8 {
		starters.Go(func() {
			for j := range jobs {
				if _, err := pubs.start(fmt.Sprintf("%s%d", churnPrefix, j.seq), j.life); err != nil {
					startErrs.add(err)
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(14, uint64(time.Now().UnixNano())))
	interval := time.Second / time.Duration(p.churnRate)
	t0 := time.Now()
	next := t0
	started := 0
	for time.Since(t0) < p.churn {
		jobs <- job{started, 200*time.Millisecond + time.Duration(rng.Int64N(int64(3800*time.Millisecond)))}
		started++
		next = next.Add(interval)
		if late := time.Since(next); late > time.Second {
			next = time.Now()
		}
		time.Sleep(time.Until(next))
	}
	close(jobs)
	starters.Wait()
	churned := time.Since(t0)
	rssChurnEnd := rss.last()

	// Every publisher exits by itself within its lifetime.
	all := pubs.list()
	exitedBy := time.Now().Add(30 * time.Second)
	for _, pb := range all {
		select {
		case <-pb.done:
		case <-time.After(time.Until(exitedBy)):
			t.Errorf("publisher %d (%s, life %s) still running 30s after the churn", pb.pid, pb.service, pb.life)
		}
	}
	var badExits []string
	for _, pb := range all {
		if !pb.alive() && pb.err != nil {
			badExits = append(badExits, fmt.Sprintf("%d: %v", pb.pid, pb.err))
		}
	}

	// The events of every publisher arrive: wait until the verdict holds,
	// or for a deadline, and report what is missing.
	var v churnVerdict
	settled := waitFor(ctx, 60*time.Second, time.Second, func() bool {
		v = judgeChurn(all, events, t0)
		return len(v.problems) == 0
	})
	v = judgeChurn(all, events, t0)
	eventsDone := time.Now()

	// Retention: the tracker returns to its baseline (the host's own
	// process count changes meanwhile: other tests run).
	retentionWait := p.grace + 15*time.Second
	if p.full {
		retentionWait = p.grace + 2*time.Minute
	}
	var endTracked, endContexts float64
	var endHost int
	backToBaseline := func() bool {
		endTracked, haveTracked = metric(trackedMetric)
		endContexts, _ = metric(contextsMetric)
		endHost = hostProcesses()
		if !haveTracked {
			return endContexts <= baseContexts
		}
		return endTracked <= baseTracked+float64(max(0, endHost-baseHost))+10 && endContexts <= baseContexts
	}
	backInTime := waitFor(ctx, retentionWait, time.Second, backToBaseline)
	backAfter := time.Since(eventsDone)
	rssEnd := rss.last()
	rssMinute := rss.at(min(time.Minute, churned/4))
	rss.halt()
	var telemetry []string
	for _, name := range []string{"otelcol_receiver_process_context_entity_events_dropped", "otelcol_receiver_process_context_entity_events_pending", "otelcol_extension_process_context_reads"} {
		series, err := scrapeSeries(prom, name)
		if err != nil {
			t.Log(err)
		}
		telemetry = append(telemetry, fmt.Sprintf("%s: %s", strings.TrimPrefix(strings.TrimPrefix(name, "otelcol_receiver_process_context_"), "otelcol_extension_process_context_"), seriesString(series)))
	}
	stopCollectorCleanly(t, col, "churn")
	var dropped []string
	for line := range strings.Lines(col.Output.String()) {
		if strings.Contains(line, "Events were dropped") {
			ts, _, _ := strings.Cut(line, "\t")
			dropped = append(dropped, ts)
		}
	}
	droppedFig := "never"
	if len(dropped) > 0 {
		droppedFig = fmt.Sprintf("%d times (first %s, last %s)", len(dropped), dropped[0], dropped[len(dropped)-1])
	}

	sort.Strings(v.problems)
	reasons := make([]string, 0, len(v.deleteReasons))
	for r, n := range v.deleteReasons {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	trackedFig := fmt.Sprintf("metric %s absent", trackedMetric)
	if haveTracked {
		trackedFig = fmt.Sprintf("%.0f → %.0f (host processes %d → %d)", baseTracked, endTracked, baseHost, endHost)
	}
	soakSummary(t, "churn ("+p.mode()+")", [][2]string{
		{"command", soakCommand("TestSoakChurn", p)},
		{"duration, rate", fmt.Sprintf("%s, %d publishers/s offered, %.1f/s held, beside %d idle processes", churned.Round(time.Second), p.churnRate, float64(len(all))/churned.Seconds(), len(idle))},
		{"publishers started", fmt.Sprintf("%d (start errors: %s)", started, startErrs.String())},
		{"lived ≥ 2s", fmt.Sprintf("%d, of which %d with exactly 1 state + 1 delete", v.long, v.longOK)},
		{"lived < 2s", fmt.Sprintf("%d: %d without events, %d with 1 state + 1 delete, %d otherwise", v.short, v.shortNone, v.shortBoth, v.short-v.shortNone-v.shortBoth)},
		{"events expected (≥ 2s) / received (all)", fmt.Sprintf("%d / %d (all entities at the server: %d events)", v.expected, v.received, events.total)},
		{"delete reasons", strings.Join(reasons, " ")},
		{"deleted with another reason than process_exited (examples)", strings.Join(v.unpublished, "; ")},
		{"state events naming another service", fmt.Sprint(v.otherSvcs)},
		{"churn entities matching no publisher", fmt.Sprint(v.unmatched)},
		{"last event after last exit", v.unexpectedDelay.Round(time.Millisecond).String()},
		{"RSS after first minute / end of churn", fmt.Sprintf("%s (at %s) / %s", mib(rssMinute.rss), rssMinute.at.Round(time.Second), mib(rssChurnEnd.rss))},
		{"RSS after retention / max", fmt.Sprintf("%s / %s (at %s)", mib(rssEnd.rss), mib(rss.max().rss), rss.max().at.Round(time.Second))},
		{"RSS growth (end − first minute)", mib(rssEnd.rss - rssMinute.rss)},
		{"tracker size baseline → after retention", trackedFig},
		{"contexts baseline → after retention", fmt.Sprintf("%.0f → %.0f", baseContexts, endContexts)},
		{"back to baseline", fmt.Sprintf("%v, %s after the last event (grace_period %s)", backInTime, backAfter.Round(time.Second), p.grace)},
		{"publisher exits not 0", fmt.Sprint(len(badExits))},
		{"receiver telemetry at the end", strings.Join(telemetry, " | ")},
		{"tracker logged \"Events were dropped\"", droppedFig},
	})

	if len(v.problems) > 0 {
		shown := v.problems
		if len(shown) > 40 {
			shown = append(shown[:40], fmt.Sprintf("… and %d more", len(v.problems)-40))
		}
		t.Errorf("entity events (settled: %v): %d publishers wrong:\n%s\n(kernel events dropped, per the tracker's debug log, at: %s)", settled, len(v.problems), strings.Join(shown, "\n"), strings.Join(dropped, ", "))
	}
	if v.otherSvcs > 0 {
		t.Errorf("%d state events carry another publisher's service.name", v.otherSvcs)
	}
	if startErrs.n > 0 {
		t.Errorf("publishers that did not start: %s", startErrs.String())
	}
	if len(badExits) > 0 {
		t.Errorf("publishers that did not exit 0: %v", badExits)
	}
	if p.full {
		if growth := rssEnd.rss - rssMinute.rss; growth > 10<<20 {
			t.Errorf("collector RSS grew %s from %s (at %s) to %s at the end: want ≤ 10 MB", mib(growth), mib(rssMinute.rss), rssMinute.at, mib(rssEnd.rss))
		}
		if !haveTracked {
			t.Skipf("%s is not exported by this collector (yet): the tracker's size was not checked; contexts %.0f → %.0f", trackedMetric, baseContexts, endContexts)
		}
		if !backInTime {
			t.Errorf("tracker not back to its baseline %s after the last event: tracked %.0f → %.0f (host processes %d → %d), contexts %.0f → %.0f",
				retentionWait, baseTracked, endTracked, baseHost, endHost, baseContexts, endContexts)
		}
	}
}

// soakCommand is the command that reproduces a soak run.
func soakCommand(test string, p soakParams) string {
	if p.full {
		return fmt.Sprintf("make soak (go test ./test/e2e -run '^%s$' -count=1 -timeout 40m -v -args -soak)", test)
	}
	return fmt.Sprintf("go test ./test/e2e -run '^%s$' -count=1 -v", test)
}
