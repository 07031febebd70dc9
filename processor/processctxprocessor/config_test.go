package processctxprocessor

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

	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		name         string
		want         *Config
		unmarshalErr string
		wantErr      string
	}{
		{name: "", want: createDefaultConfig()},
		{
			name: "full",
			want: &Config{
				RootPath:      "/hostfs",
				PIDAttributes: []string{"process.pid", "pid"},
				Override:      true,
				Include:       []string{"service.name", "service.version", "deployment.environment.name"},
				Exclude:       []string{"service.instance.id"},
				Cache: CacheConfig{
					TTL:         30 * time.Second,
					NegativeTTL: time.Minute,
					GracePeriod: 5 * time.Minute,
					MaxEntries:  1000,
				},
				MaxPayloadSize:  32768,
				UnqualifiedPids: UnqualifiedHost,
				LookupTimeout:   20 * time.Millisecond,
				ReadTimeout:     250 * time.Millisecond,
			},
		},
		{name: "invalid_root", wantErr: `root_path must be an absolute path, got "hostfs"`},
		{name: "invalid_unqualified_pids", wantErr: `unqualified_pids must be "verify" or "host", got "trust"`},
		{name: "invalid_pid_attributes", wantErr: "pid_attributes must list at least one attribute key"},
		{name: "duplicate_pid_attribute", wantErr: `pid_attributes lists "process.pid" twice`},
		{name: "empty_key", wantErr: "include[1] is empty"},
		{name: "include_and_exclude", wantErr: `key "service.name" is in both include and exclude`},
		{name: "invalid_ttl", wantErr: "cache.ttl must be positive, got 0s"},
		{name: "invalid_negative_ttl", wantErr: "cache.negative_ttl must be positive, got -1s"},
		{name: "invalid_grace_period", wantErr: "cache.grace_period must not be negative, got -1m0s"},
		{name: "invalid_max_entries", wantErr: "cache.max_entries must be between 1 and 1048576, got 0"},
		{name: "invalid_payload", wantErr: "max_payload_size: max payload size must be positive"},
		{name: "invalid_lookup_timeout", wantErr: "lookup_timeout must be positive and at most 5s, got 1m0s"},
		{name: "invalid_read_timeout", wantErr: "read_timeout must be positive, got 0s"},
		{name: "unknown_field", unmarshalErr: "pid_attribute"},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if tt.unmarshalErr != "" {
				require.ErrorContains(t, err, tt.unmarshalErr)
				return
			}
			require.NoError(t, err)
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

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.RootPath = ""
	cfg.Cache.TTL = 0
	cfg.PIDAttributes = make([]string, maxPIDAttributes+1)
	for i := range cfg.PIDAttributes {
		cfg.PIDAttributes[i] = string(rune('a' + i))
	}
	err := cfg.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "root_path must be an absolute path")
	assert.ErrorContains(t, err, "cache.ttl must be positive")
	assert.ErrorContains(t, err, "pid_attributes lists 9 keys, at most 8 are allowed")
}
