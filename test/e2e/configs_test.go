package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// Every collector configuration this repository ships must be accepted by
// the built collector.
func TestShippedConfigsValidate(t *testing.T) {
	root := pubtest.RepoRoot()
	daemonset := filepath.Join(t.TempDir(), "daemonset-config.yaml")
	require.NoError(t, os.WriteFile(daemonset, []byte(configMapConfig(t, filepath.Join(root, "deploy", "kubernetes", "daemonset.yaml"))), 0o644))

	for name, c := range map[string]struct {
		path  string
		gates bool // run with the profiles gate, as its deployment does
	}{
		"default":    {filepath.Join(root, "config.yaml"), false}, // bin/otelcol-processctx --config config.yaml
		"systemd":    {filepath.Join(root, "deploy", "systemd", "config.yaml"), true},
		"kubernetes": {daemonset, true},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"validate", "--config", c.path}
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
