package processctxreceiver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/publisher"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/registry"
)

// uniquePublisher copies kind's publisher to a name of its own, so that an
// include filter selects exactly the processes of this test even while
// other packages' tests start publishers too.
func uniquePublisher(t *testing.T, kind pubtest.Kind, name string) string {
	t.Helper()
	return pubtest.ExecutableCopy(t, pubtest.Binary(t, kind), name)
}

func startAs(t *testing.T, kind pubtest.Kind, path string) *pubtest.Proc {
	t.Helper()
	var args []string
	if kind == pubtest.Go {
		args = append(args, "-control")
	}
	return pubtest.StartCommand(t, kind, exec.Command(path, args...))
}

func newTestScanner(t *testing.T, cfg *Config, logger *zap.Logger) *scanner {
	t.Helper()
	fs, err := procmem.NewFS(cfg.RootPath)
	require.NoError(t, err)
	s, err := newScanner(cfg, fs, registry.New(), logger)
	require.NoError(t, err)
	return s
}

func scanEvents(t *testing.T, s *scanner, now time.Time) []event {
	t.Helper()
	_, err := s.scan(context.Background(), now)
	require.NoError(t, err)
	logs := s.events.take()
	return decodeEvents(t, []plogLogs{logs})
}

func TestSteadyStateCostsOneTimestampReadPerPublisher(t *testing.T) {
	path := uniquePublisher(t, pubtest.Go, "steady-pub")
	cfg := testConfig()
	cfg.RescanInterval = time.Hour
	cfg.Include.Executables = []string{"steady-pub"}
	s := newTestScanner(t, cfg, zap.NewNop())
	var pubs []*pubtest.Proc
	for range 3 {
		p := startAs(t, pubtest.Go, path)
		p.Publish(publisher.EncodeStrings(map[string]string{"service.name": "steady"}))
		pubs = append(pubs, p)
	}
	// Another process of the same executable, without a context.
	quiet := startAs(t, pubtest.Go, path)

	now := time.Now()
	events := scanEvents(t, s, now)
	for _, p := range pubs {
		require.Len(t, eventsOf(events, p.Pid), 1)
	}
	require.Empty(t, eventsOf(events, quiet.Pid))
	_, found := s.registry.Lookup(pubs[0].Pid)
	require.True(t, found, "publisher in the shared registry")

	before := s.reader.Stats()
	for i := range 5 {
		res, err := s.scan(context.Background(), now.Add(time.Duration(i+1)*cfg.CollectionInterval))
		require.NoError(t, err)
		assert.Equal(t, 3, res.publishers)
	}
	after := s.reader.Stats()
	assert.Zero(t, s.events.len(), "no event for unchanged contexts")
	assert.Equal(t, before.MapsFiles, after.MapsFiles, "no maps file read in steady state")
	assert.Equal(t, uint64(5*3), after.MemoryReads-before.MemoryReads, "one read per publisher per scan")
	assert.Equal(t, uint64(5*3*8), after.MemoryBytes-before.MemoryBytes, "8 bytes per publisher per scan")

	// 1 of 3 updated: one payload read, one event.
	pubs[1].Update(publisher.EncodeStrings(map[string]string{"service.name": "steady-2"}))
	before = s.reader.Stats()
	events = scanEvents(t, s, now.Add(10*cfg.CollectionInterval))
	require.Len(t, events, 1)
	assert.Equal(t, "steady-2", events[0].description["service.name"])
	assert.Equal(t, before.MapsFiles, s.reader.Stats().MapsFiles)

	// The process without a context is re-read once the rescan interval passed.
	before = s.reader.Stats()
	scanEvents(t, s, now.Add(2*cfg.RescanInterval))
	assert.Equal(t, before.MapsFiles+1, s.reader.Stats().MapsFiles, "one rescan of the quiet process")
}

func TestRescanBudget(t *testing.T) {
	path := uniquePublisher(t, pubtest.C, "budget-pub")
	cfg := testConfig()
	cfg.Include.Executables = []string{"budget-pub"}
	cfg.RescanBudget = 2
	s := newTestScanner(t, cfg, zap.NewNop())
	for range 5 {
		startAs(t, pubtest.C, path)
	}
	now := time.Now()
	scanEvents(t, s, now)
	before := s.reader.Stats()
	scanEvents(t, s, now.Add(time.Hour))
	assert.Equal(t, before.MapsFiles+2, s.reader.Stats().MapsFiles, "at most rescan_budget maps files per scan")
	scanEvents(t, s, now.Add(time.Hour+time.Second))
	assert.Equal(t, before.MapsFiles+4, s.reader.Stats().MapsFiles, "the others next, oldest first")
}

func TestPidReuseIsANewEntity(t *testing.T) {
	pubtest.RequireRoot(t)
	path := uniquePublisher(t, pubtest.Go, "reuse-pub")
	cfg := testConfig()
	cfg.Include.Executables = []string{"reuse-pub"}
	s := newTestScanner(t, cfg, zap.NewNop())

	first := startAs(t, pubtest.Go, path)
	first.Publish(publisher.EncodeStrings(map[string]string{"service.name": "first"}))
	now := time.Now()
	events := scanEvents(t, s, now)
	require.Len(t, events, 1)
	pid := first.Pid
	first.Exit()
	time.Sleep(30 * time.Millisecond) // a different start time: at least a clock tick later

	second := startOnPid(t, path, pid)
	second.Publish(publisher.EncodeStrings(map[string]string{"service.name": "second"}))
	events = scanEvents(t, s, now.Add(time.Second))
	require.Len(t, events, 2, "%+v", events)
	assert.Equal(t, "delete", events[0].kind)
	assert.Equal(t, reasonExited, events[0].reason)
	assert.Equal(t, "state", events[1].kind)
	assert.Equal(t, "second", events[1].description["service.name"])
	assert.Equal(t, pid, events[1].pid)
	assert.NotEqual(t, events[0].creationTime, events[1].creationTime, "a new entity id")
}

// startOnPid starts a publisher that gets pid, steering the kernel's next
// pid through ns_last_pid (retried: other forks on the host may race).
func startOnPid(t *testing.T, path string, pid int) *pubtest.Proc {
	t.Helper()
	for range 50 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot steer pid allocation: %v", err)
		}
		p := startAs(t, pubtest.Go, path)
		if p.Pid == pid {
			return p
		}
		p.Kill()
	}
	t.Skip("pid allocation kept racing with other processes")
	return nil
}

const helperEnv = "PROCESSCTX_SCAN_AS_HELPER"

type helperReport struct {
	Outcomes map[string]int64
	Denied   int
	Warnings int
	Message  string
}

// TestScanAsHelper is the body of the unprivileged helper process started
// by TestPermissionDeniedIsAggregated.
func TestScanAsHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("only runs as a helper process")
	}
	core, logs := observer.New(zap.WarnLevel)
	cfg := testConfig()
	cfg.RescanInterval = time.Nanosecond // every process is re-read every scan
	s := newTestScanner(t, cfg, zap.New(core))
	now := time.Now()
	report := helperReport{Outcomes: map[string]int64{}}
	for i := range 3 {
		res, err := s.scan(context.Background(), now.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
		for k, v := range s.outcomes {
			report.Outcomes[k] += v
		}
		report.Denied = res.denied
	}
	report.Warnings = logs.Len()
	if logs.Len() > 0 {
		report.Message = logs.All()[0].Message + " " + logs.All()[0].ContextMap()["needs"].(string)
	}
	require.NoError(t, json.NewEncoder(os.Stdout).Encode(report))
}

func TestPermissionDeniedIsAggregated(t *testing.T) {
	pubtest.RequireRoot(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(publisher.EncodeStrings(map[string]string{"service.name": "root-owned"}))

	self := pubtest.ExecutableCopy(t, os.Args[0], "receiver.test")
	cmd := exec.Command(self, "-test.run=^TestScanAsHelper$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	require.NoError(t, err, "helper crashed: %s", out)

	var report helperReport
	require.NoError(t, json.NewDecoder(bytesReader(out)).Decode(&report), "%s", out)
	assert.Positive(t, report.Outcomes["permission_denied"], "%+v", report)
	assert.Positive(t, report.Denied)
	assert.Equal(t, 1, report.Warnings, "one aggregated warning for 3 scans: %+v", report)
	assert.Contains(t, report.Message, "CAP_SYS_PTRACE")
}

func TestRescanDelayBacksOff(t *testing.T) {
	cfg := createDefaultConfig()
	s := &scanner{cfg: cfg}
	want := []time.Duration{30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for rechecks, d := range want {
		assert.Equal(t, d, s.rescanDelay(&process{rechecks: uint8(rechecks)}), "after %d re-reads", rechecks)
	}
	assert.Equal(t, 10*time.Minute, s.rescanDelay(&process{rechecks: 255}))
}
