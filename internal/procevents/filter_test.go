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

// runFilter runs a classic BPF program of the instructions threadFilter
// uses over a datagram, as the kernel does: the bytes kept, 0 to drop it
// (a load past the end drops it too).
func runFilter(t *testing.T, prog []unix.SockFilter, pkt []byte) uint32 {
	t.Helper()
	var a, x uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if int(in.K)+4 > len(pkt) {
				return 0
			}
			a = binary.BigEndian.Uint32(pkt[in.K:])
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X:
			v := in.K
			if in.Code&unix.BPF_X != 0 {
				v = x
			}
			if a == v {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: opcode %#x not run here", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// The filter drops exactly the threads' forks and exits: every message
// event reports, and every other message, reaches the socket.
func TestThreadFilter(t *testing.T) {
	prog := threadFilter()
	tests := []struct {
		name string
		msg  []byte
		keep bool
	}{
		{"fork of a process", kernelMessage(procEventFork, 101, 100, 200, 200), true},
		{"fork of a thread", kernelMessage(procEventFork, 100, 100, 201, 100), false},
		{"exec by the leader", kernelMessage(procEventExec, 300, 300), true},
		{"exec by a thread", kernelMessage(procEventExec, 301, 300), true},
		{"exit of the leader", kernelMessage(procEventExit, 400, 400, 0, 17, 1, 1), true},
		{"exit of a thread", kernelMessage(procEventExit, 401, 400, 0, 0, 1, 1), false},
		{"exit without the parent (before 4.13)", buildMessage(procEventExit, 0, 16, 400, 400, 256, 17), true},
		{"acknowledgement", kernelMessage(procEventNone, 0), true},
		{"uid event", kernelMessage(0x4, 500, 501, 0, 0), true},
		{"several bits of what", kernelMessage(procEventFork|procEventExit, 1, 1, 2, 3), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reported := parseEvent(tt.msg)
			got := runFilter(t, prog, tt.msg)
			if tt.keep {
				assert.Equal(t, uint32(filterKeep), got)
			} else {
				assert.Zero(t, got)
				assert.False(t, reported, "a message event reports is dropped")
			}
		})
	}
}

// The kernel takes the program (it checks every jump and load).
func TestThreadFilterAttaches(t *testing.T) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		t.Skipf("no proc connector socket: %v", err)
	}
	defer func() { _ = unix.Close(fd) }()
	require.NoError(t, attachFilter(fd))
}
