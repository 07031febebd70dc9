// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// Every collector configuration this repository ships must be accepted by
// the built collector. validate checks root_path on the machine it runs
// on: a container's configuration (root_path: /hostfs) is validated with
// the root where this host has its /proc, "/".
func TestShippedConfigsValidate(t *testing.T) {
	root := pubtest.RepoRoot()
	for name, c := range map[string]struct {
		path  string
		gates bool // run with the profiles gate, as its deployment does
	}{
		"default":    {filepath.Join(root, "config.yaml"), false}, // bin/otelcol-processctx --config config.yaml
		"systemd":    {filepath.Join(root, "deploy", "systemd", "config.yaml"), true},
		"container":  {filepath.Join(root, "deploy", "container", "config.yaml"), true},
		"kubernetes": {"", true},
	} {
		t.Run(name, func(t *testing.T) {
			var config string
			if c.path == "" {
				config = configMapConfig(t, filepath.Join(root, "deploy", "kubernetes", "daemonset.yaml"))
			} else {
				b, err := os.ReadFile(c.path)
				require.NoError(t, err)
				config = string(b)
			}
			config = strings.Replace(config, "root_path: /hostfs\n", "root_path: /\n", 1)
			path := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(path, []byte(config), 0o644))
			args := []string{"validate", "--config", path}
			if c.gates {
				args = append(args, "--feature-gates=service.profilesSupport")
			}
			cmd := exec.Command(collectorBinary(t), args...)
			cmd.Env = append(os.Environ(), "OTLP_ENDPOINT=127.0.0.1:4317", "NODE_IP=127.0.0.1", "POD_IP=127.0.0.1")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
		})
	}
}

// validate refuses what start would refuse, with the same message: a
// pipeline with the process_context processor (or receiver) and no
// process_context extension, a root_path without a procfs, an unknown
// event source, a misspelt key (named by its key path, not a Go type).
func TestValidateRefusesWhatStartRefuses(t *testing.T) {
	pubtest.RequireRoot(t)
	const pipeline = `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  process_context:
exporters:
  debug:
service:
  telemetry:
    metrics:
      level: none
  extensions: %s
  pipelines:
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [debug]
`
	for _, tc := range []struct {
		name, extension, serviceExtensions, want string
	}{
		{"no extension", "", "[]", "process_context processor: no process_context extension; " +
			"the process_context extension runs the collector's process tracker: add it to the configuration"},
		{"extension not in service", "extensions:\n  process_context:\n", "[]", "process_context processor: no process_context extension"},
		{"root_path not a procfs", "extensions:\n  process_context:\n    root_path: /tmp\n", "[process_context]",
			`extensions::process_context: root_path "/tmp": procfs at /tmp/proc: `},
		{"unknown event source", "extensions:\n  process_context:\n    publication_events: sys_exit\n", "[process_context]",
			`extensions::process_context: publication_events must be "auto", "fexit", "kprobe", "syscall_tracepoints", "raw_sys_exit" or "none", got "sys_exit"`},
		{"misspelt key", "extensions:\n  process_context:\n    colection_interval: 5s\n", "[process_context]",
			`extensions::process_context: unknown key "colection_interval" (did you mean "collection_interval"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			config := tc.extension + fmt.Sprintf(pipeline, pubtest.FreePort(t), tc.serviceExtensions)
			require.NoError(t, os.WriteFile(path, []byte(config), 0o644))

			validate, err := exec.Command(collectorBinary(t), "validate", "--config", path).CombinedOutput()
			require.Error(t, err, "validate accepts it:\n%s", validate)
			assert.Contains(t, string(validate), tc.want)
			assert.NotContains(t, string(validate), "tracker.Config")

			start := exec.Command(collectorBinary(t), "--config", path)
			start.WaitDelay = 5 * time.Second
			done := make(chan struct{})
			var out []byte
			go func() { out, err = start.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = start.Process.Kill()
				<-done
				t.Fatalf("the collector started:\n%s", out)
			}
			require.Error(t, err, "the collector started:\n%s", out)
			assert.Contains(t, string(out), tc.want, "start fails with validate's message")
		})
	}
}

// Two collectors from the shipped configurations run side by side on one
// host, the second moved with the documented variables (as the README
// says): each serves its own health status and metrics where they say,
// and config.yaml its pprof and zpages pages.
func TestShippedConfigsSideBySide(t *testing.T) {
	pubtest.RequireRoot(t)
	root := pubtest.RepoRoot()
	read := func(path ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{root}, path...)...))
		require.NoError(t, err)
		return string(b)
	}
	t.Setenv("OTLP_ENDPOINT", fmt.Sprintf("127.0.0.1:%d", pubtest.FreePort(t))) // the systemd config's backend
	first := moveShippedPorts(t)
	startCollector(t, read("config.yaml"))
	second := moveShippedPorts(t)
	startCollector(t, read("deploy", "systemd", "config.yaml"))
	for _, ports := range []map[string]string{first, second} {
		for _, url := range []string{
			"http://" + ports["PROCESSCTX_HEALTH_ENDPOINT"] + "/status",
			"http://localhost:" + ports[metricsPortVar] + "/metrics",
		} {
			resp, err := http.Get(url)
			require.NoError(t, err, url)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, url)
		}
		if ports["PROCESSCTX_PPROF_ENDPOINT"] == first["PROCESSCTX_PPROF_ENDPOINT"] {
			for _, url := range []string{
				"http://" + ports["PROCESSCTX_PPROF_ENDPOINT"] + "/debug/pprof/",
				"http://" + ports["PROCESSCTX_ZPAGES_ENDPOINT"] + "/debug/servicez",
			} {
				resp, err := http.Get(url)
				require.NoError(t, err, url)
				_ = resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode, url)
			}
		}
		for _, v := range []string{"PROCESSCTX_OTLP_GRPC_ENDPOINT", "PROCESSCTX_OTLP_HTTP_ENDPOINT"} {
			conn, err := net.DialTimeout("tcp", ports[v], 10*time.Second)
			require.NoError(t, err, "%s=%s", v, ports[v])
			_ = conn.Close()
		}
	}
}

// configMapConfig extracts config.yaml from the ConfigMap in a manifest.
func configMapConfig(t *testing.T, manifest string) string {
	t.Helper()
	f, err := os.Open(manifest)
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		require.NoError(t, dec.Decode(&doc), "no ConfigMap with config.yaml in %s", manifest)
		if doc.Kind == "ConfigMap" && doc.Data["config.yaml"] != "" {
			return doc.Data["config.yaml"]
		}
	}
}
