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
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

func controllerConfig(interval, delay, timeout time.Duration) scraperhelper.ControllerConfig {
	cc := scraperhelper.NewDefaultControllerConfig()
	cc.CollectionInterval, cc.InitialDelay, cc.Timeout = interval, delay, timeout
	return cc
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		name    string
		want    *Config
		wantErr []string
	}{
		{name: "", want: createDefaultConfig()},
		{name: "full", want: &Config{
			ScanSettings: tracker.ScanSettings{
				ControllerConfig:  controllerConfig(5*time.Second, 0, 0),
				RescanInterval:    time.Minute,
				RescanMaxInterval: 30 * time.Minute,
				RescanBudget:      64,
				ReadTimeout:       500 * time.Millisecond,
				Discovery:         tracker.DiscoveryPoll,
				ReconcileInterval: 30 * time.Minute,
			},
			RootPath:        "/hostfs",
			MaxPayloadSize:  32768,
			GracePeriod:     5 * time.Minute,
			RecheckInterval: 10 * time.Second,
			ReportInterval:  10 * time.Minute,
		}},
		{name: "invalid", wantErr: []string{
			`root_path must be an absolute path, got "hostfs"`,
			`discovery must be "auto", "events" or "poll", got "ebpf"`,
			`"collection_interval": requires positive value`,
			"grace_period must not be negative, got -1s",
			"recheck_interval must be positive, got 0s",
		}},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
			if tt.wantErr != nil {
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

func TestTrackerConfig(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.GracePeriod = time.Minute
	cfg.CollectionInterval = 3 * time.Second
	tc := cfg.trackerConfig()
	assert.Equal(t, time.Minute, tc.Retention)
	assert.Equal(t, 3*time.Second, tc.ScanInterval)
	require.NoError(t, tc.Validate())
}
