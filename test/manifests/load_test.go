// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// Paths from this package's directory, where go test runs.
const (
	daemonSetPath  = "../../deploy/kubernetes/daemonset.yaml"
	helmValuesPath = "../../deploy/helm/values.yaml"
	containerfile  = "../../Containerfile"
	collectorPath  = "../../bin/otelcol-processctx"
	chartSchema    = "testdata/opentelemetry-collector.values.schema.json"
)

// documentedCapabilities are the capabilities the README and the
// DaemonSet's comment document: reading other processes (SYS_PTRACE,
// DAC_READ_SEARCH) and loading the eBPF program that reports publications
// (BPF, PERFMON).
func documentedCapabilities() []corev1.Capability {
	return []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH", "BPF", "PERFMON"}
}

// manifest holds the objects of deploy/kubernetes/daemonset.yaml, each
// decoded strictly.
type manifest struct {
	namespace      *corev1.Namespace
	serviceAccount *corev1.ServiceAccount
	configMap      *corev1.ConfigMap
	daemonSet      *appsv1.DaemonSet
}

// container is the DaemonSet's only container.
func (m manifest) container(t *testing.T) corev1.Container {
	t.Helper()
	containers := m.daemonSet.Spec.Template.Spec.Containers
	require.Len(t, containers, 1, "the DaemonSet should run exactly one container")
	return containers[0]
}

// collectorConfig is config.yaml of the ConfigMap, as text.
func (m manifest) collectorConfig(t *testing.T) string {
	t.Helper()
	config, ok := m.configMap.Data[configKey]
	require.True(t, ok, "ConfigMap %s has no %s", m.configMap.Name, configKey)
	return config
}

// configKey is the ConfigMap's key holding the collector config.
const configKey = "config.yaml"

// splitDocuments returns the non-empty YAML documents of a multi-document
// file.
func splitDocuments(data []byte) ([][]byte, error) {
	reader := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var probe map[string]any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, err
		}
		if len(probe) > 0 {
			docs = append(docs, doc)
		}
	}
}

// decodeStrict decodes one Kubernetes object into the API type its
// apiVersion and kind name with apimachinery's strict deserializer, as
// the API server's strict field validation does: unknown fields (matched
// case-sensitively) and duplicate fields are errors.
func decodeStrict(doc []byte) (runtime.Object, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	switch meta.GroupVersionKind().String() {
	case "/v1, Kind=Namespace", "/v1, Kind=ServiceAccount", "/v1, Kind=ConfigMap", "apps/v1, Kind=DaemonSet":
	default:
		return nil, fmt.Errorf("unexpected object apiVersion %q kind %q", meta.APIVersion, meta.Kind)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := appsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	// In strict mode an object with unknown fields is decoded and returned
	// with the error: the error decides.
	obj, _, err := decoder.Decode(doc, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", meta.Kind, meta.APIVersion, err)
	}
	return obj, nil
}

// unmarshalStrictYAML decodes YAML into v as the API machinery decodes
// objects: field names matched case-sensitively, unknown and duplicate
// fields errors (sigs.k8s.io/yaml's UnmarshalStrict matches names without
// regard to case, as encoding/json does).
func unmarshalStrictYAML(data []byte, v any) error {
	asJSON, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(asJSON, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// loadManifest decodes every document of the DaemonSet manifest strictly
// and requires each kind exactly once.
func loadManifest(t *testing.T) manifest {
	t.Helper()
	data, err := os.ReadFile(daemonSetPath)
	require.NoError(t, err)
	docs, err := splitDocuments(data)
	require.NoError(t, err, "splitting %s", daemonSetPath)

	var m manifest
	seen := map[string]int{}
	for i, doc := range docs {
		obj, err := decodeStrict(doc)
		require.NoError(t, err, "document %d of %s", i+1, daemonSetPath)
		switch o := obj.(type) {
		case *corev1.Namespace:
			m.namespace = o
		case *corev1.ServiceAccount:
			m.serviceAccount = o
		case *corev1.ConfigMap:
			m.configMap = o
		case *appsv1.DaemonSet:
			m.daemonSet = o
		}
		seen[fmt.Sprintf("%T", obj)]++
	}
	for kind, n := range seen {
		require.Equal(t, 1, n, "%s holds %d objects of type %s, want one", daemonSetPath, n, kind)
	}
	require.NotNil(t, m.namespace, "%s has no Namespace", daemonSetPath)
	require.NotNil(t, m.serviceAccount, "%s has no ServiceAccount", daemonSetPath)
	require.NotNil(t, m.configMap, "%s has no ConfigMap", daemonSetPath)
	require.NotNil(t, m.daemonSet, "%s has no DaemonSet", daemonSetPath)
	return m
}

// imageFacts is what `make image` builds: its name (the Makefile's IMAGE)
// and the Containerfile's instructions.
type imageFacts struct {
	name       string
	entrypoint []string
	cmd        []string
	expose     []int32
}

// configPath is the --config of the image's CMD.
func (f imageFacts) configPath(t *testing.T) string {
	t.Helper()
	path, ok := configArg(f.cmd)
	require.True(t, ok, "the image's CMD %q has no --config", f.cmd)
	return path
}

// fallbackImage is the image as `make image` is specified to build it;
// used only where the Makefile or the Containerfile does not say (each use
// is logged).
func fallbackImage() imageFacts {
	return imageFacts{
		name:       "localhost/otelcol-processctx:0.1.0",
		entrypoint: []string{"/otelcol-processctx"},
		cmd:        []string{"--config=/etc/otelcol/config.yaml", "--feature-gates=service.profilesSupport"},
		expose:     []int32{4317, 4318, 13133},
	}
}

// readImageFacts reads the image's name from the Makefile (its IMAGE, as
// make computes it) and its ENTRYPOINT, CMD and EXPOSE from the
// Containerfile.
func readImageFacts(t *testing.T) imageFacts {
	t.Helper()
	facts := fallbackImage()

	if name := pubtest.MakeVar(t, "IMAGE"); name != "" {
		facts.name = name
	} else {
		t.Logf("the Makefile defines no IMAGE: assuming the image is %s", facts.name)
	}

	data, err := os.ReadFile(containerfile)
	if errors.Is(err, os.ErrNotExist) {
		t.Logf("no Containerfile: assuming ENTRYPOINT %q, CMD %q, EXPOSE %v", facts.entrypoint, facts.cmd, facts.expose)
		return facts
	}
	require.NoError(t, err)
	instructions, err := parseContainerfile(data)
	require.NoError(t, err, "parsing %s", containerfile)
	for _, in := range []string{"ENTRYPOINT", "CMD", "EXPOSE"} {
		require.Contains(t, instructions, in, "%s has no %s", containerfile, in)
	}
	require.NoError(t, json.Unmarshal([]byte(instructions["ENTRYPOINT"]), &facts.entrypoint),
		"%s: ENTRYPOINT must be an exec-form JSON array", containerfile)
	require.NoError(t, json.Unmarshal([]byte(instructions["CMD"]), &facts.cmd),
		"%s: CMD must be an exec-form JSON array", containerfile)
	facts.expose = nil
	for _, field := range strings.Fields(instructions["EXPOSE"]) {
		port, err := strconv.ParseInt(strings.TrimSuffix(field, "/tcp"), 10, 32)
		require.NoError(t, err, "%s: EXPOSE %s", containerfile, field)
		facts.expose = append(facts.expose, int32(port))
	}
	return facts
}

// parseContainerfile returns the arguments of each instruction (the last
// one of each, as the image keeps), with continuation lines joined and
// comments dropped.
func parseContainerfile(data []byte) (map[string]string, error) {
	instructions := map[string]string{}
	var line strings.Builder
	for _, raw := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && line.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			line.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		line.WriteString(trimmed)
		full := strings.TrimSpace(line.String())
		line.Reset()
		if full == "" {
			continue
		}
		keyword, args, _ := strings.Cut(full, " ")
		instructions[strings.ToUpper(keyword)] = strings.TrimSpace(args)
	}
	if line.Len() > 0 {
		return nil, errors.New("the last instruction ends with a line continuation")
	}
	return instructions, nil
}

// configArg returns the value of a --config=… argument.
func configArg(args []string) (string, bool) {
	for _, arg := range args {
		if path, ok := strings.CutPrefix(arg, "--config="); ok {
			return path, true
		}
	}
	return "", false
}

// parseYAMLMap decodes a YAML mapping as unmarshalStrictYAML does (JSON
// types, integers as int64), duplicate keys being errors.
func parseYAMLMap(t *testing.T, what, text string) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, unmarshalStrictYAML([]byte(text), &out), "parsing %s", what)
	require.NotEmpty(t, out, "%s is empty", what)
	return out
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// referencedEnv lists the environment variables a collector config names
// with ${env:NAME}, sorted.
func referencedEnv(config string) []string {
	set := map[string]bool{}
	for _, m := range envRef.FindAllStringSubmatch(config, -1) {
		set[m[1]] = true
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// listener is an address a collector config listens on: an endpoint under
// receivers or extensions (exporters' endpoints are where it sends).
type listener struct {
	path string // where in the config, e.g. receivers.otlp.protocols.grpc
	host string
	port int32
}

// listeners walks the receivers and extensions of a collector config for
// every "endpoint".
func listeners(t *testing.T, config map[string]any) []listener {
	t.Helper()
	var out []listener
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for key, child := range v {
				if s, ok := child.(string); ok && key == "endpoint" {
					i := strings.LastIndex(s, ":")
					require.True(t, i >= 0, "%s.endpoint %q has no port", path, s)
					port, err := strconv.ParseInt(s[i+1:], 10, 32)
					require.NoError(t, err, "%s.endpoint %q", path, s)
					out = append(out, listener{path: path, host: s[:i], port: int32(port)})
					continue
				}
				walk(path+"."+key, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), child)
			}
		}
	}
	for _, section := range []string{"receivers", "extensions"} {
		walk(section, config[section])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].port < out[j].port })
	return out
}

// lookup returns the value at a dotted path of a decoded YAML mapping.
func lookup(v any, path string) (any, bool) {
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// lookupString is lookup for a string value.
func lookupString(t *testing.T, what string, v any, path string) string {
	t.Helper()
	got, ok := lookup(v, path)
	require.True(t, ok, "%s has no %s", what, path)
	s, ok := got.(string)
	require.True(t, ok, "%s: %s is %T, want a string", what, path, got)
	return s
}
