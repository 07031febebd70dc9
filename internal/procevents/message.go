// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// The wire format, from include/uapi/linux/connector.h and cn_proc.h. A
// message is a netlink header, a cn_msg, and the cn_msg's data: a
// proc_event from the kernel, a control operation from us.
const (
	cnIdxProc = 1 // CN_IDX_PROC: the connector index and multicast group
	cnValProc = 1 // CN_VAL_PROC

	procCnMcastListen = 1 // PROC_CN_MCAST_LISTEN
	procCnMcastIgnore = 2 // PROC_CN_MCAST_IGNORE

	procEventNone = 0x00000000 // PROC_EVENT_NONE: the acknowledgement of a control operation
	procEventFork = 0x00000001 // PROC_EVENT_FORK
	procEventExec = 0x00000002 // PROC_EVENT_EXEC
	procEventExit = 0x80000000 // PROC_EVENT_EXIT

	// The events we ask for (struct proc_input.event_type, Linux 6.6+).
	wantedEvents = procEventFork | procEventExec | procEventExit

	nlmsgHeaderLen = unix.SizeofNlMsghdr // struct nlmsghdr
	cnMsgLen       = 20                  // struct cn_msg without its data
	cnDataOffset   = nlmsgHeaderLen + cnMsgLen

	// struct proc_event before its event_data union: what, cpu, timestamp_ns.
	procEventHeaderLen = 16

	// The parts of event_data we read: fork has four pids; exec and exit
	// start with process_pid, process_tgid; exit has parent_tgid at 20
	// (since Linux 4.13; exit_code, exit_signal and parent_pid before it).
	forkDataLen       = 16
	processDataLen    = 8
	exitParentDataLen = 24
)

// controlMessage is a control operation for the proc connector: op alone
// (the form every kernel knows) when events is 0, else op with the events
// the socket wants (struct proc_input, which kernels before 6.6 ignore).
// cookie goes in cn_msg.ack: the kernel answers with cookie+1.
func controlMessage(op, events, cookie uint32) []byte {
	dataLen := 4
	if events != 0 {
		dataLen = 8
	}
	msg := make([]byte, cnDataOffset+dataLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg))) // nlmsg_len
	ne.PutUint16(msg[4:], unix.NLMSG_DONE)  // nlmsg_type, as the connector's users send it
	ne.PutUint32(msg[16:], cnIdxProc)       // id.idx
	ne.PutUint32(msg[20:], cnValProc)       // id.val
	ne.PutUint32(msg[28:], cookie)          // ack
	ne.PutUint16(msg[32:], uint16(dataLen)) // len
	ne.PutUint32(msg[cnDataOffset:], op)    // mcast_op
	if events != 0 {
		ne.PutUint32(msg[cnDataOffset+4:], events) // event_type
	}
	return msg
}

// message is a proc connector message from the kernel, checked: its
// lengths agree with each other and with the bytes received.
type message struct {
	what uint32 // proc_event.what
	ack  uint32 // cn_msg.ack
	time uint64 // proc_event.timestamp_ns
	data []byte // proc_event.event_data, as long as the kernel's union
}

// parseMessage checks and splits one received datagram. It returns false
// for anything that is not a whole proc connector message: short,
// truncated, lengths that disagree, another connector, another netlink
// message type. The kernel sends one message per datagram; anything after
// the first message is ignored.
func parseMessage(b []byte) (message, bool) {
	ne := binary.NativeEndian
	if len(b) < cnDataOffset {
		return message{}, false
	}
	nlmsgLen := ne.Uint32(b[0:])
	if nlmsgLen < cnDataOffset || uint64(nlmsgLen) > uint64(len(b)) {
		return message{}, false
	}
	if ne.Uint16(b[4:]) != unix.NLMSG_DONE {
		return message{}, false
	}
	b = b[:nlmsgLen]
	if ne.Uint32(b[16:]) != cnIdxProc || ne.Uint32(b[20:]) != cnValProc {
		return message{}, false
	}
	dataLen := int(ne.Uint16(b[32:]))
	data := b[cnDataOffset:]
	if dataLen < procEventHeaderLen || dataLen > len(data) {
		return message{}, false
	}
	data = data[:dataLen]
	return message{what: ne.Uint32(data[0:]), ack: ne.Uint32(b[28:]), time: ne.Uint64(data[8:]), data: data[procEventHeaderLen:]}, true
}

// pid reads the pid_t at byte offset off of the event data.
func (m message) pid(off int) int {
	return int(int32(binary.NativeEndian.Uint32(m.data[off:])))
}

// event returns the Event a message reports, and false for a message that
// reports none: an event of another kind, an event of a thread that is not
// its process's (thread group's) leader, a message too short for its kind,
// or a pid that cannot be one.
func (m message) event() (Event, bool) {
	var ev Event
	switch m.what {
	case procEventFork:
		if len(m.data) < forkDataLen {
			return Event{}, false
		}
		// parent_pid, parent_tgid, child_pid, child_tgid: a new thread has
		// child_pid != child_tgid.
		childPid, childTgid := m.pid(8), m.pid(12)
		if childPid != childTgid {
			return Event{}, false
		}
		ev = Event{Kind: Fork, PID: childTgid, Parent: m.pid(4)}
	case procEventExec:
		if len(m.data) < processDataLen {
			return Event{}, false
		}
		// After exec the thread that called it is the leader, whichever
		// thread it was: report its process.
		ev = Event{Kind: Exec, PID: m.pid(4)}
	case procEventExit:
		if len(m.data) < processDataLen {
			return Event{}, false
		}
		pid, tgid := m.pid(0), m.pid(4)
		if pid != tgid {
			return Event{}, false
		}
		ev = Event{Kind: Exit, PID: tgid}
		if len(m.data) >= exitParentDataLen {
			ev.Parent = m.pid(20)
		}
	default:
		return Event{}, false
	}
	if ev.PID <= 0 || ev.Parent < 0 {
		return Event{}, false
	}
	ev.Time = m.time
	return ev, true
}

// ackError returns the error code of the kernel's acknowledgement of the
// control message sent with cookie, and false when m is not that
// acknowledgement.
func (m message) ackError(cookie uint32) (unix.Errno, bool) {
	if m.what != procEventNone || m.ack != cookie+1 || len(m.data) < 4 {
		return 0, false
	}
	return unix.Errno(binary.NativeEndian.Uint32(m.data[0:])), true
}

// parseEvent is parseMessage then event: the Event a datagram reports.
func parseEvent(b []byte) (Event, bool) {
	m, ok := parseMessage(b)
	if !ok {
		return Event{}, false
	}
	return m.event()
}
