// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Every document of the manifest is a Kubernetes object of the expected
// kind without unknown fields, and the objects refer to each other.
func TestManifestDecodesStrictly(t *testing.T) {
	m := loadManifest(t)
	ns := m.namespace.Name
	require.NotEmpty(t, ns, "the Namespace has no name")
	for kind, got := range map[string]string{
		"ServiceAccount": m.serviceAccount.Namespace,
		"ConfigMap":      m.configMap.Namespace,
		"DaemonSet":      m.daemonSet.Namespace,
	} {
		assert.Equal(t, ns, got, "the %s is not in the manifest's Namespace", kind)
	}

	pod := m.daemonSet.Spec.Template
	assert.Equal(t, m.serviceAccount.Name, pod.Spec.ServiceAccountName, "the pod does not run as the manifest's ServiceAccount")
	require.NotNil(t, m.daemonSet.Spec.Selector, "the DaemonSet has no selector")
	for key, value := range m.daemonSet.Spec.Selector.MatchLabels {
		assert.Equal(t, value, pod.Labels[key], "the pod template's label %s does not match the DaemonSet's selector", key)
	}
	_, ok := configVolume(t, m)
	assert.True(t, ok, "no volume of the pod is the ConfigMap %s", m.configMap.Name)
}

// The strict decoding does catch what it is there for.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want string
	}{
		{
			name: "misspelled container field",
			doc: `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x}
spec:
  template:
    spec:
      containers:
        - name: otelcol
          imagePullPolicyy: Never
`,
			want: `strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolicyy"`,
		},
		{
			name: "misspelled securityContext field",
			doc: `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x}
spec:
  template:
    spec:
      containers:
        - name: otelcol
          securityContext:
            readOnlyRootFileSystem: true
`,
			want: `unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`,
		},
		{
			name: "unknown ConfigMap field",
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nconfig: {}\n",
			want: `unknown field "config"`,
		},
		{
			name: "duplicate key",
			doc:  "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nmetadata: {name: b}\n",
			want: `key "metadata" already set in map`,
		},
		{
			name: "unexpected kind",
			doc:  "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
			want: `unexpected object apiVersion "v1" kind "Service"`,
		},
		{
			name: "wrong apiVersion",
			doc:  "apiVersion: extensions/v1beta1\nkind: DaemonSet\nmetadata: {name: x}\n",
			want: `unexpected object apiVersion "extensions/v1beta1" kind "DaemonSet"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeStrict([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The container runs the image `make image` builds, as the image runs it:
// its entrypoint with its CMD, the config file coming from the ConfigMap
// at the path the CMD names.
func TestDaemonSetRunsTheImage(t *testing.T) {
	m := loadManifest(t)
	image := readImageFacts(t)
	c := m.container(t)

	assert.Equal(t, image.name, c.Image, "the DaemonSet's image is not the one make image builds (Makefile IMAGE)")
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy,
		"imagePullPolicy: IfNotPresent runs %s loaded into the node, and pulls the image a user's registry serves; Never refuses the registry's, Always the loaded one", image.name)
	if len(c.Command) > 0 {
		assert.Equal(t, image.entrypoint, c.Command, "the container's command is not the image's ENTRYPOINT")
	}
	assert.Equal(t, image.cmd, c.Args, "the container's args are not the image's CMD")

	configPath := image.configPath(t)
	volume, ok := configVolume(t, m)
	require.True(t, ok, "no volume of the pod is the ConfigMap %s", m.configMap.Name)
	var mounted []string
	for _, mount := range c.VolumeMounts {
		if mount.Name != volume.Name {
			continue
		}
		assert.True(t, mount.ReadOnly, "the config volume should be mounted read-only")
		file := path.Join(mount.MountPath, configKey)
		if mount.SubPath != "" {
			file = mount.MountPath
			assert.Equal(t, configKey, mount.SubPath, "the config mount's subPath is not the ConfigMap's key")
		}
		mounted = append(mounted, file)
	}
	assert.Equal(t, []string{configPath}, mounted,
		"the ConfigMap's %s should be mounted once, at the image's config path %s", configKey, configPath)
	if items := volume.ConfigMap.Items; len(items) > 0 {
		t.Errorf("the config volume selects items %v: the mount assumes the key %s at its own name", items, configKey)
	}
}

// The container's ports are exactly the ports the collector config listens
// on, which are those the image exposes; OTLP is on the node's ports; and
// each listening address can be bound in the pod.
func TestDaemonSetPortsMatchConfig(t *testing.T) {
	m := loadManifest(t)
	image := readImageFacts(t)
	c := m.container(t)
	config := parseYAMLMap(t, "the ConfigMap's config", m.collectorConfig(t))
	ls := listeners(t, config)
	require.NotEmpty(t, ls, "the collector config listens nowhere")

	var configPorts, containerPorts []int32
	for _, l := range ls {
		configPorts = append(configPorts, l.port)
	}
	byPort := map[int32]corev1.ContainerPort{}
	for _, p := range c.Ports {
		containerPorts = append(containerPorts, p.ContainerPort)
		byPort[p.ContainerPort] = p
		if p.Protocol != "" {
			assert.Equal(t, corev1.ProtocolTCP, p.Protocol, "port %d", p.ContainerPort)
		}
	}
	slices.Sort(containerPorts)
	assert.Equal(t, configPorts, containerPorts, "the container's ports are not the ports the config listens on (%v)", ls)
	exposed := append([]int32(nil), image.expose...)
	slices.Sort(exposed)
	assert.Equal(t, exposed, containerPorts, "the container's ports are not the ports the image exposes")

	hostNetwork := m.daemonSet.Spec.Template.Spec.HostNetwork
	bindable := bindableEnv(c.Env, hostNetwork)
	for _, l := range ls {
		if strings.HasPrefix(l.path, "receivers.otlp.") {
			assert.Equal(t, l.port, byPort[l.port].HostPort,
				"%s (port %d) should be published on the node's port %d (hostPort)", l.path, l.port, l.port)
		}
		assert.True(t, bindable[l.host], "%s listens on %q, which the pod cannot bind (hostNetwork: %t): "+
			"use 0.0.0.0 or an env var from the pod's status.podIP (status.hostIP only with hostNetwork)",
			l.path, l.host, hostNetwork)
	}
}

// The probes ask the health check extension for its status page.
func TestDaemonSetProbesUseHealthPort(t *testing.T) {
	m := loadManifest(t)
	c := m.container(t)
	config := parseYAMLMap(t, "the ConfigMap's config", m.collectorConfig(t))
	healthPort, healthPath := healthCheck(t, config)

	for name, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		t.Run(name, func(t *testing.T) {
			require.NotNil(t, probe, "the container has no %s probe", name)
			require.NotNil(t, probe.HTTPGet, "the %s probe is not an HTTP GET", name)
			assert.Equal(t, healthPath, probe.HTTPGet.Path, "the %s probe's path is not healthcheckv2's status path", name)
			assert.Equal(t, healthPort, resolvePort(t, c, probe.HTTPGet.Port), "the %s probe's port is not healthcheckv2's", name)
		})
	}
}

// The node's procfs is mounted read-only at /hostfs/proc and the extension
// reads it there (root_path: /hostfs).
func TestDaemonSetReadsHostProcfs(t *testing.T) {
	m := loadManifest(t)
	c := m.container(t)
	config := parseYAMLMap(t, "the ConfigMap's config", m.collectorConfig(t))
	rootPath := lookupString(t, "the ConfigMap's config", config, "extensions.process_context.root_path")
	assert.Equal(t, "/hostfs", rootPath, "the extension's root_path")
	assert.False(t, m.daemonSet.Spec.Template.Spec.HostPID, "with hostPID the root_path would be / (see the manifest's header)")
	assertHostProcMount(t, m.daemonSet.Spec.Template.Spec.Volumes, c.VolumeMounts, rootPath)
}

// Root in the container with every capability dropped but the documented
// four, no privilege escalation, a read-only root filesystem.
func TestDaemonSetSecurityContext(t *testing.T) {
	m := loadManifest(t)
	c := m.container(t)
	require.NotNil(t, c.SecurityContext, "the container has no securityContext")
	assertSecurityContext(t, *c.SecurityContext)
	assert.False(t, m.daemonSet.Spec.Template.Spec.AutomountServiceAccountToken == nil ||
		*m.daemonSet.Spec.Template.Spec.AutomountServiceAccountToken,
		"the collector uses no Kubernetes API: automountServiceAccountToken should be false")
}

// Every variable the config names is set in the container, and every
// variable set is used by the config (or the Go runtime).
func TestDaemonSetEnvMatchesConfig(t *testing.T) {
	m := loadManifest(t)
	c := m.container(t)
	assertEnvMatchesConfig(t, c.Env, m.collectorConfig(t), nil)
}

// configVolume is the pod's volume of the manifest's ConfigMap.
func configVolume(t *testing.T, m manifest) (corev1.Volume, bool) {
	t.Helper()
	for _, v := range m.daemonSet.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == m.configMap.Name {
			return v, true
		}
	}
	return corev1.Volume{}, false
}

// healthCheck returns the port and status path of the healthcheckv2
// extension.
func healthCheck(t *testing.T, config map[string]any) (int32, string) {
	t.Helper()
	var port int32
	for _, l := range listeners(t, config) {
		if l.path == "extensions.healthcheckv2.http" {
			port = l.port
		}
	}
	require.NotZero(t, port, "the config has no extensions.healthcheckv2.http.endpoint")
	enabled, _ := lookup(config, "extensions.healthcheckv2.http.status.enabled")
	require.Equal(t, true, enabled, "healthcheckv2's status page is not enabled")
	return port, lookupString(t, "the config", config, "extensions.healthcheckv2.http.status.path")
}

// resolvePort returns the number of a probe's port, named or not.
func resolvePort(t *testing.T, c corev1.Container, port intstr.IntOrString) int32 {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	t.Fatalf("no container port is named %q", port.StrVal)
	return 0
}

// bindableEnv returns the config hosts a pod can listen on: the wildcard
// addresses, and ${env:NAME} of a variable holding the pod's address (or,
// with hostNetwork, the node's, which is then the same).
func bindableEnv(env []corev1.EnvVar, hostNetwork bool) map[string]bool {
	ok := map[string]bool{"": true, "0.0.0.0": true, "[::]": true}
	for _, e := range env {
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			continue
		}
		switch e.ValueFrom.FieldRef.FieldPath {
		case "status.podIP":
			ok["${env:"+e.Name+"}"] = true
		case "status.hostIP":
			ok["${env:"+e.Name+"}"] = hostNetwork
		}
	}
	return ok
}

// assertHostProcMount checks that the node's /proc is a volume mounted
// read-only at <rootPath>/proc.
func assertHostProcMount(t *testing.T, volumes []corev1.Volume, mounts []corev1.VolumeMount, rootPath string) {
	t.Helper()
	var procVolume string
	for _, v := range volumes {
		if v.HostPath != nil && v.HostPath.Path == "/proc" {
			procVolume = v.Name
			if v.HostPath.Type != nil {
				assert.Equal(t, corev1.HostPathDirectory, *v.HostPath.Type, "the hostPath /proc volume's type")
			}
		}
	}
	require.NotEmpty(t, procVolume, "no volume is the node's /proc (hostPath)")
	var found bool
	for _, mount := range mounts {
		if mount.Name != procVolume {
			continue
		}
		found = true
		assert.Equal(t, path.Join(rootPath, "proc"), mount.MountPath, "the node's /proc must be mounted at <root_path>/proc")
		assert.True(t, mount.ReadOnly, "the node's /proc must be mounted read-only")
	}
	assert.True(t, found, "the volume %s (the node's /proc) is not mounted", procVolume)
}

// assertSecurityContext checks the container security context the README
// documents.
func assertSecurityContext(t *testing.T, sc corev1.SecurityContext) {
	t.Helper()
	require.NotNil(t, sc.Capabilities, "the securityContext sets no capabilities")
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "capabilities.drop should be exactly [ALL]")
	want := documentedCapabilities()
	got := append([]corev1.Capability(nil), sc.Capabilities.Add...)
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got, "capabilities.add should be exactly the documented set")
	assert.True(t, sc.RunAsUser != nil && *sc.RunAsUser == 0,
		"runAsUser should be 0: Kubernetes gives a non-root user no ambient capabilities")
	assert.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation should be false")
	assert.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem should be true")
	assert.False(t, sc.Privileged != nil && *sc.Privileged, "the container must not be privileged")
}

// isGoRuntimeEnv tells the variables the Go runtime reads, not the config.
func isGoRuntimeEnv(name string) bool {
	switch name {
	case "GOMEMLIMIT", "GOMAXPROCS", "GOGC", "GODEBUG":
		return true
	}
	return false
}

// assertEnvMatchesConfig checks that every ${env:NAME} of the config is
// set, in env or by someone else (provided: the Helm chart's own), that
// env sets each variable once, and that each is used by the config or the
// Go runtime.
func assertEnvMatchesConfig(t *testing.T, env []corev1.EnvVar, config string, provided []string) {
	t.Helper()
	set := map[string]int{}
	for _, e := range env {
		set[e.Name]++
		assert.Equal(t, 1, set[e.Name], "%s is set more than once", e.Name)
		assert.NotContains(t, provided, e.Name, "%s is set by the chart already", e.Name)
	}
	for _, name := range provided {
		set[name]++
	}
	used := map[string]bool{}
	for _, name := range referencedEnv(config) {
		used[name] = true
		assert.Positive(t, set[name], "the config uses ${env:%s}, which the container does not set", name)
	}
	for _, e := range env {
		assert.True(t, used[e.Name] || isGoRuntimeEnv(e.Name), "the container sets %s, which the config does not use", e.Name)
	}
}

// The DaemonSet runs the journald recipe: a journald receiver whose logs
// the process_context processor enriches, and journalctl (in the image)
// finds the node's journal where it looks by default, /var/log/journal and
// /run/log/journal, with the node's /etc/machine-id naming the node's; the
// node's /var/log (and so /var/log/journal) is mounted read-only as well,
// for the filelog recipe. The Helm values mount what the DaemonSet does
// (TestHelmValuesMatchDaemonSet).
func TestDaemonSetReadsTheJournal(t *testing.T) {
	m := loadManifest(t)
	c := m.container(t)
	config := parseYAMLMap(t, "the ConfigMap's config", m.collectorConfig(t))
	_, ok := lookup(config, "receivers.journald")
	require.True(t, ok, "the config has no journald receiver")
	_, ok = lookup(config, "receivers.journald.directory")
	assert.False(t, ok, "a journald directory would miss the journal kept in the other one")
	assert.True(t, enrichesJournal(config), "no pipeline takes the journald receiver's logs through the process_context processor")

	hostPaths := map[string]string{} // volume → the node's path
	for _, v := range m.daemonSet.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounted := map[string]bool{} // the node's path, mounted read-only at the same path
	for _, mount := range c.VolumeMounts {
		if node, ok := hostPaths[mount.Name]; ok && node == mount.MountPath {
			assert.True(t, mount.ReadOnly, "%s must be mounted read-only", mount.MountPath)
			mounted[node] = mount.ReadOnly
		}
	}
	for _, path := range []string{"/var/log", "/run/log/journal", "/etc/machine-id"} {
		assert.True(t, mounted[path], "the node's %s is not mounted read-only at %s", path, path)
	}
}

// enrichesJournal reports whether a pipeline of the collector config takes
// the journald receiver's logs through the process_context processor.
func enrichesJournal(config map[string]any) bool {
	pipelines, _ := lookup(config, "service.pipelines")
	all, _ := pipelines.(map[string]any)
	for _, p := range all {
		pipeline, _ := p.(map[string]any)
		receivers, _ := pipeline["receivers"].([]any)
		processors, _ := pipeline["processors"].([]any)
		if slices.Contains(receivers, any("journald")) && slices.Contains(processors, any("process_context")) {
			return true
		}
	}
	return false
}
