// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// TestWhatABatchAsksTheTracker checks, on a fake tracker that knows no
// pid, what a batch asks of it: the pids to read (Probe), a scan when only
// a scan can find the process (a pid inside a container), nothing for
// resources without a pid; and that the data passes through unchanged.
func TestWhatABatchAsksTheTracker(t *testing.T) {
	for _, tc := range []struct {
		name       string
		resources  []map[string]any
		wantProbed [][]int
		wantScans  int
	}{
		{name: "no pid", resources: []map[string]any{{"service.name": "a"}}},
		{name: "invalid pid", resources: []map[string]any{{"process.pid": "x"}}},
		{
			name:       "host pids",
			resources:  []map[string]any{{"process.pid": 100}, {"process.pid": 200}},
			wantProbed: [][]int{{100, 200}},
		},
		{
			name:      "pid in a container",
			resources: []map[string]any{{"process.pid": 7, "container.id": "c1"}},
			wantScans: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &sharedtrackertest.Fake{}
			p, err := newInstance(processortest.NewNopSettings(metadata.Type), testConfig(), signalLogs)
			require.NoError(t, err)
			require.NoError(t, p.start(context.Background(), sharedtrackertest.HostOf(fake)))
			defer func() { assert.NoError(t, p.shutdown(context.Background())) }()

			ld := plog.NewLogs()
			for _, attrs := range tc.resources {
				rl := ld.ResourceLogs().AppendEmpty()
				require.NoError(t, rl.Resource().Attributes().FromRaw(attrs))
				rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			}
			want := plog.NewLogs()
			ld.CopyTo(want)
			got, err := p.processLogs(context.Background(), ld)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, tc.wantProbed, fake.Probed())
			assert.Equal(t, tc.wantScans, fake.Scans())
		})
	}
}

// TestViewLifecycle checks that a started instance holds one view of the
// tracker and gives it back at shutdown, and that a view refused fails the
// start with the extension's name.
func TestViewLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		addErr  error
		wantErr string
	}{
		{name: "added and removed"},
		{name: "refused", addErr: errors.New("tracker stopped"), wantErr: "tracker of process_context: tracker stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &sharedtrackertest.Fake{AddViewErr: tc.addErr}
			p, err := newInstance(processortest.NewNopSettings(metadata.Type), testConfig(), signalLogs)
			require.NoError(t, err)
			err = p.start(context.Background(), sharedtrackertest.HostOf(fake))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.Zero(t, fake.Views())
				require.NoError(t, p.shutdown(context.Background()))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1, fake.Views())
			require.NoError(t, p.shutdown(context.Background()))
			assert.Zero(t, fake.Views())
		})
	}
}
