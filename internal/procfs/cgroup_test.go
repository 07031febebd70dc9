package procfs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestContainerIDFromCgroup(t *testing.T) {
	const (
		id    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		inner = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
		pod   = "pod7f1d2c3b_4a5e_6f70_8192_a3b4c5d6e7f8"
	)
	tests := []struct {
		name   string
		cgroup string
		want   string
	}{
		{"docker v2 systemd", "0::/system.slice/docker-" + id + ".scope\n", id},
		{"docker v1 cgroupfs", "12:memory:/docker/" + id + "\n" +
			"11:cpu,cpuacct:/docker/" + id + "\n" +
			"1:name=systemd:/docker/" + id + "\n" +
			"0::/\n", id},
		{"docker v1 first lines without id", "12:pids:/\n11:memory:/docker/" + id + "\n", id},
		{"kubepods containerd systemd", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-" +
			pod + ".slice/cri-containerd-" + id + ".scope\n", id},
		{"kubepods cgroupfs", "0::/kubepods/burstable/" + strings.ReplaceAll(pod, "_", "-") + "/" + id + "\n", id},
		{"kubepods besteffort v1", "10:cpuset:/kubepods/besteffort/pod1234/" + id + "\n", id},
		{"crio", "0::/kubepods.slice/kubepods-" + pod + ".slice/crio-" + id + ".scope\n", id},
		{"crio-conmon ignored", "0::/kubepods.slice/kubepods-" + pod + ".slice/crio-conmon-" + id + ".scope\n", ""},
		{"podman scope", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope\n", id},
		{"podman machine.slice", "0::/machine.slice/libpod-" + id + ".scope/container\n", id},
		{"podman cgroupfs", "0::/libpod_parent/libpod-" + id + "/ctr\n", id},
		{"podman conmon ignored", "0::/machine.slice/libpod-conmon-" + id + ".scope\n", ""},
		{"innermost wins", "0::/docker/" + id + "/docker/" + inner + "\n", inner},
		{"innermost scope wins", "0::/system.slice/docker-" + id + ".scope/kubepods/" + inner + "\n", inner},
		{"no trailing newline", "0::/system.slice/docker-" + id + ".scope", id},
		{"colon in path", "0::/a:b/docker-" + id + ".scope\n", id},
		{"no container", "0::/user.slice/user-0.slice/session-1.scope\n", ""},
		{"root", "0::/\n", ""},
		{"empty", "", ""},
		{"uppercase", "0::/system.slice/docker-" + strings.ToUpper(id) + ".scope\n", ""},
		{"uppercase bare", "12:memory:/docker/" + strings.ToUpper(id) + "\n", ""},
		{"63 hex", "0::/system.slice/docker-" + id[:63] + ".scope\n", ""},
		{"63 hex bare", "12:memory:/docker/" + id[:63] + "\n", ""},
		{"65 hex bare", "12:memory:/docker/" + id + "0\n", ""},
		{"65 hex scope", "0::/system.slice/docker-0" + id + ".scope\n", ""},
		{"unknown prefix", "0::/system.slice/foo-" + id + ".scope\n", ""},
		{"prefix without dash", "0::/system.slice/docker" + id + ".scope\n", ""},
		{"id in hierarchy field only", id + "::/\n", ""},
		{"id in controllers field only", "1:" + id + ":/\n", ""},
		{"no colons", "/docker/" + id + "\n", ""},
		{"one colon", "0:/docker/" + id + "\n", ""},
		{"garbage", "\x00\xff::://::\n\n:", ""},
		{"sandbox process_api", "4:memory:/process_api/11767bf0903e76945c19916522b9c3e6\n0::/\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ContainerIDFromCgroup([]byte(tc.cgroup)))
		})
	}
}

func TestContainerIDFromCgroupAllocations(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	none := []byte("12:memory:/user.slice\n0::/user.slice/user-0.slice/session-1.scope\n")
	found := []byte("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-" + id + ".scope\n")
	assert.Zero(t, testing.AllocsPerRun(100, func() { ContainerIDFromCgroup(none) }))
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { ContainerIDFromCgroup(found) }), 1.0)
}

func FuzzContainerIDFromCgroup(f *testing.F) {
	f.Add([]byte("0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n"))
	f.Add([]byte("12:memory:/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := ContainerIDFromCgroup(data)
		if got != "" && (!isContainerID([]byte(got)) || !strings.Contains(string(data), got)) {
			t.Fatalf("id %q from %q", got, data)
		}
	})
}
