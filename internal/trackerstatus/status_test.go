// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package trackerstatus

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
)

// fakeTracker has a problem that the test sets.
type fakeTracker struct {
	mu      sync.Mutex
	problem error
	changed chan struct{}
}

func newFakeTracker() *fakeTracker { return &fakeTracker{changed: make(chan struct{})} }

func (f *fakeTracker) Health() (<-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed, f.problem
}

func (f *fakeTracker) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problem = err
	close(f.changed)
	f.changed = make(chan struct{})
}

// statusHost records the status events reported through it.
type statusHost struct {
	component.Host
	mu     sync.Mutex
	events []*componentstatus.Event
}

func (h *statusHost) Report(ev *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *statusHost) statuses() []componentstatus.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []componentstatus.Status
	for _, ev := range h.events {
		out = append(out, ev.Status())
	}
	return out
}

func TestWatch(t *testing.T) {
	host := &statusHost{Host: componenttest.NewNopHost()}
	tr := newFakeTracker()
	stop := Watch(host, tr)
	defer stop()

	problem := errors.New("cannot list the host's processes: open /hostfs/proc: no such file or directory")
	tr.set(problem)
	require.Eventually(t, func() bool { return len(host.statuses()) == 1 }, 10*time.Second, time.Millisecond)
	host.mu.Lock()
	assert.Equal(t, componentstatus.StatusRecoverableError, host.events[0].Status())
	assert.Equal(t, problem, host.events[0].Err())
	host.mu.Unlock()

	tr.set(errors.New(problem.Error())) // the same problem: not reported again
	tr.set(nil)
	require.Eventually(t, func() bool { return len(host.statuses()) == 2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, host.statuses())
}

// A problem present when the watch starts is reported at once; a healthy
// start reports nothing (the collector reports OK).
func TestWatchStart(t *testing.T) {
	healthy := &statusHost{Host: componenttest.NewNopHost()}
	Watch(healthy, newFakeTracker())()
	assert.Empty(t, healthy.statuses())

	broken := &statusHost{Host: componenttest.NewNopHost()}
	tr := newFakeTracker()
	tr.problem = errors.New("cannot read some processes")
	stop := Watch(broken, tr)
	require.Eventually(t, func() bool { return len(broken.statuses()) == 1 }, 10*time.Second, time.Millisecond)
	stop()
}

// A host that does not take status reports is fine.
func TestWatchWithoutReporter(t *testing.T) {
	tr := newFakeTracker()
	stop := Watch(componenttest.NewNopHost(), tr)
	tr.set(errors.New("x"))
	stop()
}
