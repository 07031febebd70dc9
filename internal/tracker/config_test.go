// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Every duration key has a floor: below it the configuration is refused
// with a message that names the key and the floor and, for a value below a
// millisecond, says that a number without a unit is nanoseconds.
func TestConfigDurationFloors(t *testing.T) {
	tests := []struct {
		key  string
		set  func(*tracker.Config, time.Duration)
		low  time.Duration // refused
		want string
		ok   []time.Duration // accepted: the floor, and 0 where it means "off"
	}{
		{
			key: "collection_interval", set: func(c *tracker.Config, d time.Duration) { c.CollectionInterval = d },
			low: 5, want: "collection_interval: 5ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 5s",
			ok: []time.Duration{100 * time.Millisecond},
		},
		{
			key: "initial_delay", set: func(c *tracker.Config, d time.Duration) { c.InitialDelay = d },
			low: 10, want: "initial_delay: 10ns is below the floor of 1ms; a duration without a unit is in nanoseconds: write 10s",
			ok: []time.Duration{0, time.Millisecond},
		},
		{
			key: "timeout", set: func(c *tracker.Config, d time.Duration) { c.Timeout = d },
			low: 30, want: "timeout: 30ns is below the floor of 10ms; a duration without a unit is in nanoseconds: write 30s",
			ok: []time.Duration{0, 10 * time.Millisecond},
		},
		{
			key: "rescan_interval", set: func(c *tracker.Config, d time.Duration) { c.RescanInterval = d },
			low: 50 * time.Millisecond, want: "rescan_interval: 50ms is below the floor of 100ms",
			ok: []time.Duration{100 * time.Millisecond},
		},
		{
			key: "rescan_max_interval", set: func(c *tracker.Config, d time.Duration) { c.RescanInterval, c.RescanMaxInterval = d, d },
			low: 600, want: "rescan_max_interval: 600ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 600s",
			ok: []time.Duration{100 * time.Millisecond},
		},
		{
			key: "read_timeout", set: func(c *tracker.Config, d time.Duration) { c.ReadTimeout = d },
			low: time.Millisecond, want: "read_timeout: 1ms is below the floor of 10ms",
			ok: []time.Duration{10 * time.Millisecond},
		},
		{
			key: "reconcile_interval", set: func(c *tracker.Config, d time.Duration) { c.ReconcileInterval = d },
			low: 3600, want: "reconcile_interval: 3.6µs is below the floor of 1s; a duration without a unit is in nanoseconds: write 3600s",
			ok: []time.Duration{time.Second},
		},
		{
			key: "grace_period", set: func(c *tracker.Config, d time.Duration) { c.GracePeriod = d },
			low: 500 * time.Millisecond, want: "grace_period: 500ms is below the floor of 1s",
			ok: []time.Duration{0, time.Second},
		},
		{
			key: "recheck_interval", set: func(c *tracker.Config, d time.Duration) { c.RecheckInterval = d },
			low: 5, want: "recheck_interval: 5ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 5s",
			ok: []time.Duration{100 * time.Millisecond},
		},
		{
			key: "warning_interval", set: func(c *tracker.Config, d time.Duration) { c.WarningInterval = d },
			low: 300, want: "warning_interval: 300ns is below the floor of 1s; a duration without a unit is in nanoseconds: write 300s",
			ok: []time.Duration{time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			cfg := tracker.DefaultConfig()
			tt.set(&cfg, tt.low)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			for _, d := range tt.ok {
				cfg := tracker.DefaultConfig()
				tt.set(&cfg, d)
				assert.NoError(t, cfg.Validate(), "%s: %s", tt.key, d)
			}
		})
	}
}

// A value below the floor but not below a millisecond is not taken for a
// number without a unit; each key below its floor is reported.
func TestConfigFloorHints(t *testing.T) {
	cfg := tracker.DefaultConfig()
	cfg.ReadTimeout = 5 * time.Millisecond
	err := cfg.Validate()
	require.Error(t, err)
	assert.Equal(t, "read_timeout: 5ms is below the floor of 10ms", err.Error())

	cfg = tracker.DefaultConfig()
	cfg.RescanInterval = 600 // 600ns, below rescan_max_interval's floor too
	cfg.RescanMaxInterval = 700
	err = cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rescan_interval: 600ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 600s")
	assert.Contains(t, err.Error(), "rescan_max_interval: 700ns is below the floor of 100ms")

	// A zero or negative value gets the message it always had, not a floor.
	cfg = tracker.DefaultConfig()
	cfg.CollectionInterval, cfg.GracePeriod = 0, -time.Second
	err = cfg.Validate()
	require.Error(t, err)
	assert.Equal(t, "collection_interval must be positive, got 0s\ngrace_period must not be negative, got -1s", err.Error())
}

// Where a configuration is written as a number without a unit the
// rescan_max_interval that follows it is refused too, with both reasons.
func TestConfigRescanMaxBelowRescan(t *testing.T) {
	cfg := tracker.DefaultConfig()
	cfg.RescanMaxInterval = 600 // meant 600s; rescan_interval is 30s
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rescan_max_interval (600ns) must not be less than rescan_interval (30s)")
	assert.Contains(t, err.Error(), "rescan_max_interval: 600ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 600s")
}
