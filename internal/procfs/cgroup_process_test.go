// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
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

// cgroupLayout is a cgroup directory named as a container runtime names it,
// and the pod uid it names ("" outside Kubernetes).
type cgroupLayout struct {
	dir    string
	podUID string
}

// testPodUID is the uid of the pod of the Kubernetes layouts.
const testPodUID = "3c1b9f0e-5d2a-4e7b-9c61-0a8f2d4b7e35"

// cgroupLayouts are the layouts of the runtimes for container id, under the
// hierarchies this machine mounts (v1 and v2).
func cgroupLayouts(id string) map[string]cgroupLayout {
	pod := strings.ReplaceAll(testPodUID, "-", "_")
	return map[string]cgroupLayout{
		"docker cgroup v1":            {dir: "/sys/fs/cgroup/pids/docker/" + id},
		"kubepods cgroupfs cgroup v1": {dir: "/sys/fs/cgroup/pids/kubepods/burstable/pod" + testPodUID + "/" + id, podUID: testPodUID},
		"containerd cgroup v2":        {dir: "/sys/fs/cgroup/unified/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + pod + ".slice/cri-containerd-" + id + ".scope", podUID: testPodUID},
		"cri-o cgroup v2":             {dir: "/sys/fs/cgroup/unified/machine.slice/crio-" + id + ".scope"},
		"podman cgroup v2":            {dir: "/sys/fs/cgroup/unified/machine.slice/libpod-" + id + ".scope"},
		"podman split cgroup v2":      {dir: "/sys/fs/cgroup/unified/system.slice/app.service/libpod-payload-" + id},
	}
}

// TestContainedProcessIdentity: a process started as a container runtime
// would (pid 1 of its own pid namespace, in a cgroup named by the runtime)
// has the runtime's container id, its pod uid and its namespace pid in its
// identity.
func TestContainedProcessIdentity(t *testing.T) {
	pubtest.RequireRoot(t)
	for name := range cgroupLayouts("") {
		t.Run(name, func(t *testing.T) {
			id := containerID(t)
			layout := cgroupLayouts(id)[name]
			dir := layout.dir
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
			assert.Equal(t, layout.podUID, ident.PodUID)
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
