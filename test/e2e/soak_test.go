// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

// Soak tests (issue 14): churn of short-lived publishers beside idle
// processes, OTLP load through the built collector, faults during load.
// By default (go test, make test) each runs as a short smoke with modest
// rates; `make soak` (-args -soak, or SOAK=full) runs the full ones, whose
// figures RELIABILITY.md records. Durations and rates can be overridden:
// SOAK_CHURN, SOAK_LOAD, SOAK_FAULTS (durations), SOAK_CHURN_RATE
// (publishers started per second), SOAK_IDLE (idle processes),
// SOAK_LOGS_RATE, SOAK_PROFILES_RATE (records offered per second per
// pipeline), SOAK_GRACE (the tracker's retention in the churn soak).

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

var soakFlag = flag.Bool("soak", false, "run the full soak tests (make soak) instead of their smoke versions")

// soakParams are one run's durations and rates.
type soakParams struct {
	full bool
	// churn
	churn     time.Duration
	churnRate int // publishers started per second
	idle      int // idle processes beside them
	grace     time.Duration
	// load and faults
	load, faults           time.Duration
	logsRate, profilesRate int // records offered per second, per pipeline
}

func soakParameters(t *testing.T) soakParams {
	t.Helper()
	p := soakParams{
		churn: 10 * time.Second, churnRate: 10, idle: 100, grace: 5 * time.Second,
		load: 15 * time.Second, faults: 20 * time.Second, logsRate: 200, profilesRate: 50,
	}
	if *soakFlag || os.Getenv("SOAK") == "full" {
		p = soakParams{
			full:  true,
			churn: 10 * time.Minute, churnRate: 50, idle: 1000, grace: 30 * time.Second,
			load: 5 * time.Minute, faults: 3 * time.Minute, logsRate: 2000, profilesRate: 500,
		}
	}
	for name, d := range map[string]*time.Duration{"SOAK_CHURN": &p.churn, "SOAK_LOAD": &p.load, "SOAK_FAULTS": &p.faults, "SOAK_GRACE": &p.grace} {
		if v := os.Getenv(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				t.Fatalf("%s=%q: %v", name, v, err)
			}
		}
	}
	for name, n := range map[string]*int{"SOAK_CHURN_RATE": &p.churnRate, "SOAK_IDLE": &p.idle, "SOAK_LOGS_RATE": &p.logsRate, "SOAK_PROFILES_RATE": &p.profilesRate} {
		*n = pubtest.EnvInt(t, name, *n)
	}
	return p
}

func (p soakParams) mode() string {
	if p.full {
		return "full"
	}
	return "smoke"
}

// soakSummary prints a test's figures in one block that RELIABILITY.md
// quotes.
func soakSummary(t *testing.T, title string, rows [][2]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\n===== SOAK %s =====\n", title)
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-40s %s\n", r[0]+":", r[1])
	}
	b.WriteString("===== end =====")
	t.Log(b.String())
}

// soakExporting is pubtest.ExportingTo(server) with internal metrics on a
// Prometheus pull reader at 127.0.0.1:promPort (level normal) instead of
// none, more service keys (extra: indented as service's), and, unless
// queue, the exporter's sending queue disabled.
func soakExporting(t *testing.T, server string, promPort int, queue bool, extra string) string {
	t.Helper()
	cfg := pubtest.ExportingTo(server)
	const queued, unqueued = "    sending_queue:\n      batch:\n        flush_timeout: 50ms\n", "    sending_queue:\n      enabled: false\n"
	const noMetrics = "    metrics:\n      level: none\n"
	if !strings.Contains(cfg, queued) || !strings.Contains(cfg, noMetrics) {
		t.Fatalf("pubtest.ExportingTo changed: soakExporting cannot adapt it:\n%s", cfg)
	}
	if !queue {
		cfg = strings.Replace(cfg, queued, unqueued, 1)
	}
	return strings.Replace(cfg, noMetrics, fmt.Sprintf(`    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, promPort), 1) + extra
}

// scrapeMetric returns the sum of every series of the metric name (a
// counter's _total included) at the collector's Prometheus endpoint;
// found is false when the endpoint has no such metric.
func scrapeMetric(port int, name string) (value float64, found bool, err error) {
	series, err := scrapeSeries(port, name)
	for _, v := range series {
		value += v
	}
	return value, len(series) > 0, err
}

// scrapeSeries returns every series of the metric name (a counter's _total
// included) at the collector's Prometheus endpoint, by its labels.
func scrapeSeries(port int, name string) (map[string]float64, error) {
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		series, val := line[:i], line[i+1:]
		metric, labels, _ := strings.Cut(series, "{")
		if metric != name && metric != name+"_total" {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return out, fmt.Errorf("metric %s: parse %q: %w", name, line, err)
		}
		out[soakLabels(labels)] += v
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

// soakLabels keeps the labels of a series that tell series apart in a
// summary (not the collector's own resource labels).
func soakLabels(labels string) string {
	var keep []string
	for _, kv := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
		k, _, _ := strings.Cut(kv, "=")
		if k == "" || strings.HasPrefix(k, "otel_") || strings.HasPrefix(k, "service_") || k == "job" || k == "instance" {
			continue
		}
		keep = append(keep, kv)
	}
	return strings.Join(keep, ",")
}

// seriesString formats series for a summary.
func seriesString(series map[string]float64) string {
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", strings.ReplaceAll(k, `"`, ""), series[k]))
	}
	return strings.Join(parts, "; ")
}

// startIdle starts n idle processes (sleep) without a context; they are
// killed when the test ends.
func startIdle(t *testing.T, n int) []int {
	t.Helper()
	cmds := make([]*exec.Cmd, 0, n)
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
	})
	pids := make([]int, 0, n)
	for range n {
		c := exec.Command("sleep", "86400")
		if err := c.Start(); err != nil {
			t.Fatalf("start idle process %d of %d: %v", len(cmds)+1, n, err)
		}
		cmds = append(cmds, c)
		pids = append(pids, c.Process.Pid)
	}
	return pids
}

// hostProcesses counts the processes on the host (pid directories of /proc).
func hostProcesses() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// readRSS returns VmRSS of pid in bytes.
func readRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of %d: %w", pid, err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in status of %d", pid)
}

type rssSample struct {
	at  time.Duration // since the sampler started
	rss int64
}

// rssSampler samples a process's RSS periodically.
type rssSampler struct {
	start   time.Time
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []rssSample
	errs    int
}

func sampleRSS(t *testing.T, pid int, every time.Duration) *rssSampler {
	s := &rssSampler{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	sample := func() {
		rss, err := readRSS(pid)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.errs++
			return
		}
		s.samples = append(s.samples, rssSample{time.Since(s.start), rss})
	}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		sample()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	t.Cleanup(s.halt)
	return s
}

func (s *rssSampler) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// at returns the first sample taken at or after d (the last one when
// there is none yet).
func (s *rssSampler) at(d time.Duration) rssSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.samples {
		if x.at >= d {
			return x
		}
	}
	if len(s.samples) == 0 {
		return rssSample{}
	}
	return s.samples[len(s.samples)-1]
}

func (s *rssSampler) last() rssSample { return s.at(1<<63 - 1) }

func (s *rssSampler) max() rssSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m rssSample
	for _, x := range s.samples {
		if x.rss > m.rss {
			m = x
		}
	}
	return m
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// soakPub is a C publisher in soak mode (publish, live, exit).
type soakPub struct {
	pid     int
	created string // process.creation.time, from /proc/<pid>/stat
	service string
	life    time.Duration // 0: until killed
	header  uint64
	started time.Time // when its context was published
	cmd     *exec.Cmd
	done    chan struct{}
	exited  time.Time
	err     error // Wait's
}

func (p *soakPub) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal signals the process unless it was reaped (os.Process knows).
func (p *soakPub) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to publisher %d: %w", sig, p.pid, err)
	}
	return nil
}

// timestamp reads the published_at_ns of the publisher's header through
// /proc/<pid>/mem: 0 while an update is being written.
func (p *soakPub) timestamp() (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", p.pid))
	if err != nil {
		return 0, fmt.Errorf("open memory of %d: %w", p.pid, err)
	}
	defer func() { _ = f.Close() }()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(p.header+16)); err != nil {
		return 0, fmt.Errorf("read header of %d: %w", p.pid, err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// soakPubs starts soak-mode publishers and keeps every one it started; all
// are continued and killed when the test ends.
type soakPubs struct {
	bin string
	ids *procfs.IdentityReader
	mu  sync.Mutex
	all []*soakPub
}

func newSoakPubs(t *testing.T) *soakPubs {
	t.Helper()
	fs, err := procfs.NewFS("/")
	if err != nil {
		t.Fatal(err)
	}
	s := &soakPubs{bin: pubtest.Binary(t, pubtest.C), ids: procfs.NewIdentityReader(fs)}
	t.Cleanup(func() {
		for _, p := range s.list() {
			if p.alive() {
				_ = p.signal(syscall.SIGCONT)
				_ = p.signal(syscall.SIGKILL)
			}
		}
		for _, p := range s.list() {
			<-p.done
		}
	})
	return s
}

func (s *soakPubs) list() []*soakPub {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*soakPub(nil), s.all...)
}

// start starts a publisher of service living life (0: until killed) and
// returns once its context is published; extra are more arguments
// (-update-every, -update-hold).
func (s *soakPubs) start(service string, life time.Duration, extra ...string) (*soakPub, error) {
	args := append([]string{"-life", strconv.FormatInt(life.Milliseconds(), 10), "-service", service}, extra...)
	cmd := exec.Command(s.bin, args...)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	defer func() { _ = r.Close() }()
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		return nil, fmt.Errorf("start publisher %s: %w", service, err)
	}
	p := &soakPub{pid: cmd.Process.Pid, service: service, life: life, cmd: cmd, done: make(chan struct{})}
	// The identity first: the child cannot be gone (it is not reaped
	// before Wait), nor have exited (it is at most exec'ing; the start
	// time is the fork's, which exec keeps).
	id, idErr := s.ids.Identity(p.pid)
	p.created = id.CreationTimeString()
	go func() { p.err = cmd.Wait(); p.exited = time.Now(); close(p.done) }()
	s.mu.Lock()
	s.all = append(s.all, p)
	s.mu.Unlock()
	if idErr != nil {
		return p, fmt.Errorf("identity of publisher %d: %w", p.pid, idErr)
	}

	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		return p, fmt.Errorf("publisher %s (pid %d) did not say ready: %w", service, p.pid, err)
	}
	p.started = time.Now()
	var pid int
	if _, err := fmt.Sscanf(line, "ready %d 0x%x", &pid, &p.header); err != nil || pid != p.pid {
		return p, fmt.Errorf("publisher %s said %q, want ready %d 0x<address>", service, line, p.pid)
	}
	return p, nil
}

// entityKey is an entity's id: process.pid and process.creation.time.
type entityKey struct {
	pid     int64
	created string
}

type entityCounts struct {
	state, delete int
	service       string // of the last state event
	reasons       []string
	first, last   time.Time // receipt
}

// entityLedger counts the entity events (legacy format) it observes, by
// entity id.
type entityLedger struct {
	mu    sync.Mutex
	byKey map[entityKey]*entityCounts
	total int
}

func newEntityLedger() *entityLedger {
	return &entityLedger{byKey: map[entityKey]*entityCounts{}}
}

func (l *entityLedger) observe(ld plog.Logs) {
	now := time.Now()
	events := entityEvents([]plog.Logs{ld})
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events {
		k := entityKey{e.pid, e.created}
		c := l.byKey[k]
		if c == nil {
			c = &entityCounts{first: now}
			l.byKey[k] = c
		}
		c.last = now
		l.total++
		switch e.kind {
		case "entity_state":
			if svc, ok := e.attrs["service.name"].(string); ok {
				c.service = svc
			}
			c.state++
		case "entity_delete":
			c.delete++
			if e.reason != "" {
				c.reasons = append(c.reasons, e.reason)
			}
		}
	}
}

// counts returns a copy of the counts of key (zero when none).
func (l *entityLedger) counts(k entityKey) entityCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.byKey[k]; c != nil {
		cp := *c
		cp.reasons = append([]string(nil), c.reasons...)
		return cp
	}
	return entityCounts{}
}

// snapshot returns a copy of every entity's counts.
func (l *entityLedger) snapshot() map[entityKey]entityCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[entityKey]entityCounts, len(l.byKey))
	for k, c := range l.byKey {
		out[k] = *c
	}
	return out
}

// stopCollectorCleanly stops the collector with SIGTERM and checks that it
// had not exited before, exited 0, and logged no panic.
func stopCollectorCleanly(t testing.TB, col *collector, what string) time.Duration {
	t.Helper()
	select {
	case <-col.Done:
		t.Errorf("%s: the collector exited before SIGTERM: %v", what, col.Err)
		return 0
	default:
	}
	took := col.Stop(t)
	out := col.Output.String()
	for _, bad := range []string{"panic", "fatal error", "SIGSEGV", "data race"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: collector output contains %q:\n%s", what, bad, tail(out, 4000))
		}
	}
	if !strings.Contains(out, "Shutdown complete") {
		t.Errorf("%s: no \"Shutdown complete\" in the collector's output:\n%s", what, tail(out, 4000))
	}
	return took
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// errorsSeen keeps the first error of each kind and counts all.
type errorsSeen struct {
	mu    sync.Mutex
	n     int
	first map[string]int
}

func (e *errorsSeen) add(err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first == nil {
		e.first = map[string]int{}
	}
	e.n++
	msg := err.Error()
	if len(msg) > 160 {
		msg = msg[:160]
	}
	e.first[msg]++
}

func (e *errorsSeen) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		return "0"
	}
	kinds := make([]string, 0, len(e.first))
	for m, n := range e.first {
		kinds = append(kinds, fmt.Sprintf("%d× %s", n, m))
	}
	sort.Strings(kinds)
	if len(kinds) > 5 {
		kinds = append(kinds[:5], fmt.Sprintf("(%d more kinds)", len(kinds)-5))
	}
	return fmt.Sprintf("%d (%s)", e.n, strings.Join(kinds, "; "))
}

// waitFor polls cond every interval until it holds or d passes; it returns
// whether it held.
func waitFor(ctx context.Context, d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(interval)
	}
}
