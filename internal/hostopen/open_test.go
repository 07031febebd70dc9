// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package hostopen

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// What Open opens (the proc connector's netlink socket, eBPF programs and
// maps, as far as this process may) is closed by Stop without Start.
func TestOpenThenStopLeavesNothingOpen(t *testing.T) {
	cfg := DefaultConfig()
	open := func() {
		tr, err := Open(cfg, zap.NewNop())
		require.NoError(t, err)
		require.NoError(t, tr.Stop(context.Background()))
	}
	open() // the runtime's own descriptors (netpoll) are open from now on
	before := pubtest.OpenFDs(t)
	for range 3 {
		open()
	}
	assert.Empty(t, pubtest.OpenedSince(before, pubtest.OpenFDs(t)))
}

// Open reads which host it reads from the root path: on the host, its
// kernel's name and its machine id.
func TestOpenReadsTheHostIdentity(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Discovery = DiscoveryPoll
	tr, err := Open(cfg, zap.NewNop())
	require.NoError(t, err)
	defer func() { assert.NoError(t, tr.Stop(context.Background())) }()
	name, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, name, tr.HostIdentity().Name)
}

// Validate refuses what Open would: a root_path without a procfs, or with a
// container's procfs, with Open's own error.
func TestConfigValidateAsOpen(t *testing.T) {
	pubtest.RequireRoot(t)
	for _, root := range []string{t.TempDir(), pubtest.MountProc(t, pubtest.SleepInNewPidNamespace(t))} {
		cfg := DefaultConfig()
		cfg.RootPath = root
		validateErr := Validate(cfg)
		require.Error(t, validateErr, root)
		_, openErr := Open(cfg, zap.NewNop())
		require.Error(t, openErr, root)
		assert.Equal(t, openErr.Error(), validateErr.Error(), "validate says what start would")
		assert.Contains(t, validateErr.Error(), fmt.Sprintf("root_path %q: ", root))
	}

}

// Open refuses the settings of opening the host that are not usable, with
// the tracker's (root_path's and discovery's checks moved here with them
// from tracker.Config).
func TestConfigCheck(t *testing.T) {
	def := DefaultConfig()
	require.NoError(t, def.check())
	bad := DefaultConfig()
	bad.RootPath, bad.Discovery, bad.PublicationEvents, bad.Readers = "hostfs", "ebpf", "sys_exit", 0
	err := bad.check()
	require.Error(t, err)
	for _, want := range []string{`root_path must be an absolute path, got "hostfs"`, `discovery must be "auto", "events" or "poll", got "ebpf"`,
		`publication_events must be "auto", "fexit", "kprobe", "syscall_tracepoints", "raw_sys_exit" or "none", got "sys_exit"`, "readers must be between 1 and 64"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = Open(bad, zap.NewNop())
	require.ErrorContains(t, err, `root_path must be an absolute path, got "hostfs"`)
}
