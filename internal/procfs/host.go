// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// HostIdentity identifies the host whose filesystem is at the root: the
// semantic conventions' host.id (the machine id, as they say to read it on
// non-containerized systems, and as contrib's resourcedetection system
// detector does) and host.name. A field is "" when it cannot be read.
type HostIdentity struct {
	ID   string
	Name string
}

// maxHostFile bounds the files read for the host's identity.
const maxHostFile = 256

// HostIdentity reads the identity of the host at the root: the machine id
// from <root>/etc/machine-id, else <root>/var/lib/dbus/machine-id; the
// host name from the kernel when the root is "/" (what the host's own
// processes see), else from <root>/etc/hostname (a container's kernel
// name is its own, not the host's). Nothing a process controls is read.
func (fs *FS) HostIdentity() HostIdentity {
	var h HostIdentity
	for _, p := range []string{"etc/machine-id", "var/lib/dbus/machine-id"} {
		if h.ID = readHostFile(filepath.Join(fs.root, p)); h.ID != "" {
			break
		}
	}
	if fs.root == "/" {
		if name, err := os.Hostname(); err == nil {
			h.Name = name
		}
	}
	if h.Name == "" {
		h.Name = readHostFile(filepath.Join(fs.root, "etc/hostname"))
	}
	return h
}

// readHostFile returns the first line of a small file, trimmed; "" when it
// cannot be read, is empty or is not one short line.
func readHostFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, maxHostFile+1)
	n, _ := f.Read(buf)
	if n > maxHostFile {
		return ""
	}
	line, _, _ := bytes.Cut(buf[:n], []byte{'\n'})
	return strings.TrimSpace(string(line))
}
