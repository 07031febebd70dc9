package processctxreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

var trackerID = component.MustNewID("process_context")

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		name         string
		want         *Config
		wantErr      string
		unmarshalErr string
	}{
		{name: "", want: createDefaultConfig()},
		{
			name: "full",
			want: &Config{
				Tracker:           &trackerID,
				ReportInterval:    10 * time.Minute,
				EntityEventFormat: FormatSpec,
				Include:           MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"^java$", "^python3"}},
				Exclude:           MatchConfig{MatchType: MatchTypeStrict, Names: []string{"python3-debug"}},
				RetryOnFailure: configretry.BackOffConfig{
					Enabled: true, InitialInterval: 2 * time.Second, RandomizationFactor: 0.1,
					Multiplier: 2, MaxInterval: time.Minute, MaxElapsedTime: time.Hour,
				},
				QueueSize: 500,
			},
		},
		{name: "invalid_format", wantErr: `entity_event_format must be unset, "legacy" or "spec", got "otlp"`},
		{name: "invalid_match_type", wantErr: `include.match_type must be "strict" or "regexp", got "glob"`},
		{name: "missing_match_type", wantErr: `exclude.match_type is required with exclude.names: "strict" or "regexp"`},
		{name: "invalid_report_interval", wantErr: "report_interval must be positive, got 0s"},
		{name: "invalid_queue_size", wantErr: "queue_size must be positive, got 0"},
		{name: "invalid_retry", wantErr: "retry_on_failure: multiplier value must be greater than or equal to 0"},
		{name: "tracker_key", unmarshalErr: "has invalid keys: collection_interval"},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			if tt.unmarshalErr != "" {
				require.ErrorContains(t, sub.Unmarshal(cfg), tt.unmarshalErr)
				return
			}
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
