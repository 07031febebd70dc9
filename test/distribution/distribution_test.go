// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// additionsMarker names, in examples/README.md, the YAML block of the
// recipes' components after it: the lines to add to the user's manifest,
// at the versions builder-config.yaml builds.
const additionsMarker = "<!-- recipe components: test/distribution checks them against builder-config.yaml -->"

// userManifest is the ocb manifest the README tells users to copy.
const userManifest = "examples/builder-config.yaml"

// unbuildableHere are modules the recipes name that this machine's module
// proxy cannot serve with their dependencies; the recipes using them are
// validated without them, and their sections checked against the
// module's configuration schema (see TestDistribution).
var unbuildableHere = map[string]string{
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/k8sattributesprocessor": "v1.4.x requires an unreleased go.opentelemetry.io/otel (semconv/v1.44.0), v1.3.x an internal/kubelet version the proxy does not serve",
}

// markedBlock returns the fenced YAML block that follows marker in the file.
func markedBlock(t *testing.T, path, marker string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var block strings.Builder
	state := 0 // 0: before the marker, 1: before the fence, 2: in the block
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(line) == marker:
			state = 1
		case state == 1 && strings.HasPrefix(line, "```yaml"):
			state = 2
		case state == 2 && strings.HasPrefix(line, "```"):
			return block.String()
		case state == 2:
			block.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("%s: no ```yaml block after %q", path, marker)
	return ""
}

// manifest is an ocb manifest, kept as YAML nodes' values.
type manifest map[string]any

func parseManifest(t *testing.T, text string) manifest {
	t.Helper()
	var m map[string]any // nested maps decode as map[string]any only then
	require.NoError(t, yaml.Unmarshal([]byte(text), &m), "%s", text)
	return m
}

// versions returns the version of each module the manifest names.
func (m manifest) versions() map[string]string {
	out := map[string]string{}
	for _, v := range m {
		entries, _ := v.([]any)
		for _, e := range entries {
			if c, ok := e.(map[string]any); ok {
				if g, ok := c["gomod"].(string); ok {
					if f := strings.Fields(g); len(f) == 2 {
						out[f[0]] = f[1]
					}
				}
			}
		}
	}
	return out
}

// build writes the manifest with the checkout and an output path in dir,
// builds it with ocb, and returns the binary.
func (m manifest) build(t *testing.T, dir string) string {
	t.Helper()
	builder := filepath.Join(goEnv(t, "GOPATH"), "bin", "builder")
	if _, err := os.Stat(builder); err != nil {
		t.Fatalf("%s is missing: run `make build` (make test does), which installs ocb", builder)
	}
	dist, _ := m["dist"].(map[string]any)
	require.NotNil(t, dist, "the manifest has a dist section")
	outputPath, _ := dist["output_path"].(string)
	dist["output_path"] = filepath.Join(dir, "build")
	// A relative replacement is relative to the manifest's output_path,
	// which the user's command resolves from the checkout's root.
	var replaces []any
	for _, r := range m["replaces"].([]any) {
		mod, target, _ := strings.Cut(r.(string), "=>")
		if target = strings.TrimSpace(target); !filepath.IsAbs(target) {
			target = filepath.Join(pubtest.RepoRoot(), outputPath, target)
		}
		replaces = append(replaces, strings.TrimSpace(mod)+" => "+target)
	}
	m["replaces"] = replaces
	out, err := yaml.Marshal(map[string]any(m))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "builder-config.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o644))

	// As the README says to build it: tools/build-collector.sh, which runs
	// ocb as the Makefile does (CGO_ENABLED=0; GOFLAGS=-e for test-only
	// modules a proxy may lack).
	cmd := exec.Command(filepath.Join(pubtest.RepoRoot(), "tools", "build-collector.sh"), builder, path)
	cmd.Dir = dir
	log, err := cmd.CombinedOutput()
	require.NoError(t, err, "tools/build-collector.sh %s %s:\n%s\nmanifest:\n%s", builder, path, log, out)
	bin := filepath.Join(dir, "build", dist["name"].(string))
	require.FileExists(t, bin)
	return bin
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// components returns, by kind, the component types a collector binary has.
func components(t *testing.T, bin string) map[string][]string {
	t.Helper()
	out, err := exec.Command(bin, "components").Output()
	require.NoError(t, err, "%s components", bin)
	var listed map[string]any
	require.NoError(t, yaml.Unmarshal(out, &listed))
	types := map[string][]string{}
	for _, kind := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		entries, _ := listed[kind].([]any)
		for _, e := range entries {
			types[kind] = append(types[kind], e.(map[string]any)["name"].(string))
		}
	}
	return types
}

// configComponents returns, by kind, the component types a collector
// configuration uses.
func configComponents(t *testing.T, config []byte) map[string][]string {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(config, &cfg))
	types := map[string][]string{}
	for _, kind := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		section, _ := cfg[kind].(map[string]any)
		for id := range section {
			typ, _, _ := strings.Cut(id, "/")
			types[kind] = append(types[kind], typ)
		}
	}
	return types
}

func covers(have, want map[string][]string) bool {
	for kind, types := range want {
		for _, typ := range types {
			if !slices.Contains(have[kind], typ) {
				return false
			}
		}
	}
	return true
}

func validate(t *testing.T, bin, config string) {
	t.Helper()
	out, err := exec.Command(bin, "validate", "--config", config, "--feature-gates=service.profilesSupport").CombinedOutput()
	require.NoError(t, err, "%s validate --config %s:\n%s", filepath.Base(bin), config, out)
}

// TestDistribution builds the ocb manifest users copy
// (examples/builder-config.yaml) as the README says; checks that the
// components examples/README.md tells them to add for the recipes are the
// ones this repository's distribution (bin/otelcol-processctx, which
// `make build` built from builder-config.yaml) is built with, at the same
// versions, or cannot be built here (checked against their schema); runs
// every recipe but k8sattributes.yaml on the distribution against the
// local backend; and validates every recipe and every complete
// configuration in a README with the distribution. No other collector is
// built: the distribution has the recipes' components.
func TestDistribution(t *testing.T) {
	root := pubtest.RepoRoot()
	dir := t.TempDir()
	ours := filepath.Join(root, "bin", "otelcol-processctx")
	if _, err := os.Stat(ours); err != nil {
		t.Fatalf("%s is missing: run `make build` (make test does)", ours)
	}

	manifestText, err := os.ReadFile(filepath.Join(root, userManifest))
	require.NoError(t, err)
	t.Run(userManifest, func(t *testing.T) {
		userBuild := parseManifest(t, string(manifestText)).build(t, filepath.Join(dir, "user"))
		have := components(t, userBuild)
		for kind, typ := range map[string]string{"extensions": "process_context", "receivers": "process_context", "processors": "process_context"} {
			assert.Contains(t, have[kind], typ, kind)
		}
		for kind, types := range map[string][]string{
			"receivers": {"otlp"}, "processors": {"batch", "memory_limiter"}, "exporters": {"otlp_grpc", "debug"},
		} {
			for _, typ := range types {
				assert.Contains(t, have[kind], typ, "%s: the core components", kind)
			}
		}
		// The default configuration runs on it, with no feature gate.
		out, err := exec.Command(userBuild, "validate", "--config", filepath.Join(root, "config.yaml")).CombinedOutput()
		require.NoError(t, err, "config.yaml on %s:\n%s", userManifest, out)
		// Recipes that need nothing else.
		validate(t, userBuild, filepath.Join(root, "examples", "entity-events.yaml"))
		validate(t, userBuild, hostRoot(t, filepath.Join(root, "examples", "containers.yaml"), filepath.Join(dir, "containers.yaml")))
		// Its converter refuses a pipeline without the extension, as ours does.
		noExtension := filepath.Join(dir, "no-extension.yaml")
		require.NoError(t, os.WriteFile(noExtension, []byte("processors: {process_context: {}}\nreceivers: {otlp: {protocols: {grpc: {}}}}\nexporters: {debug: {}}\n"+
			"service: {pipelines: {logs: {receivers: [otlp], processors: [process_context], exporters: [debug]}}}\n"), 0o644))
		out, err = exec.Command(userBuild, "validate", "--config", noExtension).CombinedOutput()
		require.Error(t, err, "%s", out)
		assert.Contains(t, string(out), "process_context processor: no process_context extension")
	})

	shipped := parseManifest(t, readFile(t, filepath.Join(root, "builder-config.yaml"))).versions()
	additions := parseManifest(t, markedBlock(t, filepath.Join(root, "examples", "README.md"), additionsMarker))
	for mod, version := range additions.versions() {
		assert.NotContains(t, string(manifestText), mod, "examples/README.md adds what "+userManifest+" lacks")
		if why, ok := unbuildableHere[mod]; ok {
			t.Logf("not built here: %s %s (%s)", mod, version, why)
			continue
		}
		assert.Equal(t, shipped[mod], version, "examples/README.md's %s is not the version builder-config.yaml builds", mod)
	}
	have := components(t, ours)

	t.Run("recipes against the local backend", func(t *testing.T) { runRecipesAgainstLocalBackend(t, ours) })

	examples, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	examples = slices.DeleteFunc(examples, func(p string) bool { return strings.HasSuffix(p, filepath.FromSlash(userManifest)) })
	for _, path := range examples {
		t.Run(filepath.Base(path), func(t *testing.T) {
			config, err := os.ReadFile(path)
			require.NoError(t, err)
			used := configComponents(t, config)
			header := strings.Join(strings.Fields(strings.ReplaceAll(string(config), "#", "")), " ")
			if covers(have, used) {
				assert.Contains(t, header, "The distribution of this repository (builder-config.yaml) has every component used here.", "the recipe says it runs on this distribution")
			} else {
				assert.NotContains(t, header, "has every component used here", "the recipe says it runs on this distribution, which lacks some of its components")
				path = withoutUnbuildable(t, config, have, filepath.Join(dir, filepath.Base(path)))
			}
			validate(t, ours, hostRoot(t, path, filepath.Join(dir, "host-"+filepath.Base(path))))
		})
	}

	readmes := []string{"README.md", "examples/README.md", "receiver/processctxreceiver/README.md",
		"processor/processctxprocessor/README.md", "extension/processctxextension/README.md"}
	for _, name := range readmes {
		for i, block := range configBlocks(t, filepath.Join(root, name)) {
			t.Run(fmt.Sprintf("%s block %d", name, i+1), func(t *testing.T) {
				path := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", strings.ReplaceAll(name, "/", "_"), i))
				require.NoError(t, os.WriteFile(path, []byte(block), 0o644))
				validate(t, ours, hostRoot(t, path, path))
			})
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// hostRoot writes, at to, the configuration at path with a root_path of a
// container (/hostfs) replaced by this host's "/" (validate checks that
// root_path holds the host's procfs, on the machine it runs on), and
// returns where the configuration to validate is.
func hostRoot(t *testing.T, path, to string) string {
	t.Helper()
	config := readFile(t, path)
	if !strings.Contains(config, "root_path: /hostfs\n") {
		return path
	}
	require.NoError(t, os.WriteFile(to, []byte(strings.ReplaceAll(config, "root_path: /hostfs\n", "root_path: /\n")), 0o644))
	return to
}

// configBlocks returns the ```yaml blocks of a Markdown file that are
// complete collector configurations (they have a service section with
// pipelines; the lines to add for the extension are not one).
func configBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var blocks []string
	for _, part := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if (strings.Contains(block, "\nservice:") || strings.HasPrefix(block, "service:")) && strings.Contains(block, "  pipelines:") {
			blocks = append(blocks, block)
		}
	}
	return blocks
}

// withoutUnbuildable writes the configuration without the processors the
// recipes' collector lacks (modules of unbuildableHere), after checking
// their sections against their modules' configuration schemas, and returns
// its path.
func withoutUnbuildable(t *testing.T, config []byte, have map[string][]string, path string) string {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(config, &cfg))
	processors, _ := cfg["processors"].(map[string]any)
	removed := map[string]bool{}
	for id, section := range processors {
		typ, _, _ := strings.Cut(id, "/")
		if slices.Contains(have["processors"], typ) {
			continue
		}
		schema, ok := knownSchemas[typ]
		require.True(t, ok, "processor %s is neither in the recipes' collector nor checked by schema", typ)
		checkAgainstSchema(t, schema(t), section, id)
		delete(processors, id)
		removed[id] = true
	}
	pipelines := cfg["service"].(map[string]any)["pipelines"].(map[string]any)
	for _, p := range pipelines {
		pm := p.(map[string]any)
		list, _ := pm["processors"].([]any)
		pm["processors"] = slices.DeleteFunc(list, func(v any) bool { return removed[v.(string)] })
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}
