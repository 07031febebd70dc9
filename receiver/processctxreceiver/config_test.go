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
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scraperhelper"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

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
					Discovery:         tracker.DiscoveryEvents,
					ReconcileInterval: 2 * time.Hour,
				},
				ReportInterval:    10 * time.Minute,
				EntityEventFormat: FormatSpec,
				RootPath:          "/hostfs",
				MaxPayloadSize:    32768,
				Tracker:           &trackerID,
				Include:           MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"^java$", "^python3"}},
				Exclude:           MatchConfig{MatchType: MatchTypeStrict, Names: []string{"python3-debug"}},
				RetryOnFailure: configretry.BackOffConfig{
					Enabled: true, InitialInterval: 2 * time.Second, RandomizationFactor: 0.1,
					Multiplier: 2, MaxInterval: time.Minute, MaxElapsedTime: time.Hour,
				},
				QueueSize: 500,
			},
		},
		{id: component.NewIDWithName(metadata.Type, "invalid_interval"), wantErr: `"collection_interval": requires positive value`},
		{id: component.NewIDWithName(metadata.Type, "invalid_rescan"), wantErr: "rescan_max_interval (30s) must not be less than rescan_interval (1m0s)"},
		{
			id: component.NewIDWithName(metadata.Type, "deprecated_executables"),
			want: func() *Config {
				cfg := createDefaultConfig()
				cfg.Include = MatchConfig{Executables: []string{"java", "python3*"}}
				cfg.Exclude = MatchConfig{Executables: []string{"python3-debug"}}
				return cfg
			}(),
		},
		{id: component.NewIDWithName(metadata.Type, "invalid_format"), wantErr: `entity_event_format must be unset, "legacy" or "spec", got "otlp"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_match_type"), wantErr: `include.match_type must be "strict" or "regexp", got "glob"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_root"), wantErr: `root_path must be an absolute path, got "hostfs"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_payload"), wantErr: "max_payload_size: max payload size must be positive"},
		{id: component.NewIDWithName(metadata.Type, "invalid_pattern"), wantErr: `exclude.executables: bad pattern "[java"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_read_timeout"), wantErr: "read_timeout must be positive, got 0s"},
		{id: component.NewIDWithName(metadata.Type, "invalid_queue_size"), wantErr: "queue_size must be positive, got 0"},
		{id: component.NewIDWithName(metadata.Type, "invalid_retry"), wantErr: "retry_on_failure: multiplier value must be greater than or equal to 0"},
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

// Under the feature gate the deprecated form fails validation with the new
// form in the message; without it, the receiver warns with the new form.
func TestDeprecatedExecutables(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, "deprecated_executables").String())
	require.NoError(t, err)
	cfg := createDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))

	core, logs := observer.New(zap.WarnLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	_, err = newReceiver(set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	warnings := logs.FilterMessageSnippet("include.executables is deprecated").All()
	require.Len(t, warnings, 1)
	assert.Equal(t, `include: {match_type: regexp, names: ["^java$", "^python3[^/]*$"]}`, warnings[0].ContextMap()["use"])

	gate := metadata.ReceiverProcesscontextDisallowExecutablesGlobFeatureGate
	require.NoError(t, featuregate.GlobalRegistry().Set(gate.ID(), true))
	t.Cleanup(func() { require.NoError(t, featuregate.GlobalRegistry().Set(gate.ID(), false)) })
	require.ErrorContains(t, confmap.Validate(cfg), `exclude.executables is no longer accepted (feature gate receiver.processcontext.disallowExecutablesGlob): use exclude: {match_type: strict, names: ["python3-debug"]}`)
}
