// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package trackertest

import (
	"errors"
	"testing"

	"github.com/processctx/otelcol-processctx/internal/pubevents"
)

// PublicationEvents returns the publication_events setting of the cheapest
// eBPF source this kernel allows, for tests of a tracker with
// discovery: events ("auto" takes fexit or kprobe, which some kernels
// lack);
// it skips the test where none loads.
func PublicationEvents(t testing.TB) string {
	t.Helper()
	var errs []error
	for _, m := range []pubevents.Mechanism{pubevents.Fexit, pubevents.Kprobe, pubevents.SyscallTracepoints, pubevents.RawSysExit} {
		w, err := pubevents.Load(pubevents.Options{Mechanism: m})
		if err == nil {
			_ = w.Close()
			return m.String()
		}
		errs = append(errs, err)
	}
	t.Skipf("no eBPF publication events here: %v", errors.Join(errs...))
	return ""
}
