// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// withPprof adds the pprof extension, listening on addr, to a
// configuration of minimalConfig's shape.
func withPprof(config, addr string) string {
	config = strings.Replace(config, "\nextensions:\n", "\nextensions:\n  pprof:\n    endpoint: "+addr+"\n", 1)
	return strings.Replace(config, "  extensions: [process_context]", "  extensions: [process_context, pprof]", 1)
}

// profileChunk is how long each CPU profile the profiler takes lasts: a
// tenth of the shortest window, between 1 and 10 s, so that each window
// holds some of them whole.
func (p collectorBenchParams) profileChunk() time.Duration {
	return min(max(min(p.young, p.steady, p.churn, p.brief)/10, time.Second), 10*time.Second)
}

// profiler keeps the CPU profile of a collector, from its pprof extension,
// in chunks taken back to back: the benchmark's windows are not known in
// advance (the young window lasts as long as the fleet takes to start), a
// window's profile is the chunks it holds, merged (keep).
type profiler struct {
	url, dir string
	stop     context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	chunks  []profileChunk
	windows []markedWindow
	err     error // why the chunks stopped
}

type profileChunk struct {
	from, to time.Time
	path     string
}

type markedWindow struct {
	name     string
	from, to time.Time
}

// startProfiler starts taking chunk-long CPU profiles of the collector
// whose pprof extension listens on addr, into dir, until b ends.
func startProfiler(b *testing.B, addr string, chunk time.Duration, dir string) *profiler {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &profiler{url: fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(chunk.Seconds())),
		dir: dir, stop: cancel, done: make(chan struct{})}
	b.Cleanup(p.halt)
	go func() {
		defer close(p.done)
		for i := 0; ctx.Err() == nil; i++ {
			path := filepath.Join(dir, fmt.Sprintf("chunk-%04d.pb.gz", i))
			from := time.Now()
			err := fetch(ctx, p.url, path)
			p.mu.Lock()
			if err != nil {
				p.err = err
				p.mu.Unlock()
				return
			}
			p.chunks = append(p.chunks, profileChunk{from: from, to: time.Now(), path: path})
			p.mu.Unlock()
		}
	}()
	return p
}

// fetch writes what url serves to path.
func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, msg)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// halt stops taking profiles; the chunk in progress is dropped.
func (p *profiler) halt() {
	p.stop()
	<-p.done
}

// mark names a window whose profile keep writes; nothing on a nil
// profiler (the benchmark profiles nothing).
func (p *profiler) mark(name string, w window) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.windows = append(p.windows, markedWindow{name: name, from: w.from, to: w.to})
}

// keep waits for the chunk that ends after the last window, stops, and
// writes each window's profile, the chunks whose middle falls in it
// merged, to dir/prefix-WINDOW.pb.gz, and its picture beside it (.svg).
func (p *profiler) keep(b *testing.B, dir, prefix string) {
	b.Helper()
	var last time.Time
	for _, w := range p.windows {
		last = w.to
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		p.mu.Lock()
		n, err := len(p.chunks), p.err
		covered := n > 0 && !p.chunks[n-1].to.Before(last)
		p.mu.Unlock()
		if covered || err != nil || time.Now().After(deadline) {
			break
		}
	}
	p.halt()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, w := range p.windows {
		var paths []string
		for _, c := range p.chunks {
			if mid := c.from.Add(c.to.Sub(c.from) / 2); !mid.Before(w.from) && !mid.After(w.to) {
				paths = append(paths, c.path)
			}
		}
		if len(paths) == 0 {
			b.Errorf("no CPU profile of the %s window (%s from %s; chunks stopped: %v)", w.name, w.to.Sub(w.from).Round(time.Millisecond), w.from.Format(time.TimeOnly), p.err)
			continue
		}
		base := filepath.Join(dir, prefix+"-"+w.name)
		if err := pprofTool(b, append([]string{"-proto", "-output", base + ".pb.gz"}, paths...)...); err != nil {
			b.Errorf("merge the CPU profiles of the %s window: %v", w.name, err)
			continue
		}
		if err := pprofTool(b, "-svg", "-output", base+".svg", base+".pb.gz"); err != nil {
			b.Errorf("picture of the %s window's CPU profile (graphviz's dot is required): %v", w.name, err)
			continue
		}
		b.Logf("CPU profile of the %s window (%d chunks of %s): %s.pb.gz, %s.svg", w.name, len(paths), p.url[strings.LastIndex(p.url, "=")+1:]+"s", base, base)
	}
}

// pprofTool runs go tool pprof with args.
func pprofTool(b *testing.B, args ...string) error {
	b.Helper()
	cmd := exec.Command("go", append([]string{"tool", "pprof"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go tool pprof %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
