// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// FuzzReadPath feeds hostile maps text, header bytes and payload bytes
// together through the read path a real read of a process takes:
// Reader.FindMapping over a fake procfs (the maps text is a file at
// <root>/proc/<pid>/maps, read with the text budget and the PROCMAP_QUERY
// fallback), then the Reader's otep.Reader (header, seqlock, limits,
// payload decode) over a fake memory that serves the fuzz input at the
// addresses the maps text claims. Only the syscall layer (memory: process_vm_readv
// and the mem file) is left out: it is tested against real processes.
//
// Arguments: maps is the maps text; header is written at the start of the
// found mapping and payload at payloadAt; payloadB is what an update
// publishes; ts seeds the honest publisher's timestamp; last is the
// caller's lastPublishedAt; sched says, two bits per memory read, what the
// publisher does just before that read (see rpMemory); flags picks the
// mode (rpFlag*).
//
// Properties: no panic; reads and allocations bounded by the limits; every
// error of a documented kind; without concurrent updates exactly the
// outcome a model of the spec predicts; a success consistent with the
// memory as it is after the read; and for an honest publisher (a header
// and payload made by the encoder, at a mapping named as the spec says)
// exactly the attributes it encoded.
func FuzzReadPath(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzReadPath (see TestSeedCorpus).
	proc := rpFakeProcfs(f)
	f.Fuzz(func(t *testing.T, maps, header, payload, payloadB []byte, payloadAt, ts, last uint64, sched uint32, flags uint16) {
		rpCheck(t, proc, rpInput{maps, header, payload, payloadB, payloadAt, ts, last, sched, flags})
	})
}

// Bits of FuzzReadPath's flags.
const (
	// rpFlagHonest: an honest publisher, built by the test from the input:
	// the payload is otep.Encode of attributes derived from payload (and
	// payloadB for an update), the header is what a publisher writes, and
	// a correct maps line names the mapping. header and payloadAt's low
	// bits pick only the name and place.
	rpFlagHonest = 1 << 0
	// rpFlagHonestLast: the honest line comes after the hostile text (a
	// hostile line may then be found first), else before it.
	rpFlagHonestLast = 1 << 1
	// rpFlagHeap: the honest payload lives in a mapping of its own (the
	// heap), else right after the header.
	rpFlagHeap = 1 << 2
	// rpFlagSmallLimits: limits small enough for the fuzzer to reach each.
	rpFlagSmallLimits = 1 << 3
	// rpFlagAnonNaming: the reader behaves as on a kernel that names
	// anonymous VMAs (the maps text is read to the end, no budget).
	rpFlagAnonNaming = 1 << 4
	// rpFlagMapsMissing: the pid has no procfs directory (it exited).
	rpFlagMapsMissing = 1 << 5
	// rpFlagMapsDir: the maps "file" is a directory (read fails: EISDIR).
	rpFlagMapsDir = 1 << 6
	// Bits 8-11: filler lines before the text, 40 per unit (up to ~45 KB),
	// so that small inputs cross the text budget.
	rpFillerShift = 8
	// Bits 12-15: the text budget: 0 the default, else 32 << n bytes.
	rpBudgetShift = 12
)

const (
	rpPid        = 4242 // the fake process
	rpPidMissing = 4243 // no directory
	rpPidMapsDir = 4244 // maps is a directory
)

// rpSmallLimits are tight enough for the fuzzer to reach every limit.
var rpSmallLimits = otep.Limits{MaxPayloadSize: 512, MaxAttributes: 8, MaxDepth: 2, MaxKeyLength: 16, MaxValueLength: 32}

type rpInput struct {
	maps, header, payload, payloadB []byte
	payloadAt, ts, last             uint64
	sched                           uint32
	flags                           uint16
}

// rpProcfs is a fake procfs: a procfs.FS whose <root>/proc is a directory
// of the test's.
type rpProcfs struct {
	fs       *procfs.FS
	mapsPath string
}

// rpFakeProcfs returns a procfs.FS over a temporary directory. procfs.NewFS
// accepts only a real procfs, so <root>/proc is first a symlink to /proc
// and then replaced by a directory: the FS keeps the path (as when a
// mounted host procfs goes away), and every file the reader opens is
// then the test's. No mount, no root needed.
func rpFakeProcfs(tb testing.TB) rpProcfs {
	tb.Helper()
	root := tb.TempDir()
	proc := filepath.Join(root, "proc")
	if err := os.Symlink("/proc", proc); err != nil {
		tb.Fatal(err)
	}
	pfs, err := procfs.NewFS(root)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Remove(proc); err != nil {
		tb.Fatal(err)
	}
	for _, dir := range []string{strconv.Itoa(rpPid), filepath.Join(strconv.Itoa(rpPidMapsDir), "maps")} {
		if err := os.MkdirAll(filepath.Join(proc, dir), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return rpProcfs{fs: pfs, mapsPath: pfs.Path(rpPid, "maps")}
}

// rpLayout is the world one input describes: the maps text, the memory and
// what an honest publisher published.
type rpLayout struct {
	text   []byte
	limits otep.Limits
	mem    *rpMemory
	honest *rpHonest // nil for a hostile publisher
}

// rpHonest is what the honest publisher encoded, for each version.
type rpHonest struct {
	mapping  otep.Mapping
	ts       uint64
	versions [2]rpVersion
}

type rpVersion struct {
	resource, attributes pcommon.Map
	payload              []byte
	addr                 uint64
	// fits: the context is within the limits, so a read must return it.
	fits bool
}

func rpCheck(t *testing.T, proc rpProcfs, in rpInput) {
	lay := rpBuild(in)
	pid := rpPid
	switch {
	case in.flags&rpFlagMapsMissing != 0:
		pid = rpPidMissing
	case in.flags&rpFlagMapsDir != 0:
		pid = rpPidMapsDir
	default:
		if err := os.WriteFile(proc.mapsPath, lay.text, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A new Reader per input: one that met a maps file refusing
	// PROCMAP_QUERY remembers it, and inputs must not depend on each other.
	r, err := New(proc.fs, lay.limits)
	if err != nil {
		t.Fatal(err)
	}
	r.anonNaming = in.flags&rpFlagAnonNaming != 0
	if n := in.flags >> rpBudgetShift & 0xf; n != 0 {
		r.textBudget = 32 << n
	}

	allocBefore := rpAllocated()
	m, findErr := r.FindMapping(pid)
	err = findErr
	var (
		ctx     otep.Context
		changed bool
	)
	if findErr == nil {
		lay.mem.start(m.Start)
		// What Reader.ReadContext does, with the fake memory.
		ctx, changed, err = r.otep.Read(lay.mem, m.Start, in.last)
		if err != nil {
			err = fmt.Errorf("context of pid %d: %w", pid, err)
		}
	}
	allocated := rpAllocated() - allocBefore

	rpCheckErrorKind(t, err)
	if bound := rpAllocBound(lay.limits); allocated > bound {
		t.Fatalf("read allocated %d bytes, bound %d", allocated, bound)
	}
	if lay.mem.largest > max(otep.HeaderSize, int(lay.limits.MaxPayloadSize)) {
		t.Fatalf("read %d bytes at once, limit %d", lay.mem.largest, lay.limits.MaxPayloadSize)
	}

	switch pid {
	case rpPidMissing:
		if !errors.Is(err, procfs.ErrProcessGone) {
			t.Fatalf("pid without a directory: %v, want ErrProcessGone", err)
		}
		return
	case rpPidMapsDir:
		if err == nil || !errors.Is(err, syscall.EISDIR) {
			t.Fatalf("maps is a directory: %v, want EISDIR", err)
		}
		return
	}

	found := rpCheckMapping(t, lay.text, m, findErr)
	if !found {
		return
	}
	rpCheckRead(t, lay, m, in.last, ctx, changed, err)
}

// rpCheckErrorKind: every error is of a documented kind, or wraps an OS
// error.
func rpCheckErrorKind(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, kind := range []error{otep.ErrNoContext, otep.ErrTorn, otep.ErrInvalid, otep.ErrTooLarge,
		procfs.ErrProcessGone, procfs.ErrPermissionDenied} {
		if errors.Is(err, kind) {
			return
		}
	}
	var errno syscall.Errno
	var pathErr *fs.PathError
	if errors.As(err, &errno) || errors.As(err, &pathErr) {
		return
	}
	t.Fatalf("error of no documented kind: %v", err)
}

// rpCheckMapping compares FindMapping with a reference reading of the text
// (rpParseMaps) and reports whether a mapping was found.
func rpCheckMapping(t *testing.T, text []byte, m otep.Mapping, err error) bool {
	t.Helper()
	lines := rpParseMaps(text)
	if err != nil {
		if !errors.Is(err, otep.ErrNoContext) {
			t.Fatalf("FindMapping on a readable maps file: %v", err)
		}
	} else {
		// Sound: the mapping is a context line of the text.
		ok := false
		for _, l := range lines {
			if l.context && l.start == m.Start && l.end == m.End && l.name == m.Name {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("FindMapping returned %+v, which no context line of the text names", m)
		}
	}
	// Complete and first, unless a line is so long that FindMapping may
	// skip it (its 64 KiB buffer).
	for _, l := range lines {
		if l.length >= otep.MapsBufferSize/2 {
			return err == nil
		}
	}
	for _, l := range lines {
		if !l.context {
			continue
		}
		if err != nil {
			t.Fatalf("FindMapping: %v, but the text has the context line %#x-%#x %s", err, l.start, l.end, l.name)
		}
		if l.start != m.Start || l.end != m.End || l.name != m.Name {
			t.Fatalf("FindMapping returned %+v, the first context line is %#x-%#x %s", m, l.start, l.end, l.name)
		}
		return true
	}
	if err == nil {
		t.Fatalf("FindMapping returned %+v from a text without a context line", m)
	}
	return false
}

// rpCheckRead checks the outcome of the read at m against the model.
func rpCheckRead(t *testing.T, lay rpLayout, m otep.Mapping, last uint64, ctx otep.Context, changed bool, err error) {
	t.Helper()
	mem := lay.mem
	if err == nil && changed {
		// Consistent with memory as it is now: the header at m, and the
		// payload it points to, decode to what the read returned.
		h, payload, perr := mem.modelRead(m.Start, lay.limits)
		if perr != nil {
			t.Fatalf("read succeeded, but memory now says %v", perr)
		}
		if ctx.PublishedAt != h.PublishedAt || ctx.PayloadSize != h.PayloadSize {
			t.Fatalf("read published at %d size %d, header now says %d size %d",
				ctx.PublishedAt, ctx.PayloadSize, h.PublishedAt, h.PayloadSize)
		}
		res, attrs := pcommon.NewMap(), pcommon.NewMap()
		if derr := otep.DecodePayload(payload, lay.limits, res, attrs); derr != nil {
			t.Fatalf("read succeeded, but its payload does not decode: %v", derr)
		}
		rpSame(t, "resource", res, ctx.Resource)
		rpSame(t, "attributes", attrs, ctx.Attributes)
		rpCheckLimits(t, ctx, lay.limits)
		if ctx.PublishedAt == last {
			t.Fatalf("changed with the timestamp the caller holds (%d)", last)
		}
	}
	if err == nil && !changed {
		if ctx.Resource != (pcommon.Map{}) || ctx.PayloadSize != 0 {
			t.Fatalf("unchanged read returned a context: %+v", ctx)
		}
		if last == 0 {
			t.Fatal("unchanged although the caller holds nothing")
		}
	}
	if errors.Is(err, otep.ErrTorn) && !mem.mutated && mem.initialTS() != 0 {
		t.Fatalf("torn without an update in progress: %v", err)
	}

	if !mem.mutated {
		// The publisher stood still: the outcome is the model's.
		want, unchanged := mem.expect(m.Start, last, lay.limits)
		switch {
		case want == nil && err != nil:
			t.Fatalf("read: %v, the model reads it", err)
		case want != nil && !errors.Is(err, want):
			t.Fatalf("read: %v, the model says %v", err, want)
		case err == nil && changed == unchanged:
			t.Fatalf("changed = %v, the model says unchanged = %v", changed, unchanged)
		}
	}

	hon := lay.honest
	if hon == nil || hon.mapping != m {
		return // a hostile line was found first
	}
	v := hon.versions[mem.version]
	if !mem.mutated && last != hon.ts {
		if v.fits && err != nil {
			t.Fatalf("honest context within the limits: %v", err)
		}
		if !v.fits && !errors.Is(err, otep.ErrTooLarge) {
			t.Fatalf("honest context over the limits: %v, want ErrTooLarge", err)
		}
	}
	if err == nil && changed {
		// decode(encode(x)) == x, whichever version the read met.
		rpSame(t, "honest resource", v.resource, ctx.Resource)
		rpSame(t, "honest attributes", v.attributes, ctx.Attributes)
		if ctx.PayloadSize != uint32(len(v.payload)) {
			t.Fatalf("payload size %d, the publisher encoded %d", ctx.PayloadSize, len(v.payload))
		}
		// The caller now holds it: one more read is "unchanged".
		mem.frozen = true
		again, changedAgain, err := lay.mem.readWith(lay.limits, m.Start, ctx.PublishedAt)
		if err != nil || changedAgain || again.Resource != (pcommon.Map{}) {
			t.Fatalf("second read of an unchanged context: changed %v, %v", changedAgain, err)
		}
	}
}

// rpCheckLimits checks a decoded context against the limits.
func rpCheckLimits(t *testing.T, ctx otep.Context, limits otep.Limits) {
	t.Helper()
	if ctx.PayloadSize == 0 || ctx.PayloadSize > limits.MaxPayloadSize {
		t.Fatalf("payload size %d, limit %d", ctx.PayloadSize, limits.MaxPayloadSize)
	}
	count := 0
	if err := rpWithinMap(ctx.Resource, limits, 1, &count); err != nil {
		t.Fatalf("resource: %v", err)
	}
	if err := rpWithinMap(ctx.Attributes, limits, 1, &count); err != nil {
		t.Fatalf("attributes: %v", err)
	}
	if count > limits.MaxAttributes {
		t.Fatalf("%d attributes and elements, limit %d", count, limits.MaxAttributes)
	}
}

// rpWithinMap reports the first value of m (at depth) over a limit, adding
// its entries and elements to count.
func rpWithinMap(m pcommon.Map, limits otep.Limits, depth int, count *int) error {
	for k, v := range m.All() {
		*count++
		if len(k) > limits.MaxKeyLength {
			return fmt.Errorf("key of %d bytes, limit %d", len(k), limits.MaxKeyLength)
		}
		if err := rpWithinValue(v, limits, depth, count); err != nil {
			return err
		}
	}
	return nil
}

func rpWithinValue(v pcommon.Value, limits otep.Limits, depth int, count *int) error {
	if depth > limits.MaxDepth {
		return fmt.Errorf("value at depth %d, limit %d", depth, limits.MaxDepth)
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if len(v.Str()) > limits.MaxValueLength {
			return fmt.Errorf("string of %d bytes, limit %d", len(v.Str()), limits.MaxValueLength)
		}
	case pcommon.ValueTypeBytes:
		if v.Bytes().Len() > limits.MaxValueLength {
			return fmt.Errorf("bytes of %d bytes, limit %d", v.Bytes().Len(), limits.MaxValueLength)
		}
	case pcommon.ValueTypeSlice:
		for _, e := range v.Slice().All() {
			*count++
			if err := rpWithinValue(e, limits, depth+1, count); err != nil {
				return err
			}
		}
	case pcommon.ValueTypeMap:
		return rpWithinMap(v.Map(), limits, depth+1, count)
	}
	return nil
}

// rpSame fails unless two maps hold the same entries in the same order
// (doubles compared by their bits: NaN is NaN).
func rpSame(t *testing.T, what string, want, got pcommon.Map) {
	t.Helper()
	var w, g strings.Builder
	rpDumpMap(&w, want)
	rpDumpMap(&g, got)
	if w.String() != g.String() {
		t.Fatalf("%s:\n got %s\nwant %s", what, g.String(), w.String())
	}
}

func rpDumpMap(b *strings.Builder, m pcommon.Map) {
	b.WriteByte('{')
	for k, v := range m.All() {
		fmt.Fprintf(b, "%q:", k)
		rpDumpValue(b, v)
		b.WriteByte(',')
	}
	b.WriteByte('}')
}

func rpDumpValue(b *strings.Builder, v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		fmt.Fprintf(b, "s%q", v.Str())
	case pcommon.ValueTypeBool:
		fmt.Fprintf(b, "b%v", v.Bool())
	case pcommon.ValueTypeInt:
		fmt.Fprintf(b, "i%d", v.Int())
	case pcommon.ValueTypeDouble:
		fmt.Fprintf(b, "d%x", math.Float64bits(v.Double()))
	case pcommon.ValueTypeBytes:
		fmt.Fprintf(b, "x%x", v.Bytes().AsRaw())
	case pcommon.ValueTypeSlice:
		b.WriteByte('[')
		for _, e := range v.Slice().All() {
			rpDumpValue(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case pcommon.ValueTypeMap:
		rpDumpMap(b, v.Map())
	default:
		b.WriteString("empty")
	}
}

// rpAllocated returns the bytes allocated on the heap so far. runtime/metrics
// does not stop the world (runtime.ReadMemStats does, too dear per input);
// small allocations are counted per span, hence the slack in rpAllocBound.
func rpAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rpAllocBound is what one FindMapping and read may allocate: the maps
// buffer and the read buffer (pooled, allocated on a Reader's first read;
// the PROCMAP_QUERY fallback takes a second maps buffer), the decoded
// context (bounded by the payload and the attribute count, whatever the
// payload claims), and slack: the runtime counts small allocations when a
// span leaves its cache, so up to a span per size class of earlier
// allocations may land in the window.
func rpAllocBound(l otep.Limits) uint64 {
	return 2*uint64(otep.MapsBufferSize) + uint64(otep.HeaderSize+8) + 9*uint64(l.MaxPayloadSize) +
		uint64(l.MaxAttributes)*512 + 1<<20
}

// rpMapsLine is one line of maps text as the reference parser reads it.
type rpMapsLine struct {
	start, end uint64
	readable   bool
	// context: a context mapping by SPEC.md: readable, not executable,
	// path exactly one of the names.
	context bool
	name    string
	length  int
}

// rpParseMaps reads maps text by proc(5): "start-end perms offset dev inode
// [path]", fields separated by single spaces, the path after padding. A
// line whose range and perms parse is memory (readable when perms start
// with r), whatever follows.
func rpParseMaps(text []byte) []rpMapsLine {
	var out []rpMapsLine
	for len(text) > 0 {
		line := text
		if nl := bytes.IndexByte(text, '\n'); nl >= 0 {
			line, text = text[:nl], text[nl+1:]
		} else {
			text = nil
		}
		l := rpMapsLine{length: len(line) + 1}
		rangeField, rest, _ := bytes.Cut(line, []byte(" "))
		lo, hi, ok := bytes.Cut(rangeField, []byte("-"))
		if ok {
			l.start, ok = rpHex(lo)
		}
		if ok {
			l.end, ok = rpHex(hi)
		}
		if !ok || l.start >= l.end || len(rest) < 5 || rest[4] != ' ' {
			out = append(out, rpMapsLine{length: l.length})
			continue
		}
		perms := rest[:4]
		l.readable = perms[0] == 'r'
		rest = rest[5:]
		fields := 0
		for ; fields < 3; fields++ {
			tok, after, found := bytes.Cut(rest, []byte(" "))
			if !found || len(tok) == 0 {
				break
			}
			rest = after
		}
		path := string(bytes.TrimLeft(rest, " "))
		if fields == 3 && l.readable && perms[2] != 'x' {
			switch path {
			case otep.MappingMemfd, otep.MappingMemfd + " (deleted)":
				l.context, l.name = true, otep.MappingMemfd
			case otep.MappingMemfdNamed, otep.MappingAnonNamed:
				l.context, l.name = true, path
			}
		}
		out = append(out, l)
	}
	return out
}

// rpHex parses 1 to 16 hex digits.
func rpHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b), 16, 64)
	return v, err == nil
}

// rpRegion is readable memory: [start, end).
type rpRegion struct{ start, end uint64 }

// rpOverlay is bytes placed in memory at an address; only the parts inside
// readable regions can be read.
type rpOverlay struct {
	at   uint64
	data []byte
}

// rpMemory is the fake target memory (otep.Memory): zeros wherever the
// maps text claims readable memory, the header at the start of the found
// mapping, the payload(s) where the input puts them; anything else fails
// like EFAULT. Before each of its first 16 reads the publisher acts, as
// sched says two bits per read: 0 nothing, 1 starts an update (timestamp
// 0), 2 finishes one (a new, larger timestamp), 3 publishes the other
// version (the payload changes and the timestamp moves).
type rpMemory struct {
	regions []rpRegion
	hdr     []byte // at hdrAt, at least the header's 32 bytes
	hdrAt   uint64
	// payloads: the overlay of each version; the hostile publisher keeps
	// both at payloadAt (only the current one is there), the honest one
	// places them apart and points the header at the current one.
	payloads [2]rpOverlay
	honest   *rpHonest
	version  int
	sched    uint32
	calls    int
	lastTS   uint64 // the last timestamp published, for a new one
	tsAtRead uint64 // the header's timestamp when the read began
	mutated  bool   // the publisher changed anything during the read
	frozen   bool   // the publisher no longer acts
	largest  int    // the largest read asked for
}

// start places the header at the mapping the reader found.
func (m *rpMemory) start(addr uint64) {
	m.hdrAt = addr
	m.tsAtRead = binary.LittleEndian.Uint64(m.hdr[otep.OffsetPublishedAt:])
	m.lastTS = m.tsAtRead
}

func (m *rpMemory) initialTS() uint64 { return m.tsAtRead }

// ReadAt implements otep.Memory.
func (m *rpMemory) ReadAt(p []byte, addr uint64) error {
	if !m.frozen && m.calls < 16 {
		m.act(m.sched >> (2 * m.calls) & 3)
	}
	m.calls++
	m.largest = max(m.largest, len(p))
	return m.peek(p, addr)
}

func (m *rpMemory) act(op uint32) {
	ts := m.hdr[otep.OffsetPublishedAt:]
	switch {
	case op == 0:
		return
	case op == 1:
		if binary.LittleEndian.Uint64(ts) == 0 {
			return
		}
		binary.LittleEndian.PutUint64(ts, 0)
		m.mutated = true
		return
	case m.lastTS == math.MaxUint64:
		return // no larger timestamp left
	}
	if op == 3 {
		m.version ^= 1
		if h := m.honest; h != nil {
			v := h.versions[m.version]
			binary.LittleEndian.PutUint32(m.hdr[otep.OffsetPayloadSize:], uint32(len(v.payload)))
			binary.LittleEndian.PutUint64(m.hdr[otep.OffsetPayloadAddress:], v.addr)
		}
	}
	m.lastTS++
	binary.LittleEndian.PutUint64(ts, m.lastTS)
	m.mutated = true
}

// peek reads memory as it is, without the publisher acting.
func (m *rpMemory) peek(p []byte, addr uint64) error {
	if len(p) == 0 {
		return nil
	}
	end := addr + uint64(len(p))
	if end < addr {
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, otep.ErrBadAddress)
	}
	for pos := addr; pos < end; {
		next := pos
		for _, r := range m.regions {
			if r.start <= pos && pos < r.end && r.end > next {
				next = r.end
			}
		}
		if next == pos {
			return fmt.Errorf("read %d bytes at %#x: %#x unmapped: %w", len(p), addr, pos, otep.ErrBadAddress)
		}
		pos = next
	}
	clear(p)
	pay := m.payloads[m.version]
	if m.honest != nil {
		// The honest publisher leaves the other version where it was.
		rpOverlayInto(p, addr, m.payloads[m.version^1])
	}
	rpOverlayInto(p, addr, pay)
	rpOverlayInto(p, addr, rpOverlay{at: m.hdrAt, data: m.hdr})
	return nil
}

// rpOverlayInto copies the part of o that falls in [addr, addr+len(p)).
func rpOverlayInto(p []byte, addr uint64, o rpOverlay) {
	oEnd := o.at + uint64(len(o.data))
	if oEnd < o.at {
		oEnd = math.MaxUint64 // data cut at the top of the address space
	}
	end := addr + uint64(len(p))
	lo, hi := max(addr, o.at), min(end, oEnd)
	if lo >= hi {
		return
	}
	copy(p[lo-addr:hi-addr], o.data[lo-o.at:hi-o.at])
}

// modelRead reads the header at addr and its payload as memory is now.
func (m *rpMemory) modelRead(addr uint64, limits otep.Limits) (otep.Header, []byte, error) {
	raw := make([]byte, otep.HeaderSize)
	if err := m.peek(raw, addr); err != nil {
		return otep.Header{}, nil, err
	}
	h, err := otep.ParseHeader(raw, limits.MaxPayloadSize)
	if err != nil {
		return otep.Header{}, nil, err
	}
	payload := make([]byte, h.PayloadSize)
	if err := m.peek(payload, h.PayloadAddress); err != nil {
		return otep.Header{}, nil, err
	}
	return h, payload, nil
}

// expect is the spec's read (SPEC.md, Reading) of memory that does not
// change: the error kind it ends with (nil: a context) and whether it stops
// at "unchanged". It checks the header field by field itself.
func (m *rpMemory) expect(addr, last uint64, limits otep.Limits) (error, bool) {
	var raw [otep.HeaderSize]byte
	if last != 0 {
		if m.peek(raw[:8], addr+otep.OffsetPublishedAt) != nil {
			return otep.ErrNoContext, false
		}
		if binary.LittleEndian.Uint64(raw[:8]) == last {
			return nil, true
		}
	}
	if m.peek(raw[:], addr) != nil {
		return otep.ErrNoContext, false
	}
	size := binary.LittleEndian.Uint32(raw[otep.OffsetPayloadSize:])
	switch {
	case binary.LittleEndian.Uint64(raw[otep.OffsetPublishedAt:]) == 0:
		return otep.ErrTorn, false
	case string(raw[:8]) != "OTEL_CTX", binary.LittleEndian.Uint32(raw[otep.OffsetVersion:]) != 2, size == 0:
		return otep.ErrInvalid, false
	case size > limits.MaxPayloadSize:
		return otep.ErrTooLarge, false
	}
	payload := make([]byte, size)
	if m.peek(payload, binary.LittleEndian.Uint64(raw[otep.OffsetPayloadAddress:])) != nil {
		return otep.ErrInvalid, false
	}
	err := otep.DecodePayload(payload, limits, pcommon.NewMap(), pcommon.NewMap())
	switch {
	case err == nil:
		return nil, false
	case errors.Is(err, otep.ErrTooLarge):
		return otep.ErrTooLarge, false
	default:
		return otep.ErrInvalid, false
	}
}

// readWith reads through a fresh otep.Reader, as a caller holding last does.
func (m *rpMemory) readWith(limits otep.Limits, addr, last uint64) (otep.Context, bool, error) {
	or, err := otep.NewReader(limits)
	if err != nil {
		return otep.Context{}, false, err
	}
	return or.Read(m, addr, last)
}

// rpNames are the names a context mapping has in maps text (SPEC.md).
var rpNames = [...]string{"/memfd:OTEL_CTX (deleted)", "/memfd:OTEL_CTX", "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]"}

// rpBuild lays out the world of one input.
func rpBuild(in rpInput) rpLayout {
	limits := otep.DefaultLimits()
	if in.flags&rpFlagSmallLimits != 0 {
		limits = rpSmallLimits
	}
	var text []byte
	for i := range int(in.flags>>rpFillerShift&0xf) * 40 {
		text = fmt.Appendf(text, "%08x-%08x r--p 00000000 08:01 %-26d /usr/lib/x86_64-linux-gnu/libfiller.so.%d\n",
			0x10000000+i*0x2000, 0x10001000+i*0x2000, 1000+i, i)
	}
	mem := &rpMemory{sched: in.sched}
	var honest *rpHonest
	if in.flags&rpFlagHonest == 0 {
		text = append(text, in.maps...)
		mem.hdr = rpPad(in.header)
		mem.payloads = [2]rpOverlay{{in.payloadAt, in.payload}, {in.payloadAt, in.payloadB}}
	} else {
		var lines []byte
		honest, lines, mem.hdr, mem.payloads = rpHonestPublisher(in, limits)
		if in.flags&rpFlagHonestLast != 0 {
			text = append(text, in.maps...)
			if len(text) > 0 && text[len(text)-1] != '\n' {
				text = append(text, '\n')
			}
			text = append(text, lines...)
		} else {
			text = append(text, lines...)
			text = append(text, in.maps...)
		}
	}
	mem.honest = honest
	for _, l := range rpParseMaps(text) {
		if l.readable {
			mem.regions = append(mem.regions, rpRegion{l.start, l.end})
		}
	}
	return rpLayout{text: text, limits: limits, mem: mem, honest: honest}
}

// rpPad returns a copy of b, at least a header long (zeros after b, as in
// a fresh mapping).
func rpPad(b []byte) []byte {
	out := make([]byte, max(len(b), otep.HeaderSize))
	copy(out, b)
	return out
}

// rpHonestPublisher publishes what an honest publisher would for the input:
// its maps lines, header and payload versions.
func rpHonestPublisher(in rpInput, limits otep.Limits) (*rpHonest, []byte, []byte, [2]rpOverlay) {
	const page = 0x1000
	h := &rpHonest{ts: max(in.ts, 1)}
	if h.ts == math.MaxUint64 {
		h.ts-- // an update needs a larger timestamp
	}
	for i, seed := range [][]byte{in.payload, in.payloadB} {
		v := &h.versions[i]
		v.resource, v.attributes = rpAttributes(seed, i == 0)
		b, err := otep.Encode(v.resource, v.attributes)
		if err != nil {
			panic(fmt.Sprintf("encode honest attributes: %v", err)) // rpAttributes makes only valid UTF-8
		}
		v.payload = b
		count := 0
		v.fits = len(b) <= int(limits.MaxPayloadSize) &&
			rpWithinMap(v.resource, limits, 1, &count) == nil &&
			rpWithinMap(v.attributes, limits, 1, &count) == nil && count <= limits.MaxAttributes
	}
	a, b := h.versions[0].payload, h.versions[1].payload
	bOff := (uint64(len(a)) + 15) &^ 15
	both := bOff + uint64(len(b))
	// Below the top of user space, wherever the input says.
	base := page + (in.payloadAt>>12%0x7000_0000)*page
	var lines []byte
	name := rpNames[in.payloadAt&3]
	ctxLen := (otep.HeaderSize + both + page - 1) &^ (page - 1)
	first := base + otep.HeaderSize
	if in.flags&rpFlagHeap != 0 {
		ctxLen = page
		heap := base + 16*page
		first = heap + 16
		heapLen := (16 + both + page - 1) &^ (page - 1)
		lines = fmt.Appendf(lines, "%08x-%08x rw-p 00000000 00:00 0 %25s[heap]\n", heap, heap+heapLen, "")
	}
	h.versions[0].addr, h.versions[1].addr = first, first+bOff
	h.mapping = otep.Mapping{Start: base, End: base + ctxLen, Name: strings.TrimSuffix(name, " (deleted)")}
	lines = append(fmt.Appendf(nil, "%08x-%08x rw-p 00000000 00:01 %-26d %s\n", base, base+ctxLen, 1046, name), lines...)

	hdr := make([]byte, otep.HeaderSize)
	copy(hdr, otep.Signature)
	binary.LittleEndian.PutUint32(hdr[otep.OffsetVersion:], otep.Version)
	binary.LittleEndian.PutUint32(hdr[otep.OffsetPayloadSize:], uint32(len(a)))
	binary.LittleEndian.PutUint64(hdr[otep.OffsetPublishedAt:], h.ts)
	binary.LittleEndian.PutUint64(hdr[otep.OffsetPayloadAddress:], first)
	return h, lines, hdr, [2]rpOverlay{{first, a}, {first + bOff, b}}
}

// rpAttributes derives attributes of every common kind from seed: pairs of
// NUL-separated tokens, key then value, the value's length picking its
// kind; pairs alternate between resource and process attributes. A
// service.name always leads the resource.
func rpAttributes(seed []byte, first bool) (pcommon.Map, pcommon.Map) {
	res, attrs := pcommon.NewMap(), pcommon.NewMap()
	if first {
		res.PutStr("service.name", "fuzz")
	} else {
		res.PutStr("service.name", "fuzz-updated")
	}
	tokens := bytes.Split(seed, []byte{0})
	for i := 0; i+1 < len(tokens) && i < 64; i += 2 {
		key := "k." + strings.ToValidUTF8(string(tokens[i]), "?")
		v := tokens[i+1]
		m := res
		if i/2%2 == 1 {
			m = attrs
		}
		switch len(v) % 5 {
		case 0:
			m.PutStr(key, strings.ToValidUTF8(string(v), "?"))
		case 1:
			m.PutInt(key, int64(binary.LittleEndian.Uint64(rpPad(v)))) //nolint:gosec // any bits are an int
		case 2:
			m.PutBool(key, v[0]&1 == 1)
		case 3:
			m.PutEmptyBytes(key).FromRaw(v)
		case 4:
			s := m.PutEmptySlice(key)
			for _, e := range bytes.Split(v, []byte(",")) {
				s.AppendEmpty().SetStr(strings.ToValidUTF8(string(e), "?"))
			}
		}
	}
	return res, attrs
}
