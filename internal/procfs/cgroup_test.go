// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"containerd systemd path as cgroupfs name", "4:pids:/system.slice/containerd.service/kubepods-" + pod + ".slice:cri-containerd:" + id + "\n", id},
		{"crio systemd path as cgroupfs name", "4:pids:/kubepods-" + pod + ".slice:crio:" + id + "\n", id},
		{"unknown runtime in systemd path", "4:pids:/kubepods-" + pod + ".slice:foo:" + id + "\n", ""},
		{"systemd path 63 hex", "4:pids:/x.slice:cri-containerd:" + id[:63] + "\n", ""},
		{"one colon before id", "4:pids:/cri-containerd:" + id + "\n", ""},
		{"crio cgroupfs", "0::/kubepods/burstable/" + strings.ReplaceAll(pod, "_", "-") + "/crio-" + id + "\n", id},
		{"crio-conmon cgroupfs ignored", "0::/kubepods/burstable/" + strings.ReplaceAll(pod, "_", "-") + "/crio-conmon-" + id + "\n", ""},
		{"podman split payload", "0::/system.slice/app.service/libpod-payload-" + id + "\n", id},
		{"podman split runtime", "0::/system.slice/app.service/runtime\n", ""},
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

// cgroupSamples are the files of testdata/cgroup, each the /proc/<pid>/cgroup
// of a process of some runtime (testdata/cgroup/README.md says where each
// comes from), with the container id and pod uid it names.
var cgroupSamples = []struct {
	file        string
	containerID string
	podUID      string
}{
	// containerd (CRI).
	{"containerd-v1-systemd-besteffort.txt", "ee4b20e90ac7f42a10bd004d05646b13d8ab5e2c5e7cbc01abf8006bac016459", "0125ec2f-b64a-4868-8f5b-94b56cbab864"},
	{"containerd-v1-systemd-burstable.txt", "6ef14b5a76df7b5d24285e3a04ccbc6fd323620272b3787b5dc440fc1b75d294", "b96a7488-3ee1-4bdc-9c98-155cc887b417"},
	{"containerd-v2-systemd-guaranteed.txt", "8564224395a4fbf7f2792baa22ee16dfc8f8e862e20342d3b2bcc211a3939af6", "dc430cd3-34b7-4ea6-be26-ddfd88d7ddff"},
	{"containerd-v2-systemd-burstable.txt", "2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36", "55c6c714-b240-4dec-9a45-57b61696ab6e"},
	{"containerd-v2-systemd-burstable-static-pod.txt", "2884d57c0e100d7a9a2f9487ce0bc2986bca3430e988af7a4865aff061f51ac5", ""},
	{"containerd-v2-systemd-besteffort-kind.txt", "a09bc17f5aa29b0dbdec9ede5f46cf1396d2405917ab02e6f1eb1019f388396e", "1e597579-417e-482f-bf65-5fe170c3aebd"},
	{"containerd-v2-cgroupfs-burstable.txt", "a6fa3112ac317b1f2e8986a1fb4b783add5cf3ee6b6c9947dc513a6984da88fb", "bd445127-8720-434d-b38c-d308e9ff9b59"},
	{"containerd-v2-cgroupfs-besteffort.txt", "a3804295d867b752119eab99a9e6364fdf7fe6a4be5af0b11f9915fa7b64ff95", "dfd874dc-ab52-4793-af47-d06b78b68337"},
	// CRI-O: the container, and conmon, which is in the pod but no container.
	{"crio-v1-systemd-burstable.txt", "5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c", "a5c1f8d5-1919-434d-add7-4afaafdaef89"},
	{"crio-v1-systemd-conmon.txt", "", "207aaad1-659f-4db8-88e0-46e0cdcc3004"},
	{"crio-v2-systemd-burstable.txt", "a09343ca97901516c25036e2b954421254f8c68b384b536064e8999f0c4ed18d", "2c9f8a79-5391-454b-88cb-86190881cb96"},
	{"crio-v2-systemd-guaranteed-crun.txt", "11271ae07aa52bd47ef2e5f5ee4efe373f8819f7ec0fbe4d146de2344427486a", "a42d5875-23e6-41e2-86e1-e3c11d3f466b"},
	{"crio-v2-systemd-guaranteed-runc.txt", "aa40e91310e32d3063675955a565192e2ad1a2d31505b9b13af6baff3557a7a0", "23108f55-25f0-41d2-aa3b-25011e87611a"},
	{"crio-hybrid-systemd-conmon-system-slice.txt", "", ""},
	// Docker, alone and under the kubelet (dockershim).
	{"docker-v1-cgroupfs.txt", "2403ccfe427f1dc7b6120dccb9ac58c2f8456950380d587a9f33ea7f00dd303d", ""},
	{"docker-v1-cgroupfs-partial.txt", "5dace3de0735f73d2b5048f12d41a71741a02e49668de921fdae62f7e65dc498", ""},
	{"docker-v1-systemd.txt", "b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26", ""},
	{"docker-v2-systemd.txt", "b176419186d75a44628851daf7841d3374a2ec56d0b038ee3bd1e0c6d331e5b1", ""},
	{"dockershim-v1-cgroupfs-besteffort.txt", "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376", "74c13223-5a00-11e9-b385-42010a80018d"},
	{"dockershim-v1-systemd-burstable.txt", "d0b3604b67ac7930dd34ba3a796627e3e4717d12309e90a4afe3f38b6816ac98", "7d4424e6-bb13-42f4-a47a-45a4828bf54d"},
	{"dockershim-v1-systemd-guaranteed.txt", "ee82e2aba6a09214a9f0e766b6c0bcb3647cc922ee2e95d552314b117bfe7a5e", "7f282c81-59bd-4373-a196-3a1f7e0a526a"},
	// podman: this machine's (cgroupfs), and systemd's.
	{"podman-v1-cgroupfs-rootful.txt", "2535ab0048f5931b618dbae16e4fdecaccfbf9667486161c484d40f51da9fd46", ""},
	{"podman-v1-cgroupfs-conmon.txt", "", ""},
	{"podman-v1-cgroupfs-nested.txt", "4b6d104cec298050b054590e8ee8d04e64c579c82690c5766e12d9f949270efc", ""},
	{"podman-v1-cgroupfs-split.txt", "850be2a8d18b94d56a3e0f5de12ac89e3147ceb4868c78d61c65896bc169d601", ""},
	{"podman-v1-systemd-rootful.txt", "24fce7291bc6d7f8a5965a5920740b0df25dda9bb4e84ffb889d8ea2927acec5", ""},
	{"podman-v1-systemd-conmon.txt", "", ""},
	{"podman-v2-systemd-rootful.txt", "06dc5f321aad8726aa26559f16ec203bc099245bc44894b14a89fc02b022d1d5", ""},
	{"podman-v2-systemd-root-user-manager.txt", "cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb", ""},
	{"podman-v2-systemd-rootless.txt", "f992ec4ed807f76e5e54c9c67d78f0a4105bf945420271c2558ba905e38d2108", ""},
	{"podman-v2-systemd-rootless-conmon.txt", "", ""},
	{"podman-v2-systemd-quadlet.txt", "8e363eb2287da4ccc9f52ffc5de11252ac5fe707e3ddb917a3c0bdf9bb64165b", ""},
	// Neither container nor pod.
	{"host-v1-sandbox.txt", "", ""},
	{"host-v1-systemd-init.txt", "", ""},
	{"host-v2-user-session.txt", "", ""},
	{"host-v2-user-tmux.txt", "", ""},
	{"systemd-service-v1-kubelet.txt", "", ""},
	{"systemd-service-v2-containerd-shim.txt", "", ""},
}

func readCgroupSample(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cgroup", file))
	require.NoError(t, err)
	return b
}

func TestCgroupSamples(t *testing.T) {
	listed := make(map[string]bool, len(cgroupSamples))
	for _, tc := range cgroupSamples {
		listed[tc.file] = true
		t.Run(strings.TrimSuffix(tc.file, ".txt"), func(t *testing.T) {
			cgroup := readCgroupSample(t, tc.file)
			assert.Equal(t, tc.containerID, ContainerIDFromCgroup(cgroup), "container id")
			assert.Equal(t, tc.podUID, PodUIDFromCgroup(cgroup), "pod uid")
		})
	}
	// Every sample is in the table.
	files, err := filepath.Glob(filepath.Join("testdata", "cgroup", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		assert.True(t, listed[filepath.Base(f)], "%s has no row in cgroupSamples", f)
	}
}

func TestPodUIDFromCgroup(t *testing.T) {
	const (
		uid = "7f1d2c3b-4a5e-6f70-8192-a3b4c5d6e7f8"
		id  = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	under := strings.ReplaceAll(uid, "-", "_")
	inner := "fedcba98-7654-3210-fedc-ba9876543210"
	tests := []struct {
		name   string
		cgroup string
		want   string
	}{
		{"systemd guaranteed", "0::/kubepods.slice/kubepods-pod" + under + ".slice/cri-containerd-" + id + ".scope\n", uid},
		{"systemd burstable", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + under + ".slice/crio-" + id + ".scope\n", uid},
		{"systemd pod cgroup itself", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + under + ".slice\n", uid},
		{"cgroupfs guaranteed", "0::/kubepods/pod" + uid + "/" + id + "\n", uid},
		{"cgroupfs burstable v1", "12:memory:/kubepods/burstable/pod" + uid + "/" + id + "\n", uid},
		{"cgroupfs pod cgroup itself", "0::/kubepods/besteffort/pod" + uid + "\n", uid},
		{"containerd systemd path as cgroupfs name", "4:pids:/system.slice/containerd.service/kubepods-burstable-pod" + under + ".slice:cri-containerd:" + id + "\n", uid},
		{"first line decides", "12:pids:/\n11:memory:/kubepods/pod" + uid + "/" + id + "\n0::/kubepods/pod" + inner + "/" + id + "\n", uid},
		{"innermost wins", "0::/kubepods/pod" + uid + "/kubepods/pod" + inner + "/" + id + "\n", inner},
		{"no trailing newline", "0::/kubepods/pod" + uid, uid},
		{"no kubepods above", "0::/system.slice/app-pod" + under + ".slice\n", ""},
		{"no kubepods above cgroupfs", "0::/other/pod" + uid + "/" + id + "\n", ""},
		{"kubepods below only", "0::/pod" + uid + "/kubepods\n", ""},
		{"static pod hash", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8daa50c3a64c9ff60bb9eab7b44b56fd.slice/cri-containerd-" + id + ".scope\n", ""},
		{"static pod hash cgroupfs", "0::/kubepods/burstable/pod16a4a44fea21553f3c41d03e478379f0/" + id + "\n", ""},
		{"systemd with dashes", "0::/kubepods.slice/kubepods-pod" + uid + ".slice\n", ""},
		{"cgroupfs with underscores", "0::/kubepods/pod" + under + "/" + id + "\n", ""},
		{"uppercase", "0::/kubepods/pod" + strings.ToUpper(uid) + "\n", ""},
		{"no dash before pod", "0::/kubepods.slice/kubepodspod" + under + ".slice\n", ""},
		{"slice without prefix", "0::/kubepods.slice/pod" + under + ".slice\n", uid},
		{"short uid", "0::/kubepods/pod" + uid[:35] + "\n", ""},
		{"long uid", "0::/kubepods/pod" + uid + "0\n", ""},
		{"uid prefix", "0::/kubepods/pod" + uid + "x\n", ""},
		{"not a slice", "0::/kubepods.slice/kubepods-pod" + under + ".scope\n", ""},
		{"dash misplaced", "0::/kubepods/pod7f1d2c3-b4a5e-6f70-8192-a3b4c5d6e7f8\n", ""},
		{"uid in controllers field only", "1:kubepods/pod" + uid + ":/\n", ""},
		{"no colons", "/kubepods/pod" + uid + "\n", ""},
		{"host", "0::/init.scope\n", ""},
		{"empty", "", ""},
		{"garbage", "\x00\xff::://::\n\n:.slice:", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, PodUIDFromCgroup([]byte(tc.cgroup)))
		})
	}
}

func TestPodUIDFromCgroupAllocations(t *testing.T) {
	none := readCgroupSample(t, "containerd-v2-systemd-burstable-static-pod.txt")
	found := readCgroupSample(t, "containerd-v1-systemd-burstable.txt")
	assert.Zero(t, testing.AllocsPerRun(100, func() { PodUIDFromCgroup(none) }))
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { PodUIDFromCgroup(found) }), 1.0)
}

// isCanonicalPodUID reports whether s is a UUID in lowercase hex with dashes.
func isCanonicalPodUID(s string) bool {
	var uid [podUIDLen]byte
	return canonicalPodUID([]byte(s), '-', &uid) && string(uid[:]) == s
}

// FuzzCgroup checks that neither parser panics on any input and that what
// they return is well formed and taken from the input.
func FuzzCgroup(f *testing.F) {
	for _, tc := range cgroupSamples {
		f.Add(readCgroupSample(f, tc.file))
	}
	f.Add([]byte("0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n"))
	f.Add([]byte("12:memory:/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"))
	f.Add([]byte("0::/kubepods/pod7f1d2c3b-4a5e-6f70-8192-a3b4c5d6e7f8\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if id := ContainerIDFromCgroup(data); id != "" && (!isContainerID([]byte(id)) || !bytes.Contains(data, []byte(id))) {
			t.Fatalf("container id %q from %q", id, data)
		}
		if uid := PodUIDFromCgroup(data); uid != "" {
			if !isCanonicalPodUID(uid) {
				t.Fatalf("pod uid %q from %q is not canonical", uid, data)
			}
			if !bytes.Contains(data, []byte(uid)) && !bytes.Contains(data, []byte(strings.ReplaceAll(uid, "-", "_"))) {
				t.Fatalf("pod uid %q is not in %q", uid, data)
			}
			if !bytes.Contains(data, []byte("kubepods")) {
				t.Fatalf("pod uid %q from %q, which has no kubepods", uid, data)
			}
		}
	})
}
