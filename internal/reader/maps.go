// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// defaultTextBudget is how much maps text FindMapping reads before it goes
// on with PROCMAP_QUERY: 64 KiB, 700-1,500 lines. A query is a syscall per
// file-backed VMA, dearer than that VMA's line of text (about 420 against
// 330 ns here), and only pays where the kernel skips many anonymous VMAs
// (about 65 ns each against 130-180 ns of text). Ordinary processes (a JVM
// with 50 threads: 20 KB; Python with its extensions: 31 KB) so stay on the
// text as before; the giants that dominate a scan spend 64 KiB of text,
// a few percent of their walk.
const defaultTextBudget = 64 << 10

// procmapQuery is struct procmap_query of include/uapi/linux/fs.h (Linux
// 6.11), the argument of the PROCMAP_QUERY ioctl on a maps file.
type procmapQuery struct {
	Size        uint64 // sizeof(struct procmap_query)
	QueryFlags  uint64 // in
	QueryAddr   uint64 // in
	VMAStart    uint64 // out
	VMAEnd      uint64 // out
	VMAFlags    uint64 // out: procmapVMA* bits
	VMAPageSize uint64 // out
	VMAOffset   uint64 // out
	Inode       uint64 // out
	DevMajor    uint32 // out
	DevMinor    uint32 // out
	VMANameSize uint32 // in/out: buffer size; name length + NUL, 0 for none
	BuildIDSize uint32 // in/out
	VMANameAddr uint64 // in
	BuildIDAddr uint64 // in
}

const (
	procmapVMAReadable    = 0x01
	procmapVMAExecutable  = 0x04
	procmapCoveringOrNext = 0x10
	procmapFileBacked     = 0x20

	procmapQuerySize = uint64(unsafe.Sizeof(procmapQuery{}))
	// procmapQueryIoctl is _IOWR('f', 17, struct procmap_query).
	procmapQueryIoctl = 3<<30 | uintptr(procmapQuerySize)<<16 | 'f'<<8 | 17

	// procmapNameSize is PATH_MAX, the most the kernel fills: only longer
	// paths come back ENAMETOOLONG.
	procmapNameSize = unix.PathMax
)

// errProcmapUnsupported: this kernel (before 6.11) or a seccomp filter
// refuses PROCMAP_QUERY; the text is all there is.
var errProcmapUnsupported = errors.New("PROCMAP_QUERY unsupported")

// mapsScratch is what one FindMapping works in, pooled so that a call costs
// no allocation: the kernel writes the query and the names into it.
type mapsScratch struct {
	buf   []byte // maps text, then VMA names
	query procmapQuery
	text  mapsText
}

func (r *Reader) scratch() *mapsScratch {
	if s, ok := r.maps.Get().(*mapsScratch); ok {
		return s
	}
	return &mapsScratch{buf: make([]byte, otep.MapsBufferSize)}
}

// FindMapping returns the first context mapping of pid (see
// otep.FindMapping): it reads the first 64 KiB of <root>/proc/<pid>/maps
// and, when there is more, asks PROCMAP_QUERY for the file-backed VMAs after
// the last line read. Anonymous VMAs, the bulk of big processes, cannot
// carry a context name without anonymous VMA naming (CONFIG_ANON_VMA_NAME):
// where the kernel has it, or lacks PROCMAP_QUERY, the text is read to the
// end.
func (r *Reader) FindMapping(pid int) (otep.Mapping, error) {
	budget := 0
	if !r.anonNaming && !r.procmapUnavailable.Load() {
		budget = r.textBudget
	}
	return r.findMapping(pid, budget)
}

// findMapping reads up to budget bytes of maps text (all of it for 0), and
// queries the rest.
func (r *Reader) findMapping(pid, budget int) (otep.Mapping, error) {
	f, err := os.Open(r.fs.Path(pid, "maps"))
	if err != nil {
		return otep.Mapping{}, procfs.WrapOS("open maps", pid, err)
	}
	defer f.Close()
	s := r.scratch()
	defer func() {
		s.text = mapsText{} // the pool must not keep f
		r.maps.Put(s)
	}()
	s.text = mapsText{f: f, budget: budget, lineStart: true}
	m, _, err := otep.FindMapping(&s.text, s.buf)
	r.stats.mapsFiles.Add(1)
	r.stats.mapsBytes.Add(uint64(s.text.read))
	switch {
	case err == nil:
		return m, nil
	case !errors.Is(err, otep.ErrNoContext):
		return otep.Mapping{}, procfs.WrapOS("read maps", pid, err)
	case !s.text.cut:
		return otep.Mapping{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	m, err = r.queryMappings(pid, f.Fd(), s.text.resume, s)
	if errors.Is(err, errProcmapUnsupported) {
		// Once per Reader: from now on the text is read to the end.
		r.procmapUnavailable.Store(true)
		return r.findMapping(pid, 0)
	}
	return m, err
}

// queryMappings walks the readable file-backed VMAs from addr up with
// PROCMAP_QUERY and returns the first that otep's rules accept.
func (r *Reader) queryMappings(pid int, fd uintptr, addr uint64, s *mapsScratch) (otep.Mapping, error) {
	q := &s.query
	name := s.buf[:procmapNameSize]
	// Each answer ends above addr, so the walk ends; the bound stops a
	// process that keeps mapping ahead of it.
	for range r.maxQueries {
		*q = procmapQuery{
			Size:        procmapQuerySize,
			QueryFlags:  procmapCoveringOrNext | procmapFileBacked | procmapVMAReadable,
			QueryAddr:   addr,
			VMANameSize: uint32(len(name)),
			VMANameAddr: uint64(uintptr(unsafe.Pointer(&name[0]))),
		}
		err := r.procmapQuery(fd, q)
		if errors.Is(err, unix.ENAMETOOLONG) || errors.Is(err, unix.E2BIG) {
			// A name longer than PATH_MAX is no context name: ask again
			// without it, only to step over the VMA.
			q.VMANameSize, q.VMANameAddr = 0, 0
			err = r.procmapQuery(fd, q)
		}
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOENT): // no VMA left at or above addr
			return otep.Mapping{}, fmt.Errorf("pid %d: %w", pid, otep.ErrNoContext)
		case errors.Is(err, unix.ESRCH): // the mm is gone
			return otep.Mapping{}, fmt.Errorf("query maps of pid %d: %w: %w", pid, procfs.ErrProcessGone, err)
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS),
			errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
			// The kernel checks access at open only: EPERM/EACCES come from
			// seccomp, like ENOSYS.
			return otep.Mapping{}, fmt.Errorf("query maps of pid %d: %w: %w", pid, errProcmapUnsupported, err)
		default:
			return otep.Mapping{}, procfs.WrapOS("query maps", pid, err)
		}
		if q.VMAEnd <= addr || q.VMAEnd <= q.VMAStart {
			return otep.Mapping{}, fmt.Errorf("query maps of pid %d: VMA %#x-%#x does not advance past %#x",
				pid, q.VMAStart, q.VMAEnd, addr)
		}
		if q.VMAFlags&procmapVMAExecutable == 0 && q.VMANameSize > 0 && int(q.VMANameSize) <= len(name) {
			if n, ok := otep.ContextName(name[:q.VMANameSize-1]); ok {
				return otep.Mapping{Start: q.VMAStart, End: q.VMAEnd, Name: n}, nil
			}
		}
		addr = q.VMAEnd
	}
	return otep.Mapping{}, fmt.Errorf("query maps of pid %d: more than %d file-backed VMAs, gave up", pid, r.maxQueries)
}

// procmapQuery runs one PROCMAP_QUERY ioctl; q (and its name buffer) must be
// heap memory: Go moves stacks, never heap objects.
func (r *Reader) procmapQuery(fd uintptr, q *procmapQuery) error {
	r.stats.mapsQueries.Add(1)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, procmapQueryIoctl, uintptr(unsafe.Pointer(q))); errno != 0 {
		return errno
	}
	return nil
}

// contextName matches a VMA name exactly against the context names.
//
// mapsText feeds a maps file to otep.FindMapping and counts what it reads.
// With a budget it ends the text early: once budget bytes are read it cuts
// a read after its last whole line and reports io.EOF, so that
// otep.FindMapping has searched exactly the lines below resume, the end
// address of that line, and the rest can be queried from there.
type mapsText struct {
	f         io.Reader
	budget    int // 0: read to the end
	read      int // bytes read from f
	lineStart bool
	cut       bool
	resume    uint64
}

func (t *mapsText) Read(p []byte) (int, error) {
	n, err := t.f.Read(p)
	t.read += n
	if n == 0 {
		return n, err
	}
	if t.budget > 0 && t.read >= t.budget {
		if end, ok := t.cutAfterLastLine(p[:n]); ok {
			return end, io.EOF
		}
	}
	t.lineStart = p[n-1] == '\n'
	return n, err
}

// cutAfterLastLine finds the last whole line of data whose start is in data
// (or where data starts a line) and returns the length up to its newline.
// Without such a line, or when its address range does not parse, the text
// goes on.
func (t *mapsText) cutAfterLastLine(data []byte) (int, bool) {
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 {
		return 0, false
	}
	prev := bytes.LastIndexByte(data[:last], '\n')
	if prev < 0 && !t.lineStart {
		return 0, false // the line began in an earlier read
	}
	end, ok := lineEnd(data[prev+1 : last])
	if !ok {
		return 0, false
	}
	t.cut, t.resume = true, end
	return last + 1, true
}

// lineEnd parses the end address of a maps line ("start-end perms ...").
func lineEnd(line []byte) (uint64, bool) {
	dash := bytes.IndexByte(line, '-')
	if dash <= 0 {
		return 0, false
	}
	sp := bytes.IndexByte(line[dash:], ' ')
	if sp <= 1 {
		return 0, false
	}
	start, err1 := strconv.ParseUint(string(line[:dash]), 16, 64)
	end, err2 := strconv.ParseUint(string(line[dash+1:dash+sp]), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, false
	}
	return end, true
}

// probeAnonNaming reports whether this kernel can name anonymous VMAs
// (prctl PR_SET_VMA_ANON_NAME, CONFIG_ANON_VMA_NAME): then an anonymous
// VMA, which PROCMAP_QUERY's file-backed filter skips, may be a context.
// It names a page of its own; only EINVAL, the answer of kernels without
// it, says no: an unknown answer keeps the exact, slower way.
func probeAnonNaming() bool {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, page, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return true
	}
	defer func() { _ = unix.Munmap(mem) }()
	name, err := unix.BytePtrFromString("otelcol-processctx-probe")
	if err != nil {
		return true
	}
	_, _, errno := unix.Syscall6(unix.SYS_PRCTL, unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME,
		uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(page), uintptr(unsafe.Pointer(name)), 0)
	return errno != unix.EINVAL
}

// defaultMaxMapCount is vm.max_map_count's default.
const defaultMaxMapCount = 65530

// maxQueries bounds the PROCMAP_QUERY walk of one process: twice
// vm.max_map_count, the most VMAs a process can have at once, so that only
// a process that maps ahead of the walk meets it.
func maxQueries(fs *procfs.FS) int {
	n := defaultMaxMapCount
	if b, err := os.ReadFile(filepath.Join(fs.ProcDir(), "sys", "vm", "max_map_count")); err == nil {
		if v, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && v > n {
			n = v
		}
	}
	return 2 * n
}
