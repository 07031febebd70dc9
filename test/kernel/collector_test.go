// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // the collector's exporters compress

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// The guest's init (init.sh) sets these; without them the test skips.
const (
	collectorEnv = "KERNEL_MATRIX_COLLECTOR" // path of the built collector
	// Bounds of the latencies where fexit runs, in the guest's clock. The
	// product's bound is 1 s; TCG runs the guest some 10-50 times slower
	// than the host, hence 2 s by default.
	publishBoundEnv = "KERNEL_MATRIX_PUBLISH_BOUND"
	exitBoundEnv    = "KERNEL_MATRIX_EXIT_BOUND"
)

// What the test prints for run.sh to collect, one line each, prefixed.
const resultPrefix = "KMATRIX "

func report(format string, args ...any) {
	fmt.Printf(resultPrefix+format+"\n", args...)
}

// The built collector at its default settings (the process_context
// extension, receiver and processor with no keys) with a C and a Go
// publisher, each started after the collector:
//   - the start-up discovery line says which event sources loaded;
//   - a publication made 11 s after its process started is reported (an
//     entity state) within the bound where fexit runs, then an update, then
//     the exit (an entity delete) within its bound;
//   - a process that publishes at once and sends its first logs 0.3 s later
//     gets that first batch enriched.
func TestCollectorAtDefaults(t *testing.T) {
	bin := os.Getenv(collectorEnv)
	if bin == "" {
		t.Skip("runs inside a kernel matrix guest (make kernel-test)")
	}
	publishBound := boundFromEnv(t, publishBoundEnv, 2*time.Second)
	exitBound := boundFromEnv(t, exitBoundEnv, 2*time.Second)

	rec := newRecorder()
	g := grpc.NewServer()
	plogotlp.RegisterGRPCServer(g, rec)
	server := pubtest.ServeGRPC(t, g)
	otlpPort := pubtest.FreePort(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(defaultConfig(otlpPort, server)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := pubtest.StartCollector(t, []string{bin, "--config", cfgPath})
	proc, pub := discovery(t, c.Output.String())
	report("sources process=%q publication=%q", proc, pub)
	fexit := strings.HasPrefix(pub, "eBPF fexit")

	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", otlpPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			late := pubtest.Start(t, kind, pubtest.Options{})
			started := time.Now()

			// Meanwhile, a young process's first batch.
			first := pubtest.Start(t, kind, pubtest.Options{})
			svc := "kmatrix-first-" + string(kind)
			published := time.Now()
			first.Publish(otep.EncodeStrings(map[string]string{"service.name": svc}))
			time.Sleep(300 * time.Millisecond)
			// Under TCG a publication event reaches the collector up to
			// some 0.4 s after the publish (the latencies printed), and a
			// batch that beats the event to the tracker passes through
			// (docs/discovery.md): the batch goes once the collector has
			// the publication too, so that what this asserts does not
			// hang on the emulator's speed.
			if _, ok := rec.waitEvent(first.Pid, "state", "", published, 30*time.Second); !ok {
				t.Fatalf("pid %d: no entity state within 30s of its publication", first.Pid)
			}
			body := "first-batch/" + string(kind)
			if err := sendLog(conn, first.Pid, body); err != nil {
				t.Fatalf("send first batch: %v", err)
			}
			res, ok := rec.waitBatch(body, 10*time.Second)
			switch {
			case !ok:
				t.Errorf("first batch of pid %d not exported within 10s", first.Pid)
			case res["service.name"] != svc:
				t.Errorf("first batch of pid %d not enriched: resource %v", first.Pid, res)
			}
			first.Kill()

			// The late publication, 11 s after its process started.
			time.Sleep(time.Until(started.Add(11 * time.Second)))
			lateSvc := "kmatrix-late-" + string(kind)
			at := time.Now()
			late.Publish(otep.EncodeStrings(map[string]string{"service.name": lateSvc, "service.version": "1"}))
			publish, ok := rec.waitEvent(late.Pid, "state", "1", at, 30*time.Second)
			if !ok {
				t.Fatalf("pid %d: no entity state within 30s of its publication", late.Pid)
			}
			at = time.Now()
			late.Update(otep.EncodeStrings(map[string]string{"service.name": lateSvc, "service.version": "2"}))
			update, ok := rec.waitEvent(late.Pid, "state", "2", at, 30*time.Second)
			if !ok {
				t.Errorf("pid %d: no entity state within 30s of its update", late.Pid)
			}
			at = time.Now()
			late.Exit()
			exit, ok := rec.waitEvent(late.Pid, "delete", "", at, 30*time.Second)
			if !ok {
				t.Errorf("pid %d: no entity delete within 30s of its exit", late.Pid)
			}
			report("latency %s publish=%s update=%s exit=%s", kind, ms(publish), ms(update), ms(exit))
			if fexit {
				if publish > publishBound {
					t.Errorf("publication reported after %s, bound %s", publish, publishBound)
				}
				if exit > exitBound {
					t.Errorf("exit reported after %s, bound %s", exit, exitBound)
				}
			}
		})
	}
}

func ms(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

func boundFromEnv(t *testing.T, env string, def time.Duration) time.Duration {
	if v := os.Getenv(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", env, err)
		}
		return d
	}
	return def
}

// defaultConfig is config.yaml's components at their defaults, exporting
// to the test's server instead of the debug exporter (pubtest.ExportingTo:
// a short batch flush, the latencies measured are the tracker's, not the
// exporter's).
func defaultConfig(otlpPort int, server string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
receivers:
  process_context:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  process_context:`, otlpPort) + pubtest.ExportingTo(server) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
`
}

// discovery returns the process and publication event sources of the
// collector's start-up line ("Process discovery: ..., N processes
// visible", fields as JSON: "eBPF fexit", "proc connector" or "none"), and
// reports the line that follows it when a source is missing ("Process
// discovery: publications are polled ...: <why>; see <docs>").
func discovery(t *testing.T, output string) (process, publication string) {
	found := false
	for _, line := range strings.Split(output, "\n") {
		_, rest, ok := strings.Cut(line, "Process discovery: ")
		if !ok {
			continue
		}
		i := strings.Index(rest, "{")
		if found {
			// The second line: what is missing (its only fields are the
			// logger's own: the component's id and kind).
			if i >= 0 {
				rest = rest[:i]
			}
			report("missing %s", strings.TrimSpace(rest))
			break
		}
		found = true
		report("discovery %s", strings.TrimSpace(rest))
		var fields map[string]any
		if i >= 0 {
			_ = json.Unmarshal([]byte(rest[i:]), &fields)
		}
		process, _ = fields["process_events"].(string)
		publication, _ = fields["publication_events"].(string)
	}
	if !found {
		t.Fatalf("no discovery line in the collector's output:\n%s", output)
	}
	return process, publication
}

func sendLog(conn *grpc.ClientConn, pid int, body string) error {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutInt("process.pid", int64(pid))
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}

// recorder keeps what the collector exports, with when it arrived: entity
// events, and the resource of every other log record by its body.
type recorder struct {
	plogotlp.UnimplementedGRPCServer
	mu      sync.Mutex
	events  []entityEvent
	batches map[string]map[string]any
	changed chan struct{} // closed and replaced on every export
}

// entityEvent is an entity event of either shape (legacy otel.entity.*
// attributes, or the specification's event names): its kind ("state",
// "delete"), the process's pid and the service.version it names.
type entityEvent struct {
	at      time.Time
	kind    string
	pid     int64
	version string
}

func newRecorder() *recorder {
	return &recorder{batches: map[string]map[string]any{}, changed: make(chan struct{})}
}

func (r *recorder) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range req.Logs().ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if e, ok := entityEventOf(lr); ok {
					e.at = now
					r.events = append(r.events, e)
				} else if body := lr.Body().Str(); body != "" {
					if _, dup := r.batches[body]; !dup {
						r.batches[body] = rl.Resource().Attributes().AsRaw()
					}
				}
			}
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return plogotlp.NewExportResponse(), nil
}

func entityEventOf(lr plog.LogRecord) (entityEvent, bool) {
	var e entityEvent
	attrs := lr.Attributes()
	switch lr.EventName() {
	case "entity.state":
		e.kind = "state"
	case "entity.delete":
		e.kind = "delete"
	default:
		v, ok := attrs.Get("otel.entity.event.type")
		if !ok {
			return e, false
		}
		e.kind = strings.TrimPrefix(v.Str(), "entity_")
	}
	raw := attrs.AsRaw()
	switch pid := find(raw, "process.pid").(type) {
	case int64:
		e.pid = pid
	case string:
		e.pid, _ = strconv.ParseInt(pid, 10, 64)
	}
	e.version, _ = find(raw, "service.version").(string)
	return e, true
}

// find returns the first value named key in m or the maps it nests.
func find(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	for _, v := range m {
		if sub, ok := v.(map[string]any); ok {
			if found := find(sub, key); found != nil {
				return found
			}
		}
	}
	return nil
}

// waitEvent returns how long after since an entity event of kind for pid
// (naming version, when set) arrived, or -1 once within has passed.
func (r *recorder) waitEvent(pid int, kind, version string, since time.Time, within time.Duration) (time.Duration, bool) {
	deadline := time.After(within)
	for {
		r.mu.Lock()
		changed := r.changed
		for _, e := range r.events {
			if e.pid == int64(pid) && e.kind == kind && (version == "" || e.version == version) && !e.at.Before(since) {
				r.mu.Unlock()
				return e.at.Sub(since), true
			}
		}
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			return -1, false
		}
	}
}

// waitBatch returns the exported resource of the record body.
func (r *recorder) waitBatch(body string, within time.Duration) (map[string]any, bool) {
	deadline := time.After(within)
	for {
		r.mu.Lock()
		changed := r.changed
		res, ok := r.batches[body]
		r.mu.Unlock()
		if ok {
			return res, true
		}
		select {
		case <-changed:
		case <-deadline:
			return nil, false
		}
	}
}
