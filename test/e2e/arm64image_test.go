// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// imageOf returns a reference to the image the manifest list image names
// for linux/arch (repository@digest: podman 4.3 takes a local list's image
// of this host's architecture whatever --arch says), failing when the list
// does not name one of every architecture make image builds.
func imageOf(t *testing.T, image, arch string) string {
	t.Helper()
	var list struct {
		Manifests []struct {
			Digest   string `json:"digest"`
			Platform struct {
				OS           string `json:"os"`
				Architecture string `json:"architecture"`
			} `json:"platform"`
		} `json:"manifests"`
	}
	out := podmanOut(t, "manifest", "inspect", image)
	require.NoError(t, json.Unmarshal([]byte(out), &list), "%s is no manifest list (make image leaves one):\n%s", image, out)
	digests := map[string]string{}
	for _, m := range list.Manifests {
		digests[m.Platform.OS+"/"+m.Platform.Architecture] = m.Digest
	}
	for _, want := range strings.Fields(pubtest.MakeVar(t, "ARCHES")) {
		require.Contains(t, digests, "linux/"+want, "the manifest list %s names no image for linux/%s:\n%s", image, want, out)
	}
	require.Contains(t, digests, "linux/"+arch)
	repository := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repository = image[:i]
	}
	return repository + "@" + digests["linux/"+arch]
}

// binfmtDir is where binfmt_misc is mounted.
const binfmtDir = "/proc/sys/fs/binfmt_misc"

// requireEmulation makes sure that the kernel runs executables of arch
// (qemu's name for it: aarch64) with Debian's qemu-user-static, also in a
// container: binfmt_misc mounted, and qemu-<arch> registered from
// /usr/lib/binfmt.d/qemu-<arch>.conf when it is not, which the test says
// (both stay for the machine's later runs: registering again is a no-op).
// The registration needs flag F, with which the kernel opens the
// interpreter when it is registered, so that a container, which has no
// qemu of its own, can use it; qemu-user-static's has it.
func requireEmulation(t *testing.T, arch string) {
	t.Helper()
	name := "qemu-" + arch
	conf := "/usr/lib/binfmt.d/" + name + ".conf"
	if _, err := os.Stat(filepath.Join(binfmtDir, "register")); errors.Is(err, os.ErrNotExist) {
		require.NoError(t, unix.Mount("binfmt_misc", binfmtDir, "binfmt_misc", 0, ""), "mount binfmt_misc on %s", binfmtDir)
		t.Logf("mounted binfmt_misc on %s", binfmtDir)
	}
	entry := filepath.Join(binfmtDir, name)
	if _, err := os.Stat(entry); errors.Is(err, os.ErrNotExist) {
		data, err := os.ReadFile(conf)
		if errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is missing: the %s image runs under Debian's qemu-user-static (apt-get install qemu-user-static; .ci/run installs it)", conf, arch)
		}
		require.NoError(t, err)
		var rule string
		for line := range strings.Lines(string(data)) {
			if strings.HasPrefix(line, ":") {
				rule = strings.TrimSpace(line)
			}
		}
		require.NotEmpty(t, rule, "%s has no binfmt_misc rule", conf)
		err = os.WriteFile(filepath.Join(binfmtDir, "register"), []byte(rule), 0)
		if err != nil && !errors.Is(err, unix.EEXIST) { // EEXIST: registered beside us
			t.Fatalf("register %s with binfmt_misc (%s): %v", name, conf, err)
		}
		t.Logf("registered %s with binfmt_misc from %s", name, conf)
	}
	data, err := os.ReadFile(entry)
	require.NoError(t, err)
	var enabled bool
	var interpreter, flags string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		switch key, value, _ := strings.Cut(sc.Text(), " "); key {
		case "enabled":
			enabled = true
		case "interpreter":
			interpreter = value
		case "flags:":
			flags = value
		}
	}
	require.True(t, enabled, "%s is registered but disabled (%s):\n%s", name, entry, data)
	require.Contains(t, flags, "F", "%s is registered without flag F, so a container cannot use its interpreter: register it from %s (qemu-user-static)", name, conf)
	// The interpreter runs inside the container with the container's files:
	// it must load no library.
	f, err := elf.Open(interpreter)
	require.NoError(t, err, "%s's interpreter", name)
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "%s's interpreter %s is not static: a container cannot run it (qemu-user-static's is)", name, interpreter)
	}
}

// The image's arm64 variant, run as the DaemonSet runs the image (the
// host's /proc at /hostfs/proc, root_path /hostfs, every capability dropped
// but those it documents, uid 10001), here on an amd64 host under qemu-user
// emulation: it reports a publisher of the host over OTLP. Under qemu-user
// the kernel's netlink and BPF are not translated, so the collector polls;
// the publisher starts once the collector is ready and is reported by a
// scan (collection_interval 1s). The bounds are on what emulation makes
// slow (the collector's start: minutes allowed, on a 2-core machine under
// load) and on the scans that follow (30 of them), not on this machine's
// speed otherwise.
func TestArm64Image(t *testing.T) {
	const arch = "arm64"
	image := imageOf(t, collectorImage(t), arch)
	assert.Equal(t, "linux/"+arch, podmanOut(t, "image", "inspect", "--format", "{{.Os}}/{{.Architecture}}", image))
	if runtime.GOARCH != arch {
		requireEmulation(t, "aarch64")
	}
	// Its journalctl (the journald receiver's) loads its libraries.
	// (--arch: the image's, which podman would otherwise warn is not
	// this host's.)
	version := podmanOut(t, "run", "--rm", "--arch", arch, "--network", "none", "--entrypoint", "/usr/bin/journalctl", image, "--version")
	assert.Regexp(t, `^systemd \d+ `, version, "journalctl --version in the %s image", arch)

	server := startOTLPServer(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	cfg := filepath.Join(dir, "config.yaml")
	config := `
extensions:
  process_context:
    root_path: /hostfs
    collection_interval: 1s
receivers:
  process_context:
` + pubtest.ExportingTo(server.addr) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))

	name := containerName("arm64")
	began := time.Now()
	podmanOut(t, "run", "-d", "--rm", "--arch", arch, "--name", name, "--network", "host",
		"--cap-drop", "all", "--cap-add", "SYS_PTRACE,DAC_READ_SEARCH,BPF,PERFMON", "--read-only",
		"-v", "/proc:/hostfs/proc:ro", "-v", cfg+":/etc/otelcol/config.yaml:ro", image)
	logs := containerLogs(t, name)
	pid := podmanOut(t, "inspect", "--format", "{{.State.Pid}}", name)
	if runtime.GOARCH != arch {
		// The container's process is qemu running the arm64 collector.
		exe, err := os.Readlink(fmt.Sprintf("/proc/%s/exe", pid))
		require.NoError(t, err)
		assert.Contains(t, exe, "qemu-aarch64", "the container's process")
	}
	require.Eventually(t, func() bool { return strings.Contains(logs(), "Everything is ready") },
		5*time.Minute, 200*time.Millisecond, "the emulated collector starts")
	t.Logf("the %s collector was ready after %s", arch, time.Since(began).Round(100*time.Millisecond))

	pub := pubtest.Start(t, pubtest.C, pubtest.Options{})
	pub.Publish(otep.EncodeStrings(map[string]string{"service.name": "host-publisher-seen-by-arm64"}))
	published := time.Now()
	events := waitEntityEventsWithin(t, server, pub.Pid, 1, 30*time.Second)
	t.Logf("its entity event came %s after the publication", time.Since(published).Round(100*time.Millisecond))
	assert.Equal(t, "host-publisher-seen-by-arm64", events[0].attrs["service.name"])
	assert.Equal(t, int64(pub.Pid), events[0].attrs["process.pid"])
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%s/stat", pid)); err == nil {
		// utime and stime, in clock ticks (100 a second), after the command's ")".
		if _, rest, ok := strings.Cut(string(stat), ") "); ok {
			var utime, stime int64
			f := strings.Fields(rest)
			if len(f) > 12 {
				_, _ = fmt.Sscan(f[11], &utime)
				_, _ = fmt.Sscan(f[12], &stime)
				t.Logf("the %s collector had used %.2f s of CPU", arch, float64(utime+stime)/100)
			}
		}
	}
	for line := range strings.Lines(logs()) {
		if _, said, ok := strings.Cut(line, "Process discovery: "); ok {
			said, _, _ = strings.Cut(said, "\t")
			t.Logf("the %s collector: %s", arch, said)
		}
	}
}
