// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// blockEnv is the environment a block runs in: the test's, without what
// a make that runs the tests hands its children (a block's own make is
// not one of its jobs).
func blockEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		key, _, _ := strings.Cut(kv, "=")
		return key == "MAKEFLAGS" || key == "MFLAGS" || key == "MAKELEVEL" || key == "MAKEOVERRIDES"
	})
}

// script is a block as bash runs it, from the repository's root.
func script(block string) string {
	return "cd " + strconv.Quote(pubtest.RepoRoot()) + " || exit 1\n" + block
}

// shellCommand runs a block with bash on the host, in a process group of
// its own.
func shellCommand(block string) *exec.Cmd {
	cmd := exec.Command("bash", "-c", script(block))
	cmd.Env = blockEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// namespaces are a network namespace of their own (and, withPid, pid and
// mount namespaces, with their own /proc), held by a process that sleeps
// in them until the test ends; blocks enter them with nsenter.
type namespaces struct {
	holder  int
	withPid bool
}

func newNamespaces(t *testing.T, withPid bool) *namespaces {
	t.Helper()
	pubtest.RequireRoot(t)
	args := []string{"--net", "--fork", "--kill-child"}
	if withPid {
		args = append(args, "--pid", "--mount-proc")
	}
	cmd := exec.Command("unshare", append(args, "--", "sleep", "infinity")...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		// The sleep gets SIGKILL with unshare (--kill-child); as the pid
		// namespace's init, it takes every process left there along.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	children := fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)
	ns := &namespaces{withPid: withPid}
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(children)
		fields := strings.Fields(string(b))
		if len(fields) > 0 {
			ns.holder, _ = strconv.Atoi(fields[0])
		}
		return ns.holder > 0
	}, 10*time.Second, 10*time.Millisecond, "unshare's child")
	out, err := ns.command("ip link set lo up").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return ns
}

// command runs a block with bash in the namespaces, in a process group of
// its own.
func (ns *namespaces) command(block string) *exec.Cmd {
	args := []string{"--target", strconv.Itoa(ns.holder), "--net"}
	if ns.withPid {
		args = append(args, "--pid", "--mount")
	}
	cmd := exec.Command("nsenter", append(args, "--", "bash", "-c", script(block))...)
	cmd.Env = blockEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// output is a process's output, written by it and read by the test.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// running is a block running in the background: a command run in the
// foreground of a terminal (make run, podman run), or one left running.
type running struct {
	cmd  *exec.Cmd
	out  output
	done chan struct{}
}

// start starts cmd (its own process group); the test's end stops it.
func start(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	r := &running{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the block and everything it started, as Ctrl-C would, with
// SIGTERM to its process group; SIGKILL after 30 s.
func (r *running) stop(t *testing.T) {
	t.Helper()
	pgid := r.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30 s of SIGTERM:\n%s", r.cmd.Args, tail(r.out.String()))
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-r.done
	}
	// What it left in the group: nothing, or it is killed.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitFor waits until the block's output has s after the offset from,
// and returns where s ends; it fails when the block ends first, or after
// within.
func (r *running) waitFor(t *testing.T, s string, from int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := r.out.String()
		if i := strings.Index(out[min(from, len(out)):], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-r.done:
			t.Fatalf("%q never came: the block ended:\n%s", s, tail(r.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q did not come within %s:\n%s", s, within, tail(out))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail is the end of an output, for a failure's message.
func tail(s string) string {
	const n = 6000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// textBlock returns the ```text block of file that holds s: the output a
// doc says to expect.
func textBlock(t *testing.T, file, s string) string {
	t.Helper()
	blocks, _ := parseBlocks(t, file)
	for _, b := range blocks {
		if b.lang == "text" && strings.Contains(b.text, s) {
			return b.text
		}
	}
	t.Fatalf("%s has no ```text block with %q", file, s)
	return ""
}

// expectLines checks that out, from the offset from, has the lines of the
// doc's expected output in order (each after the one before; "…" stands
// for lines left out), with the doc's example values (keys of vary)
// standing for the regular expressions they map to.
func expectLines(t *testing.T, out string, from int, expected string, vary map[string]string) {
	t.Helper()
	at := min(from, len(out))
	for line := range strings.SplitSeq(strings.TrimRight(expected, "\n"), "\n") {
		if strings.TrimSpace(line) == "…" {
			continue
		}
		re := regexp.QuoteMeta(strings.TrimSpace(line))
		for example, pattern := range vary {
			re = strings.ReplaceAll(re, regexp.QuoteMeta(example), pattern)
		}
		loc := regexp.MustCompile(re).FindStringIndex(out[at:])
		if loc == nil {
			t.Errorf("the doc's line %q is not in the output (after what came before it):\n%s", line, tail(out[at:]))
			return
		}
		at += loc[1]
	}
}

// collectorImage is the image `make image` built: the one make test names
// (PROCESSCTX_IMAGE), else the Makefile's.
func collectorImage(t *testing.T) string {
	t.Helper()
	pubtest.RequireRoot(t)
	image := os.Getenv("PROCESSCTX_IMAGE")
	if image == "" {
		image = pubtest.MakeVar(t, "IMAGE")
	}
	if exec.Command("podman", "image", "exists", image).Run() != nil {
		t.Fatalf("%s is missing: run `make image` (make test does; PROCESSCTX_IMAGE=<name> tests another)", image)
	}
	return image
}

var publisherPidRe = regexp.MustCompile(`ctxpublisher: pid (\d+) publishes service.name=demo-checkout`)

// publisherPid is the pid the demo publisher said it has.
func publisherPid(t *testing.T, out string) string {
	t.Helper()
	m := publisherPidRe.FindStringSubmatch(out)
	require.NotNil(t, m, "the publisher says its pid:\n%s", tail(out))
	return m[1]
}

// The README's quick start: make run, then, from another terminal, the
// curl of a record that carries only the publisher's pid; the output of
// each is what the README shows. In namespaces of its own: ports 4317,
// 4318, 13133 and 8888 of its own, and a /proc where pgrep finds the one
// ctxpublisher, make run's (not another test's).
func TestQuickStart(t *testing.T) {
	blocks := docBlocks(t, "README.md", 2)
	ns := newNamespaces(t, true)
	run := start(t, ns.command(blocks[0]))
	// make run builds first when the sources changed since the last build.
	run.waitFor(t, "Everything is ready", 0, 8*time.Minute)
	entities := textBlock(t, "README.md", "otel.entity.event.type")
	run.waitFor(t, `-> otel.entity.attributes: Map({"service.name":"demo-checkout"})`, 0, time.Minute)
	expectLines(t, run.out.String(), 0, entities, map[string]string{"4711": `\d+`, "0x7f6a3c2b1000": `0x[0-9a-f]+`})
	pid := publisherPid(t, run.out.String())

	sent := len(run.out.String())
	out, err := ns.command(blocks[1]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, `{"partialSuccess":{}}`, strings.TrimSpace(string(out)))
	docSays(t, "README.md", "`curl` prints `{\"partialSuccess\":{}}`")
	run.waitFor(t, "Body: Str(hello)", sent, 30*time.Second)
	expectLines(t, run.out.String(), sent, textBlock(t, "README.md", "Body: Str(hello)"),
		map[string]string{"4711": pid, "2026-12-07T16:30:24.47Z": `[0-9T:.Z-]+`})
}

// The README's image run line, with the image make test built, and from
// another terminal a publisher and a record with its pid: the container
// prints the record with the publisher's identity, and --rm leaves no
// container behind. In a network namespace of its own (the ports it
// publishes), with the host's pids (the container reads the host's /proc).
func TestImageRunLine(t *testing.T) {
	blocks := docBlocks(t, "README.md", 2)
	image := collectorImage(t)
	const named = "localhost/otelcol-processctx:0.1.0"
	require.Contains(t, blocks[0], named, "the README runs the image make image builds")
	ns := newNamespaces(t, false)
	before := containersOf(t, image)
	run := start(t, ns.command(strings.ReplaceAll(blocks[0], named, image)))
	run.waitFor(t, "Everything is ready", 0, 2*time.Minute)
	created := slices.DeleteFunc(containersOf(t, image), func(id string) bool { return slices.Contains(before, id) })
	t.Cleanup(func() {
		for _, id := range created {
			_ = exec.Command("podman", "rm", "--force", id).Run()
		}
	})

	sent := len(run.out.String())
	out, err := ns.command(blocks[1]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), `{"partialSuccess":{}}`)
	pid := publisherPid(t, string(out))
	docSays(t, "README.md", "The container prints the record with `-> service.name: Str(demo-checkout)`.")
	run.waitFor(t, "Body: Str(hello)", sent, 30*time.Second)
	expectLines(t, run.out.String(), sent, "-> process.pid: Int("+pid+")\n-> service.name: Str(demo-checkout)\n", nil)

	run.stop(t)
	for _, id := range created {
		assert.Error(t, exec.Command("podman", "container", "exists", id).Run(), "--rm removed container %s", id)
	}
}

// containersOf returns the ids of the containers of image, running or not.
func containersOf(t *testing.T, image string) []string {
	t.Helper()
	out, err := exec.Command("podman", "ps", "--all", "--quiet", "--no-trunc", "--filter", "ancestor="+image).Output()
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// The README's second collector starts beside a first one that holds the
// default ports, and both answer.
func TestBesideAnotherCollector(t *testing.T) {
	blocks := docBlocks(t, "README.md", 1)
	ns := newNamespaces(t, false)
	first := start(t, ns.command("bin/otelcol-processctx --config config.yaml"))
	first.waitFor(t, "Everything is ready", 0, time.Minute)
	second := start(t, ns.command(blocks[0]))
	second.waitFor(t, "Everything is ready", 0, time.Minute)
	for _, port := range []string{"13133", "23133"} {
		out, err := ns.command("curl -sf http://127.0.0.1:" + port + "/status").CombinedOutput()
		require.NoError(t, err, "status on %s: %s", port, out)
		assert.Contains(t, string(out), `"healthy":true`, "port %s", port)
	}
}

// The README's validate examples print what the README shows, exactly.
func TestValidateExamples(t *testing.T) {
	blocks := docBlocks(t, "README.md", 1)
	out, err := shellCommand(blocks[0]).CombinedOutput()
	require.Error(t, err, "validate refuses them")
	assert.Equal(t, textBlock(t, "README.md", "unknown key"), string(out))
}

// docs/troubleshooting.md's tools: ctxdump, and the status of a collector
// running config.yaml (in a network namespace: port 13133 of its own).
func TestTroubleshootingCommands(t *testing.T) {
	const file = "docs/troubleshooting.md"
	blocks := docBlocks(t, file, 2)
	out, err := shellCommand(blocks[0]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^(PID\s+EXECUTABLE\s+SERVICE|No process publishes a context)`, string(out))

	ns := newNamespaces(t, false)
	collector := start(t, ns.command("bin/otelcol-processctx --config config.yaml"))
	collector.waitFor(t, "Everything is ready", 0, time.Minute)
	out, err = ns.command(blocks[1]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), `"healthy":true`)
	docSays(t, file, "It answers `\"healthy\":true`")
}

// docs/troubleshooting.md's measures of a collector's cost: its CPU and
// wake-ups from procfs, and a CPU profile from config.yaml's pprof
// extension, its top entries and its picture (graphviz's dot); in
// namespaces of its own (pid too: pidof finds that collector alone), the
// profile in a directory of the test's.
func TestProfileCommands(t *testing.T) {
	const file = "docs/troubleshooting.md"
	blocks := docBlocks(t, file, 2)
	ns := newNamespaces(t, true)
	collector := start(t, ns.command("bin/otelcol-processctx --config config.yaml"))
	collector.waitFor(t, "Everything is ready", 0, time.Minute)
	out, err := ns.command(blocks[0]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^CPU \d+ ms/s, \d+ wake-ups/s\n$`, string(out))

	dir := t.TempDir()
	out, err = ns.command("cd " + strconv.Quote(dir) + " || exit 1\n" + blocks[1]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "flat%", "the top entries' header")
	svg, err := os.ReadFile(filepath.Join(dir, "cpu.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg", "the picture")
}

// examples/README.md's local backend and a recipe pointed at it, with a
// publisher: the backend prints its entity events.
func TestTryARecipe(t *testing.T) {
	const file = "examples/README.md"
	blocks := docBlocks(t, file, 2)
	ns := newNamespaces(t, false)
	backend := start(t, ns.command(blocks[0]))
	backend.waitFor(t, "Everything is ready", 0, time.Minute)
	recipe := start(t, ns.command(blocks[1]))
	recipe.waitFor(t, "Everything is ready", 0, time.Minute)
	pid := publisherPid(t, recipe.out.String())
	backend.waitFor(t, `"process.pid":`+pid, 0, time.Minute)
	out := backend.out.String()
	assert.Contains(t, out, "EventName: entity.state")
	assert.Contains(t, out, `"service.name":"demo-checkout"`)
	docSays(t, file, "`EventName: entity.state`", "`\"service.name\":\"demo-checkout\"`")
}

// examples/README.md's filelog recipe on a file of one's own: the local
// backend prints the lines under the publisher's identity. The block ends
// by itself, having stopped what it started.
func TestTryALogRecipe(t *testing.T) {
	const file = "examples/README.md"
	blocks := docBlocks(t, file, 1)
	ns := newNamespaces(t, false)
	backend := start(t, ns.command(markedBlocks(t, file, "TestTryARecipe")[0]))
	backend.waitFor(t, "Everything is ready", 0, time.Minute)
	out, err := ns.command(blocks[0]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	pid := publisherPid(t, string(out))
	// The first lines may come before the receiver's first look at the
	// file, which starts at its end; the later ones come after.
	backend.waitFor(t, "Body: Str(hello from line ", 0, 30*time.Second)
	expectLines(t, backend.out.String(), 0, "-> process.pid: Str("+pid+")\n-> service.name: Str(demo-checkout)\n", nil)
	docSays(t, file, "`-> service.name: Str(demo-checkout)`", "`Body: Str(hello from line 5)`")
}

// docs/deployment.md's own collector: ocb builds examples/builder-config.yaml
// into _build-custom, which has the three components and takes config.yaml.
// On the host's network: go install and ocb's go mod tidy ask the module
// proxy.
func TestOwnCollector(t *testing.T) {
	blocks := docBlocks(t, "docs/deployment.md", 1)
	out, err := shellCommand(blocks[0]).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, 3, strings.Count(string(out), "name: process_context"), "the three components:\n%s", out)
	assert.True(t, strings.HasSuffix(string(out), "\nvalid\n"), "%s", out)
}
