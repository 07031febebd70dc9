// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sdkenv

import (
	"bufio"
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
)

// Vars are the raw values of the two variables in one environment.
type Vars struct {
	ServiceName, ResourceAttributes       string
	HasServiceName, HasResourceAttributes bool
}

// prefixes[i] starts an entry of variable i; neither is a prefix of the
// other, and both are shorter than bufSize.
var prefixes = [2]string{ServiceNameVar + "=", ResourceAttributesVar + "="}

// buffers are Scan's: a bufio.Reader of bufSize over the environment cut
// one byte after MaxEnvironment, and the buffer a value is collected in
// (kept if at most maxPooledValue bytes).
type buffers struct {
	limit io.LimitedReader
	br    *bufio.Reader
	val   []byte
}

var bufPool = sync.Pool{New: func() any {
	b := new(buffers)
	b.br = bufio.NewReaderSize(&b.limit, bufSize)
	return b
}}

// Scan reads an environment from r: NUL-separated KEY=value entries, the
// last one possibly without its NUL (short reads of environ happen). It
// keeps only OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES and stops
// reading once it has both.
//
// The first occurrence of a variable wins, as for glibc getenv and Go's
// os.Getenv (syscall/env_unix.go: copyenv maps a key to its "first
// mention" and blanks later duplicates): later ones are skipped.
//
// Scan reads through one fixed buffer, an entry at a time
// (bufio.Reader.ReadSlice, longer entries a buffer at a time), looks at no
// more than MaxEnvironment bytes (it reads one more to tell an environment
// of exactly that size from a longer one) and keeps at most maxValue bytes
// of each value (a maxValue below 0 counts as 0). A longer value is
// discarded (that variable is treated as absent) with an error wrapping
// ErrTooLarge; so is the environment beyond MaxEnvironment, and a value it
// cuts is discarded. An error of r other than io.EOF is returned wrapped
// (io.ErrNoProgress after 100 empty reads in a row, as bufio does), and a
// value it cuts is discarded. The Vars returned with any error hold what
// was found. An environment of no bytes at all is ErrEmpty.
func Scan(r io.Reader, maxValue int) (Vars, error) {
	b := bufPool.Get().(*buffers)
	b.limit = io.LimitedReader{R: r, N: MaxEnvironment + 1}
	b.br.Reset(&b.limit)
	s := scanner{maxValue: max(maxValue, 0), capture: -1, val: b.val[:0]}
	if err := s.run(b.br); err != nil {
		s.errs = append(s.errs, err)
	}
	if cap(s.val) <= maxPooledValue {
		b.val = s.val[:0]
	}
	b.limit.R = nil
	bufPool.Put(b)
	return s.vars, errors.Join(s.errs...)
}

// scanner is Scan's state between the pieces of an entry.
type scanner struct {
	maxValue int
	vars     Vars
	capture  int  // variable whose value is being collected, or -1
	tooLong  bool // that value exceeded maxValue
	val      []byte
	done     uint8 // bit i: the first occurrence of variable i was met
	errs     []error
}

// run reads entries until both variables are met, the end of the
// environment or an error, which it returns.
func (s *scanner) run(br *bufio.Reader) error {
	total, more := 0, false // more: the next piece continues an entry
	for s.done != 1<<len(prefixes)-1 {
		piece, err := br.ReadSlice(0)
		if total += len(piece); total > MaxEnvironment {
			return fmt.Errorf("environment longer than %d bytes: %w", MaxEnvironment, ErrTooLarge)
		}
		if !more {
			piece = s.begin(piece)
		}
		more = false
		switch {
		case err == nil:
			s.add(piece[:len(piece)-1]) // without its NUL
			s.end()
		case errors.Is(err, bufio.ErrBufferFull):
			s.add(piece)
			more = true
		case err == io.EOF:
			if total == 0 {
				return ErrEmpty
			}
			s.add(piece) // a last entry without its NUL
			s.end()
			return nil
		default:
			return fmt.Errorf("read environment: %w", err)
		}
	}
	return nil
}

// begin starts an entry with its first piece and returns what follows a
// prefix whose variable is still to be met; its value is then collected.
func (s *scanner) begin(piece []byte) []byte {
	if len(piece) < 5 || string(piece[:5]) != "OTEL_" { // most entries, quickly
		return piece
	}
	for i, pre := range prefixes {
		if s.done&(1<<i) == 0 && len(piece) >= len(pre) && string(piece[:len(pre)]) == pre {
			s.capture, s.tooLong, s.val = i, false, s.val[:0]
			return piece[len(pre):]
		}
	}
	return piece
}

func (s *scanner) add(p []byte) {
	switch {
	case s.capture < 0, s.tooLong:
	case len(s.val)+len(p) > s.maxValue:
		s.tooLong = true
	default:
		s.val = append(s.val, p...)
	}
}

// end ends the entry, keeping the value collected.
func (s *scanner) end() {
	i := s.capture
	if i < 0 {
		return
	}
	s.capture = -1
	s.done |= 1 << i
	switch {
	case s.tooLong:
		s.errs = append(s.errs, fmt.Errorf("%s: value longer than %d bytes: %w",
			prefixes[i][:len(prefixes[i])-1], s.maxValue, ErrTooLarge))
	case i == 0:
		s.vars.ServiceName, s.vars.HasServiceName = string(s.val), true
	default:
		s.vars.ResourceAttributes, s.vars.HasResourceAttributes = string(s.val), true
	}
}
