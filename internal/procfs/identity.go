// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// exeDeletedSuffix is what the kernel appends to the exe link of a process
// whose executable was deleted (or replaced by a package upgrade).
const exeDeletedSuffix = " (deleted)"

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
	// CommandLine (process.command_line) is the arguments of the command
	// line joined with spaces.
	CommandLine string
	// Args (process.command_args) is the arguments of the command line as
	// /proc/<pid>/cmdline separates them (at NUL), so that an argument
	// that holds spaces stays one; they share CommandLine's memory. Nil
	// when CommandLine is empty.
	Args []string
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
	// PodUID (k8s.pod.uid) is the uid of the Kubernetes pod named by
	// /proc/<pid>/cgroup, in canonical form; "" when the process is not in a
	// pod's cgroup (or is in a static pod's, which has no API uid there).
	PodUID string
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

// joinArgs returns the arguments joined with spaces, and the arguments
// again as substrings of that line, so that keeping both costs the line
// once.
func joinArgs(args []string) (string, []string) {
	line := strings.Join(args, " ")
	out := make([]string, len(args))
	off := 0
	for i, a := range args {
		out[i] = line[off : off+len(a)]
		off += len(a) + 1
	}
	return line, out
}

// IdentityReader reads process identities from an FS. It caches user names.
// It is safe for concurrent use.
type IdentityReader struct {
	fs     *FS
	owners ownerCache
}

// NewIdentityReader returns an IdentityReader for fs. User names are looked
// up with os/user when fs is rooted at "/", else in <root>/etc/passwd (the
// host's, when the host filesystem is mounted at the root).
func NewIdentityReader(fs *FS) *IdentityReader {
	r := &IdentityReader{fs: fs}
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

	// Errors are ignored here: the start time is read again below, which
	// tells a vanished process from a field that is just unreadable.
	if proc, err := r.fs.pfs.Proc(pid); err == nil {
		if exe, err := proc.Executable(); err == nil {
			id.ExecutablePath = strings.TrimSuffix(exe, exeDeletedSuffix)
			id.ExecutableName = filepath.Base(id.ExecutablePath)
		}
		if args, err := proc.CmdLine(); err == nil && len(args) > 0 {
			id.CommandLine, id.Args = joinArgs(args)
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
	if id.UID >= 0 {
		id.Owner = r.owners.owner(id.UID)
	}
	if cgroup, err := os.ReadFile(r.fs.Path(pid, "cgroup")); err == nil {
		id.ContainerID = ContainerIDFromCgroup(cgroup)
		id.PodUID = PodUIDFromCgroup(cgroup)
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
