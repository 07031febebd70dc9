// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sharedtracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.yaml.in/yaml/v3"
)

func TestCheckConfig(t *testing.T) {
	addIt := "add it to the configuration\n  extensions:\n    process_context:\n  service:\n    extensions: [process_context]"
	for _, tt := range []struct {
		name, config, wantErr string
	}{
		{name: "with the extension", config: `
extensions: {process_context: {}}
receivers: {process_context: {}, otlp: {}}
processors: {process_context: {}}
service:
  extensions: [process_context]
  pipelines:
    logs: {receivers: [otlp, process_context], processors: [process_context], exporters: [debug]}
`},
		{name: "no extension in service", config: `
extensions: {process_context: {}}
receivers: {otlp: {}}
processors: {process_context: {}}
service:
  pipelines:
    logs: {receivers: [otlp], processors: [process_context], exporters: [debug]}
    traces: {receivers: [otlp], processors: [process_context], exporters: [debug]}
`, wantErr: "process_context processor: no process_context extension; the process_context extension runs the collector's process tracker: " + addIt},
		{name: "receiver and processor", config: `
receivers: {process_context: {}, otlp: {}}
processors: {process_context/a: {}}
service:
  extensions: [health_check]
  pipelines:
    logs: {receivers: [process_context, otlp], processors: [process_context/a], exporters: [debug]}
`, wantErr: "process_context processor process_context/a, process_context receiver: no process_context extension"},
		{name: "not in a pipeline", config: `
processors: {process_context: {}}
service:
  pipelines:
    logs: {receivers: [otlp], exporters: [debug]}
`},
		{name: "tracker names a missing one", config: `
processors: {process_context: {tracker: process_context/b}}
service:
  extensions: [process_context/a]
  pipelines:
    logs: {receivers: [otlp], processors: [process_context], exporters: [debug]}
`, wantErr: "process_context processor: tracker: extension process_context/b is not in service::extensions"},
		{name: "tracker names another kind", config: `
processors: {process_context: {tracker: file_storage}}
service:
  extensions: [file_storage, process_context]
  pipelines:
    logs: {receivers: [otlp], processors: [process_context], exporters: [debug]}
`, wantErr: "process_context processor: tracker: extension file_storage is not a process_context extension"},
		{name: "several without tracker", config: `
receivers: {process_context: {}}
service:
  extensions: [process_context/a, process_context/b]
  pipelines:
    logs: {receivers: [process_context], exporters: [debug]}
`, wantErr: "process_context receiver: the collector has several process_context extensions ([process_context/a process_context/b])"},
		{name: "several with tracker", config: `
receivers: {process_context: {tracker: process_context/b}}
service:
  extensions: [process_context/a, process_context/b]
  pipelines:
    logs: {receivers: [process_context], exporters: [debug]}
`},
		{name: "no service", config: "receivers: {process_context: {}}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cfg map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.config), &cfg))
			err := CheckConfig(confmap.NewFromStringMap(cfg).ToStringMap())
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
