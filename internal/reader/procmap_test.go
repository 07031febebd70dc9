// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func TestProcmapQueryLayout(t *testing.T) {
	// include/uapi/linux/fs.h: 104 bytes, PROCMAP_QUERY 0xc0686611.
	assert.Equal(t, uint64(104), procmapQuerySize)
	assert.Equal(t, uintptr(0xc0686611), procmapQueryIoctl)
	var q procmapQuery
	assert.Equal(t, uintptr(72), unsafe.Offsetof(q.DevMajor))
	assert.Equal(t, uintptr(80), unsafe.Offsetof(q.VMANameSize))
	assert.Equal(t, uintptr(88), unsafe.Offsetof(q.VMANameAddr))
	assert.Equal(t, uintptr(96), unsafe.Offsetof(q.BuildIDAddr))
}

func TestLineEnd(t *testing.T) {
	for line, want := range map[string]uint64{
		"00400000-005f3000 r-xp 00000000 fe:00 9987021   /bin/x":  0x5f3000,
		"7ffde8298000-7ffde82b9000 rw-p 00000000 00:00 0 [stack]": 0x7ffde82b9000,
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0": 0xffffffffff601000,
		"10000000000-10000001000 r--p 00000000 00:00 0 ":          0x10000001000,
	} {
		got, ok := lineEnd([]byte(line))
		assert.True(t, ok, line)
		assert.Equal(t, want, got, line)
	}
	for _, line := range []string{"", "-", "1000-2000", "2000-1000 r--p", "x-2000 r--p", "1000-2000x r--p", "10000000000000000-10000000000000001 r--p"} {
		_, ok := lineEnd([]byte(line))
		assert.False(t, ok, line)
	}
}

// The text ends at a whole line once the budget is spent, never inside
// one: a line cut after "/memfd:OTEL_CTX" would otherwise look like a
// context.
func TestMapsTextCutsAtWholeLines(t *testing.T) {
	const (
		a    = "1000-2000 r--p 00000000 00:01 5 /lib/a.so\n"
		b    = "2000-3000 r--p 00000000 00:01 5 /lib/b.so\n"
		ctx  = "3000-4000 rw-p 00000000 00:01 6 /memfd:OTEL_CTXfoo (deleted)\n"
		tail = "4000-5000 rw-p 00000000 00:00 0 \n"
	)
	maps := a + b + ctx + tail
	cutIn := len(a+b) + strings.Index(ctx, "foo")
	tests := []struct {
		name       string
		reads      []string
		budget     int
		wantCut    bool
		wantResume uint64
	}{
		{name: "whole text", reads: []string{maps}, budget: 0},
		{name: "budget not reached", reads: []string{maps}, budget: len(maps) + 1},
		{name: "cut inside the context line", reads: []string{maps[:cutIn], maps[cutIn:]}, budget: 1, wantCut: true, wantResume: 0x3000},
		{name: "read of one partial line goes on", reads: []string{maps[:10], maps[10:cutIn], maps[cutIn:]}, budget: 1, wantCut: true, wantResume: 0x3000},
		{name: "first read", reads: []string{a + b[:5], b[5:] + ctx}, budget: 1, wantCut: true, wantResume: 0x2000},
		{name: "line begun in an earlier read", reads: []string{a[:10], a[10:] + b[:5], b[5:] + ctx}, budget: 1, wantCut: true, wantResume: 0x4000},
		{name: "earlier read ended a line", reads: []string{a, b + ctx[:4], ctx[4:] + tail}, budget: len(a) + 1, wantCut: true, wantResume: 0x3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := mapsText{f: &partsReader{parts: tt.reads}, budget: tt.budget, lineStart: true}
			_, _, err := otep.FindMapping(&text, make([]byte, otep.MapsBufferSize))
			require.ErrorIs(t, err, otep.ErrNoContext, "no line names a context")
			assert.Equal(t, tt.wantCut, text.cut)
			assert.Equal(t, tt.wantResume, text.resume)
			if !tt.wantCut {
				assert.Equal(t, len(maps), text.read)
			}
		})
	}
}

// partsReader returns each part in one read.
type partsReader struct{ parts []string }

func (r *partsReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	if n < len(r.parts[0]) {
		r.parts[0] = r.parts[0][n:]
	} else {
		r.parts = r.parts[1:]
	}
	return n, nil
}

// result is what a way of finding a mapping says about a process.
type result struct {
	m    otep.Mapping
	kind string
}

func (r result) String() string {
	return fmt.Sprintf("%#x-%#x %q %s", r.m.Start, r.m.End, r.m.Name, r.kind)
}

func resultOf(m otep.Mapping, err error) result { return result{m, kindOf(err)} }

// queryAll walks every file-backed VMA of pid with PROCMAP_QUERY, no text.
func queryAll(r *Reader, pid int) (otep.Mapping, error) {
	f, err := os.Open(r.fs.Path(pid, "maps"))
	if err != nil {
		return otep.Mapping{}, procfs.WrapOS("open maps", pid, err)
	}
	defer f.Close()
	s := r.scratch()
	defer r.maps.Put(s)
	return r.queryMappings(pid, f.Fd(), 0, s)
}

// procmapQuerySupported reports whether this kernel answers PROCMAP_QUERY
// (Linux 6.11 and later); before, the reader reads the maps text only.
func procmapQuerySupported(r *Reader) bool {
	_, err := queryAll(r, os.Getpid())
	return !errors.Is(err, errProcmapUnsupported)
}

// ways finds pid's mapping by the text, by FindMapping, by PROCMAP_QUERY
// after the first read, and (where the process has an address space and
// the kernel answers PROCMAP_QUERY) by PROCMAP_QUERY alone. Without
// anonymous VMA naming all must agree.
func ways(r *Reader, pid int) map[string]result {
	before := r.Stats()
	text := resultOf(r.findMapping(pid, 0))
	hasMM := r.Stats().MapsBytes > before.MapsBytes
	out := map[string]result{
		"text":                 text,
		"FindMapping":          resultOf(r.FindMapping(pid)),
		"query after one read": resultOf(r.findMapping(pid, 1)),
	}
	if hasMM && !r.anonNaming && procmapQuerySupported(r) {
		out["query only"] = resultOf(queryAll(r, pid))
	}
	return out
}

func agree(results map[string]result) bool {
	for _, res := range results {
		if res != results["text"] {
			return false
		}
	}
	return true
}

func anyGone(results map[string]result) bool {
	for _, res := range results {
		if res.kind == "gone" {
			return true
		}
	}
	return false
}

// Every process of this host, found every way: the same mapping and the
// same error kind as the text scan. A few publishers make sure that some
// have a context, one of them beyond the first 64 KiB.
func TestFindMappingMatchesTextOnThisHost(t *testing.T) {
	r := newTestReader(t)
	for _, kind := range pubtest.Kinds {
		pubtest.Start(t, kind, pubtest.Options{}).Publish(serviceContext(t, "host"))
	}
	startPlaced(t, 5_000, 2<<40, 0, nil)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// Processes of concurrent tests may publish or exit meanwhile: a
		// difference must persist to count.
		var results map[string]result
		for range 3 {
			if results = ways(r.Reader, pid); agree(results) || anyGone(results) {
				break
			}
		}
		switch {
		case anyGone(results):
			continue // exited meanwhile
		case !agree(results):
			t.Errorf("pid %d (%s): %v", pid, r.FS().Executable(pid), results)
		}
		kinds[results["text"].kind]++
	}
	t.Logf("compared %d processes: %v; %d PROCMAP_QUERY calls", sum(kinds), kinds, r.Stats().MapsQueries)
	assert.Greater(t, sum(kinds), 10)
	assert.GreaterOrEqual(t, kinds["none"], 3, "the publishers were found")
	if !r.anonNaming && procmapQuerySupported(r.Reader) {
		assert.NotZero(t, r.Stats().MapsQueries, "the query paths ran")
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestFindMappingRealPublishers(t *testing.T) {
	r := newTestReader(t)
	for _, kind := range pubtest.Kinds {
		for _, anon := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/anonymous=%v", kind, anon), func(t *testing.T) {
				p := pubtest.Start(t, kind, pubtest.Options{Anonymous: anon})
				addr := p.Publish(otep.EncodeStrings(map[string]string{"service.name": "x"}))
				results := ways(r.Reader, p.Pid)
				require.True(t, agree(results), "%v", results)
				text := results["text"]
				switch {
				case !anon:
					require.Equal(t, "none", text.kind)
					assert.Equal(t, addr, text.m.Start)
					assert.Contains(t, []string{otep.MappingMemfd, otep.MappingMemfdNamed}, text.m.Name)
				case r.anonNaming:
					require.Equal(t, "none", text.kind)
					assert.Equal(t, otep.MappingAnonNamed, text.m.Name)
				default:
					assert.Equal(t, "no-context", text.kind, "an anonymous mapping has no name on this kernel")
				}
			})
		}
	}
}

// The probe agrees with what a publisher's anonymous mapping shows.
func TestProbeAnonNaming(t *testing.T) {
	p := pubtest.Start(t, pubtest.C, pubtest.Options{Anonymous: true})
	p.Publish(serviceContext(t, "anon"))
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.Pid))
	require.NoError(t, err)
	assert.Equal(t, strings.Contains(string(maps), otep.MappingAnonNamed), probeAnonNaming())
}

// regionAddr is where the many mappings go, as in testdata/manymaps: 1 TiB,
// below the heap and the libraries, free in race-detector builds too.
const regionAddr = 1 << 40

// placedEnv makes TestPlacedHelper a helper process: "<mappings> <context
// address> <file address>" (hex addresses, 0 for none). It maps <mappings>
// anonymous VMAs from regionAddr, the file of fd 3 at the file address and
// publishes a context at the context address.
const placedEnv = "READER_TEST_PLACED"

func TestPlacedHelper(t *testing.T) {
	spec, ok := os.LookupEnv(placedEnv)
	if !ok {
		t.Skip("only runs as a helper process")
	}
	var mappings int
	var ctxAddr, fileAddr uintptr
	_, err := fmt.Sscanf(spec, "%d %x %x", &mappings, &ctxAddr, &fileAddr)
	require.NoError(t, err)
	page := uintptr(os.Getpagesize())
	if mappings > 0 {
		mapAt(t, regionAddr, uintptr(mappings)*page, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE, -1)
		for i := uintptr(1); i < uintptr(mappings); i += 2 {
			_, _, errno := unix.Syscall(unix.SYS_MPROTECT, regionAddr+i*page, page, unix.PROT_READ|unix.PROT_WRITE)
			require.Zero(t, errno, "mprotect")
		}
	}
	if fileAddr != 0 {
		mapAt(t, fileAddr, page, unix.PROT_READ, unix.MAP_PRIVATE, 3)
	}
	if ctxAddr != 0 {
		publishAt(t, ctxAddr, page, serviceContext(t, "placed"))
	}
	fmt.Printf("ready %d\n", os.Getpid())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func mapAt(t *testing.T, addr, length uintptr, prot, flags, fd int) {
	t.Helper()
	got, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, length, uintptr(prot), uintptr(flags|unix.MAP_FIXED_NOREPLACE), uintptr(fd), 0)
	require.Zero(t, errno, "mmap at %#x", addr)
	require.Equal(t, addr, got)
}

// publishAt writes a context into a memfd and maps it at addr: SPEC.md's
// layout, the timestamp set before anyone can read it.
func publishAt(t *testing.T, addr, length uintptr, payload []byte) {
	t.Helper()
	fd, err := unix.MemfdCreate(otep.Signature, unix.MFD_CLOEXEC)
	require.NoError(t, err)
	defer func() { _ = unix.Close(fd) }()
	require.NoError(t, unix.Ftruncate(fd, int64(length)))
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts))
	b := make([]byte, otep.HeaderSize, otep.HeaderSize+len(payload))
	copy(b, otep.Signature)
	binary.LittleEndian.PutUint32(b[otep.OffsetVersion:], otep.Version)
	binary.LittleEndian.PutUint32(b[otep.OffsetPayloadSize:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(b[otep.OffsetPublishedAt:], uint64(ts.Nano()))
	binary.LittleEndian.PutUint64(b[otep.OffsetPayloadAddress:], uint64(addr)+otep.HeaderSize)
	_, err = unix.Pwrite(fd, append(b, payload...), 0)
	require.NoError(t, err)
	mapAt(t, addr, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE, fd)
}

// startPlaced starts TestPlacedHelper; file, when set, becomes its fd 3.
func startPlaced(t *testing.T, mappings int, ctxAddr, fileAddr uintptr, file *os.File) *pubtest.Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPlacedHelper$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %x %x", placedEnv, mappings, ctxAddr, fileAddr))
	if file != nil {
		cmd.ExtraFiles = []*os.File{file}
	}
	return pubtest.StartCommand(t, pubtest.Kind("placed"), cmd)
}

// costs finds pid's mapping by the text and by FindMapping, checks that
// both agree, and returns what each read.
func costs(t *testing.T, r *Reader, pid int) (result, Stats, Stats) {
	t.Helper()
	s0 := r.Stats()
	text := resultOf(r.findMapping(pid, 0))
	s1 := r.Stats()
	found := resultOf(r.FindMapping(pid))
	s2 := r.Stats()
	require.Equal(t, text, found)
	return text, sub(s1, s0), sub(s2, s1)
}

func sub(a, b Stats) Stats {
	return Stats{MapsFiles: a.MapsFiles - b.MapsFiles, MapsBytes: a.MapsBytes - b.MapsBytes, MapsQueries: a.MapsQueries - b.MapsQueries}
}

const bigMappings = 50_000

func TestFindMappingManyMappings(t *testing.T) {
	r := newTestReader(t)
	if r.anonNaming {
		t.Log("this kernel names anonymous VMAs: FindMapping reads the whole text")
	}
	payload := serviceContext(t, "placed")
	// Text of 50,000 anonymous VMAs: at least 40 bytes a line.
	const bigText = bigMappings * 40

	// The context comes after the mappings: the text scan reads them all,
	// FindMapping its first 64 KiB and a few queries.
	after := func(t *testing.T, pid int, wantStart uint64) {
		text, textCost, newCost := costs(t, r.Reader, pid)
		require.Equal(t, "none", text.kind)
		if wantStart != 0 {
			assert.Equal(t, wantStart, text.m.Start)
		}
		ctx, err := r.ReadContext(pid, text.m.Start)
		require.NoError(t, err)
		assert.Equal(t, "placed", ctx.Resource.AsRaw()["service.name"])
		assert.Greater(t, textCost.MapsBytes, uint64(bigText))
		assert.Zero(t, textCost.MapsQueries)
		if r.anonNaming {
			return
		}
		assert.LessOrEqual(t, newCost.MapsBytes, uint64(defaultTextBudget+otep.MapsBufferSize))
		assert.Less(t, newCost.MapsBytes*20, textCost.MapsBytes)
		assert.NotZero(t, newCost.MapsQueries)
		assert.Less(t, newCost.MapsQueries, uint64(100), "one query per file-backed VMA, the anonymous ones skipped")
		t.Logf("text: %d bytes; FindMapping: %d bytes, %d queries", textCost.MapsBytes, newCost.MapsBytes, newCost.MapsQueries)
	}

	t.Run("C publisher, context after", func(t *testing.T) {
		p := startManyMaps(t, buildManyMaps(t), bigMappings, payload)
		after(t, p.Pid, 0)
	})
	t.Run("context after", func(t *testing.T) {
		p := startPlaced(t, bigMappings, 2<<40, 0, nil)
		after(t, p.Pid, 2<<40)
	})
	t.Run("context before", func(t *testing.T) {
		// In the first lines: found in the text, no query.
		p := startPlaced(t, bigMappings, 1<<39, 0, nil)
		text, textCost, newCost := costs(t, r.Reader, p.Pid)
		require.Equal(t, "none", text.kind)
		assert.Equal(t, uint64(1<<39), text.m.Start)
		assert.LessOrEqual(t, textCost.MapsBytes, uint64(defaultTextBudget))
		assert.LessOrEqual(t, newCost.MapsBytes, uint64(defaultTextBudget))
		assert.Zero(t, newCost.MapsQueries)
	})
	t.Run("no context", func(t *testing.T) {
		p := startManyMaps(t, buildManyMaps(t), bigMappings, nil)
		text, textCost, newCost := costs(t, r.Reader, p.Pid)
		assert.Equal(t, "no-context", text.kind)
		if !r.anonNaming {
			assert.Less(t, newCost.MapsBytes*20, textCost.MapsBytes)
		}
	})
	t.Run("name longer than PATH_MAX before the context", func(t *testing.T) {
		// The kernel refuses such a name (ENAMETOOLONG): the walk steps
		// over its VMA and goes on.
		file := longPathFile(t)
		p := startPlaced(t, bigMappings, 3<<40, 2<<40, file)
		maps, err := os.ReadFile(r.FS().Path(p.Pid, "maps"))
		require.NoError(t, err)
		require.Greater(t, len(maps), bigText)
		require.Contains(t, string(maps), strings.Repeat("d", 200)+"/", "the long path is in the text")
		text, _, newCost := costs(t, r.Reader, p.Pid)
		require.Equal(t, "none", text.kind)
		assert.Equal(t, uint64(3<<40), text.m.Start)
		if !r.anonNaming {
			assert.NotZero(t, newCost.MapsQueries)
		}
		paths := ways(r.Reader, p.Pid)
		assert.True(t, agree(paths), "%v", paths)
	})
}

// longPathFile creates a one-page file whose path is longer than PATH_MAX
// (through directory fds: no syscall takes such a path).
func longPathFile(t *testing.T) *os.File {
	t.Helper()
	dir, err := unix.Open(t.TempDir(), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	component := strings.Repeat("d", 200)
	for range unix.PathMax/len(component) + 1 {
		require.NoError(t, unix.Mkdirat(dir, component, 0o700))
		next, err := unix.Openat(dir, component, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		_ = unix.Close(dir)
		dir = next
	}
	fd, err := unix.Openat(dir, "file", unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	_ = unix.Close(dir)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "long")
	t.Cleanup(func() { _ = f.Close() })
	require.NoError(t, f.Truncate(int64(os.Getpagesize())))
	return f
}

func TestFindMappingConcurrent(t *testing.T) {
	r := newTestReader(t)
	p := startPlaced(t, 5_000, 2<<40, 0, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 20 {
				m, err := r.FindMapping(p.Pid)
				if err == nil && m.Start != 2<<40 {
					err = fmt.Errorf("found %#x", m.Start)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !r.anonNaming {
		assert.NotZero(t, r.Stats().MapsQueries)
	}
}

func TestQueryErrors(t *testing.T) {
	r := newTestReader(t)
	s := r.scratch()
	supported := procmapQuerySupported(r.Reader)

	t.Run("process gone", func(t *testing.T) {
		if !supported {
			t.Skip("this kernel has no PROCMAP_QUERY (before 6.11)")
		}
		sleep := exec.Command("sleep", "30")
		require.NoError(t, sleep.Start())
		f, err := os.Open(r.FS().Path(sleep.Process.Pid, "maps"))
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, sleep.Process.Kill())
		_ = sleep.Wait()
		_, err = r.queryMappings(sleep.Process.Pid, f.Fd(), 0, s)
		if errors.Is(err, otep.ErrNoContext) {
			// Debian's arm64-16k kernel (6.12) answers ENOENT, no mapping,
			// for good: the dead process's address space is still
			// referenced, and empty. Nothing is read either way.
			t.Logf("the query of a dead process found no mapping: %v", err)
			return
		}
		require.ErrorIs(t, err, procfs.ErrProcessGone)
		assert.ErrorIs(t, err, unix.ESRCH)
	})
	t.Run("not a maps file", func(t *testing.T) {
		// What a kernel before 6.11 answers on a maps file too: ENOTTY.
		f, err := os.Open(filepath.Join(r.FS().ProcDir(), "self", "status"))
		require.NoError(t, err)
		defer f.Close()
		_, err = r.queryMappings(os.Getpid(), f.Fd(), 0, s)
		require.ErrorIs(t, err, errProcmapUnsupported)
		assert.ErrorIs(t, err, unix.ENOTTY)
	})
	t.Run("nothing above the address", func(t *testing.T) {
		if !supported {
			t.Skip("this kernel has no PROCMAP_QUERY (before 6.11)")
		}
		f, err := os.Open(r.FS().Path(os.Getpid(), "maps"))
		require.NoError(t, err)
		defer f.Close()
		_, err = r.queryMappings(os.Getpid(), f.Fd(), 1<<63, s)
		require.ErrorIs(t, err, otep.ErrNoContext)
	})
}

// Once PROCMAP_QUERY is known to be refused, the text is read to the end.
func TestProcmapUnavailable(t *testing.T) {
	r := newTestReader(t)
	p := startPlaced(t, 5_000, 2<<40, 0, nil)
	r.procmapUnavailable.Store(true)
	before := r.Stats()
	m, err := r.FindMapping(p.Pid)
	require.NoError(t, err)
	assert.Equal(t, uint64(2<<40), m.Start)
	assert.Equal(t, before.MapsQueries, r.Stats().MapsQueries)
	assert.Greater(t, r.Stats().MapsBytes-before.MapsBytes, uint64(5_000*40))
}
