// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statOf builds a stat line with the given comm, state, ppid and start time
// in the layout of the kernel's do_task_stat (52 fields).
func statOf(pid int, comm string, state byte, ppid int, start uint64) string {
	fields := []string{
		strconv.Itoa(pid), "(" + comm + ")", string(state), strconv.Itoa(ppid),
		"4242", "4242", "34816", "4242", "4194560", "123", "0", "0", "0",
		"7", "3", "0", "0", "20", "0", "1", "0",
		strconv.FormatUint(start, 10),
	}
	// Fields 23 to 52.
	fields = append(fields, "8683520", "246", "18446744073709551615", "94780012380160",
		"94780012397489", "140726966773584", "0", "0", "0", "0", "0", "0", "0", "0",
		"0", "17", "1", "0", "0", "0", "0", "0", "94780012410160", "94780012411776",
		"94780036669440", "140726966775563", "140726966775584", "140726966775584",
		"140726966779881", "0")
	return strings.Join(fields, " ") + "\n"
}

func TestParseStatLine(t *testing.T) {
	ok := []struct {
		name  string
		comm  string
		state byte
		ppid  int
		start uint64
	}{
		{"plain", "sleep", 'S', 1, 123456},
		{"spaces", "Web Content", 'R', 4242, 9},
		{"close paren inside", "a) b", 'S', 7, 1},
		{"parens", "(x)", 'S', 7, 2},
		{"only close paren", ")", 'D', 0, 3},
		{"fake fields inside", "x) S 1 2 3", 'S', 12, 4},
		{"empty", "", 'S', 1, 5},
		{"kernel thread", "kworker/0:1-events", 'I', 2, 77},
		{"newline", "a\nb", 'S', 1, 6},
		{"max start", "x", 'S', 1, 1<<64 - 1},
		{"zombie", "defunct", 'Z', 1, 8},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			line := statOf(31337, tc.comm, tc.state, tc.ppid, tc.start)
			st, err := parseStatLine([]byte(line))
			require.NoError(t, err)
			assert.Equal(t, tc.comm, string(st.comm))
			assert.Equal(t, tc.state, st.state)
			assert.Equal(t, tc.ppid, st.ppid)
			assert.Equal(t, tc.start, st.start)
			assert.Equal(t, uint64(8683520), st.vsize)
			assert.Equal(t, tc.state == 'Z', st.gone())
		})
	}

	// The real kernel lines of kthreadd and an init, field 22 being 9.
	for _, line := range []string{
		"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		"1 (init) S 0 0 0 0 -1 4194560 28007 393863 0 170 27 52 1544 433 20 0 11 0 9 36110336 2401 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	} {
		st, err := parseStatLine([]byte(line))
		require.NoError(t, err, line)
		assert.Equal(t, uint64(9), st.start)
		assert.Equal(t, 0, st.ppid)
	}

	// Fields 4 to 21 are 1 to 18 below; field 22 follows 18.
	good := "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n"
	st, err := parseStatLine([]byte(good))
	require.NoError(t, err)
	require.Equal(t, uint64(19), st.start)

	bad := map[string]string{
		"empty":                "",
		"no parens":            "1 sleep S 1 2 3\n",
		"no close paren":       "1 (sleep S 1 2 3\n",
		"close before open":    "1 )sleep( S 1 2 3\n",
		"nothing after comm":   "1 (sleep)",
		"only state":           "1 (sleep) S\n",
		"stops at field 21":    "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n",
		"stops inside 22":      "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 123",
		"double space":         "1 (x) S  1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n",
		"no space after comm":  "1 (x)S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n",
		"long state":           "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n",
		"negative ppid":        "1 (x) S -1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n",
		"huge ppid":            "1 (x) S 99999999999 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n",
		"letters in start":     "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 12a4 20\n",
		"negative start":       "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5 20\n",
		"start overflows":      "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 18446744073709551616 20\n",
		"newline inside":       "1 (x) S 1 2 3 4 5 6 7 8 9 10\n11 12 13 14 15 16 17 18 19 20 21\n",
		"garbage":              "\x00\xff()\x00",
		"close paren at end":   "1 (x) S 1 2 3)",
		"paren in later field": "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 (y)\n",
	}
	for name, line := range bad {
		t.Run("bad "+name, func(t *testing.T) {
			_, err := parseStatLine([]byte(line))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
}

// TestParseStatLinePrefixes cuts a valid line at every length: each cut
// before the separator that ends field 22 must be an error, never a panic or
// a wrong value.
func TestParseStatLinePrefixes(t *testing.T) {
	line := []byte(statOf(4242, "a) (b", 'S', 1, 987654))
	st, err := parseStatLine(line)
	require.NoError(t, err)
	require.Equal(t, uint64(987654), st.start)
	end := bytes.Index(line, []byte(" 987654 ")) + len(" 987654")
	for n := 0; n <= len(line); n++ {
		st, err := parseStatLine(line[:n])
		if n <= end {
			assert.Error(t, err, "prefix of %d bytes: %q", n, line[:n])
		} else {
			require.NoError(t, err, "prefix of %d bytes", n)
			assert.Equal(t, uint64(987654), st.start)
			// The address space's size, field 23, when the prefix holds
			// it whole: else none (0), never a part of it.
			if n > end+len(" 8683520") {
				assert.Equal(t, uint64(8683520), st.vsize, "prefix of %d bytes", n)
			} else {
				assert.Zero(t, st.vsize, "prefix of %d bytes", n)
			}
		}
	}
}

func FuzzParseStatLine(f *testing.F) {
	f.Add([]byte(statOf(1, "sleep", 'S', 0, 5)))
	f.Add([]byte(statOf(1, "a) b", 'S', 0, 5)))
	f.Add([]byte("1 (x) S 1 2 3)"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseStatLine(data)
		if err != nil {
			return
		}
		open := bytes.IndexByte(data, '(')
		closing := bytes.LastIndexByte(data, ')')
		if string(st.comm) != string(data[open+1:closing]) {
			t.Fatalf("comm %q from %q", st.comm, data)
		}
	})
}

func TestParseDecimalUint(t *testing.T) {
	for in, want := range map[string]uint64{
		"0": 0, "7": 7, "0042": 42, "18446744073709551615": 1<<64 - 1,
	} {
		v, ok := parseDecimalUint([]byte(in))
		assert.True(t, ok, in)
		assert.Equal(t, want, v, in)
	}
	for _, in := range []string{"", "-1", "+1", "1 ", "18446744073709551616", "99999999999999999999", "1e3"} {
		_, ok := parseDecimalUint([]byte(in))
		assert.False(t, ok, in)
	}
}

func newHostFS(t testing.TB) *FS {
	t.Helper()
	fs, err := NewFS("/")
	require.NoError(t, err)
	return fs
}

func TestStartTimeSelf(t *testing.T) {
	fs := newHostFS(t)
	start, err := fs.StartTime(os.Getpid())
	require.NoError(t, err)

	pfs, err := procfs.NewFS("/proc")
	require.NoError(t, err)
	proc, err := pfs.Proc(os.Getpid())
	require.NoError(t, err)
	stat, err := proc.Stat()
	require.NoError(t, err)
	assert.Equal(t, stat.Starttime, start)
	st, err := fs.Stat(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, start, st.StartTicks)
	assert.Positive(t, st.VSize, "the size of its address space")
	assert.Equal(t, uint32(st.VSize>>12), st.Pages())

	// pid 1 too, and the value is stable.
	s1, err := fs.StartTime(1)
	require.NoError(t, err)
	s2, err := fs.StartTime(1)
	require.NoError(t, err)
	assert.Equal(t, s1, s2)
}

func TestStartTimeDoesNotAllocate(t *testing.T) {
	fs := newHostFS(t)
	pid := os.Getpid()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := fs.StartTime(pid); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func TestStartTimeErrors(t *testing.T) {
	fs := newHostFS(t)

	// A pid that does not exist: pid_max is at most 2^22.
	_, err := fs.StartTime(1 << 23)
	assert.ErrorIs(t, err, ErrProcessGone)
	_, err = fs.StartTime(-1)
	assert.ErrorIs(t, err, ErrProcessGone)

	// A zombie, then the reaped process.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	waitForState(t, pid, "Z")
	_, err = fs.StartTime(pid)
	assert.ErrorIs(t, err, ErrProcessGone, "zombie")
	assert.Contains(t, err.Error(), strconv.Itoa(pid))
	_, err = NewIdentityReader(fs).Identity(pid)
	assert.ErrorIs(t, err, ErrProcessGone, "zombie")

	require.NoError(t, cmd.Wait())
	_, err = fs.StartTime(pid)
	assert.ErrorIs(t, err, ErrProcessGone, "reaped")
	_, err = NewIdentityReader(fs).Identity(pid)
	assert.ErrorIs(t, err, ErrProcessGone, "reaped")
}

// waitForState waits until pid's stat state is state.
func waitForState(t *testing.T, pid int, state string) {
	t.Helper()
	pfs, err := procfs.NewFS("/proc")
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		proc, err := pfs.Proc(pid)
		require.NoError(t, err)
		st, err := proc.Stat()
		require.NoError(t, err)
		if st.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still in state %s", pid, st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startSleep starts `sleep 30` and returns once the child has exec'd:
// between fork and exec it still is a copy of the test binary, with an
// empty command line while the runtime sets it up.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	cmdline := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"
	var last []byte
	require.Eventually(t, func() bool {
		last, _ = os.ReadFile(cmdline)
		return string(last) == "sleep\x0030\x00"
	}, 10*time.Second, 5*time.Millisecond, "the child did not exec sleep: cmdline %q", last)
	return cmd
}

func TestIdentityChild(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("expects to run as root")
	}
	fs := newHostFS(t)
	cmd := startSleep(t)
	pid := cmd.Process.Pid

	id, err := NewIdentityReader(fs).Identity(pid)
	require.NoError(t, err)
	assert.Equal(t, pid, id.PID)
	assert.Equal(t, os.Getpid(), id.ParentPID)
	assert.Equal(t, "sleep", id.ExecutableName)
	assert.True(t, strings.HasSuffix(id.ExecutablePath, "/sleep"), id.ExecutablePath)
	assert.Equal(t, "sleep 30", id.CommandLine)
	assert.Equal(t, 0, id.UID)
	assert.Equal(t, "root", id.Owner)
	assert.WithinDuration(t, time.Now(), id.CreationTime, 5*time.Second)
	assert.Equal(t, time.UTC, id.CreationTime.Location())
	require.NotEmpty(t, id.NSpid)
	if fs.SameNamespace() {
		assert.Equal(t, pid, id.NSpid[0])
	}

	start, err := fs.StartTime(pid)
	require.NoError(t, err)
	assert.Equal(t, start, id.StartTicks)
	boot, err := fs.BootTime()
	require.NoError(t, err)
	assert.Equal(t, creationTime(boot, start), id.CreationTime)
	ts, err := time.Parse(time.RFC3339Nano, id.CreationTimeString())
	require.NoError(t, err)
	assert.True(t, ts.Equal(id.CreationTime))

	// The child shares our cgroup.
	self, err := NewIdentityReader(fs).Identity(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, self.ContainerID, id.ContainerID)
}

func TestIdentitySelf(t *testing.T) {
	fs := newHostFS(t)
	id, err := NewIdentityReader(fs).Identity(os.Getpid())
	require.NoError(t, err)

	assert.Equal(t, os.Getpid(), id.PID)
	assert.Equal(t, os.Getppid(), id.ParentPID)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, exe, id.ExecutablePath)
	assert.Equal(t, strings.Join(os.Args, " "), id.CommandLine)
	assert.Equal(t, os.Args, id.Args)
	assert.Equal(t, os.Getuid(), id.UID)
	assert.NotEmpty(t, id.Owner)
	if fs.SameNamespace() {
		assert.Equal(t, os.Getpid(), id.NSpid[0])
	}
	cgroup, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	assert.Equal(t, ContainerIDFromCgroup(cgroup), id.ContainerID)
	comm, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(string(comm), "\n"), id.ExecutableName)
}

func TestIdentityKernelThread(t *testing.T) {
	fs := newHostFS(t)
	id, err := NewIdentityReader(fs).Identity(2)
	if err != nil || id.ExecutableName != "kthreadd" {
		t.Skip("no kthreadd at pid 2 in this pid namespace")
	}
	assert.Equal(t, 0, id.ParentPID)
	assert.Empty(t, id.ExecutablePath)
	assert.Empty(t, id.CommandLine)
	assert.Nil(t, id.Args)
	assert.Equal(t, 0, id.UID)
	assert.Equal(t, "", id.ContainerID)
}

// The arguments keep their boundaries, which the joined command line
// loses: "--password" and its value are two arguments, "a b" is one.
func TestIdentityArgs(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30; :", "arg zero", "a b", "--password", "x")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	r := NewIdentityReader(newHostFS(t))
	var id Identity
	require.Eventually(t, func() bool {
		var err error
		id, err = r.Identity(cmd.Process.Pid)
		return err == nil && len(id.Args) > 0 && id.Args[0] == "sh"
	}, 10*time.Second, 5*time.Millisecond, "the child did not exec sh: %+v", id)
	assert.Equal(t, cmd.Args, id.Args)
	assert.Equal(t, "sh -c sleep 30; : arg zero a b --password x", id.CommandLine)
}

func TestJoinArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		line string
	}{
		{"one", []string{"sleep"}, "sleep"},
		{"several", []string{"sleep", "30"}, "sleep 30"},
		{"spaces and empty arguments", []string{"sh", "-c", "sleep 1; :", "", "a b", ""}, "sh -c sleep 1; :  a b "},
		{"none", []string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, args := joinArgs(tt.args)
			assert.Equal(t, tt.line, line)
			assert.Equal(t, tt.args, args)
		})
	}
}

func TestIdentityErrors(t *testing.T) {
	r := NewIdentityReader(newHostFS(t))
	_, err := r.Identity(1 << 23)
	assert.ErrorIs(t, err, ErrProcessGone)

	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	_, err = r.Identity(cmd.Process.Pid)
	assert.ErrorIs(t, err, ErrProcessGone)
}

func TestCreationTime(t *testing.T) {
	boot := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).Unix()
	for _, tc := range []struct {
		ticks uint64
		want  string
	}{
		{0, "2026-11-30T00:00:00Z"},
		{100, "2026-11-30T00:00:01Z"},
		{295737, "2026-11-30T00:49:17.37Z"},
		{295730, "2026-11-30T00:49:17.3Z"},
		{1, "2026-11-30T00:00:00.01Z"},
	} {
		id := Identity{CreationTime: creationTime(boot, tc.ticks)}
		assert.Equal(t, tc.want, id.CreationTimeString(), tc.ticks)
	}
	// A local time is printed in UTC.
	id := Identity{CreationTime: time.Date(2026, 11, 30, 1, 49, 17, 370_000_000, time.FixedZone("CET", 3600))}
	assert.Equal(t, "2026-11-30T00:49:17.37Z", id.CreationTimeString())
	assert.Equal(t, "", Identity{}.CreationTimeString())
}

func TestVPID(t *testing.T) {
	assert.Equal(t, 10, Identity{PID: 10}.VPID())
	assert.Equal(t, 10, Identity{PID: 10, NSpid: []int{10}}.VPID())
	assert.Equal(t, 7, Identity{PID: 10, NSpid: []int{10, 3, 7}}.VPID())
}

func TestOwnerCache(t *testing.T) {
	var calls atomic.Int64
	c := ownerCache{lookup: func(uid int) (string, bool) {
		calls.Add(1)
		if uid == 0 {
			return "root", true
		}
		return "", false
	}}
	assert.Equal(t, "root", c.owner(0))
	assert.Equal(t, "root", c.owner(0))
	assert.Equal(t, "1234", c.owner(1234))
	assert.Equal(t, "1234", c.owner(1234))
	assert.Equal(t, int64(2), calls.Load(), "hits and misses are cached")

	for uid := 1; uid <= 2*maxOwnerCacheEntries; uid++ {
		c.owner(uid)
		require.LessOrEqual(t, len(c.names), maxOwnerCacheEntries)
	}
	assert.Equal(t, strconv.Itoa(2*maxOwnerCacheEntries), c.owner(2*maxOwnerCacheEntries))
}

func TestLookupPasswd(t *testing.T) {
	const passwd = `# comment
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin

broken line
+nis::::::
alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash
alice2:x:1000:1000::/home/alice2:/bin/sh
bob:x:10000:10000::/home/bob:/bin/sh
`
	path := t.TempDir() + "/passwd"
	require.NoError(t, os.WriteFile(path, []byte(passwd), 0o600))
	for uid, want := range map[int]string{0: "root", 1: "daemon", 1000: "alice", 10000: "bob"} {
		name, ok := lookupPasswdFile(path, uid)
		assert.True(t, ok, uid)
		assert.Equal(t, want, name, uid)
	}
	for _, uid := range []int{2, 100, 100000} {
		_, ok := lookupPasswdFile(path, uid)
		assert.False(t, ok, uid)
	}
	_, ok := lookupPasswdFile(t.TempDir()+"/missing", 0)
	assert.False(t, ok)
}

func TestLookupUserName(t *testing.T) {
	name, ok := lookupUserName(os.Getuid())
	if os.Getuid() == 0 {
		assert.True(t, ok)
		assert.Equal(t, "root", name)
	}
	_, ok = lookupUserName(1<<31 - 7)
	assert.False(t, ok)
}

func TestStartTimeErrorKinds(t *testing.T) {
	fs := newHostFS(t)
	_, err := fs.StartTime(1 << 23)
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrPermissionDenied))
	assert.Contains(t, err.Error(), "pid 8388608")
}

func BenchmarkStartTime(b *testing.B) {
	fs := newHostFS(b)
	pid := os.Getpid()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fs.StartTime(pid); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIdentity(b *testing.B) {
	r := NewIdentityReader(newHostFS(b))
	pid := os.Getpid()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Identity(pid); err != nil {
			b.Fatal(err)
		}
	}
}

// Kernel threads are told apart by PF_KTHREAD: kthreadd (pid 2) is one,
// this process is not.
func TestStatKernelThread(t *testing.T) {
	fs, err := NewFS("/")
	require.NoError(t, err)
	st, err := fs.Stat(2)
	require.NoError(t, err)
	assert.True(t, st.KernelThread, "kthreadd")
	assert.NotZero(t, st.StartTicks)
	st, err = fs.Stat(os.Getpid())
	require.NoError(t, err)
	assert.False(t, st.KernelThread)
}
