// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// testEnv set to 1 runs TestRelease (make release-test sets it).
const testEnv = "PROCESSCTX_RELEASE_TEST"

const name = "otelcol-processctx"

// makeRelease runs make release with args in the repository and returns
// its output and error.
func makeRelease(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "release"}, args...)...)
	cmd.Dir = pubtest.RepoRoot()
	// Not the caller's make variables (make test VERSION=…, a CI's VERSION):
	// only what the test passes.
	for _, kv := range os.Environ() {
		switch key, _, _ := strings.Cut(kv, "="); key {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VERSION", "REGISTRY", "IMAGE", "REVISION", "RELEASE_DIR", "RELEASE_ALLOW_DIRTY":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// What make release refuses, it refuses before it builds anything, with a
// message that says what to do.
func TestReleaseRefuses(t *testing.T) {
	version := pubtest.MakeVar(t, "VERSION")
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "earlier"), nil, 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no version", nil, "make release needs the version: make release VERSION=x.y.z"},
		{"not a version", []string{"VERSION=1.2"}, "VERSION=1.2 is not a version x.y.z"},
		{"not the manifest's version", []string{"VERSION=9.9.9"}, "builder-config.yaml's dist.version is " + version + ", not 9.9.9"},
		{"a directory with files", []string{"VERSION=" + version, "RELEASE_DIR=" + full}, full + " is not empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"RELEASE_DIR=" + filepath.Join(t.TempDir(), "never")}, tc.args...)
			out, err := makeRelease(t, []string{"RELEASE_ALLOW_DIRTY=1"}, args...)
			require.Error(t, err, "make release succeeded:\n%s", out)
			assert.Contains(t, out, tc.want)
			assert.NotContains(t, out, "building for", "it built before refusing")
		})
	}
	entries, err := os.ReadDir(full)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "make release changed a directory it refused")
}

// A release into a temporary directory: every artifact there, checksummed,
// for both architectures, the image tagged and labelled, the notes from
// the changelog.
func TestRelease(t *testing.T) {
	if os.Getenv(testEnv) != "1" {
		t.Skipf("builds the collector for two architectures (minutes): %s=1, or make release-test", testEnv)
	}
	pubtest.RequireRoot(t) // podman, as root on this kind of machine (.ci/run)
	version := pubtest.MakeVar(t, "VERSION")
	root := pubtest.RepoRoot()
	dir := filepath.Join(t.TempDir(), "release")
	// An image name of the test's own, not the one make image and the
	// container tests use.
	registry := "localhost/processctx-release-test"
	image := registry + "/" + name + ":" + version
	arches := strings.Fields(pubtest.MakeVar(t, "ARCHES"))
	t.Cleanup(func() {
		// make image's manifest list, and the image of each architecture.
		_ = exec.Command("podman", "manifest", "rm", image).Run()
		for _, arch := range arches {
			_ = exec.Command("podman", "rmi", "--force", image+"-"+arch).Run()
		}
	})

	began := time.Now()
	out, err := makeRelease(t, []string{"RELEASE_ALLOW_DIRTY=1"}, "VERSION="+version, "REGISTRY="+registry, "RELEASE_DIR="+dir)
	require.NoError(t, err, "make release:\n%s", out)
	t.Logf("make release took %s", time.Since(began).Round(time.Second))

	assert.ElementsMatch(t, []string{"amd64", "arm64"}, arches, "the Makefile's ARCHES")
	archives := []string{name + "_" + version + "_linux_amd64.tar.gz", name + "_" + version + "_linux_arm64.tar.gz"}
	imageArchive := name + "_" + version + "_image.tar"
	var files []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		files = append(files, e.Name())
	}
	assert.ElementsMatch(t, append([]string{"SHA256SUMS", "RELEASE_NOTES.md", imageArchive}, archives...), files)

	t.Run("checksums", func(t *testing.T) {
		check := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
		check.Dir = dir
		out, err := check.CombinedOutput()
		require.NoError(t, err, "sha256sum -c:\n%s", out)
		for _, f := range append([]string{imageArchive}, archives...) {
			assert.Contains(t, string(out), f+": OK")
		}
	})

	for _, arch := range []string{"amd64", "arm64"} {
		t.Run("archive "+arch, func(t *testing.T) {
			top := name + "_" + version + "_linux_" + arch
			got := untar(t, filepath.Join(dir, top+".tar.gz"), t.TempDir())
			for _, f := range []string{name, "ctxdump", "ctxpublisher", "LICENSE", "LICENSES/BSD-2-Clause.txt", "LICENSES/GPL-2.0-only.txt", "README.md", "CHANGELOG.md"} {
				assert.Contains(t, got.names, top+"/"+f)
			}
			machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
			for _, bin := range []string{name, "ctxdump", "ctxpublisher"} {
				path := filepath.Join(got.dir, top, bin)
				assertStaticELF(t, path, machine)
				info, err := os.Stat(path)
				require.NoError(t, err)
				assert.NotZero(t, info.Mode()&0o111, "%s is not executable", bin)
			}
			if arch == runtime.GOARCH {
				out, err := exec.Command(filepath.Join(got.dir, top, name), "--version").CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Equal(t, name+" version "+version, strings.TrimSpace(string(out)))
			}
		})
	}

	t.Run("image", func(t *testing.T) {
		out, err := exec.Command("podman", "image", "inspect", "--format", "{{json .Labels}}", image).CombinedOutput()
		require.NoError(t, err, "podman image inspect %s: %s", image, out)
		var labels map[string]string
		require.NoError(t, json.Unmarshal(out, &labels), "%s", out)
		assert.Equal(t, version, labels["org.opencontainers.image.version"])
		assert.Equal(t, "https://github.com/processctx/otelcol-processctx", labels["org.opencontainers.image.source"])
		assert.Equal(t, "Apache-2.0 AND (GPL-2.0-only OR BSD-2-Clause)", labels["org.opencontainers.image.licenses"])
		assert.Equal(t, revision(t, root), labels["org.opencontainers.image.revision"])

		// make image's manifest list names both architectures; the archive
		// holds it as an OCI index, named as the image, and both images,
		// each with its architecture's collector and journalctl.
		platforms := manifestListPlatforms(t, image)
		assert.ElementsMatch(t, []string{"linux/amd64", "linux/arm64"}, platforms, "podman manifest inspect %s", image)

		ref, images := readOCIArchive(t, filepath.Join(dir, imageArchive))
		assert.Equal(t, image, ref, "the archive's index names the image")
		require.Len(t, images, 2, "the archive's index names one image per architecture")
		for _, arch := range []string{"amd64", "arm64"} {
			img, ok := images["linux/"+arch]
			if !assert.True(t, ok, "the archive's index names no linux/%s image", arch) {
				continue
			}
			assert.Equal(t, arch, img.config.Architecture, "linux/%s: the config's architecture", arch)
			assert.Equal(t, version, img.config.Config.Labels["org.opencontainers.image.version"], "linux/%s", arch)
			assert.Equal(t, revision(t, root), img.config.Config.Labels["org.opencontainers.image.revision"], "linux/%s", arch)
			machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
			for _, file := range []string{name, "usr/bin/journalctl"} {
				data, ok := img.files[file]
				if !assert.True(t, ok, "linux/%s: the image has no /%s", arch, file) {
					continue
				}
				f, err := elf.NewFile(bytes.NewReader(data))
				require.NoError(t, err, "linux/%s: /%s is no ELF file", arch, file)
				assert.Equal(t, machine, f.Machine, "linux/%s: /%s", arch, file)
			}
		}
	})

	t.Run("notes", func(t *testing.T) {
		notes, err := os.ReadFile(filepath.Join(dir, "RELEASE_NOTES.md"))
		require.NoError(t, err)
		changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
		require.NoError(t, err)
		text := string(notes)
		assert.True(t, strings.HasPrefix(text, "# "+name+" "+version+"\n"), "the notes' title:\n%s", text)
		assert.Contains(t, text, "\n## Added\n", "the changelog section's subsections")
		assert.Contains(t, string(changelog), firstEntry(t, text), "the notes' first entry is not the changelog's")
		assert.NotContains(t, text, "[Unreleased]", "the notes reach past the version's section")
		sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
			sum, file, _ := strings.Cut(line, "  ")
			assert.Contains(t, text, "| `"+file+"` | `"+sum+"` |")
		}
	})
}

// manifestListPlatforms is what podman's manifest list image names.
func manifestListPlatforms(t *testing.T, image string) []string {
	t.Helper()
	out, err := exec.Command("podman", "manifest", "inspect", image).CombinedOutput()
	require.NoError(t, err, "podman manifest inspect %s: %s", image, out)
	var list ociIndex
	require.NoError(t, json.Unmarshal(out, &list), "%s", out)
	var platforms []string
	for _, m := range list.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	return platforms
}

// ociIndex is an OCI image index (or a Docker manifest list, which has
// the same fields).
type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// ociImage is one platform's image in an OCI archive: its config, and the
// files of its layers that readOCIArchive keeps (the collector,
// journalctl).
type ociImage struct {
	config struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			Labels map[string]string `json:"Labels"`
		} `json:"config"`
	}
	files map[string][]byte
}

// readOCIArchive reads an OCI archive whose index.json names one image
// index: that index's name (org.opencontainers.image.ref.name) and the
// image of each platform it names, by "os/architecture".
func readOCIArchive(t *testing.T, path string) (string, map[string]ociImage) {
	t.Helper()
	dir := t.TempDir()
	got := untar(t, path, dir)
	require.Contains(t, got.names, "oci-layout", "the image archive is no OCI archive")
	var top ociIndex
	readJSON(t, filepath.Join(dir, "index.json"), &top)
	require.Len(t, top.Manifests, 1, "index.json names one image index")
	require.Equal(t, "application/vnd.oci.image.index.v1+json", top.Manifests[0].MediaType, "index.json names an image index")
	blob := func(d string) string {
		algorithm, hex, ok := strings.Cut(d, ":")
		require.True(t, ok, "digest %q", d)
		return filepath.Join(dir, "blobs", algorithm, hex)
	}
	var index ociIndex
	readJSON(t, blob(top.Manifests[0].Digest), &index)
	images := map[string]ociImage{}
	for _, m := range index.Manifests {
		var manifest struct {
			Config ociDescriptor   `json:"config"`
			Layers []ociDescriptor `json:"layers"`
		}
		readJSON(t, blob(m.Digest), &manifest)
		img := ociImage{files: map[string][]byte{}}
		readJSON(t, blob(manifest.Config.Digest), &img.config)
		for _, layer := range manifest.Layers {
			readLayer(t, blob(layer.Digest), strings.HasSuffix(layer.MediaType, "+gzip"), img.files, name, "usr/bin/journalctl")
		}
		images[m.Platform.OS+"/"+m.Platform.Architecture] = img
	}
	return top.Manifests[0].Annotations["org.opencontainers.image.ref.name"], images
}

// readLayer puts the contents of a layer's files named in keep into files.
func readLayer(t *testing.T, path string, gzipped bool, files map[string][]byte, keep ...string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if gzipped {
		gz, err := gzip.NewReader(f)
		require.NoError(t, err, "layer %s", path)
		defer func() { _ = gz.Close() }()
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "layer %s", path)
		if n := strings.TrimPrefix(filepath.Clean(h.Name), "/"); h.Typeflag == tar.TypeReg && slices.Contains(keep, n) {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[n] = data
		}
	}
}

// readJSON decodes the JSON file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s: %s", path, data)
}

// revision is the commit a release of this work tree is labelled with.
func revision(t *testing.T, root string) string {
	t.Helper()
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	status, err := exec.Command("git", "-C", root, "status", "--porcelain").Output()
	require.NoError(t, err)
	rev := strings.TrimSpace(string(head))
	if len(strings.TrimSpace(string(status))) > 0 {
		rev += "-dirty"
	}
	return rev
}

// firstEntry is the first list item of release notes.
func firstEntry(t *testing.T, notes string) string {
	t.Helper()
	for _, line := range strings.Split(notes, "\n") {
		if strings.HasPrefix(line, "- ") {
			return line
		}
	}
	t.Fatalf("the notes have no entry:\n%s", notes)
	return ""
}

// unpacked is what untar found in an archive.
type unpacked struct {
	dir   string
	names []string
}

// untar lists a tar archive (gzip-compressed when its name says so) and,
// when dir is not empty, writes its regular files there.
func untar(t *testing.T, path, dir string) unpacked {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		require.NoError(t, err)
		defer func() { assert.NoError(t, gz.Close(), "%s: gzip trailer", path) }()
		r = gz
	}
	got := unpacked{dir: dir}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "reading %s", path)
		clean := filepath.Clean(h.Name)
		require.False(t, filepath.IsAbs(clean) || strings.HasPrefix(clean, ".."), "%s: entry %q leaves the directory", path, h.Name)
		got.names = append(got.names, strings.TrimSuffix(h.Name, "/"))
		if dir == "" || h.Typeflag != tar.TypeReg {
			continue
		}
		dest := filepath.Join(dir, clean)
		require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
		out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
		require.NoError(t, err)
		_, err = io.Copy(out, tr)
		require.NoError(t, errors.Join(err, out.Close()))
	}
	slices.Sort(got.names)
	return got
}

// assertStaticELF checks that path is a Linux executable for machine that
// loads no shared library.
func assertStaticELF(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err, "%s is not an ELF file", path)
	defer func() { _ = f.Close() }()
	assert.Equal(t, machine, f.Machine, "%s", path)
	assert.Equal(t, elf.ET_EXEC, f.Type, "%s is not an executable", path)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s asks for a dynamic loader: not static", path)
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs, "%s loads shared libraries", path)
}
