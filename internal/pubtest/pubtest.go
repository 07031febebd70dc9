// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package pubtest starts real publisher processes for tests: the Go
// reference publisher (cmd/ctxpublisher) and the independent C publisher
// (testdata/cpublisher), both driven over the same line protocol on stdin.
//
// The binaries are built once per test binary into a cache directory named
// by a hash of their sources (under os.UserCacheDir, or the temporary
// directory), shared by the test binaries of every package and reused
// while the sources do not change: no TestMain is needed, nothing is left
// behind but one copy per version of the sources. A missing gcc fails the
// test: the C publisher is part of what the tests check.
package pubtest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Kind names a publisher implementation.
type Kind string

const (
	Go Kind = "go"
	C  Kind = "c"
)

// Kinds lists every implementation, for table-driven tests.
var Kinds = []Kind{Go, C}

var build struct {
	once sync.Once
	dir  string
	err  error
}

// RepoRoot returns the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// publisherSources are what the publishers are built from (relative to the
// repository's root); their hash names the cache directory.
var publisherSources = []string{"cmd/ctxpublisher", "internal/publisher", "internal/otep", "testdata/cpublisher", "go.mod", "go.sum"}

// PublishersEnv names a directory holding prebuilt go-publisher and
// c-publisher executables, used instead of building them: for test
// binaries run where there is no source tree or compiler (the kernel
// matrix's guests, test/kernel).
const PublishersEnv = "PUBTEST_PUBLISHERS"

// Binary returns the path of kind's publisher executable, building both on
// first use (or taking them from $PUBTEST_PUBLISHERS).
func Binary(t testing.TB, kind Kind) string {
	t.Helper()
	if dir := os.Getenv(PublishersEnv); dir != "" {
		return filepath.Join(dir, string(kind)+"-publisher")
	}
	build.once.Do(func() { build.dir, build.err = buildPublishers() })
	if build.err != nil {
		t.Fatal(build.err)
	}
	return filepath.Join(build.dir, string(kind)+"-publisher")
}

func buildPublishers() (string, error) {
	root := RepoRoot()
	h := sha256.New()
	for _, src := range publisherSources {
		err := filepath.WalkDir(filepath.Join(root, src), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", path[len(root):], len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("hash publisher sources: %w", err)
		}
	}
	return cachedBuild(hex.EncodeToString(h.Sum(nil))[:16], []string{"go-publisher", "c-publisher"}, func(tmp string) error {
		goCmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "go-publisher"), "./cmd/ctxpublisher")
		goCmd.Dir = root
		if out, err := goCmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build Go publisher: %w\n%s", err, out)
		}
		cCmd := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-pthread",
			"-o", filepath.Join(tmp, "c-publisher"), "testdata/cpublisher/publisher.c")
		cCmd.Dir = root
		if out, err := cCmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build C publisher (gcc is required): %w\n%s", err, out)
		}
		return nil
	})
}

// cachedBuild returns the directory of the user's cache named for key,
// holding the files names once build has written them. build writes them
// into a temporary directory, from which they are renamed into place: test
// binaries of other packages may build at the same time.
func cachedBuild(key string, names []string, build func(tmp string) error) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "otelcol-processctx-pubtest", key)
	if !slices.ContainsFunc(names, func(name string) bool { return !fileExists(filepath.Join(dir, name)) }) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := build(tmp); err != nil {
		return "", err
	}
	for _, name := range names {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// Options select how the child publishes.
type Options struct {
	Separate  bool // payload in a separate allocation
	Anonymous bool // anonymous mapping instead of memfd
}

// Proc is a running publisher process.
type Proc struct {
	Kind Kind
	// Pid is the publisher's pid as it reported it: in its own pid
	// namespace when it runs in one (see HostPid).
	Pid     int
	hostPid int
	t       testing.TB
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	mu      sync.Mutex
	done    chan struct{}
}

// Start starts a publisher child; it is killed when the test ends.
func Start(t testing.TB, kind Kind, opts Options) *Proc {
	t.Helper()
	var args []string
	if kind == Go {
		args = append(args, "-control")
	}
	if opts.Separate {
		args = append(args, "-separate")
	}
	if opts.Anonymous {
		args = append(args, "-anon")
	}
	return StartCommand(t, kind, exec.Command(Binary(t, kind), args...))
}

// StartCommand starts a prepared publisher command (e.g. wrapped in unshare)
// whose stdin/stdout speak the control protocol.
func StartCommand(t testing.TB, kind Kind, cmd *exec.Cmd) *Proc {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Our own pipe rather than StdoutPipe: Wait (running in the background)
	// would close StdoutPipe's read end before the last answer is read.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	_ = outW.Close()
	if err != nil {
		_ = outR.Close()
		t.Fatalf("start %s publisher: %v", kind, err)
	}
	p := &Proc{Kind: kind, t: t, cmd: cmd, in: in, out: bufio.NewReader(outR), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Kill(); _ = outR.Close() })
	line, err := p.readLine()
	if err != nil {
		t.Fatalf("%s publisher did not start: %v", kind, err)
	}
	pid, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		t.Fatalf("%s publisher said %q, want ready <pid>", kind, line)
	}
	// Inside a pid namespace the child reports its own pid; callers that
	// need the host pid use HostPid.
	p.Pid, _ = strconv.Atoi(pid)
	return p
}

// HostPid returns the publisher's pid in the host's pid namespace.
func (p *Proc) HostPid() int {
	if p.hostPid != 0 {
		return p.hostPid
	}
	return p.cmd.Process.Pid
}

// StartContained starts kind's publisher the way a container runtime
// would: as pid 1 of a new pid namespace with its own /proc (unshare --pid
// --fork --mount-proc) and, when cgroupDir is set, in that cgroup (a
// directory under a mounted cgroup hierarchy, created here and removed at
// the end of the test). Needs root.
func StartContained(t testing.TB, kind Kind, cgroupDir string) *Proc {
	t.Helper()
	args := []string{"--pid", "--fork", "--mount-proc", "--kill-child", "--", Binary(t, kind)}
	if kind == Go {
		args = append(args, "-control")
	}
	p := StartCommand(t, kind, exec.Command("unshare", args...))
	deadline := time.Now().Add(5 * time.Second)
	for p.hostPid = childOf(p.cmd.Process.Pid); p.hostPid == 0; p.hostPid = childOf(p.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("unshare did not start the publisher")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cgroupDir != "" {
		// Create the missing directories, and remove them again at the end.
		var created []string
		for d := cgroupDir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil {
				break
			}
			created = append(created, d)
		}
		if err := os.MkdirAll(cgroupDir, 0o755); err != nil {
			t.Fatalf("create cgroup: %v", err)
		}
		t.Cleanup(func() {
			p.Kill() // a cgroup can only be removed once empty
			for _, d := range created {
				for range 100 {
					if err := os.Remove(d); err == nil || os.IsNotExist(err) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
		if err := os.WriteFile(filepath.Join(cgroupDir, "cgroup.procs"), []byte(strconv.Itoa(p.hostPid)), 0); err != nil {
			t.Fatalf("move publisher into %s: %v", cgroupDir, err)
		}
	}
	return p
}

func (p *Proc) readLine() (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := p.out.ReadString('\n')
		ch <- result{strings.TrimSpace(line), err}
	}()
	select {
	case r := <-ch:
		return r.line, r.err
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("no answer from %s publisher in 30s", p.Kind)
	}
}

// Do sends one command line and returns the answer without its "ok".
// An "err ..." answer fails the test.
func (p *Proc) Do(command string) string {
	p.t.Helper()
	reply, err := p.Try(command)
	if err != nil {
		p.t.Fatal(err)
	}
	return reply
}

// Try sends one command line; an "err ..." answer is returned as an error.
func (p *Proc) Try(command string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.in, command+"\n"); err != nil {
		return "", fmt.Errorf("%s publisher: send %.40q: %w", p.Kind, command, err)
	}
	line, err := p.readLine()
	if err != nil {
		return "", err
	}
	if rest, ok := strings.CutPrefix(line, "ok"); ok {
		return strings.TrimSpace(rest), nil
	}
	return "", fmt.Errorf("%s publisher: %.40q: %s", p.Kind, command, line)
}

// Publish publishes payload and returns the header address.
func (p *Proc) Publish(payload []byte) uint64 {
	p.t.Helper()
	return parseAddr(p.t, p.Do("publish "+hex.EncodeToString(payload)))
}

// Update updates the payload in place and returns the header address.
func (p *Proc) Update(payload []byte) uint64 {
	p.t.Helper()
	return parseAddr(p.t, p.Do("update "+hex.EncodeToString(payload)))
}

// Unpublish removes the context.
func (p *Proc) Unpublish() { p.t.Helper(); p.Do("unpublish") }

// Header overwrites the published header raw; ptr is "inline", "unmapped"
// or a 0x address.
func (p *Proc) Header(signature string, version, size uint32, publishedAt uint64, ptr string) {
	p.t.Helper()
	p.Do(fmt.Sprintf("header %s %d %d %d %s", hex.EncodeToString([]byte(signature)), version, size, publishedAt, ptr))
}

// Spin updates in a tight loop for d and returns the number of updates.
func (p *Proc) Spin(d time.Duration) int {
	p.t.Helper()
	n, err := strconv.Atoi(p.Do(fmt.Sprintf("spin %d", d.Milliseconds())))
	if err != nil {
		p.t.Fatal(err)
	}
	return n
}

// Stall makes memory of the C publisher wait forever for whoever reads it
// (userfaultfd pages nobody serves): what "header" is a new context
// mapping, what "payload" the published context's payload. It returns the
// stalled address; the test is skipped when userfaultfd is unavailable.
func (p *Proc) Stall(what string) uint64 {
	p.t.Helper()
	reply, err := p.Try("stall " + what)
	if err != nil {
		if strings.Contains(err.Error(), "userfaultfd") || strings.Contains(err.Error(), "UFFDIO") {
			p.t.Skipf("userfaultfd unavailable: %v", err)
		}
		p.t.Fatal(err)
	}
	return parseAddr(p.t, reply)
}

// Stalls are processes of every stall class this machine can produce:
// context memory that never answers (userfaultfd on the header page, on
// the payload) and a stopped publisher.
type Stalls struct {
	Header, Payload, Stopped *Proc
}

// StartStalls starts the processes of Stalls; payload is what the payload
// and the stopped publishers publish. Needs root (userfaultfd) and skips
// the test without it.
func StartStalls(t testing.TB, payload []byte) Stalls {
	t.Helper()
	RequireRoot(t)
	s := Stalls{
		Header:  Start(t, C, Options{}),
		Payload: Start(t, C, Options{Separate: true}),
		Stopped: Start(t, Go, Options{}),
	}
	s.Header.Stall("header")
	s.Payload.Publish(payload)
	s.Payload.Stall("payload")
	s.Stopped.Publish(payload)
	s.Stopped.Stop()
	return s
}

// Unstall unmaps the stalled memory: reads waiting on it return.
func (p *Proc) Unstall() { p.t.Helper(); p.Do("unstall") }

// Fork makes the C publisher fork a child that only waits and dies with its
// parent, and returns the child's pid. The child has no context: the
// publisher maps it with MADV_DONTFORK.
func (p *Proc) Fork() int {
	p.t.Helper()
	pid, err := strconv.Atoi(p.Do("fork"))
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// Stop stops the process (SIGSTOP) until Continue; it is continued when the
// test ends.
func (p *Proc) Stop() {
	p.t.Helper()
	if err := syscall.Kill(p.HostPid(), syscall.SIGSTOP); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(p.Continue)
}

// Continue continues a stopped process.
func (p *Proc) Continue() { _ = syscall.Kill(p.HostPid(), syscall.SIGCONT) }

// Exit asks the publisher to exit and waits for it.
func (p *Proc) Exit() {
	p.t.Helper()
	p.Do("exit")
	p.Wait()
}

// Wait waits for the process to end (and to be reaped).
func (p *Proc) Wait() {
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s publisher %d did not exit", p.Kind, p.Pid)
	}
}

// Kill kills the process (and a contained publisher) and waits for it.
func (p *Proc) Kill() {
	_ = p.in.Close()
	if p.hostPid != 0 {
		_ = syscall.Kill(p.hostPid, syscall.SIGKILL)
	}
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

func parseAddr(t testing.TB, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("bad address %q: %v", s, err)
	}
	return v
}
