// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package sharedtrackertest gives the tests of the process_context
// components a collector host whose process_context extension runs a
// tracker the test made, and a fake of that tracker for unit tests of
// their logic.
package sharedtrackertest

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// ExtensionID is the ID of the host's extension.
var ExtensionID = component.MustNewID("process_context")

// Host returns a component.Host whose only extension provides tr, as the
// process_context extension does (nil: an extension not started).
func Host(tr *tracker.Tracker) component.Host {
	if tr == nil {
		return HostOf(nil)
	}
	return HostOf(tr)
}

// HostOf is Host for any tracker the extension may share, such as a Fake.
func HostOf(tr sharedtracker.Tracker) component.Host {
	return host{ExtensionID: &extension{tr: tr}}
}

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// Report accepts the components' status reports (componentstatus.Reporter).
func (host) Report(*componentstatus.Event) {}

type extension struct {
	component.StartFunc
	component.ShutdownFunc
	tr sharedtracker.Tracker
}

var _ sharedtracker.Provider = (*extension)(nil)

func (e *extension) ProcessTracker() sharedtracker.Tracker {
	return e.tr
}
