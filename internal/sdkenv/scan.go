package sdkenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

const (
	// ServiceNameVar sets service.name (specification/configuration/
	// sdk-environment-variables.md, "General SDK Configuration").
	ServiceNameVar = "OTEL_SERVICE_NAME"
	// ResourceAttributesVar holds key=value resource attributes
	// (specification/resource/sdk.md, "Specifying resource information via
	// an environment variable").
	ResourceAttributesVar = "OTEL_RESOURCE_ATTRIBUTES"

	// MaxEnvironment is how much of an environment Scan looks at: 2 MiB. Linux execve accepts arguments and environment together up to
	// a quarter of the stack limit (fs/exec.c), 2 MiB with the default
	// 8 MiB stack; a larger /proc/<pid>/environ is not worth reading.
	MaxEnvironment = 2 << 20

	bufSize        = 4 << 10  // Scan's read buffer
	maxPooledValue = 64 << 10 // largest value buffer kept for the next Scan
	// Reads returning nothing and no error before Scan gives up, as bufio.
	maxEmptyReads = 100
)

// Vars are the raw values of the two variables in one environment.
type Vars struct {
	ServiceName, ResourceAttributes       string
	HasServiceName, HasResourceAttributes bool
}

// prefixes[i] starts an entry of variable i; neither is a prefix of the
// other.
var prefixes = [2]string{ServiceNameVar + "=", ResourceAttributesVar + "="}

const bothVars = 1<<len(prefixes) - 1

// buffers are Scan's: the one it reads through, and the one it collects a
// value in (kept if at most maxPooledValue bytes).
type buffers struct {
	read [bufSize]byte
	val  []byte
}

var bufPool = sync.Pool{New: func() any { return new(buffers) }}

// Scan reads an environment from r: NUL-separated KEY=value entries, the
// last one possibly without its NUL (short reads of environ happen). It
// keeps only OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES and stops
// reading once it has both.
//
// The first occurrence of a variable wins, as for glibc getenv and Go's
// os.Getenv (syscall/env_unix.go: copyenv maps a key to its "first
// mention" and blanks later duplicates): later ones are skipped.
//
// Scan reads through one fixed buffer, looks at no more than MaxEnvironment
// bytes (it reads one more to tell an environment of exactly that size from
// a longer one) and keeps at most maxValue bytes of each value (a maxValue
// below 0 counts as 0). A longer value is discarded (that variable is
// treated as absent) with an error wrapping ErrTooLarge; so is the
// environment beyond MaxEnvironment, and a value it cuts is discarded. An
// error of r other than io.EOF is returned wrapped, and a value it cuts is
// discarded. The Vars returned with any error hold what was found. An
// environment of no bytes at all is ErrEmpty.
func Scan(r io.Reader, maxValue int) (Vars, error) {
	buf := bufPool.Get().(*buffers)
	s := scanner{maxValue: max(maxValue, 0), capture: -1, cand: bothVars, val: buf.val[:0]}
	total, empty := 0, 0
	for s.done != bothVars {
		// One byte more than allowed tells an environment of exactly
		// MaxEnvironment bytes from a longer one.
		n, err := r.Read(buf.read[:min(bufSize, MaxEnvironment+1-total)])
		if total+n > MaxEnvironment {
			s.feed(buf.read[:MaxEnvironment-total])
			if s.done != bothVars {
				s.cut(fmt.Errorf("environment longer than %d bytes: %w", MaxEnvironment, ErrTooLarge))
			}
			break
		}
		total += n
		s.feed(buf.read[:n])
		if errors.Is(err, io.EOF) {
			if s.capture >= 0 { // a last entry without its NUL
				s.finish()
			}
			break
		}
		if err == nil {
			empty++
			if n > 0 {
				empty = 0
			}
			if empty < maxEmptyReads {
				continue
			}
			err = io.ErrNoProgress
		}
		s.cut(fmt.Errorf("read environment: %w", err))
		break
	}
	if cap(s.val) <= maxPooledValue {
		buf.val = s.val[:0]
	}
	bufPool.Put(buf)
	if total == 0 && len(s.errs) == 0 {
		return s.vars, ErrEmpty
	}
	return s.vars, errors.Join(s.errs...)
}

// scanner is Scan's state machine. An entry is first matched against the
// prefixes byte by byte (pos >= 0), then either captured (capture >= 0, the
// variable's index) or skipped to its NUL (pos < 0).
type scanner struct {
	maxValue int
	vars     Vars
	pos      int   // bytes of the entry matched so far, -1 when skipping
	cand     uint8 // bit i: the entry may still start with prefixes[i]
	capture  int   // variable being captured, or -1
	tooLong  bool  // the value being captured exceeded maxValue
	val      []byte
	seen     uint8 // bit i: the first occurrence of variable i was met
	done     uint8 // bit i: ... and is complete (kept or discarded)
	errs     []error
}

func (s *scanner) feed(p []byte) {
	for len(p) > 0 {
		if s.capture < 0 && s.pos >= 0 {
			s.match(p[0])
			p = p[1:]
			continue
		}
		end := bytes.IndexByte(p, 0)
		if end < 0 {
			end = len(p)
		}
		if s.capture >= 0 {
			s.add(p[:end])
			if end < len(p) {
				s.finish()
			}
		}
		if end == len(p) {
			return
		}
		p = p[end+1:]
		s.pos, s.cand = 0, bothVars // the next entry starts
	}
}

// match takes the next byte c of an entry whose start matched so far.
func (s *scanner) match(c byte) {
	if c == 0 {
		s.pos, s.cand = 0, bothVars
		return
	}
	var keep uint8
	for i, pre := range prefixes {
		if s.cand&(1<<i) != 0 && pre[s.pos] == c {
			keep |= 1 << i
		}
	}
	s.pos++
	s.cand = keep
	if keep == 0 {
		s.pos = -1
		return
	}
	for i, pre := range prefixes {
		if keep&(1<<i) == 0 || s.pos < len(pre) {
			continue
		}
		s.pos = -1 // whatever follows is this entry's value
		if s.seen&(1<<i) == 0 {
			s.seen |= 1 << i
			s.capture, s.tooLong, s.val = i, false, s.val[:0]
		}
	}
}

func (s *scanner) add(p []byte) {
	switch {
	case s.tooLong:
	case len(s.val)+len(p) > s.maxValue:
		s.tooLong = true
	default:
		s.val = append(s.val, p...)
	}
}

// finish ends the value being captured.
func (s *scanner) finish() {
	i := s.capture
	s.capture = -1
	s.done |= 1 << i
	if s.tooLong {
		s.errs = append(s.errs, fmt.Errorf("%s: value longer than %d bytes: %w",
			prefixes[i][:len(prefixes[i])-1], s.maxValue, ErrTooLarge))
		return
	}
	if i == 0 {
		s.vars.ServiceName, s.vars.HasServiceName = string(s.val), true
	} else {
		s.vars.ResourceAttributes, s.vars.HasResourceAttributes = string(s.val), true
	}
}

// cut stops the scan with err, discarding a value not known to be complete.
func (s *scanner) cut(err error) {
	s.capture = -1
	s.errs = append(s.errs, err)
}
