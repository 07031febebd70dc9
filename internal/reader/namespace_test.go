// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func TestCheckHost(t *testing.T) {
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	require.NoError(t, fs.CheckHost(), "the tests run in the host's pid namespace")

	pubtest.RequireRoot(t)
	t.Run("bind-mounted host procfs", func(t *testing.T) {
		fs, err := procfs.NewFS(pubtest.MountProc(t, 0))
		require.NoError(t, err)
		assert.NoError(t, fs.CheckHost())
		assert.True(t, fs.SameNamespace())
	})
	t.Run("a container's procfs", func(t *testing.T) {
		fs, err := procfs.NewFS(pubtest.MountProc(t, pubtest.SleepInNewPidNamespace(t)))
		require.NoError(t, err)
		assert.ErrorIs(t, fs.CheckHost(), procfs.ErrNotHostProcfs)
		assert.False(t, fs.SameNamespace())
	})
	t.Run("not a procfs", func(t *testing.T) {
		root := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(root, "proc"), 0o755))
		_, err := procfs.NewFS(root)
		assert.ErrorContains(t, err, "is not a procfs")
	})
}

func TestReadThroughBindMountedRoot(t *testing.T) {
	pubtest.RequireRoot(t)
	root := pubtest.MountProc(t, 0)
	fs, err := procfs.NewFS(root)
	require.NoError(t, err)
	r, err := New(fs, otep.DefaultLimits())
	require.NoError(t, err)
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	p.Publish(serviceContext(t, "through-root"))
	ctx, _, err := r.Read(p.Pid)
	require.NoError(t, err)
	assert.Equal(t, "through-root", ctx.Resource.AsRaw()["service.name"])
	id, err := procfs.NewIdentityReader(fs).Identity(p.Pid)
	require.NoError(t, err)
	assert.Equal(t, p.Pid, id.PID)
}

const (
	rootHelperEnv = "PROCMEM_TEST_ROOT"
	pidHelperEnv  = "PROCMEM_TEST_PID"
)

// TestReadFromNestedNamespaceHelper runs inside a new pid namespace (as a
// DaemonSet collector without hostPID does) and reads a host process
// through the host's procfs mounted at a root path.
func TestReadFromNestedNamespaceHelper(t *testing.T) {
	root := os.Getenv(rootHelperEnv)
	if root == "" {
		t.Skip("only runs as a helper process")
	}
	pid, err := strconv.Atoi(os.Getenv(pidHelperEnv))
	require.NoError(t, err)
	fs, err := procfs.NewFS(root)
	require.NoError(t, err)
	r, err := New(fs, otep.DefaultLimits())
	require.NoError(t, err)
	ctx, _, err := r.Read(pid)
	require.NoError(t, err)
	fmt.Printf("sameNS=%v host=%v service.name=%v\n", fs.SameNamespace(), fs.CheckHost() == nil, ctx.Resource.AsRaw()["service.name"])
	// The same pid number in this namespace is another process, or none:
	// reading it through our own /proc must not give the host's context.
	own, err := procfs.NewFS("/")
	require.NoError(t, err)
	ownReader, err := New(own, otep.DefaultLimits())
	require.NoError(t, err)
	_, _, err = ownReader.Read(pid)
	fmt.Printf("own-namespace-read=%v\n", err != nil)
}

func TestReadFromNestedPidNamespace(t *testing.T) {
	pubtest.RequireRoot(t)
	root := pubtest.MountProc(t, 0)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{Separate: true})
	p.Publish(serviceContext(t, "host-service"))

	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--",
		os.Args[0], "-test.run=^TestReadFromNestedNamespaceHelper$", "-test.v")
	cmd.Env = append(os.Environ(), rootHelperEnv+"="+root, pidHelperEnv+"="+strconv.Itoa(p.Pid))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	// process_vm_readv cannot name a host pid from inside: the mem file of
	// the host's procfs is read instead.
	assert.Contains(t, string(out), "sameNS=false host=true service.name=host-service", "%s", out)
	assert.Contains(t, string(out), "own-namespace-read=true", "%s", out)
}
