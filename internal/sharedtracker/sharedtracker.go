// Package sharedtracker is how the process_context receiver and processor
// find the one process tracker of a collector: the process_context
// extension runs it, and they find it through the collector's host
// (component.Host.GetExtensions), the way contrib components find a storage
// extension or an observer. A component that finds none fails to start,
// with the configuration to add.
package sharedtracker

import (
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Provider is what the process_context extension implements.
type Provider interface {
	// ProcessTracker returns the extension's started tracker.
	ProcessTracker() *tracker.Tracker
}

// missing is the end of the error without an extension: the lines to add.
const missing = `the process_context extension runs the collector's process tracker: add it to the configuration
  extensions:
    process_context:
  service:
    extensions: [process_context]`

// Find returns the tracker of the extension id names or, when id is nil,
// of the only process_context extension of the collector, and that
// extension's ID. It fails when there is none, when id names another kind
// of extension, and when id is nil and there are several.
func Find(host component.Host, id *component.ID) (*tracker.Tracker, component.ID, error) {
	var found []component.ID
	providers := map[component.ID]Provider{}
	for extID, ext := range host.GetExtensions() {
		p, ok := ext.(Provider)
		switch {
		case id != nil && extID != *id:
			continue
		case !ok && id != nil:
			return nil, extID, fmt.Errorf("tracker: extension %s is not a process_context extension", extID)
		case ok:
			found = append(found, extID)
			providers[extID] = p
		}
	}
	switch {
	case id != nil && len(found) == 0:
		return nil, *id, fmt.Errorf("tracker: extension %s is not in service::extensions; %s", id, missing)
	case len(found) == 0:
		return nil, component.ID{}, fmt.Errorf("no process_context extension; %s", missing)
	case len(found) > 1:
		slices.SortFunc(found, func(a, b component.ID) int { return strings.Compare(a.String(), b.String()) })
		return nil, component.ID{}, fmt.Errorf("the collector has several process_context extensions (%v): say which with the tracker key", found)
	}
	tr := providers[found[0]].ProcessTracker()
	if tr == nil {
		return nil, found[0], fmt.Errorf("tracker: extension %s is not started", found[0])
	}
	return tr, found[0], nil
}
