package procmem

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

func TestContainedPublisher(t *testing.T) {
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
			p.Publish(serviceContext(t, "contained"))

			r := newTestReader(t)
			ctx, _, err := r.Read(p.HostPid())
			require.NoError(t, err)
			assert.Equal(t, "contained", ctx.Resource.AsRaw()["service.name"])

			ident, err := NewIdentityReader(r.FS()).Identity(p.HostPid())
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

func TestMembership(t *testing.T) {
	pubtest.RequireRoot(t)
	id := containerID(t)
	p := pubtest.StartContained(t, pubtest.C, cgroupLayouts(id)["docker cgroup v1"])
	fs, err := NewFS("/")
	require.NoError(t, err)
	m, err := fs.Membership(p.HostPid())
	require.NoError(t, err)
	assert.Equal(t, Membership{ContainerID: id, VPID: 1}, m)

	m, err = fs.Membership(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), m.VPID)

	_, err = fs.Membership(1 << 30)
	assert.ErrorIs(t, err, ErrProcessGone)
}

func TestInnermostPid(t *testing.T) {
	for status, want := range map[string]int{
		"Name:\tx\nNSpid:\t4242\t17\t1\nNgid:\t0\n": 1,
		"Name:\tx\nNSpid:\t4242\n":                  4242,
		"Name:\tx\n":                                99,
		"Name:\tx\nNSpid:\t4242\tgarbage\n":         99,
		"Name:\tx\nNSpid:\n":                        99,
	} {
		assert.Equal(t, want, innermostPid([]byte(status), 99), status)
	}
}
