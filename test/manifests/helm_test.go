// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// helmValues are the keys of deploy/helm/values.yaml, with the chart's
// free-form objects (securityContext, extraEnvs, …) typed as the Kubernetes
// fields the chart copies them into, so that a strict decoding catches
// what the chart's schema cannot.
type helmValues struct {
	Mode  string `json:"mode"`
	Image struct {
		Repository string            `json:"repository"`
		Tag        string            `json:"tag"`
		PullPolicy corev1.PullPolicy `json:"pullPolicy"`
	} `json:"image"`
	Command struct {
		Name      string   `json:"name"`
		ExtraArgs []string `json:"extraArgs"`
	} `json:"command"`
	ServiceAccount struct {
		Create                       bool  `json:"create"`
		AutomountServiceAccountToken *bool `json:"automountServiceAccountToken"`
	} `json:"serviceAccount"`
	SecurityContext   corev1.SecurityContext      `json:"securityContext"`
	UseGOMEMLIMIT     bool                        `json:"useGOMEMLIMIT"`
	ExtraEnvs         []corev1.EnvVar             `json:"extraEnvs"`
	ExtraVolumes      []corev1.Volume             `json:"extraVolumes"`
	ExtraVolumeMounts []corev1.VolumeMount        `json:"extraVolumeMounts"`
	Ports             map[string]helmPort         `json:"ports"`
	LivenessProbe     helmProbe                   `json:"livenessProbe"`
	ReadinessProbe    helmProbe                   `json:"readinessProbe"`
	Resources         corev1.ResourceRequirements `json:"resources"`
	Tolerations       []corev1.Toleration         `json:"tolerations"`
	AlternateConfig   map[string]any              `json:"alternateConfig"`
}

type helmPort struct {
	Enabled       bool            `json:"enabled"`
	ContainerPort int32           `json:"containerPort"`
	ServicePort   int32           `json:"servicePort"`
	HostPort      int32           `json:"hostPort"`
	Protocol      corev1.Protocol `json:"protocol"`
	AppProtocol   string          `json:"appProtocol"`
}

type helmProbe struct {
	InitialDelaySeconds int32 `json:"initialDelaySeconds"`
	PeriodSeconds       int32 `json:"periodSeconds"`
	TimeoutSeconds      int32 `json:"timeoutSeconds"`
	SuccessThreshold    int32 `json:"successThreshold"`
	FailureThreshold    int32 `json:"failureThreshold"`
	HTTPGet             struct {
		Port int32  `json:"port"`
		Path string `json:"path"`
	} `json:"httpGet"`
}

// The chart's own env var (templates/_pod.tpl).
const chartPodIPEnv = "MY_POD_IP"

// loadHelmValues decodes the values snippet strictly.
func loadHelmValues(t *testing.T) helmValues {
	t.Helper()
	data, err := os.ReadFile(helmValuesPath)
	require.NoError(t, err)
	var v helmValues
	require.NoError(t, unmarshalStrictYAML(data, &v), "decoding %s", helmValuesPath)
	return v
}

// alternateConfigText is the snippet's collector config as the chart
// writes it into its ConfigMap (toYaml).
func (v helmValues) alternateConfigText(t *testing.T) string {
	t.Helper()
	require.NotEmpty(t, v.AlternateConfig, "%s has no alternateConfig", helmValuesPath)
	out, err := yaml.Marshal(v.AlternateConfig)
	require.NoError(t, err)
	return string(out)
}

// compileChartSchema compiles the chart's values.schema.json. Its
// "$schema" is the draft-less http://json-schema.org/schema#, which the
// library reads as the latest draft (2020-12); with draft set, "$schema"
// is dropped and the schema compiled as that draft.
func compileChartSchema(t *testing.T, draft *jsonschema.Draft) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(chartSchema)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err, "parsing %s", chartSchema)
	root, ok := doc.(map[string]any)
	require.True(t, ok, "%s is not a JSON object", chartSchema)
	if draft != nil {
		delete(root, "$schema")
	}

	abs, err := filepath.Abs(chartSchema)
	require.NoError(t, err)
	url := "file://" + filepath.ToSlash(abs)
	c := jsonschema.NewCompiler()
	if draft != nil {
		c.DefaultDraft(draft)
	}
	require.NoError(t, c.AddResource(url, root))
	schema, err := c.Compile(url)
	require.NoError(t, err, "compiling %s", chartSchema)
	return schema
}

// validateValues validates a values document (YAML) against the schema.
func validateValues(schema *jsonschema.Schema, values []byte) error {
	asJSON, err := yaml.YAMLToJSON(values)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(asJSON))
	if err != nil {
		return err
	}
	return schema.Validate(inst)
}

// The snippet is valid for the chart: every key it sets exists in the
// chart's values schema with the right type, read as draft 7 and as what
// its "$schema" names.
func TestHelmValuesMatchChartSchema(t *testing.T) {
	values, err := os.ReadFile(helmValuesPath)
	require.NoError(t, err)
	for name, draft := range map[string]*jsonschema.Draft{"draft 7": jsonschema.Draft7, "its $schema (2020-12)": nil} {
		t.Run(name, func(t *testing.T) {
			schema := compileChartSchema(t, draft)
			require.NoError(t, validateValues(schema, values), "%s does not match the chart's %s", helmValuesPath, chartSchema)
		})
	}

	// The schema does reject what the chart does not know.
	schema := compileChartSchema(t, jsonschema.Draft7)
	for _, tc := range []struct{ name, values, want string }{
		{"unknown top-level key", "mode: daemonset\nhostPID: true\n", "additional properties 'hostPID' not allowed"},
		{"unknown image key", "mode: daemonset\nimage: {name: x}\n", "additional properties 'name' not allowed"},
		{"bad pull policy", "mode: daemonset\nimage: {pullPolicy: Sometimes}\n", "value must be one of 'IfNotPresent', 'Always', 'Never'"},
		{"port without enabled", "mode: daemonset\nports: {otlp: {containerPort: 4317}}\n", "missing property 'enabled'"},
		{"probe port as name", "mode: daemonset\nlivenessProbe: {httpGet: {port: health}}\n", "want integer"},
		{"no mode", "image: {tag: x}\n", "missing property 'mode'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateValues(schema, []byte(tc.values))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The snippet deploys what the DaemonSet does: the same image, security
// context, env, host mounts, ports, probes, resources and tolerations, and
// exactly the ConfigMap's collector config.
func TestHelmValuesMatchDaemonSet(t *testing.T) {
	m := loadManifest(t)
	c := m.container(t)
	pod := m.daemonSet.Spec.Template.Spec
	v := loadHelmValues(t)
	image := readImageFacts(t)

	t.Run("mode", func(t *testing.T) {
		assert.Equal(t, "daemonset", v.Mode)
	})
	t.Run("image", func(t *testing.T) {
		assert.Equal(t, image.name, v.Image.Repository+":"+v.Image.Tag, "image.repository:image.tag is not the image make image builds")
		assert.Equal(t, c.ImagePullPolicy, v.Image.PullPolicy, "image.pullPolicy")
	})
	t.Run("command", func(t *testing.T) {
		// The chart runs /<command.name> --config=/conf/relay.yaml <extraArgs>.
		assert.Equal(t, image.entrypoint, []string{"/" + v.Command.Name}, "/<command.name> is not the image's ENTRYPOINT")
		var imageArgs []string
		for _, arg := range image.cmd {
			if !strings.HasPrefix(arg, "--config=") {
				imageArgs = append(imageArgs, arg)
			}
		}
		assert.Equal(t, imageArgs, v.Command.ExtraArgs, "command.extraArgs should be the image's CMD without its --config")
	})
	t.Run("serviceAccount", func(t *testing.T) {
		assert.True(t, v.ServiceAccount.Create, "serviceAccount.create")
		assert.Equal(t, pod.AutomountServiceAccountToken, v.ServiceAccount.AutomountServiceAccountToken, "serviceAccount.automountServiceAccountToken")
	})
	t.Run("securityContext", func(t *testing.T) {
		assertSecurityContext(t, v.SecurityContext)
		assert.Equal(t, *c.SecurityContext, v.SecurityContext, "securityContext differs from the DaemonSet's")
	})
	t.Run("env", func(t *testing.T) {
		assert.False(t, v.UseGOMEMLIMIT, "useGOMEMLIMIT would add a second GOMEMLIMIT")
		assert.Equal(t, c.Env, v.ExtraEnvs, "extraEnvs differ from the DaemonSet's env")
		assertEnvMatchesConfig(t, v.ExtraEnvs, v.alternateConfigText(t), []string{chartPodIPEnv})
	})
	t.Run("volumes", func(t *testing.T) {
		var volumes []corev1.Volume
		for _, vol := range pod.Volumes {
			if vol.ConfigMap == nil {
				volumes = append(volumes, vol)
			}
		}
		assert.Equal(t, volumes, v.ExtraVolumes, "extraVolumes differ from the DaemonSet's volumes (but its config)")
		var mounts []corev1.VolumeMount
		for _, mount := range c.VolumeMounts {
			if slices.ContainsFunc(volumes, func(vol corev1.Volume) bool { return vol.Name == mount.Name }) {
				mounts = append(mounts, mount)
			}
		}
		assert.Equal(t, mounts, v.ExtraVolumeMounts, "extraVolumeMounts differ from the DaemonSet's mounts (but its config)")
		rootPath := lookupString(t, "alternateConfig", v.AlternateConfig, "extensions.process_context.root_path")
		assertHostProcMount(t, v.ExtraVolumes, v.ExtraVolumeMounts, rootPath)
	})
	t.Run("ports", func(t *testing.T) {
		want := map[int32]int32{} // containerPort → hostPort
		for _, p := range c.Ports {
			want[p.ContainerPort] = p.HostPort
		}
		got := map[int32]int32{}
		for name, p := range v.Ports {
			if !p.Enabled {
				continue
			}
			assert.Equal(t, corev1.ProtocolTCP, p.Protocol, "ports.%s.protocol", name)
			got[p.ContainerPort] = p.HostPort
		}
		assert.Equal(t, want, got, "the enabled ports (containerPort: hostPort) differ from the DaemonSet's")
	})
	t.Run("probes", func(t *testing.T) {
		for name, tc := range map[string]struct {
			want *corev1.Probe
			got  helmProbe
		}{
			"livenessProbe":  {c.LivenessProbe, v.LivenessProbe},
			"readinessProbe": {c.ReadinessProbe, v.ReadinessProbe},
		} {
			require.NotNil(t, tc.want, "the DaemonSet has no %s", name)
			assert.Equal(t, tc.want.HTTPGet.Path, tc.got.HTTPGet.Path, "%s.httpGet.path", name)
			assert.Equal(t, resolvePort(t, c, tc.want.HTTPGet.Port), tc.got.HTTPGet.Port, "%s.httpGet.port", name)
			assert.Equal(t, tc.want.PeriodSeconds, tc.got.PeriodSeconds, "%s.periodSeconds", name)
			assert.Equal(t, tc.want.InitialDelaySeconds, tc.got.InitialDelaySeconds, "%s.initialDelaySeconds", name)
			assert.Equal(t, tc.want.TimeoutSeconds, tc.got.TimeoutSeconds, "%s.timeoutSeconds", name)
			assert.Equal(t, tc.want.FailureThreshold, tc.got.FailureThreshold, "%s.failureThreshold", name)
		}
	})
	t.Run("resources", func(t *testing.T) {
		assert.Equal(t, c.Resources.Requests.Cpu().String(), v.Resources.Requests.Cpu().String(), "resources.requests.cpu")
		assert.Equal(t, c.Resources.Requests.Memory().String(), v.Resources.Requests.Memory().String(), "resources.requests.memory")
		assert.Equal(t, c.Resources.Limits.Cpu().String(), v.Resources.Limits.Cpu().String(), "resources.limits.cpu")
		assert.Equal(t, c.Resources.Limits.Memory().String(), v.Resources.Limits.Memory().String(), "resources.limits.memory")
	})
	t.Run("tolerations", func(t *testing.T) {
		assert.Equal(t, pod.Tolerations, v.Tolerations)
	})
	t.Run("config", func(t *testing.T) {
		want := parseYAMLMap(t, "the ConfigMap's config", m.collectorConfig(t))
		assert.Equal(t, want, v.AlternateConfig, "alternateConfig is not the DaemonSet ConfigMap's config")
		// Helm drops null values of user values in places, and the chart
		// renders the config through tpl.
		assertNoNulls(t, "alternateConfig", v.AlternateConfig)
		assert.NotContains(t, v.alternateConfigText(t), "{{", "the chart renders alternateConfig with tpl: escape {{")
	})
}

// The listening ports of the snippet's config are its enabled ports.
func TestHelmPortsMatchConfig(t *testing.T) {
	v := loadHelmValues(t)
	var configPorts []int32
	for _, l := range listeners(t, v.AlternateConfig) {
		configPorts = append(configPorts, l.port)
	}
	var enabled []int32
	for _, p := range v.Ports {
		if p.Enabled {
			enabled = append(enabled, p.ContainerPort)
		}
	}
	assert.ElementsMatch(t, configPorts, enabled, "the enabled ports are not the ports alternateConfig listens on")

	healthPort, healthPath := healthCheck(t, v.AlternateConfig)
	for name, probe := range map[string]helmProbe{"livenessProbe": v.LivenessProbe, "readinessProbe": v.ReadinessProbe} {
		assert.Equal(t, healthPort, probe.HTTPGet.Port, "%s.httpGet.port is not healthcheckv2's", name)
		assert.Equal(t, healthPath, probe.HTTPGet.Path, "%s.httpGet.path is not healthcheckv2's status path", name)
	}
}

// assertNoNulls fails for every null value in a decoded YAML tree.
func assertNoNulls(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil:
		t.Errorf("%s is null: write {} (Helm may drop null values)", path)
	case map[string]any:
		for key, child := range v {
			assertNoNulls(t, path+"."+key, child)
		}
	case []any:
		for _, child := range v {
			assertNoNulls(t, path+"[]", child)
		}
	}
}
