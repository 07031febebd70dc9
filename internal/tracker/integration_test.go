// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// newOwnHost returns the host of fs (this host's procfs when nil) as far
// as pids go (trackertest.Own).
func newOwnHost(t *testing.T, fs *procfs.FS, pids ...int) *trackertest.Own {
	t.Helper()
	if fs == nil {
		var err error
		fs, err = procfs.NewFS("/")
		require.NoError(t, err)
	}
	host, err := hostopen.NewHost(fs, otep.DefaultLimits())
	require.NoError(t, err)
	return trackertest.NewOwn(host, pids...)
}

// restrictedTracker runs a tracker of this host that sees only pids, on a
// clock the test moves.
func restrictedTracker(t *testing.T, cfg tracker.Config, pids ...int) (*tracker.Tracker, *reader.Reader, *trackertest.Clock) {
	t.Helper()
	own := newOwnHost(t, nil, pids...)
	clock := trackertest.NewClock()
	cfg.CollectionInterval = time.Hour
	tr, err := tracker.New(own, cfg, zap.NewNop(), tracker.WithClock(clock.Now))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() { require.NoError(t, tr.Stop(context.Background())) })
	<-tr.Ready()
	return tr, hostopen.ReaderOf(own.Host), clock
}

func rescan(t *testing.T, tr *tracker.Tracker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, tr.Rescan(ctx))
}

func TestSteadyStateCostsOneTimestampReadPerPublisher(t *testing.T) {
	var pubs []*pubtest.Proc
	var pids []int
	for _, kind := range []pubtest.Kind{pubtest.Go, pubtest.C, pubtest.Go} {
		p := pubtest.Start(t, kind, pubtest.Options{})
		p.Publish(otep.EncodeStrings(map[string]string{"service.name": "steady"}))
		pubs = append(pubs, p)
		pids = append(pids, p.Pid)
	}
	quiet := pubtest.Start(t, pubtest.C, pubtest.Options{})
	// Not a newborn when the first scan meets it (those are read again
	// within their first seconds, as young): this test counts rescans.
	time.Sleep(1100 * time.Millisecond)
	cfg := tracker.DefaultConfig()
	tr, r, clock := restrictedTracker(t, cfg, append(pids, quiet.Pid)...)
	for _, p := range pubs {
		got, _ := tr.Snapshot().Lookup(p.Pid)
		require.NotNil(t, got)
	}

	before := r.Stats()
	for range 5 {
		clock.Advance(time.Second)
		rescan(t, tr)
	}
	after := r.Stats()
	assert.Equal(t, before.MapsFiles, after.MapsFiles, "no maps file read in steady state")
	assert.Equal(t, uint64(5*3), after.MemoryReads-before.MemoryReads, "one read per publisher per scan")
	assert.Equal(t, uint64(5*3*8), after.MemoryBytes-before.MemoryBytes, "8 bytes per publisher per scan")

	// 1 of 3 updated: its context is read again, no maps file.
	pubs[1].Update(otep.EncodeStrings(map[string]string{"service.name": "steady-2"}))
	before = r.Stats()
	rescan(t, tr)
	got, _ := tr.Snapshot().Lookup(pubs[1].Pid)
	v, _ := got.Context.Resource.Get("service.name")
	assert.Equal(t, "steady-2", v.Str())
	assert.Equal(t, before.MapsFiles, r.Stats().MapsFiles)

	// The process without a context is looked at again once the rescan
	// interval passed: its stat, which says that its address space did
	// not change, spares its maps; until its rescans wait their longest
	// (rescan_max_interval), and read them whatever the stat says.
	before = r.Stats()
	clock.Advance(cfg.RescanInterval)
	rescan(t, tr)
	assert.Equal(t, before.MapsFiles, r.Stats().MapsFiles, "a rescan of the quiet process: its stat")
	for i := 0; r.Stats().MapsFiles == before.MapsFiles; i++ {
		require.Less(t, i, 20, "its maps never read again")
		clock.Advance(cfg.RescanMaxInterval)
		rescan(t, tr)
	}
	assert.Equal(t, before.MapsFiles+1, r.Stats().MapsFiles, "one maps file, at the longest wait")
}

func TestPidReuseIsANewPublication(t *testing.T) {
	pubtest.RequireRoot(t)
	path := pubtest.ExecutableCopy(t, pubtest.Binary(t, pubtest.Go), "reuse-pub")
	first := pubtest.StartCommand(t, pubtest.Go, exec.Command(path, "-control"))
	first.Publish(otep.EncodeStrings(map[string]string{"service.name": "first"}))
	pid := first.Pid
	tr, _, _ := restrictedTracker(t, tracker.DefaultConfig(), pid)
	sub := trackertest.Subscribe(t, tr)
	sub.Take()
	old, _ := tr.Snapshot().Lookup(pid)
	require.NotNil(t, old)

	first.Exit()
	time.Sleep(30 * time.Millisecond) // a different start time: at least a clock tick later
	second := startOnPid(t, path, pid)
	second.Publish(otep.EncodeStrings(map[string]string{"service.name": "second"}))
	rescan(t, tr)
	changes, _ := sub.Take()
	require.Len(t, changes, 2, "%+v", changes)
	assert.Equal(t, tracker.Exited, changes[0].Kind)
	assert.Equal(t, old.Key, changes[0].Publication.Key)
	assert.Equal(t, tracker.Published, changes[1].Kind)
	assert.Equal(t, pid, changes[1].Publication.PID)
	assert.NotEqual(t, old.StartTicks, changes[1].Publication.StartTicks, "a new process")
	v, _ := changes[1].Publication.Context.Resource.Get("service.name")
	assert.Equal(t, "second", v.Str())
}

// startOnPid starts a publisher that gets pid, steering the kernel's next
// pid through ns_last_pid (retried: other forks on the host may race).
func startOnPid(t *testing.T, path string, pid int) *pubtest.Proc {
	t.Helper()
	for range 50 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot steer pid allocation: %v", err)
		}
		p := pubtest.StartCommand(t, pubtest.Go, exec.Command(path, "-control"))
		if p.Pid == pid {
			return p
		}
		p.Kill()
	}
	t.Skip("pid allocation kept racing with other processes")
	return nil
}

const helperEnv = "PROCESSCTX_TRACK_AS_HELPER"

type helperReport struct {
	Denied   int
	Warnings int
	Pids     string
	Reason   string
}

// TestTrackAsHelper is the body of the unprivileged helper process started
// by TestPermissionDeniedIsReportedOnce.
func TestTrackAsHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("only runs as a helper process")
	}
	pid, err := strconv.Atoi(os.Getenv(helperEnv))
	require.NoError(t, err)
	core, logs := observer.New(zap.WarnLevel)
	clock := trackertest.NewClock()
	cfg := tracker.DefaultConfig()
	cfg.CollectionInterval = time.Hour
	tr, err := tracker.New(newOwnHost(t, nil, pid), cfg, zap.New(core), tracker.WithClock(clock.Now))
	require.NoError(t, err)
	tr.Start()
	defer func() { _ = tr.Stop(context.Background()) }()
	sub := trackertest.Subscribe(t, tr)
	report := helperReport{}
	for range 3 {
		clock.Advance(cfg.RescanInterval) // every process is re-read every scan
		rescan(t, tr)
	}
	require.NoError(t, tr.WaitIdle(context.Background()))
	_, stats := sub.Take()
	report.Denied = stats[len(stats)-1].Denied
	report.Warnings = logs.Len()
	if logs.Len() > 0 {
		fields := logs.All()[0].ContextMap()
		report.Pids, _ = fields["pids"].(string)
		report.Reason, _ = fields["reason"].(string)
	}
	require.NoError(t, json.NewEncoder(os.Stdout).Encode(report))
}

func TestPermissionDeniedIsReportedOnce(t *testing.T) {
	pubtest.RequireRoot(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "root-owned"}))

	self := pubtest.ExecutableCopy(t, os.Args[0], "tracker.test")
	cmd := exec.Command(self, "-test.run=^TestTrackAsHelper$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(p.Pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	require.NoError(t, err, "helper crashed: %s", out)

	var report helperReport
	line := out
	if i := slices.Index(strings.Split(string(out), "\n"), "PASS"); i > 0 {
		line = []byte(strings.Split(string(out), "\n")[i-1])
	}
	require.NoError(t, json.Unmarshal(line, &report), "%s", out)
	assert.Equal(t, 1, report.Denied)
	assert.Equal(t, 1, report.Warnings, "one warning for 3 scans: %+v", report)
	assert.Equal(t, strconv.Itoa(p.Pid)+" (go-publisher)", report.Pids)
	assert.Contains(t, report.Reason, "uid 65534 without CAP_SYS_PTRACE")
	assert.Contains(t, report.Reason, "grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH")
}
