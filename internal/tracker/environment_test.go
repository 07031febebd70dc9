// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/sdkenv"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// source returns where the tracker's identity of pid comes from, and its
// resource attribute key.
func (h *harness) attr(pid int, key string) (tracker.Source, string) {
	h.t.Helper()
	p, o := h.tr.Snapshot().Lookup(pid)
	require.Equal(h.t, tracker.AnswerOK, o, "pid %d", pid)
	v, _ := p.Context.Resource.Get(key)
	return p.Source, v.Str()
}

// A process that publishes no context is named by its SDK environment,
// read once: the scans that look for a late context do not read it again.
func TestEnvironmentIdentity(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.SetEnv(10, "checkout", "service.name=ignored,deployment.environment.name=prod%2Ceu")
	host.Add(11) // neither context nor variables
	host.Add(12)
	host.SetEnv(12, "", "service.namespace=shop")
	h := newHarness(t, testConfig(), host)

	src, svc := h.attr(10, "service.name")
	assert.Equal(t, tracker.SourceEnvironment, src)
	assert.Equal(t, "checkout", svc, "OTEL_SERVICE_NAME wins")
	_, env := h.attr(10, "deployment.environment.name")
	assert.Equal(t, "prod,eu", env, "percent-decoded")
	_, ns := h.attr(12, "service.namespace")
	assert.Equal(t, "shop", ns)
	_, o := h.tr.Snapshot().Lookup(11)
	assert.Equal(t, tracker.AnswerNoContext, o)
	assert.Equal(t, 3, host.Count(trackertest.MethodEnviron))

	// Rescans look for a late context (the stat, and the maps once the
	// address space changed), never at the environment.
	host.ResetCounts()
	for range 3 {
		h.clock.Advance(testConfig().RescanInterval)
		h.rescan()
	}
	assert.Positive(t, host.Count(trackertest.MethodStart))
	assert.Zero(t, host.Count(trackertest.MethodEnviron))
	assert.Empty(t, h.take())
}

// A published context wins over the environment, whole; the environment
// is not read while it is published, and names the process again once the
// context ends.
func TestContextWinsOverEnvironment(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(20)
	host.SetEnv(20, "from-env", "")
	host.Add(21)
	host.SetEnv(21, "env-then-context", "")
	host.Publish(20, "from-context")
	h := newHarness(t, testConfig(), host)
	src, svc := h.attr(20, "service.name")
	assert.Equal(t, tracker.SourceContext, src)
	assert.Equal(t, "from-context", svc)
	assert.Equal(t, 1, host.Count(trackertest.MethodEnviron), "21's only")

	// A process named by its environment publishes later: a change of
	// its identity, not a new one.
	host.Publish(21, "late-context")
	h.clock.Advance(testConfig().RescanInterval)
	h.rescan()
	assert.Equal(t, []string{"updated 21 late-context"}, h.take())
	src, _ = h.attr(21, "service.name")
	assert.Equal(t, tracker.SourceContext, src)

	// Its context ends while it lives: its environment names it again.
	host.ResetCounts()
	host.Unpublish(21)
	h.clock.Advance(testConfig().RescanInterval)
	h.rescan()
	assert.Equal(t, []string{"updated 21 env-then-context"}, h.take())
	src, _ = h.attr(21, "service.name")
	assert.Equal(t, tracker.SourceEnvironment, src)
	assert.Equal(t, 1, host.Count(trackertest.MethodEnviron))

	// It exits: its identity ends.
	host.Remove(21)
	h.clock.Advance(testConfig().CollectionInterval)
	h.rescan()
	assert.Equal(t, []string{"exited 21 env-then-context"}, h.take())
}

// With process and publication events, an exec's environment is read at
// the exec (a fork's a second later, unless it execs first), and nothing
// else is.
func TestEnvironmentReadOncePerExec(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(1)
	h, src := eventHarness(t, host, bothSources)
	h.take()

	host.ResetCounts()
	host.Add(40)
	host.SetEnv(40, "parent-env", "")
	src.Send(tracker.Event{Kind: tracker.EventFork, PID: 40, Parent: 1})
	h.settle()
	assert.Zero(t, host.Count(trackertest.MethodEnviron), "not before a second")
	host.SetEnv(40, "worker", "")
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 40})
	h.settle()
	h.clock.Advance(10 * time.Millisecond)
	h.rescan()
	assert.Equal(t, []string{"published 40 worker"}, h.waitChanges(1))
	assert.Equal(t, 1, host.Count(trackertest.MethodEnviron))
	assert.Zero(t, host.Count(trackertest.MethodMaps), "publication events tell of a context")

	// It execs into a program with other variables: another identity.
	host.SetEnv(40, "other-program", "")
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 40})
	h.settle()
	h.clock.Advance(10 * time.Millisecond)
	h.rescan()
	assert.Equal(t, []string{"unpublished 40 worker", "published 40 other-program"}, h.waitChanges(2))

	// Steady: no read while nothing execs.
	host.ResetCounts()
	for range 3 {
		h.clock.Advance(time.Minute)
		h.rescan()
	}
	assert.Zero(t, host.Count(trackertest.MethodEnviron))

	// A fork that does not exec is read a second after it.
	host.Add(41)
	host.SetEnv(41, "forked-worker", "")
	src.Send(tracker.Event{Kind: tracker.EventFork, PID: 41, Parent: 40})
	h.settle()
	h.clock.Advance(time.Second)
	h.rescan()
	assert.Equal(t, []string{"published 41 forked-worker"}, h.waitChanges(1))
}

// The sources setting: without the environment, it is never read; without
// contexts, no maps are.
func TestSourcesSetting(t *testing.T) {
	for _, tt := range []struct {
		name      string
		sources   []tracker.Source
		want      tracker.Source
		readsMaps bool
		readsEnv  bool
	}{
		{"context", []tracker.Source{tracker.SourceContext}, tracker.SourceContext, true, false},
		{"environment", []tracker.Source{tracker.SourceEnvironment}, tracker.SourceEnvironment, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(30)
			host.SetEnv(30, "env", "")
			host.Publish(30, "context")
			cfg := testConfig()
			cfg.Sources = tt.sources
			h := newHarness(t, cfg, host)
			src, _ := h.attr(30, "service.name")
			assert.Equal(t, tt.want, src)
			assert.Equal(t, tt.readsMaps, host.Count(trackertest.MethodMaps) > 0)
			assert.Equal(t, tt.readsEnv, host.Count(trackertest.MethodEnviron) > 0)
		})
	}
}

// A read of the environment that does not return is abandoned at its
// deadline and its process quarantined, as any other read.
func TestEnvironmentStallQuarantines(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(50).Block = trackertest.MethodEnviron
	host.Add(51)
	host.SetEnv(51, "good", "")
	cfg := testConfig()
	tr, clock := startWithClock(t, host, cfg, zap.NewNop())
	scanPastStuck(t, tr, clock, host, trackertest.MethodEnviron, cfg)
	_, o := tr.Snapshot().Lookup(50)
	assert.Equal(t, tracker.Answer(tracker.OutcomeStalled), o)
	p, _ := tr.Snapshot().Lookup(51)
	require.NotNil(t, p, "the other process is read")
	assert.Equal(t, tracker.SourceEnvironment, p.Source)
}

// A real process started with the SDK variables is named by them; a
// secret beside them is nowhere in what the tracker keeps.
func TestEnvironmentOfARealProcess(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(),
		"OTEL_SERVICE_NAME=env-only",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=staging,team=a%20b",
		"DB_PASSWORD=hunter2-secret")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	cfg := tracker.DefaultConfig()
	cfg.CollectionInterval = 100 * time.Millisecond
	tr, _ := realTracker(t, cfg, newOwnHost(t, nil, cmd.Process.Pid))
	waitPublished(t, tr, cmd.Process.Pid, "env-only", 30*time.Second)
	p, _ := tr.Snapshot().Lookup(cmd.Process.Pid)
	assert.Equal(t, tracker.SourceEnvironment, p.Source)
	assert.Equal(t, map[string]any{"service.name": "env-only", "deployment.environment.name": "staging", "team": "a b"},
		p.Context.Resource.AsRaw())
	assert.Zero(t, p.Context.Attributes.Len())
	assert.NotContains(t, p.Identity.CommandLine, "hunter2")
}

// A process a few milliseconds old when the first scan meets it may not
// have exec'd yet: its environment is its parent's. It is young: the young
// reads look at its environment again, and find the variables of its
// image (polling: no exec event tells).
func TestNewbornsEnvironmentReadAgain(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(70).Age = 5 * time.Millisecond
	host.Add(71) // an old process: not read again so soon
	h := newHarness(t, testConfig(), host)
	_, o := h.tr.Snapshot().Lookup(70)
	assert.Equal(t, tracker.AnswerNoContext, o)

	host.SetEnv(70, "after-exec", "") // its exec
	host.SetEnv(71, "never-read", "")
	h.clock.Advance(time.Second) // the first young read
	assert.Equal(t, []string{"published 70 after-exec"}, h.waitChanges(1))
	_, o = h.tr.Snapshot().Lookup(71)
	assert.Equal(t, tracker.AnswerNoContext, o)
}

// An environment that reads empty (an exec not finished setting it up) is
// read again soon, not taken for one without the variables, nor left
// for the rescans (30 s, or an hour while events come).
func TestEmptyEnvironmentReadAgain(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(60).Errs[trackertest.MethodEnviron] = fmt.Errorf("pid 60: %w", sdkenv.ErrEmpty)
	host.SetEnv(60, "set-up-late", "")
	h := newHarness(t, testConfig(), host)
	_, o := h.tr.Snapshot().Lookup(60)
	assert.Equal(t, tracker.AnswerNoContext, o)

	host.Set(60, func(p *trackertest.Proc) { delete(p.Errs, trackertest.MethodEnviron) })
	h.clock.Advance(time.Second) // the retries: 40 ms, 160 ms, 640 ms and 2.56 s after
	assert.Equal(t, []string{"published 60 set-up-late"}, h.waitChanges(1))
}
