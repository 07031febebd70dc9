// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubevents

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

func record(addr, length uint64, tgid, kind uint32) []byte {
	b := make([]byte, eventSize)
	binary.NativeEndian.PutUint64(b[offAddr:], addr)
	binary.NativeEndian.PutUint64(b[offLen:], length)
	binary.NativeEndian.PutUint32(b[offTgid:], tgid)
	binary.NativeEndian.PutUint32(b[offKind:], kind)
	binary.NativeEndian.PutUint64(b[offTime:], 12345)
	return b
}

func TestParseEvent(t *testing.T) {
	var ev Event
	if err := parseEvent(record(0x1000, 0x3000, 42, uint32(Publish)), &ev); err != nil {
		t.Fatal(err)
	}
	if want := (Event{Kind: Publish, PID: 42, Addr: 0x1000, Len: 0x3000, Time: 12345}); ev != want {
		t.Fatalf("parsed %+v, want %+v", ev, want)
	}
	// A longer record (a newer layout) still parses its known prefix.
	if err := parseEvent(append(record(0, 0, 7, uint32(Memfd)), 0, 0, 0, 0, 0, 0, 0, 0), &ev); err != nil || ev.Kind != Memfd || ev.PID != 7 {
		t.Fatalf("longer record: %+v, %v", ev, err)
	}
	for name, raw := range map[string][]byte{
		"empty":        nil,
		"short":        record(1, 2, 3, 1)[:eventSize-1],
		"kind 0":       record(1, 2, 3, 0),
		"unknown kind": record(1, 2, 3, 4),
		"pid 0":        record(1, 2, 0, 1),
		"negative pid": record(1, 2, 1<<31, 1),
	} {
		ev = Event{Kind: Unmap, PID: 99}
		if err := parseEvent(raw, &ev); err == nil {
			t.Errorf("%s: parsed as %+v", name, ev)
		}
		if ev != (Event{Kind: Unmap, PID: 99}) {
			t.Errorf("%s: the event was changed to %+v", name, ev)
		}
	}
}

func TestStrings(t *testing.T) {
	for k, want := range map[Kind]string{Publish: "publish", Memfd: "memfd", Unmap: "unmap", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d) = %q, want %q", k, got, want)
		}
	}
	for m, want := range map[Mechanism]string{Fexit: "fexit", Kprobe: "kprobe", SyscallTracepoints: "syscall_tracepoints", RawSysExit: "raw_sys_exit", 7: "mechanism(7)"} {
		if got := m.String(); got != want {
			t.Errorf("Mechanism(%d) = %q, want %q", m, got, want)
		}
	}
}

func TestParseMechanism(t *testing.T) {
	for m := Fexit; m <= RawSysExit; m++ {
		if got, err := ParseMechanism(m.String()); err != nil || got != m {
			t.Errorf("ParseMechanism(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMechanism("sys_exit"); err == nil || !strings.Contains(err.Error(), "syscall_tracepoints") {
		t.Errorf("ParseMechanism(sys_exit) = %v, want an error naming the choices", err)
	}
}

func TestOptions(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil || o.RingSize != defaultRingSize || o.MaxTracked != defaultMaxTracked || o.Mechanism != Fexit {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, bad := range []Options{
		{RingSize: 1000}, {RingSize: 2048}, {RingSize: 3 * 4096}, {RingSize: -4096}, {RingSize: math.MaxInt},
		{MaxTracked: -1}, {MaxTracked: 1<<20 + 1}, {Mechanism: RawSysExit + 1},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
		// Load refuses them before touching the kernel, here and elsewhere.
		if _, err := Load(bad); err == nil || errors.Is(err, ErrPermission) || errors.Is(err, ErrUnsupported) {
			t.Errorf("Load(%+v) = %v, want an options error", bad, err)
		}
	}
}

func TestUnsupportedElsewhere(t *testing.T) {
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		t.Skip("supported here")
	}
	if _, err := Load(Options{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Load on %s/%s: %v, want ErrUnsupported", runtime.GOOS, runtime.GOARCH, err)
	}
}
