// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"bytes"
	"errors"
	"io"
)

// Names under which a context mapping shows up in /proc/<pid>/maps (SPEC.md).
const (
	// MappingMemfd: memfd_create("OTEL_CTX") mapping whose prctl naming failed
	// (the usual case on kernels without CONFIG_ANON_VMA_NAME). The kernel
	// appends " (deleted)" because the memfd has no link.
	MappingMemfd = "/memfd:OTEL_CTX"
	// MappingMemfdNamed: memfd mapping named with PR_SET_VMA_ANON_NAME.
	MappingMemfdNamed = "[anon_shmem:OTEL_CTX]"
	// MappingAnonNamed: anonymous mapping named with PR_SET_VMA_ANON_NAME.
	MappingAnonNamed = "[anon:OTEL_CTX]"
)

const deletedSuffix = " (deleted)"

// mapsNeedle is common to every name: chunks without it hold no candidate.
var mapsNeedle = []byte(Signature)

// Mapping is a process's context mapping as found in its maps file.
type Mapping struct {
	Start, End uint64
	// Name is the matched name, one of the Mapping* constants.
	Name string
}

// MapsBufferSize is the scratch buffer size FindMapping works well with. A
// maps line is at most ~80 bytes of fields plus a path (PATH_MAX 4096), so
// any line we care about fits many times over.
const MapsBufferSize = 64 << 10

// FindMapping reads a maps file (the text of /proc/<pid>/maps) through buf
// and returns the first context mapping: readable, not executable, named
// exactly as the spec says. It also returns the bytes it read. It returns an
// error wrapping ErrNoContext when there is none, and r's error when reading
// fails. It does not allocate: whole chunks are searched for the common
// "OTEL_CTX" needle and only lines around a hit are parsed. Size is not
// checked: publishers use one page or several.
func FindMapping(r io.Reader, buf []byte) (m Mapping, read int, err error) {
	filled := 0         // buf[:filled] holds unread data, starting at a line start
	skipToLine := false // dropping the tail of an over-long line
	for {
		n, err := r.Read(buf[filled:])
		filled += n
		read += n
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return Mapping{}, read, err
		}
		data := buf[:filled]
		if skipToLine {
			nl := bytes.IndexByte(data, '\n')
			if nl < 0 {
				filled = 0
				if eof {
					return Mapping{}, read, ErrNoContext
				}
				continue
			}
			data = data[nl+1:]
			skipToLine = false
		}
		// Complete lines end at the last newline; at EOF the rest is a line too.
		complete := bytes.LastIndexByte(data, '\n') + 1
		if eof {
			complete = len(data)
		}
		if m, ok := findInLines(data[:complete]); ok {
			return m, read, nil
		}
		if eof {
			return Mapping{}, read, ErrNoContext
		}
		rest := data[complete:]
		if len(rest) == len(buf) {
			// One line fills the buffer: no context line is that long.
			skipToLine = true
			filled = 0
			continue
		}
		filled = copy(buf, rest)
	}
}

// findInLines searches whole lines for a context mapping.
func findInLines(lines []byte) (Mapping, bool) {
	for pos := 0; pos < len(lines); {
		i := bytes.Index(lines[pos:], mapsNeedle)
		if i < 0 {
			return Mapping{}, false
		}
		hit := pos + i
		start := bytes.LastIndexByte(lines[:hit], '\n') + 1
		end := bytes.IndexByte(lines[hit:], '\n')
		if end < 0 {
			end = len(lines)
		} else {
			end += hit
		}
		if m, ok := parseMapsLine(lines[start:end]); ok {
			return m, true
		}
		pos = end + 1
	}
	return Mapping{}, false
}

// parseMapsLine parses one maps line ("start-end perms offset dev inode
// path") and reports whether it is a context mapping.
func parseMapsLine(line []byte) (Mapping, bool) {
	start, rest, ok := parseHex(line, '-')
	if !ok {
		return Mapping{}, false
	}
	end, rest, ok := parseHex(rest, ' ')
	if !ok || end <= start {
		return Mapping{}, false
	}
	if len(rest) < 5 || rest[4] != ' ' {
		return Mapping{}, false
	}
	perms := rest[:4]
	if perms[0] != 'r' || perms[2] == 'x' {
		return Mapping{}, false
	}
	rest = rest[5:]
	// Skip offset, dev and inode, then the padding before the path.
	for range 3 {
		sp := bytes.IndexByte(rest, ' ')
		if sp <= 0 {
			return Mapping{}, false
		}
		rest = rest[sp+1:]
	}
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	name, ok := contextName(rest)
	if !ok {
		return Mapping{}, false
	}
	return Mapping{Start: start, End: end, Name: name}, true
}

// contextName matches a maps path field exactly against the context names.
// ContextName reports whether path, the name of a mapping (as a maps line
// or PROCMAP_QUERY gives it), names a context mapping, and which.
func ContextName(path []byte) (string, bool) { return contextName(path) }

func contextName(path []byte) (string, bool) {
	switch string(path) { // no allocation: the compiler compares in place
	case MappingMemfd, MappingMemfd + deletedSuffix:
		return MappingMemfd, true
	case MappingMemfdNamed:
		return MappingMemfdNamed, true
	case MappingAnonNamed:
		return MappingAnonNamed, true
	}
	return "", false
}

// parseHex parses lowercase or uppercase hex digits up to sep.
func parseHex(b []byte, sep byte) (uint64, []byte, bool) {
	var v uint64
	for i, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		case c == sep && i > 0:
			return v, b[i+1:], true
		default:
			return 0, nil, false
		}
		if i >= 16 {
			return 0, nil, false
		}
		v = v<<4 | uint64(d)
	}
	return 0, nil, false
}
