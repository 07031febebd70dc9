package processctxreceiver

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

	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

var trackerID = component.MustNewID("process_context")

func controllerConfig(interval, delay, timeout time.Duration) scraperhelper.ControllerConfig {
	cc := scraperhelper.NewDefaultControllerConfig()
	cc.CollectionInterval, cc.InitialDelay, cc.Timeout = interval, delay, timeout
	return cc
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: createDefaultConfig()},
		{
			id: component.NewIDWithName(metadata.Type, "full"),
			want: &Config{
				ScanSettings: tracker.ScanSettings{
					ControllerConfig:  controllerConfig(5*time.Second, 2*time.Second, 30*time.Second),
					RescanInterval:    time.Minute,
					RescanMaxInterval: 30 * time.Minute,
					RescanBudget:      64,
					ReadTimeout:       500 * time.Millisecond,
				},
				ReportInterval:    10 * time.Minute,
				EntityEventFormat: FormatSpec,
				RootPath:          "/hostfs",
				MaxPayloadSize:    32768,
				Tracker:           &trackerID,
				Include:           MatchConfig{Executables: []string{"java", "python3*"}},
				Exclude:           MatchConfig{Executables: []string{"python3-debug"}},
			},
		},
		{id: component.NewIDWithName(metadata.Type, "invalid_interval"), wantErr: `"collection_interval": requires positive value`},
		{id: component.NewIDWithName(metadata.Type, "invalid_rescan"), wantErr: "rescan_max_interval (30s) must not be less than rescan_interval (1m0s)"},
		{id: component.NewIDWithName(metadata.Type, "invalid_format"), wantErr: `entity_event_format must be "legacy" or "spec", got "otlp"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_root"), wantErr: `root_path must be an absolute path, got "hostfs"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_payload"), wantErr: "max_payload_size: max payload size must be positive"},
		{id: component.NewIDWithName(metadata.Type, "invalid_pattern"), wantErr: `exclude.executables: bad pattern "[java"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_read_timeout"), wantErr: "read_timeout must be positive, got 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
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

func TestUnknownKeyRejected(t *testing.T) {
	cfg := createDefaultConfig()
	err := confmap.NewFromStringMap(map[string]any{"colection_interval": "1s"}).Unmarshal(cfg)
	require.ErrorContains(t, err, "colection_interval")
}

func TestSelects(t *testing.T) {
	cfg := createDefaultConfig()
	assert.True(t, cfg.selects("anything"))
	cfg.Include.Executables = []string{"java", "python3*"}
	cfg.Exclude.Executables = []string{"python3-debug"}
	for name, want := range map[string]bool{"java": true, "python3.12": true, "python3-debug": false, "node": false} {
		assert.Equal(t, want, cfg.selects(name), name)
	}
}
