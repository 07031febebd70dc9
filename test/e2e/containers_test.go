// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// imageEnv names the image the container tests run, when set (make test
// sets it to the Makefile's IMAGE); otherwise they run the Makefile's IMAGE.
const imageEnv = "PROCESSCTX_IMAGE"

// collectorImage is the image `make image` builds, which the test needs.
func collectorImage(t *testing.T) string {
	t.Helper()
	image := os.Getenv(imageEnv)
	if image == "" {
		image = pubtest.MakeVar(t, "IMAGE")
		require.NotEmpty(t, image, "the Makefile defines no IMAGE")
	}
	if exec.Command(podman(t), "image", "exists", image).Run() != nil {
		t.Fatalf("%s is missing: run `make image` (make test does; %s=<name> tests another)", image, imageEnv)
	}
	return image
}

// podman returns the podman binary; the container tests need it, as root
// (.ci/run installs it and configures it for this VM: runc, cgroupfs, no
// default ulimits).
func podman(t *testing.T) string {
	t.Helper()
	pubtest.RequireRoot(t)
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is required for the container tests (apt-get install podman runc; see .ci/run): %v", err)
	}
	return bin
}

// podmanOut runs podman and returns its trimmed output.
func podmanOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(podman(t), args...).CombinedOutput()
	require.NoError(t, err, "podman %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// testImage builds an image FROM scratch holding files (source path →
// path in the image) with entrypoint, tagged by the content's hash so that
// an unchanged image is built once.
func testImage(t *testing.T, name string, files map[string]string, entrypoint ...string) string {
	t.Helper()
	srcs := make([]string, 0, len(files))
	for src := range files {
		srcs = append(srcs, src)
	}
	slices.Sort(srcs)
	h := sha256.New()
	for _, src := range srcs {
		f, err := os.Open(src)
		require.NoError(t, err)
		fmt.Fprintf(h, "%s\x00", files[src])
		_, err = io.Copy(h, f)
		_ = f.Close()
		require.NoError(t, err)
	}
	fmt.Fprintf(h, "%q", entrypoint)
	tag := fmt.Sprintf("localhost/processctx-e2e-%s:%s", name, hex.EncodeToString(h.Sum(nil))[:12])
	if exec.Command(podman(t), "image", "exists", tag).Run() == nil {
		return tag
	}
	dir := t.TempDir()
	var containerfile strings.Builder
	containerfile.WriteString("FROM scratch\n")
	for _, src := range srcs {
		dst := files[src]
		base := filepath.Base(dst)
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, base), data, 0o755))
		fmt.Fprintf(&containerfile, "COPY %s %s\n", base, dst)
	}
	quoted := make([]string, len(entrypoint))
	for i, e := range entrypoint {
		quoted[i] = strconv.Quote(e)
	}
	fmt.Fprintf(&containerfile, "ENTRYPOINT [%s]\n", strings.Join(quoted, ", "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(containerfile.String()), 0o644))
	podmanOut(t, "build", "--quiet", "--tag", tag, dir)
	return tag
}

// publisherImage is the C reference publisher, linked statically.
func publisherImage(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cpub")
	cc := exec.Command("gcc", "-O2", "-static", "-pthread", "-std=gnu11", "-o", bin,
		filepath.Join(pubtest.RepoRoot(), "testdata", "cpublisher", "publisher.c"))
	out, err := cc.CombinedOutput()
	require.NoError(t, err, "build the static C publisher: %s", out)
	return testImage(t, "cpub", map[string]string{bin: "/cpub"}, "/cpub")
}

// otlpSendImage is test/e2e/testdata/otlpsend, a static OTLP client.
func otlpSendImage(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "otlpsend")
	build := exec.Command("go", "build", "-o", bin, "./test/e2e/testdata/otlpsend")
	build.Dir = pubtest.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build otlpsend: %s", out)
	return testImage(t, "otlpsend", map[string]string{bin: "/otlpsend"}, "/otlpsend")
}

// containerName is a name of its own for each container a test starts.
func containerName(what string) string {
	return fmt.Sprintf("pctx-e2e-%s-%d-%d", what, os.Getpid(), time.Now().UnixNano()%1e9)
}

// containerized is a publisher in a container of its own.
type containerized struct {
	*pubtest.Proc
	id      string // the runtime's container id
	hostPid int
}

// startContainerizedPublisher runs the C publisher in a podman container
// (its own pid namespace: it is pid 1 there) driven over stdin, and
// publishes service.
func startContainerizedPublisher(t *testing.T, image, service string) *containerized {
	t.Helper()
	name := containerName("pub")
	cmd := exec.Command(podman(t), "run", "--rm", "-i", "--network", "none", "--name", name, image)
	p := pubtest.StartCommand(t, pubtest.C, cmd)
	t.Cleanup(func() { _ = exec.Command(podman(t), "rm", "-f", "-t", "0", name).Run() })
	require.Equal(t, 1, p.Pid, "pid 1 in its container")
	fields := strings.Fields(podmanOut(t, "inspect", "--format", "{{.Id}} {{.State.Pid}}", name))
	require.Len(t, fields, 2)
	hostPid, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": service}))
	return &containerized{Proc: p, id: fields[0], hostPid: hostPid}
}

// containersConfig: the extension on rootPath, the receiver's entity
// events and the processor's enriched OTLP logs to server.
func containersConfig(rootPath string, otlpPort int, server string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
    root_path: %s
    collection_interval: 200ms
    rescan_interval: 1s
receivers:
  process_context:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  process_context:
`, rootPath, otlpPort) + pubtest.ExportingTo(server) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
`
}

// serviceOfBody waits for the exported record with body and returns its
// resource's service.name.
func serviceOfBody(t *testing.T, s *otlpServer, body string) any {
	t.Helper()
	var res pcommon.Map
	require.Eventually(t, func() bool {
		for _, l := range s.allLogs() {
			for _, rl := range l.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						if lr.Body().Str() == body {
							res = rl.Resource().Attributes()
							return true
						}
					}
				}
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "record %q exported", body)
	return res.AsRaw()["service.name"]
}

// A publisher in a real container: the collector on the host reports it
// with the runtime's container id and its pid in the container, and
// enriches telemetry naming it by (container.id, pid in the container).
func TestPublisherInAContainer(t *testing.T) {
	pub := startContainerizedPublisher(t, publisherImage(t), "in-a-container")
	server := startOTLPServer(t)
	port := pubtest.FreePort(t)
	startCollector(t, containersConfig("/", port, server.addr))

	events := waitEntityEvents(t, server, pub.hostPid, 1)
	assert.Equal(t, "in-a-container", events[0].attrs["service.name"])
	assert.Equal(t, pub.id, events[0].attrs["container.id"], "the runtime's own id")
	assert.Equal(t, int64(1), events[0].attrs["process.vpid"])

	send := exec.Command(podman(t), "run", "--rm", "--network", "host", otlpSendImage(t),
		"-endpoint", fmt.Sprintf("127.0.0.1:%d", port), "-pid", "1", "-container-id", pub.id, "-body", "from-another-container")
	out, err := send.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "in-a-container", serviceOfBody(t, server, "from-another-container"))
}

// The collector itself in a container, as the DaemonSet runs it: every
// capability dropped but those it documents, uid 10001 (podman grants a
// non-root user the added capabilities as ambient ones), a read-only root,
// the host's /proc read-only at /hostfs/proc with root_path /hostfs, or
// the host's pid namespace with root_path /. It reports a containerised and
// a host publisher, and enriches telemetry sent to it from inside another
// container with the in-container pid and container.id.
func TestCollectorInAContainer(t *testing.T) {
	collectorImage := collectorImage(t)
	pubImage, sendImage := publisherImage(t), otlpSendImage(t)
	for _, mode := range []struct {
		name     string
		rootPath string
		args     []string
	}{
		{name: "hostfs", rootPath: "/hostfs", args: []string{"-v", "/proc:/hostfs/proc:ro"}},
		{name: "host-pid", rootPath: "/", args: []string{"--pid", "host"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			server := startOTLPServer(t)
			port := pubtest.FreePort(t)
			dir := t.TempDir()
			require.NoError(t, os.Chmod(dir, 0o755))
			cfg := filepath.Join(dir, "config.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(containersConfig(mode.rootPath, port, server.addr)), 0o644))

			name := containerName("collector")
			args := []string{"run", "-d", "--rm", "--name", name, "--network", "host",
				"--cap-drop", "all", "--cap-add", "SYS_PTRACE,DAC_READ_SEARCH,BPF,PERFMON",
				"--read-only", "-v", cfg + ":/etc/otelcol/config.yaml:ro"}
			args = append(append(args, mode.args...), collectorImage)
			podmanOut(t, args...)
			t.Cleanup(func() {
				if t.Failed() {
					logs, _ := exec.Command(podman(t), "logs", name).CombinedOutput()
					t.Logf("collector logs:\n%s", logs)
				}
				_ = exec.Command(podman(t), "rm", "-f", "-t", "2", name).Run()
			})
			require.Eventually(t, func() bool {
				logs, _ := exec.Command(podman(t), "logs", name).CombinedOutput()
				return strings.Contains(string(logs), "Everything is ready")
			}, 30*time.Second, 50*time.Millisecond, "the collector in its container starts")
			assert.Equal(t, "10001:10001", podmanOut(t, "inspect", "--format", "{{.Config.User}}", collectorImage), "the image's user")

			contained := startContainerizedPublisher(t, pubImage, "contained-"+mode.name)
			host := pubtest.Start(t, pubtest.C, pubtest.Options{})
			host.Publish(otep.EncodeStrings(map[string]string{"service.name": "host-" + mode.name}))

			events := waitEntityEvents(t, server, contained.hostPid, 1)
			assert.Equal(t, "contained-"+mode.name, events[0].attrs["service.name"])
			assert.Equal(t, contained.id, events[0].attrs["container.id"])
			assert.Equal(t, int64(1), events[0].attrs["process.vpid"])
			events = waitEntityEvents(t, server, host.Pid, 1)
			assert.Equal(t, "host-"+mode.name, events[0].attrs["service.name"])
			assert.NotContains(t, events[0].attrs, "container.id")

			body := "sent-from-a-container-" + mode.name
			send := exec.Command(podman(t), "run", "--rm", "--network", "host", sendImage,
				"-endpoint", fmt.Sprintf("127.0.0.1:%d", port), "-pid", "1", "-container-id", contained.id, "-body", body)
			out, err := send.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Equal(t, "contained-"+mode.name, serviceOfBody(t, server, body))
		})
	}
}

// The image runs the journald recipe (examples/journald.yaml, as written)
// the way the DaemonSet runs it: the host's journal directories and
// /etc/machine-id mounted read-only at their paths, the image's user with
// the documented capabilities, in the host's pid namespace (the recipe's
// root_path is /). Its journalctl, the image's own, reads the journal as
// that user; an entry written by a publishing process reaches the local
// backend with that process's service.name. The journal is the test's own,
// written with systemd-journal-remote as a log shipper would, laid out as
// journald lays out /var/log/journal: the test needs no journald.
func TestImageReadsTheJournal(t *testing.T) {
	image := collectorImage(t)
	journal := pubtest.NewJournal(t)
	backend := startLocalBackend(t)
	pub := publishService(t, pubtest.C, "journal-in-a-container")
	journal.Write(t, pub.Pid, "before the receiver") // journalctl starts on a journal

	config, err := os.ReadFile(filepath.Join(pubtest.RepoRoot(), "examples", "journald.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, config, 0o644))
	name := containerName("journald")
	podmanOut(t, "run", "-d", "--rm", "--name", name, "--network", "host", "--pid", "host",
		"--cap-drop", "all", "--cap-add", "SYS_PTRACE,DAC_READ_SEARCH,BPF,PERFMON", "--read-only",
		"-e", "OTLP_ENDPOINT="+os.Getenv("OTLP_ENDPOINT"), "-e", "OTLP_INSECURE=true",
		"-e", fmt.Sprintf("PROCESSCTX_METRICS_PORT=%d", pubtest.FreePort(t)),
		"-v", cfg+":/etc/otelcol/config.yaml:ro",
		"-v", journal.Dir+":/var/log/journal:ro",
		"-v", "/etc/machine-id:/etc/machine-id:ro",
		image)
	logs := containerLogs(t, name)
	require.Eventually(t, func() bool { return strings.Contains(logs(), "Everything is ready") },
		30*time.Second, 50*time.Millisecond, "the collector in its container starts")
	assert.Equal(t, "10001:10001", podmanOut(t, "inspect", "--format", "{{.Config.User}}", image), "the image's user")

	// The receiver starts at the journal's end: entries written after it.
	require.Eventually(t, func() bool {
		journal.Write(t, pub.Pid, "image-journald-line")
		return strings.Contains(backend.Output.String(), "image-journald-line")
	}, 60*time.Second, time.Second, "the journal entry reaches the local backend")
	waitOutput(t, backend, "the entry with its process's service", "service.name: Str(journal-in-a-container)")
	assert.Contains(t, resourceBlock(backend.Output.String(), "ResourceLog #", "image-journald-line"), "service.name: Str(journal-in-a-container)")
	assert.NotContains(t, logs(), "journalctl command exited", "journalctl ran in the image")
}

// containerLogs returns what the container name printed so far; the
// container is removed when the test ends, its logs printed first if the
// test failed.
func containerLogs(t *testing.T, name string) func() string {
	t.Helper()
	logs := func() string {
		out, _ := exec.Command(podman(t), "logs", name).CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("collector logs:\n%s", logs())
		}
		_ = exec.Command(podman(t), "rm", "-f", "-t", "2", name).Run()
	})
	return logs
}
