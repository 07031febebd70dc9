// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import "fmt"

// Limits bound what a reader accepts from an untrusted publisher. Every field
// must be positive; DefaultLimits gives the values used in the field.
type Limits struct {
	// MaxPayloadSize caps header.payload_size, and so the one allocation of a
	// read. Readers in the field use 64 KiB.
	MaxPayloadSize uint32
	// MaxAttributes caps the key/value pairs and array elements of a whole
	// context, counted at every nesting level.
	MaxAttributes int
	// MaxDepth caps the nesting of arrays and kvlists inside a value
	// (a plain string attribute is depth 1).
	MaxDepth int
	// MaxKeyLength caps the length of an attribute key in bytes.
	MaxKeyLength int
	// MaxValueLength caps the length of a string or bytes value in bytes.
	MaxValueLength int
}

// DefaultLimits returns the limits used when a configuration says nothing.
func DefaultLimits() Limits {
	return Limits{
		MaxPayloadSize: 64 << 10,
		MaxAttributes:  1024,
		MaxDepth:       8,
		MaxKeyLength:   256,
		MaxValueLength: 16 << 10,
	}
}

// WithMaxPayloadSize returns the limits with another payload size cap, the
// one limit the components' configurations set.
func (l Limits) WithMaxPayloadSize(n uint32) Limits {
	l.MaxPayloadSize = n
	return l
}

// Validate reports the first limit that is not usable.
func (l Limits) Validate() error {
	switch {
	case l.MaxPayloadSize == 0:
		return fmt.Errorf("max payload size must be positive")
	case l.MaxPayloadSize > 16<<20:
		return fmt.Errorf("max payload size %d exceeds 16 MiB", l.MaxPayloadSize)
	case l.MaxAttributes <= 0:
		return fmt.Errorf("max attributes must be positive, got %d", l.MaxAttributes)
	case l.MaxDepth <= 0:
		return fmt.Errorf("max depth must be positive, got %d", l.MaxDepth)
	case l.MaxKeyLength <= 0:
		return fmt.Errorf("max key length must be positive, got %d", l.MaxKeyLength)
	case l.MaxValueLength <= 0:
		return fmt.Errorf("max value length must be positive, got %d", l.MaxValueLength)
	}
	return nil
}
