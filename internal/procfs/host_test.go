// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// hostRoot makes a root with a procfs (a link to this machine's) and the
// given files.
func hostRoot(t *testing.T, files map[string]string) *FS {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Symlink("/proc", filepath.Join(root, "proc")))
	for name, text := range files {
		path := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	fs, err := NewFS(root)
	require.NoError(t, err)
	return fs
}

func TestHostIdentity(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  HostIdentity
	}{
		{"machine-id and hostname", map[string]string{"etc/machine-id": "4c4c4544004b4e10804bb7c04f4e3532\n", "etc/hostname": "node-7\n"},
			HostIdentity{ID: "4c4c4544004b4e10804bb7c04f4e3532", Name: "node-7"}},
		{"dbus machine-id", map[string]string{"var/lib/dbus/machine-id": "abc123\n"}, HostIdentity{ID: "abc123"}},
		{"etc wins over dbus", map[string]string{"etc/machine-id": "etc\n", "var/lib/dbus/machine-id": "dbus\n"}, HostIdentity{ID: "etc"}},
		{"empty machine-id", map[string]string{"etc/machine-id": "\n", "var/lib/dbus/machine-id": "dbus\n"}, HostIdentity{ID: "dbus"}},
		{"none", nil, HostIdentity{}},
		{"too long", map[string]string{"etc/machine-id": strings.Repeat("a", 1000)}, HostIdentity{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hostRoot(t, tt.files).HostIdentity())
		})
	}
}

// On the host ("/"), the name is the kernel's, as the host's processes see
// it.
func TestHostIdentityOfThisHost(t *testing.T) {
	fs, err := NewFS("/")
	require.NoError(t, err)
	name, err := os.Hostname()
	require.NoError(t, err)
	h := fs.HostIdentity()
	assert.Equal(t, name, h.Name)
	if id, err := os.ReadFile("/etc/machine-id"); err == nil && len(strings.TrimSpace(string(id))) > 0 {
		assert.Equal(t, strings.TrimSpace(string(id)), h.ID)
	}
}

// foreignHelperEnv makes TestForeignNamespacesHelper print what
// ForeignNamespaces says in the namespaces it was started in.
const foreignHelperEnv = "PROCFS_TEST_FOREIGN_NAMESPACES"

// The collector tells the host's namespaces it does not run in from the
// host's procfs: none on the host; in new network and pid namespaces (a
// container's, with the host's /proc), those two.
func TestForeignNamespaces(t *testing.T) {
	fs, err := NewFS("/")
	require.NoError(t, err)
	foreign, ok := fs.ForeignNamespaces()
	require.True(t, ok)
	assert.Empty(t, foreign)

	pubtest.RequireRoot(t)
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--net"}, "network"},
		{[]string{"--pid", "--fork"}, "pid"},
		{[]string{"--net", "--pid", "--fork"}, "network,pid"},
	} {
		t.Run(strings.Join(tt.flags, " "), func(t *testing.T) {
			args := append(append([]string{}, tt.flags...), "--", os.Args[0], "-test.run=^TestForeignNamespacesHelper$")
			cmd := exec.Command("unshare", args...)
			cmd.Env = append(os.Environ(), foreignHelperEnv+"=1")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "foreign: "+tt.want+".")
		})
	}
}

func TestForeignNamespacesHelper(t *testing.T) {
	if os.Getenv(foreignHelperEnv) == "" {
		t.Skip("only runs as a helper process")
	}
	fs, err := NewFS("/")
	require.NoError(t, err)
	foreign, ok := fs.ForeignNamespaces()
	require.True(t, ok)
	fmt.Printf("foreign: %s.\n", strings.Join(foreign, ","))
}
