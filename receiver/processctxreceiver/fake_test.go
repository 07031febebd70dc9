// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// TestEventsOfChanges checks, on a fake tracker whose changes the test
// sends, which process entity events each sequence of changes makes, on a
// resource naming the tracker's host, and that shutdown unsubscribes.
func TestEventsOfChanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []tracker.ChangeKind // each sent alone, in order
		want    []string             // the events' kinds
	}{
		{name: "published", changes: []tracker.ChangeKind{tracker.Published}, want: []string{"state"}},
		{name: "updated", changes: []tracker.ChangeKind{tracker.Published, tracker.Updated}, want: []string{"state", "state"}},
		{name: "exited", changes: []tracker.ChangeKind{tracker.Published, tracker.Exited}, want: []string{"state", "delete"}},
		{name: "unpublished", changes: []tracker.ChangeKind{tracker.Published, tracker.Unpublished}, want: []string{"state", "delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &sharedtrackertest.Fake{Identity: procfs.HostIdentity{ID: "host-1", Name: "box"}}
			sink := new(consumertest.LogsSink)
			rcv, err := newReceiver(receivertest.NewNopSettings(metadata.Type), testConfig(), sink)
			require.NoError(t, err)
			require.NoError(t, rcv.Start(context.Background(), sharedtrackertest.HostOf(fake)))
			t.Cleanup(func() { assert.NoError(t, rcv.Shutdown(context.Background())) })

			pub := testProcess()
			r := &running{sink: sink, rcv: rcv}
			for i, kind := range tc.changes {
				require.True(t, fake.Send([]tracker.Change{{Kind: kind, Publication: pub}}, nil))
				r.waitEvents(t, pub.Identity.PID, i+1)
			}
			var kinds []string
			for _, e := range eventsOf(decodeEvents(t, sink.AllLogs()), pub.Identity.PID) {
				kinds = append(kinds, e.kind)
			}
			assert.Equal(t, tc.want, kinds)
			for _, ld := range sink.AllLogs() {
				host, ok := ld.ResourceLogs().At(0).Resource().Attributes().Get(entitymodel.HostIDKey)
				require.True(t, ok)
				assert.Equal(t, "host-1", host.Str())
			}
			require.NoError(t, rcv.Shutdown(context.Background()))
			assert.False(t, fake.Send(nil, nil), "unsubscribed at shutdown")
		})
	}
}

// TestStartFailsWhenTheTrackerRefusesTheSubscription checks that a
// subscription refused fails the start, saying so.
func TestStartFailsWhenTheTrackerRefusesTheSubscription(t *testing.T) {
	fake := &sharedtrackertest.Fake{SubscribeErr: errors.New("tracker stopped")}
	rcv, err := newReceiver(receivertest.NewNopSettings(metadata.Type), testConfig(), new(consumertest.LogsSink))
	require.NoError(t, err)
	err = rcv.Start(context.Background(), sharedtrackertest.HostOf(fake))
	require.ErrorContains(t, err, "process_context receiver: subscribe to the process tracker: tracker stopped")
	require.NoError(t, rcv.Shutdown(context.Background()))
	assert.False(t, fake.Send(nil, nil))
}
