// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// A publisher killed during the faults soak.
type killedPub struct {
	pub       *soakPub
	at        time.Time
	midUpdate bool // its header's timestamp read 0 just before the kill
	run       int  // the collector run it was killed in (-1: none)
	inWindow  bool // ≥ 2 s after that run was ready and ≥ 2 s before it stopped
}

// collectorRun is one life of the collector during the faults soak.
type collectorRun struct {
	ready, stopped time.Time
	stopTook       time.Duration
}

// killMidUpdate SIGKILLs pb while its header's timestamp is 0 (an update
// being written), or at the end of 500ms of trying.
func killMidUpdate(pb *soakPub) (bool, error) {
	deadline := time.Now().Add(500 * time.Millisecond)
	mid := false
	for time.Now().Before(deadline) {
		ts, err := pb.timestamp()
		if err != nil {
			return false, err
		}
		if ts == 0 {
			mid = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	return mid, pb.signal(syscall.SIGKILL)
}

// TestSoakFaults runs the load of TestSoakLoad (with the receiver's entity
// events too) while publishers updating their context continuously are
// SIGKILLed mid-update, one publisher is SIGSTOPped, and the collector is
// restarted (SIGTERM, then started again on the same ports): every record
// the collector acknowledged reaches the server, the collector exits
// cleanly both times, and each killed publisher the collector knew gets
// one delete event. Records the collector did not acknowledge (refused
// while it restarts) are reported.
func TestSoakFaults(t *testing.T) {
	pubtest.RequireRoot(t)
	p := soakParameters(t)
	r := newLoadRun(t, p, 4)
	// The updaters are mid-update (timestamp 0) nearly all the time: only a
	// publication event, read right after an update's prctl, finds one
	// readable. Without one (the default where the kernel refuses fexit) a
	// killed updater may never have been known, and no delete is owed.
	r.extension = "    publication_events: " + trackertest.PublicationEvents(t)
	cfg := r.config(true)
	col := startCollector(t, cfg)
	runs := []collectorRun{{ready: time.Now()}}

	killEvery := 2 * time.Second
	if p.full {
		killEvery = 3 * time.Second
	}
	updater := []string{"-update-every", "20", "-update-hold", "20"}
	n := 0
	startUpdater := func() error {
		pb, err := r.pubs.start(fmt.Sprintf("faults-updater-%d", n), 0, updater...)
		n++
		if err != nil {
			return err
		}
		r.pool.addRotating(pb)
		return nil
	}
	for range 3 {
		if err := startUpdater(); err != nil {
			t.Fatal(err)
		}
	}

	wait := r.send(p.faults)
	t0 := r.sendFrom
	var killed []killedPub
	var faultErrs errorsSeen
	stopAt, restartAt := p.faults/4, p.faults/2
	var stopped *soakPub
	restarted := false
	nextKill := t0.Add(killEvery)
	for time.Since(t0) < p.faults-time.Second {
		now := time.Now()
		if stopped == nil && now.Sub(t0) >= stopAt {
			r.pool.mu.Lock()
			stopped = r.pool.stable[0]
			r.pool.stable = r.pool.stable[1:]
			r.pool.stopped = stopped
			r.pool.mu.Unlock()
			faultErrs.add(stopped.signal(syscall.SIGSTOP))
			t.Logf("+%.1fs: SIGSTOP publisher %d (%s)", now.Sub(t0).Seconds(), stopped.pid, stopped.service)
		}
		if !restarted && now.Sub(t0) >= restartAt {
			restarted = true
			runs[len(runs)-1].stopped = time.Now()
			runs[len(runs)-1].stopTook = stopCollectorCleanly(t, col, "restart")
			col = startCollector(t, cfg)
			runs = append(runs, collectorRun{ready: time.Now()})
			t.Logf("+%.1fs: collector restarted (stop took %s, down for %s)", runs[0].stopped.Sub(t0).Seconds(), runs[0].stopTook, runs[1].ready.Sub(runs[0].stopped))
		}
		if now.After(nextKill) {
			nextKill = now.Add(killEvery)
			r.pool.mu.Lock()
			var victim *soakPub
			for _, pb := range r.pool.rotating {
				if pb.alive() && now.Sub(pb.started) >= time.Second {
					victim = pb
					break
				}
			}
			r.pool.mu.Unlock()
			if victim != nil {
				mid, err := killMidUpdate(victim)
				faultErrs.add(err)
				killed = append(killed, killedPub{pub: victim, at: time.Now(), midUpdate: mid, run: -1})
			}
			r.pool.retire()
			faultErrs.add(startUpdater())
		}
		time.Sleep(50 * time.Millisecond)
	}
	wait()
	f := r.waitDelivered(30 * time.Second)
	runs[len(runs)-1].stopped = time.Now()
	runs[len(runs)-1].stopTook = stopCollectorCleanly(t, col, "final stop")

	// The delete events of the killed publishers.
	mid, inWindow, inWindowOK, deleted, wrong := 0, 0, 0, 0, []string{}
	for i := range killed {
		k := &killed[i]
		if k.midUpdate {
			mid++
		}
		for ri, run := range runs {
			if k.at.After(run.ready) && k.at.Before(run.stopped) {
				k.run = ri
				k.inWindow = k.at.Sub(run.ready) >= 2*time.Second && run.stopped.Sub(k.at) >= 2*time.Second &&
					k.at.Sub(k.pub.started) >= 2*time.Second
			}
		}
		c := r.entities.counts(entityKey{int64(k.pub.pid), k.pub.created})
		if c.delete == 1 {
			deleted++
		}
		if !k.inWindow {
			if c.delete > 1 {
				wrong = append(wrong, fmt.Sprintf("pid %d killed at +%.2fs (run %d, outside the checked window): %d delete events", k.pub.pid, k.at.Sub(t0).Seconds(), k.run, c.delete))
			}
			continue
		}
		inWindow++
		if c.delete != 1 || c.state < 1 {
			wrong = append(wrong, fmt.Sprintf("pid %d (%s, published at +%.2fs) killed at +%.2fs in run %d (mid-update: %v): %d state, %d delete %v",
				k.pub.pid, k.pub.service, k.pub.started.Sub(t0).Seconds(), k.at.Sub(t0).Seconds(), k.run, k.midUpdate, c.state, c.delete, c.reasons))
		} else {
			inWindowOK++
		}
	}

	var downtime time.Duration
	if len(runs) > 1 {
		downtime = runs[1].ready.Sub(runs[0].stopped)
	}
	stoppedFig := "none"
	if stopped != nil {
		stoppedFig = fmt.Sprintf("pid %d from +%.1fs: its records enriched %d/%d", stopped.pid, stopAt.Seconds(), f.classEnriched[classStopped], f.classSent[classStopped])
	}
	rows := append([][2]string{
		{"command", soakCommand("TestSoakFaults", p)},
		{"duration", fmt.Sprintf("%s; the load of TestSoakLoad, publishers updating every 20ms (timestamp 0 for 20ms each time)", r.sendFor)},
		{"publishers SIGKILLed", fmt.Sprintf("%d (%d with the header's timestamp 0 just before: mid-update)", len(killed), mid)},
		{"their delete events", fmt.Sprintf("%d of %d killed while the collector knew them have exactly 1; %d of all %d", inWindowOK, inWindow, deleted, len(killed))},
		{"SIGSTOPped publisher", stoppedFig},
		{"collector restart", fmt.Sprintf("SIGTERM at +%.1fs, exit after %s, ready again after %s down", restartAt.Seconds(), runs[0].stopTook.Round(time.Millisecond), downtime.Round(time.Millisecond))},
		{"fault injection errors", faultErrs.String()},
	}, r.rows(f)...)
	soakSummary(t, "faults ("+p.mode()+")", rows)

	if n := sum2(f.lost); n > 0 {
		t.Errorf("%d records acknowledged by the collector never reached the server, e.g. %s", n, strings.Join(f.lostExamples, "; "))
	}
	if f.strays > 0 || f.noID > 0 {
		t.Errorf("the server got %d records with unknown ids and %d without one", f.strays, f.noID)
	}
	if len(wrong) > 0 {
		t.Errorf("entity events of killed publishers:\n%s", strings.Join(wrong, "\n"))
	}
	if faultErrs.n > 0 {
		t.Errorf("fault injection: %s", faultErrs.String())
	}
	if len(killed) == 0 {
		t.Errorf("no publisher was killed")
	}
	checkEnrichment(t, f, false)
}
