// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func TestContainedPublisherEntity(t *testing.T) {
	pubtest.RequireRoot(t)
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	id := hex.EncodeToString(raw)

	r := startReceiver(t, testConfig())
	p := pubtest.StartContained(t, pubtest.C, "/sys/fs/cgroup/unified/system.slice/docker-"+id+".scope")
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "in-a-container", "process.pid": "1"}))

	events := r.waitEvents(t, p.HostPid(), 1)
	e := events[0]
	assert.Equal(t, p.HostPid(), e.pid, "the entity id carries the host pid")
	assert.Equal(t, int64(p.HostPid()), e.description["process.pid"], "the host's pid wins over the published one")
	assert.Equal(t, int64(1), e.description["process.vpid"])
	assert.Equal(t, id, e.description["container.id"])
	assert.Equal(t, "in-a-container", e.description["service.name"])
}

// A process in a Kubernetes pod's cgroup (systemd driver, cgroup v2, as
// containerd names it) carries the pod's uid: k8sattributes downstream
// takes over from k8s.pod.uid.
func TestPodPublisherEntity(t *testing.T) {
	pubtest.RequireRoot(t)
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	id := hex.EncodeToString(raw)
	const uid = "5e0a1f2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	slice := "/sys/fs/cgroup/unified/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
		strings.ReplaceAll(uid, "-", "_") + ".slice/cri-containerd-" + id + ".scope"

	r := startReceiver(t, testConfig())
	p := pubtest.StartContained(t, pubtest.C, slice)
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "in-a-pod"}))
	e := r.waitEvents(t, p.HostPid(), 1)[0]
	assert.Equal(t, id, e.description["container.id"])
	assert.Equal(t, uid, e.description["k8s.pod.uid"])
}
