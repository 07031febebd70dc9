package procmem

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// ClockTicks is USER_HZ, the unit of start times in /proc/<pid>/stat (100 on
// every Linux ABI).
const ClockTicks = 100

// statBufSize bounds the bytes of /proc/<pid>/stat read. Field 22 (the start
// time) ends within the first ~500 bytes: the comm is at most 64 bytes and
// fields 3-22 at most 20 numbers of at most 20 digits.
const statBufSize = 1024

// exeDeletedSuffix is what the kernel appends to the exe link of a process
// whose executable was deleted (or replaced by a package upgrade).
const exeDeletedSuffix = " (deleted)"

// maxOwnerCacheEntries bounds the uid → user name cache of an
// IdentityReader; the cache is cleared when it is full.
const maxOwnerCacheEntries = 4096

// StartTime returns the process's start time in clock ticks since boot
// (field 22 of /proc/<pid>/stat). Together with the pid it identifies a
// process: pids are reused, (pid, start time) are not.
//
// A process that exited, or is a zombie, is reported as ErrProcessGone; a
// procfs mounted with hidepid may give ErrPermissionDenied. This is the hot
// path of a scan: one open, read and close into a stack buffer, no allocation
// (unless the procfs path is very long).
func (fs *FS) StartTime(pid int) (uint64, error) {
	var buf [statBufSize]byte
	st, err := fs.statFields(pid, &buf)
	if err != nil {
		return 0, err
	}
	return st.start, nil
}

// statFields reads and parses /proc/<pid>/stat through buf; the comm of the
// result points into buf. A zombie or dead process is ErrProcessGone.
func (fs *FS) statFields(pid int, buf *[statBufSize]byte) (statLine, error) {
	n, err := fs.readStat(pid, buf)
	if err != nil {
		return statLine{}, err
	}
	st, err := parseStatLine(buf[:n])
	if err != nil {
		return statLine{}, fmt.Errorf("parse stat of pid %d: %w", pid, err)
	}
	if st.gone() {
		return statLine{}, fmt.Errorf("stat of pid %d: state %c: %w", pid, st.state, ErrProcessGone)
	}
	return st, nil
}

// readStat reads the start of <root>/proc/<pid>/stat into buf and returns the
// number of bytes read. It calls openat directly with a NUL-terminated path
// built on the stack: unix.Open would copy the path to the heap.
func (fs *FS) readStat(pid int, buf *[statBufSize]byte) (int, error) {
	var pathBuf [128]byte
	p := append(pathBuf[:0], fs.proc...)
	p = append(p, '/')
	p = strconv.AppendInt(p, int64(pid), 10)
	p = append(p, "/stat\x00"...)
	if bytes.IndexByte(p[:len(p)-1], 0) >= 0 {
		return 0, fmt.Errorf("open stat of pid %d: %w", pid, unix.EINVAL)
	}
	dirfd := unix.AT_FDCWD
	var fd int
	for {
		r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&p[0])),
			uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, wrapOS("open stat", pid, errno)
		}
		fd = int(r)
		break
	}
	defer func() { _ = unix.Close(fd) }()
	// A raw read too: unix.Read, built with -race, moves buf to the heap.
	n := 0
	for n < len(buf) {
		r, _, errno := unix.Syscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[n])), uintptr(len(buf)-n))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, wrapOS("read stat", pid, errno)
		}
		if r == 0 {
			break
		}
		n += int(r)
		if buf[n-1] == '\n' {
			// The kernel hands out the whole line, newline last, in one
			// read: no need for another read to see EOF (a quarter of
			// the syscalls of a steady-state scan).
			break
		}
	}
	if n == 0 {
		// The task was released between the open and the read.
		return 0, fmt.Errorf("read stat of pid %d: empty: %w", pid, ErrProcessGone)
	}
	return n, nil
}

// statLine holds the fields of /proc/<pid>/stat the identity needs.
type statLine struct {
	comm  []byte // field 2 without the parentheses; a sub-slice of the input
	state byte   // field 3
	ppid  int    // field 4
	start uint64 // field 22, clock ticks since boot
}

// gone reports whether the state is zombie or dead: the process has exited
// and only waits to be reaped.
func (s statLine) gone() bool {
	return s.state == 'Z' || s.state == 'X' || s.state == 'x'
}

// errMalformedStat is wrapped by every parse error of a stat line.
var errMalformedStat = fmt.Errorf("malformed stat: %w", ErrInvalid)

// parseStatLine parses the fields of a stat line up to field 22. The comm
// (field 2) may hold any byte, spaces and parentheses included, so the fields
// after it are found after the last ')'. Field 22 must be followed by a
// separator (it always is in a full stat line): data that stops inside it,
// as a short or truncated read would, is an error.
func parseStatLine(data []byte) (statLine, error) {
	var st statLine
	open := bytes.IndexByte(data, '(')
	closing := lastIndexByte(data, ')')
	if open < 0 || closing < open {
		return st, fmt.Errorf("no (comm): %w", errMalformedStat)
	}
	st.comm = data[open+1 : closing]
	rest := data[closing+1:]
	// Fields 3 to 22 follow, each preceded by one space.
	for field := 3; field <= 22; field++ {
		if len(rest) == 0 || rest[0] != ' ' {
			return st, fmt.Errorf("field %d missing: %w", field, errMalformedStat)
		}
		rest = rest[1:]
		end := 0
		for end < len(rest) && rest[end] != ' ' && rest[end] != '\n' {
			end++
		}
		if end == 0 || (field == 22 && end == len(rest)) {
			// Empty, or the data stops inside field 22.
			return st, fmt.Errorf("field %d missing: %w", field, errMalformedStat)
		}
		v := rest[:end]
		rest = rest[end:]
		switch field {
		case 3:
			if len(v) != 1 {
				return st, fmt.Errorf("state %q: %w", string(v), errMalformedStat)
			}
			st.state = v[0]
		case 4:
			ppid, ok := parseDecimalUint(v)
			if !ok || ppid > 1<<31-1 {
				return st, fmt.Errorf("ppid %q: %w", string(v), errMalformedStat)
			}
			st.ppid = int(ppid)
		case 22:
			start, ok := parseDecimalUint(v)
			if !ok {
				return st, fmt.Errorf("start time %q: %w", string(v), errMalformedStat)
			}
			st.start = start
		}
	}
	return st, nil
}

// lastIndexByte is bytes.LastIndexByte for data where c is rare, e.g. ')'
// in a stat line: repeated forward searches, which are vectorized, where
// bytes.LastIndexByte goes back one byte at a time over the whole line (half
// the cost of parsing it).
func lastIndexByte(data []byte, c byte) int {
	last := -1
	for from := 0; ; {
		i := bytes.IndexByte(data[from:], c)
		if i < 0 {
			return last
		}
		last = from + i
		from = last + 1
	}
}

// parseDecimalUint parses a non-empty unsigned decimal number that fits in a
// uint64.
func parseDecimalUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// Identity is what the host knows of a process, read from procfs.
type Identity struct {
	PID        int
	StartTicks uint64 // field 22 of stat: clock ticks since boot
	ParentPID  int    // field 4 of stat
	// CreationTime is boot time + StartTicks/ClockTicks, UTC. Zero when the
	// boot time could not be read.
	CreationTime time.Time
	// ExecutableName (process.executable.name) is, as semantic conventions
	// ask, the base name of ExecutablePath; the comm (stat field 2, at most
	// 15 bytes) when the path cannot be read.
	ExecutableName string
	// ExecutablePath (process.executable.path) is the target of
	// /proc/<pid>/exe without a " (deleted)" suffix; empty when unreadable
	// (kernel threads, no permission).
	ExecutablePath string
	// CommandLine (process.command_line) is Args joined with spaces.
	CommandLine string
	Args        []string
	// UID is the real uid from status; -1 when unknown.
	UID int
	// Owner (process.owner) is the user name of UID, or UID in decimal when
	// it has no name; empty when UID is unknown.
	Owner string
	// NSpid is the pid in each pid namespace the process is in, from status:
	// the pid of the procfs's namespace first, the innermost last. Nil when
	// unknown.
	NSpid []int
	// ContainerID (container.id) is derived from /proc/<pid>/cgroup; "" when
	// the process is not in a recognized container.
	ContainerID string
}

// VPID returns the pid in the innermost pid namespace of the process (the
// last of NSpid), or PID when it is not in a nested namespace or NSpid is
// unknown.
func (id Identity) VPID() int {
	if len(id.NSpid) == 0 {
		return id.PID
	}
	return id.NSpid[len(id.NSpid)-1]
}

// CreationTimeString returns process.creation.time: CreationTime in
// RFC 3339 (ISO 8601), UTC, with fractional seconds only as needed
// ("2026-11-30T00:49:17.37Z"). It returns "" when CreationTime is unknown.
func (id Identity) CreationTimeString() string {
	if id.CreationTime.IsZero() {
		return ""
	}
	return id.CreationTime.UTC().Format(time.RFC3339Nano)
}

// creationTime converts a start time in clock ticks since boot to wall time.
func creationTime(bootTime int64, startTicks uint64) time.Time {
	secs := startTicks / ClockTicks
	frac := startTicks % ClockTicks
	return time.Unix(bootTime+int64(secs), int64(frac)*int64(time.Second/ClockTicks)).UTC()
}

// IdentityReader reads process identities from an FS. It caches user names.
// It is safe for concurrent use.
type IdentityReader struct {
	fs     *FS
	pfs    procfs.FS
	pfsErr error
	owners ownerCache
}

// NewIdentityReader returns an IdentityReader for fs. User names are looked
// up with os/user when fs is rooted at "/", else in <root>/etc/passwd (the
// host's, when the host filesystem is mounted at the root).
func NewIdentityReader(fs *FS) *IdentityReader {
	r := &IdentityReader{fs: fs}
	r.pfs, r.pfsErr = procfs.NewFS(fs.ProcDir())
	root := fs.Root()
	if root == "" || filepath.Clean(root) == "/" {
		r.owners.lookup = lookupUserName
	} else {
		passwd := filepath.Join(root, "etc", "passwd")
		r.owners.lookup = func(uid int) (string, bool) { return lookupPasswdFile(passwd, uid) }
	}
	return r
}

// FS returns the FS the reader reads.
func (r *IdentityReader) FS() *FS { return r.fs }

// Identity reads the identity of pid. The pid and start time are required:
// errors wrap ErrProcessGone (the process exited, is a zombie, or its pid was
// reused while it was read) or ErrPermissionDenied. Every other field is best
// effort and left empty when it cannot be read.
func (r *IdentityReader) Identity(pid int) (Identity, error) {
	var buf [statBufSize]byte
	st, err := r.fs.statFields(pid, &buf)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{
		PID:            pid,
		StartTicks:     st.start,
		ParentPID:      st.ppid,
		ExecutableName: string(st.comm),
		UID:            -1,
	}
	if boot, err := r.fs.BootTime(); err == nil {
		id.CreationTime = creationTime(boot, st.start)
	}

	if r.pfsErr == nil {
		// Errors are ignored here: the start time is read again below, which
		// tells a vanished process from a field that is just unreadable.
		if proc, err := r.pfs.Proc(pid); err == nil {
			if exe, err := proc.Executable(); err == nil {
				id.ExecutablePath = strings.TrimSuffix(exe, exeDeletedSuffix)
				id.ExecutableName = filepath.Base(id.ExecutablePath)
			}
			if args, err := proc.CmdLine(); err == nil && len(args) > 0 {
				id.Args = args
				id.CommandLine = strings.Join(args, " ")
			}
			if status, err := proc.NewStatus(); err == nil {
				id.UID = int(status.UIDs[0])
				if len(status.NSpids) > 0 {
					id.NSpid = make([]int, len(status.NSpids))
					for i, p := range status.NSpids {
						id.NSpid[i] = int(p)
					}
				}
			}
		}
	}
	if id.UID >= 0 {
		id.Owner = r.owners.owner(id.UID)
	}
	if cgroup, err := os.ReadFile(r.fs.path(pid, "cgroup")); err == nil {
		id.ContainerID = ContainerIDFromCgroup(cgroup)
	}

	// The pid may have been reused while the fields above were read: they
	// belong to the process only if it still has the same start time.
	start, err := r.fs.StartTime(pid)
	if err != nil {
		return Identity{}, err
	}
	if start != id.StartTicks {
		return Identity{}, fmt.Errorf("pid %d was reused while its identity was read: %w", pid, ErrProcessGone)
	}
	return id, nil
}

// ownerCache maps uids to user names, bounded by maxOwnerCacheEntries.
type ownerCache struct {
	// lookup returns the user name of uid, and false when it has none.
	lookup func(uid int) (string, bool)

	mu    sync.Mutex
	names map[int]string
}

// owner returns the user name of uid, or uid in decimal when it has none.
func (c *ownerCache) owner(uid int) string {
	c.mu.Lock()
	name, ok := c.names[uid]
	c.mu.Unlock()
	if ok {
		return name
	}
	// Look up outside the lock: a name service may be slow.
	name, ok = c.lookup(uid)
	if !ok {
		name = strconv.Itoa(uid)
	}
	c.mu.Lock()
	if c.names == nil || len(c.names) >= maxOwnerCacheEntries {
		c.names = make(map[int]string)
	}
	c.names[uid] = name
	c.mu.Unlock()
	return name
}

// lookupUserName looks uid up with os/user (the reader's own user database).
func lookupUserName(uid int) (string, bool) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Username == "" {
		return "", false
	}
	return u.Username, true
}

// lookupPasswdFile looks uid up in a passwd(5) file.
func lookupPasswdFile(path string, uid int) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	return lookupPasswd(f, uid)
}

// lookupPasswd returns the name of the first entry "name:password:uid:..."
// of a passwd(5) file with the given uid.
func lookupPasswd(f io.Reader, uid int) (string, bool) {
	want := strconv.Itoa(uid)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			continue
		}
		_, rest, ok = strings.Cut(rest, ":") // password
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, ":")
		if id == want {
			return name, true
		}
	}
	return "", false
}
