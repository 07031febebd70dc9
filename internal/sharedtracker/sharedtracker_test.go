package sharedtracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

type provider struct {
	component.StartFunc
	component.ShutdownFunc
	tr   *tracker.Tracker
	root string
}

func (p *provider) ProcessTracker() *tracker.Tracker { return p.tr }
func (p *provider) RootPath() string                 { return p.root }

type other struct {
	component.StartFunc
	component.ShutdownFunc
}

func TestFind(t *testing.T) {
	tr, err := tracker.New(trackertest.NewHost(), tracker.DefaultConfig(), zap.NewNop())
	require.NoError(t, err)
	a := component.MustNewIDWithName("process_context", "a")
	b := component.MustNewIDWithName("process_context", "b")
	storage := component.MustNewID("file_storage")
	one := host{a: &provider{tr: tr, root: "/hostfs"}, storage: &other{}}
	two := host{a: &provider{tr: tr, root: "/"}, b: &provider{tr: tr, root: "/"}}

	tests := []struct {
		name    string
		host    component.Host
		id      *component.ID
		root    string
		want    *component.ID
		wantErr string
	}{
		{name: "none", host: componenttest.NewNopHost()},
		{name: "the only one", host: one, root: "/", want: &a},
		{name: "named", host: two, id: &b, want: &b},
		{name: "same root path", host: one, root: "/hostfs/", want: &a},
		{name: "another root path", host: one, root: "/other", wantErr: `root_path "/other" differs from the root_path "/hostfs"`},
		{name: "several", host: two, wantErr: "several process_context extensions ([process_context/a process_context/b])"},
		{name: "named, missing", host: one, id: &b, wantErr: "extension process_context/b is not configured"},
		{name: "named, another kind", host: one, id: &storage, wantErr: "file_storage is not a process_context extension"},
		{name: "not started", host: host{a: &provider{}}, wantErr: "not started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Find(tt.host, tt.id, tt.root)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want == nil {
				assert.Nil(t, s)
				return
			}
			require.NotNil(t, s)
			assert.Equal(t, *tt.want, s.ID)
			assert.Same(t, tr, s.Tracker)
		})
	}
}
