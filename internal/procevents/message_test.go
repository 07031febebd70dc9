// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// kernelUnionLen is the size of proc_event's event_data on Linux 6.x (the
// comm and exit members, 24 bytes).
const kernelUnionLen = 24

// kernelMessage builds a datagram as the kernel sends it: nlmsghdr, cn_msg,
// proc_event with what and the event data words, zero-padded to the union.
func kernelMessage(what uint32, words ...uint32) []byte {
	return buildMessage(what, 0, kernelUnionLen, words...)
}

func buildMessage(what, ack uint32, unionLen int, words ...uint32) []byte {
	ne := binary.NativeEndian
	dataLen := procEventHeaderLen + max(unionLen, 4*len(words))
	b := make([]byte, cnDataOffset+dataLen)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.NLMSG_DONE)
	ne.PutUint32(b[16:], cnIdxProc)
	ne.PutUint32(b[20:], cnValProc)
	ne.PutUint32(b[28:], ack)
	ne.PutUint16(b[32:], uint16(dataLen))
	ne.PutUint32(b[cnDataOffset:], what)
	ne.PutUint32(b[cnDataOffset+4:], 1)         // cpu
	ne.PutUint64(b[cnDataOffset+8:], 123456789) // timestamp_ns
	for i, w := range words {
		ne.PutUint32(b[cnDataOffset+procEventHeaderLen+4*i:], w)
	}
	return b
}

// edit returns a copy of b changed by f.
func edit(b []byte, f func(b []byte)) []byte {
	c := append([]byte(nil), b...)
	f(c)
	return c
}

func TestParseEvent(t *testing.T) {
	ne := binary.NativeEndian
	// Words: fork: parent_pid, parent_tgid, child_pid, child_tgid; exec:
	// process_pid, process_tgid; exit: process_pid, process_tgid,
	// exit_code, exit_signal, parent_pid, parent_tgid.
	forkProcess := kernelMessage(procEventFork, 101, 100, 200, 200)
	minusOne := uint32(0xffffffff)
	tests := []struct {
		name string
		msg  []byte
		want Event
		ok   bool
	}{
		{"fork of a process, by a non-leader thread", kernelMessage(procEventFork, 101, 100, 200, 200), Event{Kind: Fork, PID: 200, Parent: 100}, true},
		{"fork of a thread", kernelMessage(procEventFork, 100, 100, 201, 100), Event{}, false},
		{"exec by the leader", kernelMessage(procEventExec, 300, 300), Event{Kind: Exec, PID: 300}, true},
		{"exec reports the tgid", kernelMessage(procEventExec, 301, 300), Event{Kind: Exec, PID: 300}, true},
		{"exit of the leader", kernelMessage(procEventExit, 400, 400, 0, 17, 1, 1), Event{Kind: Exit, PID: 400, Parent: 1}, true},
		{"exit of a thread", kernelMessage(procEventExit, 401, 400, 0, 0, 1, 1), Event{}, false},
		{"exit without the parent (before 4.13)", buildMessage(procEventExit, 0, 16, 400, 400, 256, 17), Event{Kind: Exit, PID: 400}, true},
		{"exit with a longer union (a future kernel)", buildMessage(procEventExit, 0, 40, 400, 400, 0, 17, 9, 9), Event{Kind: Exit, PID: 400, Parent: 9}, true},
		{"acknowledgement", kernelMessage(procEventNone, 0), Event{}, false},
		{"uid event", kernelMessage(0x4, 500, 500, 0, 0), Event{}, false},
		{"comm event", kernelMessage(0x200, 500, 500), Event{}, false},
		{"coredump event", kernelMessage(0x40000000, 500, 500, 1, 1), Event{}, false},
		{"unknown what", kernelMessage(0x400, 500, 500, 500, 500), Event{}, false},
		{"several bits of what", kernelMessage(procEventFork|procEventExec, 1, 1, 2, 2), Event{}, false},
		{"pid 0", kernelMessage(procEventExec, 0, 0), Event{}, false},
		{"negative pid", kernelMessage(procEventExit, minusOne, minusOne, 0, 0, 1, 1), Event{}, false},
		{"negative parent", kernelMessage(procEventFork, minusOne, minusOne, 5, 5), Event{}, false},
		{"empty", nil, Event{}, false},
		{"netlink header only", forkProcess[:nlmsgHeaderLen], Event{}, false},
		{"truncated cn_msg", forkProcess[:cnDataOffset-1], Event{}, false},
		{"truncated proc_event header", forkProcess[:cnDataOffset+procEventHeaderLen-1], Event{}, false},
		{"truncated datagram", forkProcess[:len(forkProcess)-1], Event{}, false},
		{"trailing bytes ignored", append(append([]byte(nil), forkProcess...), 0xde, 0xad), Event{Kind: Fork, PID: 200, Parent: 100}, true},
		{"fork data too short for its kind", buildMessage(procEventFork, 0, 12, 1, 1, 2), Event{}, false},
		{"exec data too short for its kind", buildMessage(procEventExec, 0, 4, 3), Event{}, false},
		{"nlmsg_len beyond the datagram", edit(forkProcess, func(b []byte) { ne.PutUint32(b[0:], uint32(len(b)+1)) }), Event{}, false},
		{"nlmsg_len below the headers", edit(forkProcess, func(b []byte) { ne.PutUint32(b[0:], cnDataOffset-1) }), Event{}, false},
		{"nlmsg_len huge", edit(forkProcess, func(b []byte) { ne.PutUint32(b[0:], 0xffffffff) }), Event{}, false},
		{"cn_msg len beyond nlmsg_len", edit(forkProcess, func(b []byte) { ne.PutUint16(b[32:], uint16(len(b)-cnDataOffset+1)) }), Event{}, false},
		{"cn_msg len shorter than the fork data", edit(forkProcess, func(b []byte) { ne.PutUint16(b[32:], procEventHeaderLen+12) }), Event{}, false},
		{"netlink error message", edit(forkProcess, func(b []byte) { ne.PutUint16(b[4:], unix.NLMSG_ERROR) }), Event{}, false},
		{"another connector", edit(forkProcess, func(b []byte) { ne.PutUint32(b[16:], 2) }), Event{}, false},
		{"another value", edit(forkProcess, func(b []byte) { ne.PutUint32(b[20:], 2) }), Event{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseEvent(tt.msg)
			assert.Equal(t, tt.ok, ok)
			if ok {
				tt.want.Time = 123456789 // every message is built with it
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAckError(t *testing.T) {
	const cookie = 4242
	tests := []struct {
		name  string
		msg   []byte
		errno unix.Errno
		ok    bool
	}{
		{"our acknowledgement", buildMessage(procEventNone, cookie+1, kernelUnionLen, 0), 0, true},
		{"our refusal", buildMessage(procEventNone, cookie+1, kernelUnionLen, uint32(unix.EPERM)), unix.EPERM, true},
		{"another listener's", buildMessage(procEventNone, cookie+2, kernelUnionLen, 0), 0, false},
		{"an event", buildMessage(procEventExec, cookie+1, kernelUnionLen, 1, 1), 0, false},
		{"no error field", buildMessage(procEventNone, cookie+1, 0), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := parseMessage(tt.msg)
			require.True(t, ok)
			errno, ok := m.ackError(cookie)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.errno, errno)
		})
	}
}

// TestControlMessage checks our control messages against the layout the
// kernel expects, and that they parse as proc connector messages (the same
// framing).
func TestControlMessage(t *testing.T) {
	ne := binary.NativeEndian
	legacy := controlMessage(procCnMcastListen, 0, 77)
	require.Len(t, legacy, 40)
	assert.Equal(t, uint32(40), ne.Uint32(legacy[0:]), "nlmsg_len")
	assert.Equal(t, uint16(unix.NLMSG_DONE), ne.Uint16(legacy[4:]), "nlmsg_type")
	assert.Equal(t, uint32(cnIdxProc), ne.Uint32(legacy[16:]), "idx")
	assert.Equal(t, uint32(cnValProc), ne.Uint32(legacy[20:]), "val")
	assert.Equal(t, uint32(77), ne.Uint32(legacy[28:]), "ack")
	assert.Equal(t, uint16(4), ne.Uint16(legacy[32:]), "len")
	assert.Equal(t, uint32(procCnMcastListen), ne.Uint32(legacy[36:]), "mcast_op")

	filtered := controlMessage(procCnMcastListen, wantedEvents, 77)
	require.Len(t, filtered, 44)
	assert.Equal(t, uint16(8), ne.Uint16(filtered[32:]), "len")
	assert.Equal(t, uint32(procEventFork|procEventExec|procEventExit), ne.Uint32(filtered[40:]), "event_type")

	ignore := controlMessage(procCnMcastIgnore, 0, 77)
	assert.Equal(t, uint32(procCnMcastIgnore), ne.Uint32(ignore[36:]), "mcast_op")
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "fork", Fork.String())
	assert.Equal(t, "exec", Exec.String())
	assert.Equal(t, "exit", Exit.String())
	assert.Equal(t, "Kind(0)", Kind(0).String())
}

// FuzzParseEvent: no datagram makes the parser panic, and what it accepts
// is a process-level event with plausible pids.
func FuzzParseEvent(f *testing.F) {
	f.Add(kernelMessage(procEventFork, 101, 100, 200, 200))
	f.Add(kernelMessage(procEventFork, 100, 100, 201, 100))
	f.Add(kernelMessage(procEventExec, 300, 300))
	f.Add(kernelMessage(procEventExit, 400, 400, 0, 17, 1, 1))
	f.Add(kernelMessage(procEventExit, 401, 400, 0, 0, 1, 1))
	f.Add(kernelMessage(procEventNone, 0))
	f.Add(buildMessage(procEventExit, 0, 16, 400, 400, 256, 17))
	f.Add(buildMessage(procEventFork, 0, 4, 1))
	f.Add(kernelMessage(procEventFork, 1, 1, 2, 2)[:cnDataOffset+2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, ok := parseEvent(b)
		if !ok {
			if ev != (Event{}) {
				t.Fatalf("rejected message with event %+v", ev)
			}
			return
		}
		if ev.Kind != Fork && ev.Kind != Exec && ev.Kind != Exit {
			t.Fatalf("kind %v", ev.Kind)
		}
		if ev.PID <= 0 || ev.Parent < 0 || (ev.Kind == Exec && ev.Parent != 0) {
			t.Fatalf("pids of %+v", ev)
		}
		if _, ok := parseMessage(b); !ok {
			t.Fatal("parseEvent accepted what parseMessage rejects")
		}
	})
}
