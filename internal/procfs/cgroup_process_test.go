package procfs

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func containerID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// cgroupLayouts are cgroup directories named as container runtimes name
// them, under the hierarchies this machine mounts (v1 and v2).
func cgroupLayouts(id string) map[string]string {
	return map[string]string{
		"docker cgroup v1":     "/sys/fs/cgroup/pids/docker/" + id,
		"containerd cgroup v2": "/sys/fs/cgroup/unified/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234.slice/cri-containerd-" + id + ".scope",
		"cri-o cgroup v2":      "/sys/fs/cgroup/unified/machine.slice/crio-" + id + ".scope",
		"podman cgroup v2":     "/sys/fs/cgroup/unified/machine.slice/libpod-" + id + ".scope",
	}
}

// TestContainedProcessIdentity: a process started as a container runtime
// would (pid 1 of its own pid namespace, in a cgroup named by the runtime)
// has the runtime's container id and its namespace pid in its identity.
func TestContainedProcessIdentity(t *testing.T) {
	pubtest.RequireRoot(t)
	for name := range cgroupLayouts("") {
		t.Run(name, func(t *testing.T) {
			id := containerID(t)
			dir := cgroupLayouts(id)[name]
			if _, err := os.Stat(dirParentMount(dir)); err != nil {
				t.Skipf("no cgroup hierarchy at %s", dirParentMount(dir))
			}
			p := pubtest.StartContained(t, pubtest.Go, dir)
			require.Equal(t, 1, p.Pid, "pid 1 of its own namespace")

			ident, err := NewIdentityReader(newHostFS(t)).Identity(p.HostPid())
			require.NoError(t, err)
			assert.Equal(t, p.HostPid(), ident.PID)
			assert.Equal(t, 1, ident.VPID())
			assert.Equal(t, []int{p.HostPid(), 1}, ident.NSpid)
			assert.Equal(t, id, ident.ContainerID)
		})
	}
}

// dirParentMount returns the cgroup hierarchy root of a cgroup directory.
func dirParentMount(dir string) string {
	for _, root := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"} {
		if len(dir) > len(root) && dir[:len(root)] == root {
			return root
		}
	}
	return dir
}
