// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The built collector accepts the Helm snippet's config, with each
// variable it names set as the pod sets it (addresses from the downward
// API as 127.0.0.1), and root_path where the pod has the node's /proc
// (/hostfs; here "/": validate checks that root_path holds the host's
// procfs on the machine it runs on). test/e2e's TestShippedConfigsValidate
// does the same for the DaemonSet ConfigMap's, which
// TestHelmValuesMatchDaemonSet requires to be the same config.
func TestHelmConfigValidates(t *testing.T) {
	collector, err := filepath.Abs(collectorPath)
	require.NoError(t, err)
	if _, err := os.Stat(collector); errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s is missing: run `make build` (make test does)", collector)
	}
	values := loadHelmValues(t)
	config := values.alternateConfigText(t)
	require.Contains(t, config, "root_path: /hostfs\n")
	config = strings.Replace(config, "root_path: /hostfs\n", "root_path: /\n", 1)
	file := filepath.Join(t.TempDir(), "relay.yaml")
	require.NoError(t, os.WriteFile(file, []byte(config), 0o600))

	cmd := exec.Command(collector, "validate", "--config", file, "--feature-gates=service.profilesSupport")
	cmd.Env = os.Environ()
	for _, name := range referencedEnv(config) {
		cmd.Env = append(cmd.Env, name+"="+podEnvValue(values.ExtraEnvs, name))
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "otelcol-processctx validate rejects alternateConfig of %s:\n%s", helmValuesPath, out)
}

// podEnvValue is what the variable name holds in the pod: the literal
// value of env, or a stand-in address for one from the downward API (and
// the chart's MY_POD_IP).
func podEnvValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value
		}
	}
	return "127.0.0.1"
}
