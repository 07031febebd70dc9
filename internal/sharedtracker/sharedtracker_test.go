// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

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
	tr Tracker
}

func (p *provider) ProcessTracker() Tracker { return p.tr }

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
	one := host{a: &provider{tr: tr}, storage: &other{}}
	two := host{a: &provider{tr: tr}, b: &provider{tr: tr}}
	addIt := "add it to the configuration\n  extensions:\n    process_context:\n  service:\n    extensions: [process_context]"

	tests := []struct {
		name    string
		host    component.Host
		id      *component.ID
		want    component.ID
		wantErr string
	}{
		{name: "none", host: componenttest.NewNopHost(), wantErr: "no process_context extension; the process_context extension runs the collector's process tracker: " + addIt},
		{name: "another kind only", host: host{storage: &other{}}, wantErr: addIt},
		{name: "the only one", host: one, want: a},
		{name: "named", host: two, id: &b, want: b},
		{name: "several", host: two, wantErr: "several process_context extensions ([process_context/a process_context/b])"},
		{name: "named, missing", host: one, id: &b, wantErr: "extension process_context/b is not in service::extensions; the process_context extension runs"},
		{name: "named, another kind", host: one, id: &storage, wantErr: "file_storage is not a process_context extension"},
		{name: "not started", host: host{a: &provider{}}, wantErr: "not started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, id, err := find(tt.host, tt.id)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, id)
			assert.Same(t, tr, got)
		})
	}
}
