package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// collectorBinary is the binary `make build` produces.
func collectorBinary(t testing.TB) string {
	t.Helper()
	path := filepath.Join(pubtest.RepoRoot(), "bin", "otelcol-processctx")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: run `make build` (make test does)", path)
	}
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects the collector's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type collector struct {
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan struct{}
	err    error
}

// profilesPipeline matches a profiles pipeline's key in a configuration.
var profilesPipeline = regexp.MustCompile(`(?m)^\s+profiles(/\S*)?:`)

// startCollector runs the collector with config (YAML) and waits until it
// is ready. wrap, when set, prefixes the command (e.g. setpriv).
func startCollector(t testing.TB, config string, wrap ...string) *collector {
	t.Helper()
	dir, err := os.MkdirTemp("", "e2e-collector-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := collectorBinary(t)
	if len(wrap) > 0 { // another uid must be able to run it
		bin = pubtest.ExecutableCopy(t, bin, "otelcol-processctx")
	}
	args := append(append([]string{}, wrap...), bin, "--config", cfgPath)
	if profilesPipeline.MatchString(config) {
		// Only a configuration with a profiles pipeline needs the gate.
		args = append(args, "--feature-gates=service.profilesSupport")
	}
	c := &collector{cmd: exec.Command(args[0], args[1:]...), output: &syncBuffer{}, done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.output, c.output
	// A wrapper (unshare) killed before its child would otherwise leave
	// Wait waiting for the child to close the output pipe.
	c.cmd.WaitDelay = 5 * time.Second
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("collector output:\n%s", c.output.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.output.String(), "Everything is ready") {
		select {
		case <-c.done:
			t.Fatalf("collector exited: %v\n%s", c.err, c.output.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector not ready after 30s:\n%s", c.output.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// stop sends SIGTERM and returns how long the collector took to exit.
func (c *collector) stop(t testing.TB) time.Duration {
	t.Helper()
	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("collector did not exit 30s after SIGTERM")
	}
	if c.err != nil {
		t.Errorf("collector exit: %v", c.err)
	}
	return time.Since(start)
}

// exportingTo is the configuration of an otlp_grpc exporter to the test
// server, flushing quickly, and of a service without internal metrics.
func exportingTo(server string) string {
	return fmt.Sprintf(`
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
    sending_queue:
      batch:
        flush_timeout: 50ms
service:
  telemetry:
    metrics:
      level: none
`, server)
}

// entitiesConfig sends the receiver's entity events to the test server.
func entitiesConfig(server string) string {
	return `
extensions:
  process_context:
    collection_interval: 200ms
    rescan_interval: 1s
receivers:
  process_context:
` + exportingTo(server) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`
}
