package processctxextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	full := tracker.DefaultConfig()
	full.RootPath = "/hostfs"
	full.MaxPayloadSize = 32768
	full.Sources = []tracker.Source{tracker.SourceEnvironment}
	full.Discovery = tracker.DiscoveryPoll
	full.PublicationEvents = "syscall_tracepoints"
	full.CollectionInterval = 5 * time.Second
	full.InitialDelay = time.Second
	full.Timeout = 30 * time.Second
	full.RescanInterval = time.Minute
	full.RescanMaxInterval = 30 * time.Minute
	full.RescanBudget = 64
	full.ReadTimeout = 500 * time.Millisecond
	full.ReconcileInterval = 30 * time.Minute
	full.GracePeriod = 5 * time.Minute
	full.RecheckInterval = 10 * time.Second
	full.WarningInterval = 10 * time.Minute

	tests := []struct {
		name      string
		want      component.Config
		wantErr   []string
		unmarshal string // an error of unmarshaling
	}{
		{name: "", want: createDefaultConfig()},
		{name: "full", want: &full},
		{name: "invalid", wantErr: []string{
			// The keys as the user wrote them, not the struct's path.
			`root_path must be an absolute path, got "hostfs"`,
			`sources lists "context" twice`,
			`discovery must be "auto", "events" or "poll", got "ebpf"`,
			`publication_events must be "auto", "fexit", "syscall_tracepoints", "raw_sys_exit" or "none", got "sys_exit"`,
			"collection_interval must be positive, got 0s",
			"grace_period must not be negative, got -1s",
			"recheck_interval must be positive, got 0s",
		}},
		{name: "unknown_key", unmarshal: "has invalid keys: cache"},
		{name: "unknown_source", unmarshal: `unknown source "envvars": use "context" or "environment"`},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			if tt.unmarshal != "" {
				require.ErrorContains(t, sub.Unmarshal(cfg), tt.unmarshal)
				return
			}
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
			if tt.wantErr != nil {
				assert.NotContains(t, err.Error(), "::")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
