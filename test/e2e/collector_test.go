// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

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

// collector is a running collector; its Output, Stop and the rest are
// pubtest's.
type collector = pubtest.Collector

// profilesPipeline matches a profiles pipeline's key in a configuration.
var profilesPipeline = regexp.MustCompile(`(?m)^\s+profiles(/\S*)?:`)

// startCollector runs the collector with config (YAML) and waits until it
// is ready. wrap, when set, prefixes the command (e.g. setpriv).
func startCollector(t testing.TB, config string, wrap ...string) *collector {
	t.Helper()
	return startCollectorWith(t, config, nil, wrap...)
}

// patientLookups is the flag that lets the processor's batches wait for
// the reads they need as long as the processor allows (lookup_timeout
// 5s), for a test of a recipe as written whose subject is what is added,
// not how fast a loaded machine reads a process (firstbatch_test.go tests
// the default, 50ms).
var patientLookups = []string{"--set=processors::process_context::lookup_timeout=5s"}

// startCollectorWith is startCollector with flags added to the collector's
// command line.
func startCollectorWith(t testing.TB, config string, flags []string, wrap ...string) *collector {
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
	args := append(append(append([]string{}, wrap...), bin, "--config", cfgPath), flags...)
	if profilesPipeline.MatchString(config) {
		// Only a configuration with a profiles pipeline needs the gate.
		args = append(args, "--feature-gates=service.profilesSupport")
	}
	return pubtest.StartCollector(t, args)
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
` + pubtest.ExportingTo(server) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`
}
