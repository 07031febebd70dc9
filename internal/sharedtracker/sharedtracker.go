// Package sharedtracker is how the process_context components of one
// collector share one process tracker: the process_context extension runs
// it, and the receiver and the processor find it through the collector's
// host (component.Host.GetExtensions), the way contrib components find a
// storage extension. A component that finds none runs a tracker of its
// own.
package sharedtracker

import (
	"fmt"
	"path/filepath"
	"slices"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Provider is what the process_context extension implements.
type Provider interface {
	// ProcessTracker returns the extension's started tracker.
	ProcessTracker() *tracker.Tracker
	// RootPath returns the root path the tracker reads.
	RootPath() string
}

// Shared is a tracker found on the host.
type Shared struct {
	Tracker  *tracker.Tracker
	ID       component.ID
	RootPath string
}

// Find returns the tracker of the extension id names or, when id is nil,
// of the only Provider among the host's extensions; nil when id is nil and
// the host has none. A component configured with rootPath other than "/"
// must agree with the extension's root path: pids would otherwise name
// processes of two different procfs.
func Find(host component.Host, id *component.ID, rootPath string) (*Shared, error) {
	var found []Shared
	for extID, ext := range host.GetExtensions() {
		if id != nil && extID != *id {
			continue
		}
		p, ok := ext.(Provider)
		if !ok {
			if id != nil {
				return nil, fmt.Errorf("tracker: extension %s is not a process_context extension", extID)
			}
			continue
		}
		found = append(found, Shared{Tracker: p.ProcessTracker(), ID: extID, RootPath: p.RootPath()})
	}
	switch {
	case id != nil && len(found) == 0:
		return nil, fmt.Errorf("tracker: extension %s is not configured (list it under service::extensions)", id)
	case len(found) == 0:
		return nil, nil
	case len(found) > 1:
		ids := make([]string, len(found))
		for i, s := range found {
			ids[i] = s.ID.String()
		}
		slices.Sort(ids)
		return nil, fmt.Errorf("tracker: the collector has several process_context extensions (%v): say which with the tracker key", ids)
	}
	s := found[0]
	if s.Tracker == nil {
		return nil, fmt.Errorf("tracker: extension %s is not started", s.ID)
	}
	if rootPath != "" && filepath.Clean(rootPath) != "/" && filepath.Clean(rootPath) != filepath.Clean(s.RootPath) {
		return nil, fmt.Errorf("root_path %q differs from the root_path %q of the tracker extension %s: set it on the extension only", rootPath, s.RootPath, s.ID)
	}
	return &s, nil
}
