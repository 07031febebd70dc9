// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// liveTracker runs a tracker of this host, opened as the components open
// theirs (with the event sources discovery asks for), on the real clock.
// With events, its scans and rescans are an hour apart: whatever it finds
// within a test, events told it. Polling scans every 200 ms, with rescans
// an hour apart: only the young schedule finds a late publisher.
func liveTracker(t *testing.T, discovery hostopen.Discovery) (*tracker.Tracker, *trackertest.Recorder, *observer.ObservedLogs) {
	t.Helper()
	pubtest.RequireRoot(t)
	cfg := hostopen.DefaultConfig()
	cfg.Discovery = discovery
	if discovery == hostopen.DiscoveryEvents {
		cfg.PublicationEvents = trackertest.PublicationEvents(t)
	}
	cfg.RescanInterval, cfg.RescanMaxInterval = time.Hour, time.Hour
	cfg.CollectionInterval = time.Hour
	if discovery == hostopen.DiscoveryPoll {
		cfg.CollectionInterval = 200 * time.Millisecond
	}
	core, logs := observer.New(zap.DebugLevel)
	tr, err := hostopen.Open(cfg, zap.New(core))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() {
		require.NoError(t, tr.Stop(context.Background()))
		if t.Failed() {
			// What the tracker said last (reads abandoned, quarantines).
			all := logs.All()
			for _, e := range all[max(0, len(all)-40):] {
				t.Logf("tracker log %s %s: %s %v", e.Time.Format("15:04:05.000"), e.Level, e.Message, e.ContextMap())
			}
		}
	})
	sub := trackertest.Subscribe(t, tr)
	<-tr.Ready()
	if discovery == hostopen.DiscoveryEvents {
		require.Equal(t, tracker.ProcessEvents|tracker.PublicationEvents, tr.LiveSources())
	}
	return tr, sub, logs
}

// changesOf waits for n changes of pid and returns them as "kind service".
func changesOf(t *testing.T, tr *tracker.Tracker, sub *trackertest.Recorder, pid, n int) []string {
	t.Helper()
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case <-sub.C():
		case <-deadline:
			_, o := tr.Snapshot().Lookup(pid)
			maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
			published := err == nil && strings.Contains(string(maps), "OTEL_CTX")
			t.Fatalf("pid %d: want %d changes, got %v; it is %s (its maps show a context: %v); events %+v, live %s, stuck reads %d",
				pid, n, got, o, published, tr.Events(), tr.LiveSources(), tr.StuckReads())
		}
		changes, _ := sub.Take()
		for _, c := range changes {
			if c.Publication.PID != pid {
				continue
			}
			svc, _ := c.Publication.Context.Resource.Get("service.name")
			got = append(got, kindName(c.Kind)+" "+svc.Str())
		}
	}
	return got
}

func serviceContext(name string) []byte {
	return otep.EncodeStrings(map[string]string{"service.name": name})
}

// A publisher that publishes 5 s after it started, then updates every 2 s.
func TestLivePublisherLate(t *testing.T) {
	for _, discovery := range []hostopen.Discovery{hostopen.DiscoveryEvents, hostopen.DiscoveryPoll} {
		t.Run(string(discovery), func(t *testing.T) {
			t.Parallel()
			tr, sub, _ := liveTracker(t, discovery)
			p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
			time.Sleep(5 * time.Second) // the SDK starting up
			p.Publish(serviceContext("late-v1"))
			assert.Equal(t, []string{"published late-v1"}, changesOf(t, tr, sub, p.Pid, 1))
			if discovery == hostopen.DiscoveryPoll {
				return // updates are read at the next scan: the older tests' subject
			}
			for _, v := range []string{"late-v2", "late-v3"} {
				time.Sleep(2 * time.Second)
				p.Update(serviceContext(v))
				assert.Equal(t, []string{"updated " + v}, changesOf(t, tr, sub, p.Pid, 1))
			}
		})
	}
}

func TestLiveExit(t *testing.T) {
	tr, sub, _ := liveTracker(t, hostopen.DiscoveryEvents)
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	p.Publish(serviceContext("exits"))
	assert.Equal(t, []string{"published exits"}, changesOf(t, tr, sub, p.Pid, 1))
	p.Exit()
	assert.Equal(t, []string{"exited exits"}, changesOf(t, tr, sub, p.Pid, 1))
}

func TestLiveUnpublish(t *testing.T) {
	tr, sub, _ := liveTracker(t, hostopen.DiscoveryEvents)
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	p.Publish(serviceContext("unmaps"))
	assert.Equal(t, []string{"published unmaps"}, changesOf(t, tr, sub, p.Pid, 1))
	p.Unpublish() // munmap: the eBPF program watches the publication
	// A scan that lists the host reads no publisher while the source
	// reports unmaps (fexit): the event tells. With kprobe, which reports
	// none, this scan reads every publisher and finds it.
	tr.ScanSoon()
	assert.Equal(t, []string{"unpublished unmaps"}, changesOf(t, tr, sub, p.Pid, 1))
}

// A process that starts as a shell, then execs into a publisher.
func TestLiveExecIntoPublisher(t *testing.T) {
	for _, discovery := range []hostopen.Discovery{hostopen.DiscoveryEvents, hostopen.DiscoveryPoll} {
		t.Run(string(discovery), func(t *testing.T) {
			t.Parallel()
			tr, sub, _ := liveTracker(t, discovery)
			bin := pubtest.Binary(t, pubtest.Go)
			cmd := exec.Command("/bin/sh", "-c", "sleep 1; exec "+bin+" -service-name exec-"+string(discovery))
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			assert.Equal(t, []string{"published exec-" + string(discovery)}, changesOf(t, tr, sub, cmd.Process.Pid, 1))
		})
	}
}

// A publisher's forked child has no context (MADV_DONTFORK): with events
// the tracker knows so from the fork alone, without reading it.
func TestLiveFork(t *testing.T) {
	tr, sub, _ := liveTracker(t, hostopen.DiscoveryEvents)
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	p.Publish(serviceContext("parent"))
	assert.Equal(t, []string{"published parent"}, changesOf(t, tr, sub, p.Pid, 1))
	child := p.Fork()
	require.Eventually(t, func() bool {
		_, o := tr.Snapshot().Lookup(child)
		return o == tracker.AnswerNoContext
	}, 10*time.Second, time.Millisecond)
	got, _ := tr.Snapshot().Lookup(p.Pid)
	require.NotNil(t, got)
	assert.True(t, got.Live(), "the parent still publishes")
}

// Storm: short-lived processes beside publishers; every publisher is
// stated and deleted, and the tracker forgets the storm's processes.
func TestLiveStorm(t *testing.T) {
	tr, sub, _ := liveTracker(t, hostopen.DiscoveryEvents)
	storm := buildStorm(t)
	cmd := exec.Command(storm, "2000", "3", "10")
	out := &strings.Builder{}
	cmd.Stdout = out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := range 5 {
		p := pubtest.Start(t, pubtest.C, pubtest.Options{})
		name := fmt.Sprintf("storm-%d", i)
		p.Publish(serviceContext(name))
		assert.Equal(t, []string{"published " + name}, changesOf(t, tr, sub, p.Pid, 1))
		p.Exit()
		assert.Equal(t, []string{"exited " + name}, changesOf(t, tr, sub, p.Pid, 1))
	}
	require.NoError(t, cmd.Wait())
	assert.Contains(t, out.String(), "started ")
	t.Logf("storm: %s; events %+v", strings.TrimSpace(out.String()), tr.Events())
}

// buildStorm compiles testdata/storm.
func buildStorm(t testing.TB) string {
	t.Helper()
	bin := t.TempDir() + "/storm"
	cc := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-o", bin, pubtest.RepoRoot()+"/testdata/storm/storm.c")
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("build storm (gcc is required): %v\n%s", err, out)
	}
	return bin
}

const fallbackHelperEnv = "PROCESSCTX_TEST_FALLBACK_PID"

// TestFallbackAsHelper is the body of TestLiveFallbackWithoutCapabilities'
// helper process, which runs as another user with only CAP_SYS_PTRACE and
// CAP_DAC_READ_SEARCH: it reports what the tracker used and found.
func TestFallbackAsHelper(t *testing.T) {
	pid, err := strconv.Atoi(os.Getenv(fallbackHelperEnv))
	if err != nil {
		t.Skip("only runs as a helper process")
	}
	cfg := hostopen.DefaultConfig()
	cfg.CollectionInterval = 200 * time.Millisecond
	core, logs := observer.New(zap.InfoLevel)
	tr, err := hostopen.Open(cfg, zap.New(core))
	require.NoError(t, err)
	tr.Start()
	defer func() { _ = tr.Stop(context.Background()) }()
	<-tr.Ready()
	// Found by the first scan, or (a read that stalled on a busy machine)
	// by a later one.
	found := false
	for deadline := time.Now().Add(20 * time.Second); !found && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got, _ := tr.Snapshot().Lookup(pid)
		found = got != nil
	}
	info := logs.FilterMessageSnippet("Process discovery").All()
	require.Len(t, info, 2, "the line of what runs, and the one of what is missing")
	fmt.Printf("live=%s found=%v publication_events=%s\nmissing=%s\n", tr.LiveSources(), found, info[0].ContextMap()["publication_events"], info[1].Message)
}

// Without CAP_BPF and CAP_PERFMON the tracker polls for publications and
// still finds them; it says so once.
func TestLiveFallbackWithoutCapabilities(t *testing.T) {
	pubtest.RequireRoot(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(serviceContext("root-owned"))
	self := pubtest.ExecutableCopy(t, os.Args[0], "tracker.test")
	cmd := exec.Command(self, "-test.run=^TestFallbackAsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), fallbackHelperEnv+"="+strconv.Itoa(p.Pid))
	const capSysPtrace, capDACReadSearch = 19, 2
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: 65534, Gid: 65534},
		AmbientCaps: []uintptr{capSysPtrace, capDACReadSearch},
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "found=true", "%s", out)
	assert.Contains(t, string(out), "publication_events=none", "%s", out)
	assert.Contains(t, string(out), "publications are polled (seconds after a process starts, not at once): the collector lacks CAP_BPF and CAP_PERFMON", "%s", out)
	assert.NotContains(t, string(out), "live=process, publication", "%s", out)
}

// Publishers started in a burst from a shell: each is a fork of the shell
// that execs the C publisher, which publishes at once. A scan that meets
// one between its fork and its exec sees the shell's image, without a
// context; exec keeps the pid, start time and /proc inode. With events the
// exec and the publication are reported; polling reads young processes
// again within their first seconds. Every one is found. They live until
// the test ends: how soon a burst is read is the machine's speed (under an
// emulator, 120 reads take seconds), which BenchmarkScan and the latency
// benchmarks measure; a publisher that exits before any read is not
// reported, by design.
func TestLivePublishersFromAShell(t *testing.T) {
	const n = 120
	for _, discovery := range []hostopen.Discovery{hostopen.DiscoveryEvents, hostopen.DiscoveryPoll} {
		t.Run(string(discovery), func(t *testing.T) {
			tr, sub, _ := liveTracker(t, discovery)
			cpub := pubtest.Binary(t, pubtest.C)
			payload := fmt.Sprintf("%x", serviceContext("short-lived"))
			script := fmt.Sprintf(`for i in $(seq %d); do (printf 'publish %s\n'; sleep 600) | %s >/dev/null & echo $!; done; wait`, n, payload, cpub)
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the shell and every publisher end together
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
			want := map[int]bool{}
			var line []byte
			buf := make([]byte, 1)
			for len(want) < n {
				if _, err := out.Read(buf); err != nil {
					t.Fatalf("shell: %v after %d pids", err, len(want))
				}
				if buf[0] != '\n' {
					line = append(line, buf[0])
					continue
				}
				pid, err := strconv.Atoi(string(line))
				require.NoError(t, err)
				want[pid] = true
				line = line[:0]
			}
			lostBefore := tr.Events().Lost
			found := map[int]bool{}
			deadline := time.After(time.Minute)
			for len(found) < n {
				select {
				case <-sub.C():
				case <-deadline:
					var missing []int
					for pid := range want {
						if !found[pid] {
							missing = append(missing, pid)
						}
					}
					if ev := tr.Events(); ev.Lost > lostBefore {
						// Other tests' process storms overflowed the
						// event buffers: make-up scans come at most once
						// per hint_interval (5 s), longer than these
						// publishers live (documented).
						t.Skipf("%d of %d publishers not reported while the host dropped %d events (%+v)", len(missing), n, ev.Lost-lostBefore, ev)
					}
					t.Fatalf("%d of %d publishers never reported: %v (events %+v)", len(missing), n, missing, tr.Events())
				}
				changes, _ := sub.Take()
				for _, c := range changes {
					if c.Kind == tracker.Published && want[c.Publication.PID] {
						found[c.Publication.PID] = true
					}
				}
			}
		})
	}
}

// At its defaults the tracker loads no eBPF source that slows the host's
// other syscalls: fexit, kprobe (where the kernel refuses fexit) or none. Its start-up line says which, in a line a
// person reads; with none, a second short line says what polls instead,
// why, what to change and where the trade-off is explained.
func TestLiveDefaultsCostTheHostNothing(t *testing.T) {
	pubtest.RequireRoot(t)
	core, logs := observer.New(zap.InfoLevel)
	tr, err := hostopen.Open(hostopen.DefaultConfig(), zap.New(core))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Stop(context.Background())) })
	info := logs.FilterMessageSnippet("Process discovery").All()
	require.NotEmpty(t, info)
	summary := info[0]
	t.Logf("%s", summary.Message)
	assert.Regexp(t, `^Process discovery: .*, scans every 10s, \d+ processes visible$`, summary.Message)
	assert.LessOrEqual(t, len(summary.Message), 160, "a line a person reads")
	fields := summary.ContextMap()
	pub, _ := fields["publication_events"].(string)
	if pub != "none" {
		assert.Contains(t, []string{"eBPF fexit", "eBPF kprobe"}, pub)
		return
	}
	require.Len(t, info, 2)
	hint := info[1].Message
	t.Logf("%s", hint)
	assert.Contains(t, hint, "publications are polled (seconds after a process starts, not at once): this kernel refuses fexit and has no kprobes; "+
		"publication_events: syscall_tracepoints sees them at once at a cost to every syscall of the host")
	assert.Contains(t, hint, "docs/discovery.md#when-an-event-source-is-missing")
	assert.LessOrEqual(t, len(hint), 400, "a line a person reads")
}
