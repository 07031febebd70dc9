// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

// ddtracer.go builds and starts testdata/ddtracer: dd-trace-go's tracer,
// a real publisher of the field (a module of its own, downloaded through
// the module proxy on first use). Callers: the tests that check the
// collector against what real publishers publish.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// DDTrace names the dd-trace-go publisher in a Proc.
const DDTrace Kind = "dd-trace-go"

// ddtracerSources are what testdata/ddtracer is built from, relative to
// the repository's root.
var ddtracerSources = []string{"testdata/ddtracer/main.go", "testdata/ddtracer/go.mod", "testdata/ddtracer/go.sum"}

var ddtracerBuild struct {
	once sync.Once
	path string
	err  error
}

// DDTracerBinary returns the path of testdata/ddtracer's executable,
// building it on first use in a test binary into a cache directory named
// by its sources' hash (reused while they do not change). A cold build
// downloads dd-trace-go and its dependencies through the module proxy
// (minutes; CI does it once per machine); a warm one links in seconds.
func DDTracerBinary(t testing.TB) string {
	t.Helper()
	ddtracerBuild.once.Do(func() { ddtracerBuild.path, ddtracerBuild.err = buildDDTracer() })
	if ddtracerBuild.err != nil {
		t.Fatal(ddtracerBuild.err)
	}
	return ddtracerBuild.path
}

func buildDDTracer() (string, error) {
	root := RepoRoot()
	h := sha256.New()
	for _, src := range ddtracerSources {
		data, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", src, err)
		}
		fmt.Fprintf(h, "%s %d\n", src, len(data))
		h.Write(data)
	}
	dir, err := cachedBuild("ddtracer-"+hex.EncodeToString(h.Sum(nil))[:16], []string{"ddtracer"}, func(tmp string) error {
		cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "ddtracer"), ".")
		cmd.Dir = filepath.Join(root, "testdata", "ddtracer")
		// Its own module, as its go.mod and go.sum say: no workspace, no
		// vendoring or flags of the caller's.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build testdata/ddtracer (dd-trace-go, through the module proxy): %w\n%s", err, out)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ddtracer"), nil
}

// StartDDTracer starts testdata/ddtracer with env added to a quiet
// environment of its own (no agent at 127.0.0.1:8126 answers; its startup
// log, instrumentation telemetry and remote configuration are off) and
// returns it once it has published; it is killed when the test ends. Its
// Proc answers no commands: it publishes what dd-trace-go publishes.
func StartDDTracer(t testing.TB, env ...string) *Proc {
	t.Helper()
	cmd := exec.Command(DDTracerBinary(t))
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"DD_TRACE_STARTUP_LOGS=false",
		"DD_INSTRUMENTATION_TELEMETRY_ENABLED=false",
		"DD_REMOTE_CONFIGURATION_ENABLED=false",
		"DD_TRACE_DEBUG=false",
	}, env...)
	return StartCommand(t, DDTrace, cmd)
}
