// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// closeCounter is an event source that counts its Run and Close calls.
type closeCounter struct {
	runs, closes atomic.Int32
	closed       chan struct{}
}

func newCloseCounter() *closeCounter { return &closeCounter{closed: make(chan struct{})} }

func (s *closeCounter) Sources() tracker.Sources { return tracker.ProcessEvents }

func (s *closeCounter) Run(func(tracker.Event)) error {
	s.runs.Add(1)
	<-s.closed
	return nil
}

func (s *closeCounter) Close() error {
	if s.closes.Add(1) == 1 {
		close(s.closed)
	}
	return nil
}

// A tracker that was never started releases its event sources at Stop,
// once, and does not start after it.
func TestStopReleasesSourcesOfATrackerNeverStarted(t *testing.T) {
	src := newCloseCounter()
	tr, err := tracker.New(trackertest.NewHost(), testConfig(), zap.NewNop(), tracker.WithEventSources(src))
	require.NoError(t, err)
	require.NoError(t, tr.Stop(context.Background()))
	assert.Equal(t, int32(1), src.closes.Load())
	require.NoError(t, tr.Stop(context.Background()), "a second Stop")
	assert.Equal(t, int32(1), src.closes.Load(), "closed once")

	tr.Start() // too late: nothing runs
	assert.Error(t, tr.Rescan(context.Background()))
	_, err = tr.Subscribe(context.Background(), func([]tracker.Change, *tracker.ScanStats) {})
	assert.Error(t, err)
	assert.Zero(t, src.runs.Load())
}

// A started tracker closes its sources once, however often it is stopped.
func TestStopClosesSourcesOnce(t *testing.T) {
	src := newCloseCounter()
	tr, err := tracker.New(trackertest.NewHost(), testConfig(), zap.NewNop(), tracker.WithEventSources(src))
	require.NoError(t, err)
	tr.Start()
	require.NoError(t, tr.Stop(context.Background()))
	require.NoError(t, tr.Stop(context.Background()))
	assert.Equal(t, int32(1), src.closes.Load())
}

// WithScanStats hands every scan's summary over, the first included.
func TestWithScanStats(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Publish(10, "cart")
	var got []tracker.ScanStats // on the loop; read once Rescan returned
	h := newHarness(t, testConfig(), host, tracker.WithScanStats(func(s tracker.ScanStats) { got = append(got, s) }))
	h.rescan()
	h.rescan()
	require.NoError(t, h.tr.WaitIdle(context.Background()))
	// The scan that began with the tracker, the harness's, and two more.
	require.Len(t, got, 4)
	assert.True(t, got[0].Listed)
	assert.Equal(t, 1, got[0].Publishers)
	assert.Equal(t, int64(1), got[0].Reads[tracker.OutcomeOK])
}
