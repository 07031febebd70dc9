// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kind is what happened to a process.
type Kind uint8

const (
	// Fork: a new process, a copy of its parent, before it execs.
	Fork Kind = iota + 1
	// Exec: the process runs a new program (its executable, command line
	// and perhaps credentials changed).
	Exec
	// Exit: the process's leader thread exited. Usually the process is
	// gone (a zombie until its parent reaps it); but a leader that exits on
	// its own (pthread_exit) leaves the other threads running, and the end
	// of the last one is not reported. An exec from a thread other than the
	// leader also reports an Exit of the process, then its Exec.
	Exit
)

func (k Kind) String() string {
	switch k {
	case Fork:
		return "fork"
	case Exec:
		return "exec"
	case Exit:
		return "exit"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Event is a process event.
type Event struct {
	Kind Kind
	// PID is the process's pid (its thread group id): for a Fork, the new
	// process's.
	PID int
	// Parent is, for a Fork, the pid of the process that forked (its
	// grandparent with CLONE_PARENT); for an Exit, the pid of its parent at
	// exit (after any reparenting), or 0 when the kernel does not say
	// (before 4.13, and at times on later ones). 0 for an Exec.
	Parent int
	// Time is when it happened, in nanoseconds of CLOCK_MONOTONIC (the
	// kernel's ktime_get_ns): events of other sources with the same clock
	// can be ordered against it.
	Time uint64
}

// Error kinds (see the package documentation).
var (
	// ErrPermission: the kernel refused the proc connector to this process.
	ErrPermission = errors.New("proc connector not permitted")
	// ErrUnsupported: no proc connector for this process (kernel
	// configuration, namespaces).
	ErrUnsupported = errors.New("proc connector unavailable")
	// ErrClosed: the Listener was closed.
	ErrClosed = errors.New("proc events listener closed")
)

const (
	// defaultReceiveBuffer holds some 5000 events, the burst of a few
	// hundred short processes per millisecond.
	defaultReceiveBuffer = 4 << 20

	// receiveBufferSize exceeds any proc connector message (76 bytes on
	// Linux 6.x); a longer datagram is truncated and rejected.
	receiveBufferSize = 4096

	// ackTimeout bounds the wait for the kernel's answer to the
	// subscription. The kernel answers before send returns, so the wait
	// only ends early when no answer comes.
	ackTimeout = time.Second

	// maxHandshakeReads bounds the events read while looking for the
	// answer: more than a full buffer holds means the answer was dropped.
	maxHandshakeReads = 1 << 16

	// maxDrainReads bounds the reads that empty the queue after an
	// overflow: more than a full buffer holds.
	maxDrainReads = 1 << 16
)

// Listener receives process events from the proc connector. Read is for
// one goroutine at a time; Close may be called from any goroutine.
//
// The socket is in the runtime's poller only while Read waits for an
// event (a duplicate of its descriptor, closed once the wait is over): the
// poller's epoll set is edge-triggered, and a socket left in it would wake
// the poller's thread at every message the kernel queues, read or not. A
// reader that lets events gather between reads (Gather, ReadQueued) is
// woken by none of them.
type Listener struct {
	portID uint32

	// mu orders the reads of fd against Close, and guards waiter: the
	// duplicate of fd in the runtime's poller while Read waits, nil
	// otherwise.
	mu       sync.Mutex
	fd       int
	closed   bool
	waiter   *os.File
	deadline time.Time // of Read's waits (tests)
	timer    *timer    // Gather's

	closeOnce sync.Once
	closeErr  error
	overflows atomic.Uint64

	// The Read in progress, in fields so that the callback given to the
	// runtime poller is allocated once, not on every wait.
	buf     []byte
	out     []Event
	n       int
	lost    bool
	readErr error
	receive func(fd uintptr) bool
}

// Listen opens a netlink socket to the proc connector, subscribes to
// process events and waits for the kernel to confirm the subscription.
// Events start with the confirmation; the caller that wants the whole
// picture scans procfs after Listen returns.
func Listen() (*Listener, error) {
	return listen(defaultReceiveBuffer)
}

// listen is Listen with the socket's receive buffer size: tests make it
// tiny to overflow it.
func listen(receiveBuffer int) (*Listener, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, wrapOS("open proc connector socket", "a kernel without CONFIG_CONNECTOR?", err)
	}
	owned := true
	defer func() {
		if owned {
			_ = unix.Close(fd)
		}
	}()
	if err := setReceiveBuffer(fd, receiveBuffer); err != nil {
		return nil, err
	}
	// Best effort: without the filter, the threads' messages are dropped
	// after the wake-up (message.event).
	_ = attachFilter(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		if !inInitialUserNamespace() {
			// Refused (EPERM on most kernels) whatever the capabilities:
			// the proc connector serves the initial user namespace only.
			return nil, fmt.Errorf("bind proc connector (not in the initial user namespace): %w: %w", ErrUnsupported, err)
		}
		return nil, wrapOS("bind proc connector", "needs CAP_NET_ADMIN", err)
	}
	// Connected to the kernel (port 0), the socket refuses messages that
	// other processes' sockets address to it: only the kernel's count.
	if err := unix.Connect(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, wrapOS("connect proc connector", "", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, fmt.Errorf("proc connector socket address: %w", err)
	}
	nl, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		return nil, fmt.Errorf("proc connector socket address: not netlink: %T", sa)
	}
	// The port id is unique among the netns's connector sockets: as the
	// cookie of our control messages, it tells our acknowledgement from
	// other listeners' (acknowledgements go to every listener).
	portID := nl.Pid

	if err := send(fd, controlMessage(procCnMcastListen, 0, portID)); err != nil {
		return nil, wrapOS("subscribe to proc connector", "not in the initial network namespace?", err)
	}
	if err := awaitAck(fd, portID); err != nil {
		return nil, err
	}
	// Then narrow the subscription to the events we report (Linux 6.6+;
	// older kernels ignore this form and keep sending every kind, which
	// parsing drops). Best effort: the acknowledgement is not sent to a
	// socket that does not want PROC_EVENT_NONE.
	_ = send(fd, controlMessage(procCnMcastListen, wantedEvents, portID))

	tm, err := newTimer()
	if err != nil {
		return nil, err
	}
	owned = false
	l := &Listener{fd: fd, portID: portID, buf: make([]byte, receiveBufferSize), timer: tm}
	l.receive = l.receiveMessages
	return l, nil
}

// setReceiveBuffer sets the socket's receive buffer: SO_RCVBUFFORCE, past
// net.core.rmem_max, needs CAP_NET_ADMIN; else SO_RCVBUF, capped by it.
func setReceiveBuffer(fd, size int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size); err == nil {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, size); err != nil {
		return fmt.Errorf("set proc connector socket receive buffer: %w", err)
	}
	return nil
}

// send writes one control message to the kernel.
func send(fd int, msg []byte) error {
	for {
		_, err := unix.Write(fd, msg)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// awaitAck reads the socket until the kernel's acknowledgement of the
// control message sent with cookie, dropping the events before it, and
// returns the error it carries. The kernel sends it before send returns;
// there is none when the kernel ignored the subscription.
func awaitAck(fd int, cookie uint32) error {
	buf := make([]byte, receiveBufferSize)
	deadline := time.Now().Add(ackTimeout)
	overflowed := false
	for reads := 0; reads < maxHandshakeReads; reads++ {
		n, err := unix.Read(fd, buf)
		switch {
		case err == nil:
			m, ok := parseMessage(buf[:n])
			if !ok {
				continue
			}
			if errno, ok := m.ackError(cookie); ok {
				if errno != 0 {
					return wrapOS("proc connector refused the subscription", "", errno)
				}
				return nil
			}
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.ENOBUFS):
			overflowed = true
		case errors.Is(err, unix.EAGAIN):
			// Fail only with the queue empty: a process descheduled past
			// the deadline still finds the answer queued.
			wait := time.Until(deadline)
			if wait <= 0 {
				return noAck(overflowed)
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, int(wait.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("wait for proc connector acknowledgement: %w", err)
			}
		default:
			return fmt.Errorf("read proc connector acknowledgement: %w", err)
		}
	}
	return noAck(overflowed)
}

func noAck(overflowed bool) error {
	if overflowed {
		// Not a kind: the answer was lost among other events, try again.
		return errors.New("proc connector acknowledgement lost in a socket buffer overflow")
	}
	return fmt.Errorf("no acknowledgement from the proc connector (not in the initial user and pid namespaces, or a kernel without CONFIG_PROC_EVENTS?): %w", ErrUnsupported)
}

// initUserNamespaceIno is the inode of the initial user namespace's
// /proc/<pid>/ns/user, fixed since Linux 3.8 (PROC_USER_INIT_INO).
const initUserNamespaceIno = 0xEFFFFFFD

// inInitialUserNamespace reports whether this process runs in the initial
// user namespace; true when that cannot be told (no /proc).
func inInitialUserNamespace() bool {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &st); err != nil {
		return true
	}
	return st.Ino == initUserNamespaceIno
}

// wrapOS wraps an OS error with what failed, its kind when it has one, and
// the hint that goes with the kind.
func wrapOS(op, hint string, err error) error {
	var kind error
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		kind = ErrPermission
	case errors.Is(err, unix.EPROTONOSUPPORT), errors.Is(err, unix.EAFNOSUPPORT), errors.Is(err, unix.ECONNREFUSED):
		kind = ErrUnsupported
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
	if hint != "" {
		op += " (" + hint + ")"
	}
	return fmt.Errorf("%s: %w: %w", op, kind, err)
}

// Read waits for events and stores them in events: it blocks until there
// is at least one, then takes what is already queued, up to len(events),
// without waiting. n is the number stored, in the order the kernel queued
// them (the events of one process come in the order they happened).
//
// lost reports that the socket's buffer overflowed: the kernel dropped an
// unknown number of events, and the caller must scan procfs to catch up.
// Read then discards the events still queued (older than that scan) and
// returns at once, with the events it stored before (n may be 0). Events
// flow again when Read returns: a scan started after it misses nothing.
//
// Once the Listener is closed, including while Read waits, Read returns
// ErrClosed (with the events read before, if any). Events[:n] are valid
// whatever err is. With an empty events, Read returns at once.
func (l *Listener) Read(events []Event) (n int, lost bool, err error) {
	n, lost, err = l.ReadQueued(events)
	if n > 0 || lost || err != nil || len(events) == 0 {
		return n, lost, err
	}
	return l.wait(events)
}

// ReadQueued is Read without the wait: it takes the events queued now, up
// to len(events), and returns n 0 when none is. A reader that lets events
// gather (one wake-up for many) reads with Read, waits, then takes what
// came meanwhile with ReadQueued.
func (l *Listener) ReadQueued(events []Event) (n int, lost bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, false, ErrClosed
	}
	l.out, l.n, l.lost, l.readErr = events, 0, false, nil
	l.receiveMessages(uintptr(l.fd))
	return l.result(nil, false)
}

// Gather waits d, then takes the events queued then (ReadQueued): the
// wait of a reader that lets events gather between reads. Its timer wakes
// one thread of the collector where time.Sleep wakes about three (timer).
func (l *Listener) Gather(events []Event, d time.Duration) (n int, lost bool, err error) {
	if err := l.timer.sleep(d); err != nil {
		if l.isClosed() {
			return 0, false, ErrClosed
		}
		return 0, false, fmt.Errorf("gather proc events: %w", err)
	}
	return l.ReadQueued(events)
}

// isClosed reports whether Close was called: a wait it ended fails with
// ErrClosed, not the poller's error.
func (l *Listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// wait waits, through a duplicate of the socket's descriptor in the
// runtime's poller, until events come, and reads them.
func (l *Listener) wait(events []Event) (n int, lost bool, err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, false, ErrClosed
	}
	dup, err := unix.FcntlInt(uintptr(l.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		l.mu.Unlock()
		return 0, false, fmt.Errorf("wait for proc events: %w", err)
	}
	w := os.NewFile(uintptr(dup), "proc-connector") // non-blocking, as fd: in the poller
	l.waiter = w
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.waiter = nil
		l.mu.Unlock()
		_ = w.Close()
	}()
	if !l.deadline.IsZero() {
		_ = w.SetReadDeadline(l.deadline)
	}
	conn, err := w.SyscallConn()
	if err != nil {
		return 0, false, fmt.Errorf("wait for proc events: %w", err)
	}
	l.out, l.n, l.lost, l.readErr = events, 0, false, nil
	waitErr := conn.Read(l.receive)
	return l.result(waitErr, l.isClosed())
}

// result returns what the read that just ended stored, with its error,
// or waitErr, or ErrClosed once the Listener is closed.
func (l *Listener) result(waitErr error, closed bool) (n int, lost bool, err error) {
	n, lost, err = l.n, l.lost, l.readErr
	l.out, l.readErr = nil, nil
	switch {
	case closed:
		return n, lost, ErrClosed
	case waitErr != nil:
		return n, lost, fmt.Errorf("wait for proc events: %w", waitErr)
	case err != nil:
		return n, lost, fmt.Errorf("receive proc events: %w", err)
	}
	return n, lost, nil
}

// receiveMessages reads the queued messages into l.out; false asks the
// runtime poller to wait for more and call again. Its reads are raw
// syscalls: the socket never blocks, and a syscall entered the usual way
// wakes the runtime's monitor thread when it sleeps, which then polls
// every 20 µs while the collector works: more wake-ups than the events.
func (l *Listener) receiveMessages(fd uintptr) bool {
	for l.n < len(l.out) {
		size, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(l.buf))), uintptr(len(l.buf)))
		var err error
		if errno != 0 {
			err = errno
		}
		switch {
		case err == nil:
			if ev, ok := parseEvent(l.buf[:size]); ok {
				l.out[l.n] = ev
				l.n++
			}
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return l.n > 0
		case errors.Is(err, unix.ENOBUFS):
			l.overflows.Add(1)
			l.lost = true
			l.readErr = l.discardQueued(int(fd))
			return true
		default:
			l.readErr = err
			return true
		}
	}
	return true
}

// discardQueued reads the queue empty after an overflow. Until the queue
// is empty the kernel drops every new event, without a word (it reports
// ENOBUFS once per overflow); so a scan that starts after Read returns
// misses nothing. The queued events are older than that scan.
func (l *Listener) discardQueued(fd int) error {
	for range maxDrainReads {
		_, err := unix.Read(fd, l.buf)
		switch {
		case err == nil, errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.ENOBUFS):
			l.overflows.Add(1)
		default:
			return err
		}
	}
	// Events that came after the queue emptied: newer than the
	// overflow, but still older than the caller's scan.
	return nil
}

// Overflows returns how many times the socket's buffer overflowed, each
// time dropping an unknown number of events.
func (l *Listener) Overflows() uint64 {
	return l.overflows.Load()
}

// Close unsubscribes (best effort: the kernel, 6.18 too, counts a socket
// closed without unsubscribing as a listener for good, and keeps making
// events for no one) and closes the socket. A Read in progress returns
// ErrClosed. Calling Close again returns the first call's result.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		_ = send(l.fd, controlMessage(procCnMcastIgnore, 0, l.portID))
		if l.waiter != nil {
			_ = l.waiter.Close() // ends the wait; the socket closes with the waiter's duplicate
		}
		l.closeErr = unix.Close(l.fd)
		_ = l.timer.close() // ends a Gather's wait
	})
	return l.closeErr
}
