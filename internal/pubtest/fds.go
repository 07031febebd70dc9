// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// OpenFDs returns this process's open file descriptors: number and what
// they name. Tests of what opens kernel resources (the proc connector's
// socket, eBPF programs and maps) compare two with OpenedSince.
func OpenFDs(t testing.TB) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	fds := map[string]string{}
	for _, e := range entries {
		// The directory's own descriptor is closed by now: left out.
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			fds[e.Name()] = target
		}
	}
	return fds
}

// OpenedSince returns the descriptors of now that before did not have.
func OpenedSince(before, now map[string]string) []string {
	var fds []string
	for fd, target := range now {
		if before[fd] != target {
			fds = append(fds, fd+" -> "+target)
		}
	}
	return fds
}
