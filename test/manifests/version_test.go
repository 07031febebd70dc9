// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

const (
	kustomizationPath = "../../deploy/kubernetes/kustomization.yaml"
	builderConfigPath = "../../builder-config.yaml"
	changelogPath     = "../../CHANGELOG.md"
)

// kustomization is what deploy/kubernetes/kustomization.yaml may hold.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// splitImage returns an image reference's name and tag.
func splitImage(t *testing.T, ref string) (string, string) {
	t.Helper()
	i := strings.LastIndex(ref, ":")
	require.True(t, i > strings.LastIndex(ref, "/"), "image %q has no tag", ref)
	return ref[:i], ref[i+1:]
}

// The kustomization deploys the DaemonSet and is where a user names the
// image: its one images entry matches the DaemonSet's image by name and
// sets, as shipped, the image make image builds.
func TestKustomizationSetsTheImage(t *testing.T) {
	data, err := os.ReadFile(kustomizationPath)
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, unmarshalStrictYAML(data, &k), "decoding %s", kustomizationPath)
	assert.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
	assert.Equal(t, "Kustomization", k.Kind)
	assert.Equal(t, []string{"daemonset.yaml"}, k.Resources)

	m := loadManifest(t)
	name, _ := splitImage(t, m.container(t).Image)
	require.Len(t, k.Images, 1, "one images entry: the collector's")
	assert.Equal(t, name, k.Images[0].Name, "the images entry does not match the DaemonSet's image by name")
	assert.Equal(t, readImageFacts(t).name, k.Images[0].NewName+":"+k.Images[0].NewTag,
		"newName:newTag is not the image make image builds (Makefile IMAGE)")
}

// One version everywhere a user meets it: builder-config.yaml's
// dist.version (what the collector reports) is the image's tag (the
// Makefile's IMAGE), the DaemonSet's, the Helm values' and the
// kustomization's, and the newest release of CHANGELOG.md. A release
// changes them together (docs/contributing.md, "Releasing").
func TestVersionsAgree(t *testing.T) {
	manifest, err := os.ReadFile(builderConfigPath)
	require.NoError(t, err)
	var builder struct {
		Dist struct {
			Version string `json:"version"`
		} `json:"dist"`
	}
	require.NoError(t, yaml.Unmarshal(manifest, &builder), "decoding %s", builderConfigPath)
	version := builder.Dist.Version
	require.NotEmpty(t, version, "%s has no dist.version", builderConfigPath)

	assert.Equal(t, version, pubtest.MakeVar(t, "VERSION"), "the Makefile's VERSION")
	_, tag := splitImage(t, readImageFacts(t).name)
	assert.Equal(t, version, tag, "the Makefile's IMAGE tag")
	_, tag = splitImage(t, loadManifest(t).container(t).Image)
	assert.Equal(t, version, tag, "the DaemonSet's image tag")
	assert.Equal(t, version, loadHelmValues(t).Image.Tag, "the Helm values' image.tag")

	changelog, err := os.ReadFile(changelogPath)
	require.NoError(t, err)
	releases := regexp.MustCompile(`(?m)^## \[(\d[^\]]*)\] - \d{4}-\d{2}-\d{2}$`).FindAllStringSubmatch(string(changelog), -1)
	require.NotEmpty(t, releases, "CHANGELOG.md has no release section (## [x.y.z] - YYYY-MM-DD)")
	assert.Equal(t, version, releases[0][1], "CHANGELOG.md's newest release")
	assert.Contains(t, string(changelog), "\n## [Unreleased]\n", "CHANGELOG.md has no [Unreleased] section for the next changes")
}
