// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import "bytes"

// containerIDLen is the length of the container ids of Docker, containerd,
// CRI-O and podman: 32 bytes written as 64 lowercase hex digits.
const containerIDLen = 64

// podUIDLen is the length of a Kubernetes pod uid in its canonical form, a
// UUID: 8-4-4-4-12 lowercase hex digits joined by dashes.
const podUIDLen = 36

// containerScopePrefixes are the unit-name prefixes container runtimes give
// the cgroup of a container under the systemd cgroup driver
// ("<prefix><id>.scope"); podman also uses "libpod-<id>" without the suffix
// (cgroupfs driver), and "libpod-payload-<id>" under the unit that runs it
// with --cgroups=split, as Quadlet and cephadm do. A longer prefix that
// shares the start of one of these, such as "crio-conmon-<id>" (the monitor
// process of a CRI-O container) or "libpod-conmon-<id>", leaves something
// other than a bare id behind and so is not a match.
var containerScopePrefixes = [...]string{
	"cri-containerd-",
	"crio-",
	"docker-",
	"libpod-",
	"libpod-payload-",
}

// ContainerIDFromCgroup extracts a container id from the contents of
// /proc/<pid>/cgroup: cgroup v1 and v2 lines "hierarchy-ID:controllers:path"
// of containerd/CRI ("cri-containerd-<id>.scope", "/kubepods/.../<id>", and
// "<pod>.slice:cri-containerd:<id>", the systemd path that containerd's v1
// shim writes as a cgroupfs name), CRI-O ("crio-<id>.scope", "crio-<id>"),
// Docker ("docker-<id>.scope", "/docker/<id>") and podman
// ("libpod-<id>.scope", "/libpod_parent/libpod-<id>",
// "<unit>.service/libpod-payload-<id>"). It returns the 64-digit lowercase
// hex id, or "" when there is none: the cgroups of the runtimes' monitors
// (crio-conmon-, libpod-conmon-) hold none.
//
// Within a path the innermost segment that holds an id wins (a container
// nested in another reports its own id); the first line that holds one
// decides. The only allocation is the returned string.
func ContainerIDFromCgroup(cgroup []byte) string {
	for len(cgroup) > 0 {
		var line []byte
		line, cgroup, _ = bytes.Cut(cgroup, []byte("\n"))
		if id := containerIDFromPath(cgroupPath(line)); id != nil {
			return string(id)
		}
	}
	return ""
}

// PodUIDFromCgroup extracts the uid of the Kubernetes pod a process runs in
// (k8s.pod.uid) from the contents of /proc/<pid>/cgroup. The kubelet names
// the cgroup of a pod "pod<uid>" under its kubepods cgroup; the systemd
// cgroup driver turns the dashes of the uid into underscores and makes the
// name a slice under its parent's ("kubepods.slice/kubepods-pod<uid>.slice"
// for a guaranteed pod, "kubepods-burstable.slice/
// kubepods-burstable-pod<uid>.slice" for a burstable one, and so for
// besteffort), the cgroupfs driver keeps them ("/kubepods/pod<uid>",
// "/kubepods/burstable/pod<uid>"). It returns the uid in canonical form
// (36 characters, lowercase, with dashes), or "" when there is none.
//
// A static pod's cgroup is named by the hash of its manifest (32 hex
// digits), not by the uid the API server gives its mirror pod, so it yields
// "". As in ContainerIDFromCgroup, the innermost pod of a path wins and the
// first line that names one decides. The only allocation is the returned
// string.
func PodUIDFromCgroup(cgroup []byte) string {
	var uid [podUIDLen]byte
	for len(cgroup) > 0 {
		var line []byte
		line, cgroup, _ = bytes.Cut(cgroup, []byte("\n"))
		if podUIDFromPath(cgroupPath(line), &uid) {
			return string(uid[:])
		}
	}
	return ""
}

// cgroupPath returns the path of one cgroup line, or nil when the line does
// not have the three fields.
func cgroupPath(line []byte) []byte {
	// hierarchy-ID ':' controllers ':' path; the path itself may hold ':'.
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return nil
	}
	j := bytes.IndexByte(line[i+1:], ':')
	if j < 0 {
		return nil
	}
	return line[i+1+j+1:]
}

// containerIDFromPath returns the id in a cgroup path (a sub-slice of it),
// or nil.
func containerIDFromPath(path []byte) []byte {
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
// id (cgroupfs driver), "<runtime prefix><id>" with an optional ".scope"
// suffix (systemd driver), or "<slice>:<runtime>:<id>".
func containerIDFromSegment(seg []byte) []byte {
	if isContainerID(seg) {
		return seg
	}
	// containerd's v1 shim with systemd_cgroup = true does not hand the OCI
	// systemd path "<slice>:cri-containerd:<id>" to systemd but uses it as
	// the name of a cgroupfs directory.
	if i := bytes.LastIndexByte(seg, ':'); i >= 0 {
		if j := bytes.LastIndexByte(seg[:i], ':'); j >= 0 && isRuntimeName(seg[j+1:i]) && isContainerID(seg[i+1:]) {
			return seg[i+1:]
		}
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

// isRuntimeName reports whether b is one of containerScopePrefixes without
// its trailing dash.
func isRuntimeName(b []byte) bool {
	for _, p := range containerScopePrefixes {
		if string(b) == p[:len(p)-1] {
			return true
		}
	}
	return false
}

// isContainerID reports whether b is exactly 64 lowercase hex digits.
func isContainerID(b []byte) bool {
	if len(b) != containerIDLen {
		return false
	}
	for _, c := range b {
		if !isLowerHex(c) {
			return false
		}
	}
	return true
}

func isLowerHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f')
}

// podUIDFromPath writes the uid of the innermost pod cgroup in path, in
// canonical form, to uid and reports whether there was one. The pod must be
// below a kubepods cgroup (kubepods.slice, kubelet-kubepods.slice,
// /kubepods, /kubelet/kubepods), which the kubelet always creates, so that
// a "pod<uuid>" directory of some other software is not taken for a pod.
func podUIDFromPath(path []byte, uid *[podUIDLen]byte) bool {
	for end := len(path); end > 0; {
		start := bytes.LastIndexByte(path[:end], '/') + 1
		if at := podUIDFromSegment(path[start:end], uid); at >= 0 {
			return bytes.Contains(path[:start+at], []byte("kubepods"))
		}
		end = start - 1
	}
	return false
}

// podUIDFromSegment writes the uid named by one path segment to uid and
// returns the offset of its "pod" in seg, or -1 when seg names no pod:
// "<parent>-pod<uid with underscores>.slice" (systemd driver, perhaps
// followed by ":<runtime>:<id>", see containerIDFromSegment) or
// "pod<uid>" (cgroupfs driver).
func podUIDFromSegment(seg []byte, uid *[podUIDLen]byte) int {
	const pod = "pod"
	unit, _, _ := bytes.Cut(seg, []byte(":"))
	if name, ok := bytes.CutSuffix(unit, []byte(".slice")); ok {
		at := len(name) - podUIDLen - len(pod)
		if at < 0 || string(name[at:at+len(pod)]) != pod || (at > 0 && name[at-1] != '-') {
			return -1
		}
		if !canonicalPodUID(name[at+len(pod):], '_', uid) {
			return -1
		}
		return at
	}
	if len(seg) == len(pod)+podUIDLen && string(seg[:len(pod)]) == pod && canonicalPodUID(seg[len(pod):], '-', uid) {
		return 0
	}
	return -1
}

// canonicalPodUID reports whether b is a UUID in lowercase hex whose groups
// are joined by sep, and if so writes it with dashes to uid.
func canonicalPodUID(b []byte, sep byte, uid *[podUIDLen]byte) bool {
	if len(b) != podUIDLen {
		return false
	}
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != sep {
				return false
			}
			c = '-'
		default:
			if !isLowerHex(c) {
				return false
			}
		}
		uid[i] = c
	}
	return true
}
