package procfs

import "bytes"

// containerIDLen is the length of the container ids of Docker, containerd,
// CRI-O and podman: 32 bytes in lowercase hex.
const containerIDLen = 64

// containerScopePrefixes are the unit-name prefixes container runtimes give
// the cgroup of a container under the systemd cgroup driver
// ("<prefix><id>.scope"); podman also uses "libpod-<id>" without the suffix.
// A longer prefix that shares the start of one of these, such as
// "crio-conmon-<id>" (the monitor process of a CRI-O container) or
// "libpod-conmon-<id>", leaves something other than a bare id behind and so
// is not a match.
var containerScopePrefixes = [...]string{
	"cri-containerd-",
	"crio-",
	"docker-",
	"libpod-",
}

// ContainerIDFromCgroup extracts a container id from the contents of
// /proc/<pid>/cgroup: cgroup v1 and v2 lines "hierarchy-ID:controllers:path"
// of containerd/CRI ("cri-containerd-<id>.scope", "/kubepods/.../<id>"),
// CRI-O ("crio-<id>.scope"), Docker ("docker-<id>.scope", "/docker/<id>") and
// podman ("libpod-<id>.scope", "/libpod-<id>/..."). It returns the 64-digit
// lowercase hex id, or "" when there is none.
//
// Within a path the innermost segment that holds an id wins (a container
// nested in another reports its own id); the first line that holds one
// decides. The only allocation is the returned string.
func ContainerIDFromCgroup(cgroup []byte) string {
	for len(cgroup) > 0 {
		line := cgroup
		if i := bytes.IndexByte(cgroup, '\n'); i >= 0 {
			line, cgroup = cgroup[:i], cgroup[i+1:]
		} else {
			cgroup = nil
		}
		if id := containerIDFromCgroupLine(line); id != nil {
			return string(id)
		}
	}
	return ""
}

// containerIDFromCgroupLine returns the id in the path of one cgroup line
// (a sub-slice of line), or nil.
func containerIDFromCgroupLine(line []byte) []byte {
	// hierarchy-ID ':' controllers ':' path; the path itself may hold ':'.
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return nil
	}
	j := bytes.IndexByte(line[i+1:], ':')
	if j < 0 {
		return nil
	}
	path := line[i+1+j+1:]
	// Walk the segments from the innermost out.
	for len(path) > 0 {
		seg := path
		if k := bytes.LastIndexByte(path, '/'); k >= 0 {
			seg, path = path[k+1:], path[:k]
		} else {
			path = nil
		}
		if id := containerIDFromSegment(seg); id != nil {
			return id
		}
	}
	return nil
}

// containerIDFromSegment returns the id a single path segment names: a bare
// id (cgroupfs driver), or "<runtime prefix><id>" with an optional ".scope"
// suffix (systemd driver).
func containerIDFromSegment(seg []byte) []byte {
	if isContainerID(seg) {
		return seg
	}
	seg = bytes.TrimSuffix(seg, []byte(".scope"))
	if len(seg) <= containerIDLen {
		return nil
	}
	id := seg[len(seg)-containerIDLen:]
	prefix := seg[:len(seg)-containerIDLen]
	for _, p := range containerScopePrefixes {
		if string(prefix) == p {
			if isContainerID(id) {
				return id
			}
			return nil
		}
	}
	return nil
}

// isContainerID reports whether b is exactly 64 lowercase hex digits.
func isContainerID(b []byte) bool {
	if len(b) != containerIDLen {
		return false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
