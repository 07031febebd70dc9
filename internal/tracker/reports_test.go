// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// What procfs says of a denial no setting lifts, and of one a capability
// would.
const (
	unchangeableWhy = "refused by the kernel although the collector (uid 0) has CAP_SYS_PTRACE: typical of a VM's or sandbox's own init, " +
		"a process of a more privileged user namespace, or a security module's policy; no setting of the collector changes it, so expect it for such processes"
	fixableWhy = "the collector runs as uid 998 without CAP_SYS_PTRACE and the process belongs to uid 0: grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (or run as root)"
)

// deniedReports returns the "pids" of the permission reports at level.
func deniedReports(logs *observer.ObservedLogs, level zapcore.Level) []string {
	var pids []string
	for _, e := range logs.FilterLevelExact(level).FilterMessageSnippet("permission denied").All() {
		pids = append(pids, e.ContextMap()["pids"].(string))
	}
	return pids
}

// A denial that no setting lifts is said once, at info; one that a
// privilege would lift is warned of once per warning interval, as long as
// it lasts.
func TestUnchangeableDenialsAreSaidOnce(t *testing.T) {
	require.True(t, procfs.Unchangeable(unchangeableWhy))
	require.False(t, procfs.Unchangeable(fixableWhy))
	tests := []struct {
		name   string
		whys   map[int]string // denied pids
		events bool           // kernel events: most scans do not list the host
		infos  []string
		warns  []string
	}{
		{
			name:  "unchangeable only",
			whys:  map[int]string{1: unchangeableWhy},
			infos: []string{"1 (proc-1)"},
		},
		{
			name:  "fixable only",
			whys:  map[int]string{1: fixableWhy},
			warns: []string{"1 (proc-1)", "1 (proc-1)", "1 (proc-1)", "1 (proc-1)"},
		},
		{
			name:  "no explanation is a warning",
			whys:  map[int]string{3: ""},
			warns: []string{"3 (proc-3)", "3 (proc-3)", "3 (proc-3)", "3 (proc-3)"},
		},
		{
			name:  "both",
			whys:  map[int]string{1: unchangeableWhy, 2: fixableWhy, 3: fixableWhy},
			infos: []string{"1 (proc-1)"},
			warns: []string{"2 (proc-2), 3 (proc-3)", "2 (proc-2), 3 (proc-3)", "2 (proc-2), 3 (proc-3)", "2 (proc-2), 3 (proc-3)"},
		},
		{
			name:   "unchangeable, with kernel events",
			whys:   map[int]string{1: unchangeableWhy},
			events: true,
			infos:  []string{"1 (proc-1)"},
		},
		{
			name:   "both, with kernel events",
			whys:   map[int]string{1: unchangeableWhy, 2: fixableWhy},
			events: true,
			infos:  []string{"1 (proc-1)"},
			warns:  []string{"2 (proc-2)", "2 (proc-2)", "2 (proc-2)", "2 (proc-2)"},
		},
		{
			name: "more than a report names",
			whys: map[int]string{1: unchangeableWhy, 2: unchangeableWhy, 3: unchangeableWhy, 4: unchangeableWhy,
				5: unchangeableWhy, 6: unchangeableWhy, 7: unchangeableWhy},
			infos: []string{"1 (proc-1), 2 (proc-2), 3 (proc-3), 4 (proc-4), 5 (proc-5)", "6 (proc-6), 7 (proc-7)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(100) // readable
			for pid, why := range tt.whys {
				p := host.Add(pid)
				p.Errs[trackertest.MethodMaps] = fmt.Errorf("open maps of pid %d: %w", pid, procfs.ErrPermissionDenied)
				p.Why = why
			}
			cfg := testConfig()
			var opts []tracker.Option
			if tt.events {
				opts = append(opts, tracker.WithEventSources(trackertest.NewSource(tracker.ProcessEvents|tracker.PublicationEvents)))
			}
			h := newHarness(t, cfg, host, opts...)
			scan := func() {
				h.rescan()
				require.NoError(t, h.tr.WaitIdle(context.Background())) // its report is out
			}
			for range 3 {
				scan() // does not list the host with events
				h.clock.Advance(cfg.WarningInterval)
				scan() // lists it
			}
			assert.Equal(t, tt.infos, deniedReports(h.logs, zap.InfoLevel))
			assert.Equal(t, tt.warns, deniedReports(h.logs, zap.WarnLevel))
		})
	}
}

// An unchangeable denial is said again for a new process: the pid's
// process exited, and the one that reuses it is denied too. (The scans
// between count another denied process: see reports.swept.)
func TestUnchangeableDenialOfANewProcess(t *testing.T) {
	host := trackertest.NewHost()
	deny := func(p *trackertest.Proc) {
		p.Errs[trackertest.MethodMaps] = procfs.ErrPermissionDenied
		p.Why = unchangeableWhy
	}
	deny(host.Add(7))
	deny(host.Add(8))
	h := newHarness(t, testConfig(), host)
	h.rescan()
	require.NoError(t, h.tr.WaitIdle(context.Background()))
	require.Equal(t, []string{"7 (proc-7), 8 (proc-8)"}, deniedReports(h.logs, zap.InfoLevel))

	host.Remove(7)
	h.rescan()
	deny(host.Add(7))
	host.Set(7, func(p *trackertest.Proc) { p.Start++ })
	h.rescan()
	h.rescan()
	require.NoError(t, h.tr.WaitIdle(context.Background()))
	assert.Equal(t, []string{"7 (proc-7), 8 (proc-8)", "7 (proc-7)"}, deniedReports(h.logs, zap.InfoLevel))
	assert.Empty(t, deniedReports(h.logs, zap.WarnLevel))
}

// On a host whose processes this one cannot read whatever its privileges
// (this development VM's init refuses even root), a collector with every
// privilege says so once, at info, and warns of nothing. Every scan lists
// (as with process events alone; TestUnchangeableDenialsAreSaidOnce covers
// the scans between events), and sees pid 1 only: on a clock the test moves,
// a read of another test's process that stalls would hold a scan for good.
// Elsewhere there is nothing to check.
func TestRealUnchangeableDenialIsNoWarning(t *testing.T) {
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	if fs.CheckAccess() != nil {
		t.Skip("this process lacks privileges: its denials are warnings")
	}
	if _, err := os.ReadFile(fs.Path(1, "maps")); !errors.Is(err, os.ErrPermission) {
		t.Skipf("pid 1 is readable here (%v)", err)
	}
	for _, tt := range []struct{ name, says string }{{"", "the collector"}, {"ctxdump", "ctxdump"}} {
		t.Run(tt.says, func(t *testing.T) {
			cfg := tracker.DefaultConfig()
			cfg.CollectionInterval = time.Hour // the test drives the scans
			core, logs := observer.New(zap.InfoLevel)
			clock := trackertest.NewClock()
			named, err := procfs.NewFS("/", procfs.WithReaderName(tt.name))
			require.NoError(t, err)
			tr, err := tracker.New(newOwnHost(t, named, 1), cfg, zap.New(core), tracker.WithClock(clock.Now))
			require.NoError(t, err)
			tr.Start()
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				assert.NoError(t, tr.Stop(ctx))
			})
			scan := func() {
				rescan(t, tr)
				require.NoError(t, tr.WaitIdle(context.Background())) // no read runs when the clock moves
			}
			for range 3 {
				scan()
				clock.Advance(cfg.WarningInterval)
				scan()
			}
			_, o := tr.Snapshot().Lookup(1)
			assert.Equal(t, tracker.Answer(tracker.OutcomePermissionDenied), o)
			infos := logs.FilterLevelExact(zap.InfoLevel).FilterMessageSnippet("permission denied").All()
			require.Len(t, infos, 1, "%v", logs.All())
			assert.Contains(t, infos[0].ContextMap()["pids"], "1 (")
			reason := infos[0].ContextMap()["reason"].(string)
			assert.Contains(t, reason, "refused by the kernel although "+tt.says+" (uid 0)")
			assert.Contains(t, reason, "no setting of "+tt.says+" changes it")
			assert.Empty(t, logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("permission denied").All())
		})
	}
}

// The permission warning and DeniedProcesses (the extension's
// denied_processes metric) count the same processes: those the last
// listing found denied, less those no setting would let it read (here pid
// 1, found so by the first warning's descriptions). Scans that do not list
// the host (kernel events) leave the count as it was. (The reads metric's
// permission_denied counts reads, as many as the rescan schedule makes:
// another thing.)
func TestDeniedCountIsTheWarnings(t *testing.T) {
	for _, events := range []bool{false, true} {
		t.Run(fmt.Sprintf("events=%v", events), func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(100) // readable
			deny := func(pid int, why string) {
				p := host.Add(pid)
				p.Errs[trackertest.MethodMaps] = fmt.Errorf("open maps of pid %d: %w", pid, procfs.ErrPermissionDenied)
				p.Why = why
			}
			deny(1, unchangeableWhy)
			const fixable = 23
			for pid := 200; pid < 200+fixable; pid++ {
				deny(pid, fixableWhy)
			}
			var opts []tracker.Option
			if events {
				opts = append(opts, tracker.WithEventSources(trackertest.NewSource(tracker.ProcessEvents|tracker.PublicationEvents)))
			}
			cfg := testConfig()
			h := newHarness(t, cfg, host, opts...)
			scan := func() {
				h.rescan()
				require.NoError(t, h.tr.WaitIdle(context.Background())) // its report is out
			}
			warned := func() []int {
				var n []int
				for _, e := range h.logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("permission denied").All() {
					n = append(n, int(e.ContextMap()["processes"].(int64)))
				}
				return n
			}

			scan() // lists the host, warns
			require.Equal(t, []int{fixable}, warned())
			assert.Equal(t, fixable, h.tr.DeniedProcesses())
			for range 3 { // scans within the warning interval: no warning, the same count
				h.clock.Advance(cfg.RescanInterval)
				scan()
				assert.Equal(t, fixable, h.tr.DeniedProcesses())
			}
			require.Len(t, warned(), 1)

			host.Remove(200)
			h.clock.Advance(cfg.WarningInterval)
			scan() // does not list the host with events
			scan() // lists it
			assert.Equal(t, []int{fixable, fixable - 1}, warned())
			assert.Equal(t, fixable-1, h.tr.DeniedProcesses())
		})
	}
}
