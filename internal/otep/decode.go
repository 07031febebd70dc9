// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"google.golang.org/protobuf/encoding/protowire"
)

// DecodePayload decodes a ProcessContext protobuf payload (SPEC.md, "Payload")
// straight into pdata maps:
//
//	message ProcessContext {
//	  opentelemetry.proto.resource.v1.Resource resource = 1;
//	  repeated opentelemetry.proto.common.v1.KeyValue attributes = 2;
//	}
//
// The attributes of field 1 (the Resource) go into resource; the KeyValues of
// field 2 (the non-resource attributes, called extra_attributes by some
// publishers, e.g. threadlocal.schema_version) go into attributes. They are
// never mixed. Both maps are cleared first, must be mutable and must not be
// the same map.
//
// Protobuf semantics are followed: unknown fields (groups included) are
// skipped at every level;
// repeated occurrences of a message field are merged (two Resource fields
// contribute the attributes of both; two array_value fields of one AnyValue
// concatenate their elements); in the AnyValue oneof the last field seen wins.
// A KeyValue without a value yields an empty value (pcommon.ValueTypeEmpty).
// Resource.dropped_attributes_count and Resource.entity_refs are ignored.
//
// Duplicate keys — within the resource, within the attributes, or within a
// kvlist value — are resolved by map semantics: the LAST occurrence wins and
// replaces the earlier value entirely (it keeps the position of the first).
//
// For speed, keys and string values are not validated as UTF-8: they are
// kept byte for byte. Nothing aliases payload, which may be reused once
// DecodePayload returns: bytes values are copied, and keys and string values
// are substrings of one string copy of the payload (one allocation instead of
// one per string; that copy, at most MaxPayloadSize bytes, lives as long as
// any of its strings).
//
// The publisher is untrusted: limits bound the whole decode, and a breach
// returns an error wrapping ErrTooLarge:
//   - MaxPayloadSize: len(payload) (the caller normally checks it before
//     reading the payload).
//   - MaxAttributes: every KeyValue (resource attributes, attributes, kvlist
//     entries, duplicates included) and every array element, at every level,
//     counted over the whole payload.
//   - MaxDepth: the value of a top-level attribute is at depth 1, the
//     elements or entries of an array or kvlist at depth d are at depth d+1.
//     The depth is checked before descending, so the recursion (and stack) is
//     bounded by MaxDepth whatever the input.
//   - MaxKeyLength: every key, in bytes.
//   - MaxValueLength: every string and bytes value, in bytes.
//
// A zero limit allows nothing of its kind; use Limits.Validate beforehand.
// Malformed protobuf (truncated data, a length past the end of its message,
// invalid tag or field number, reserved wire type, unmatched end group, a
// known field with the wrong wire type — stricter than the generated Go code,
// which would keep it as an unknown field) returns an error wrapping
// ErrInvalid whose message gives the path, the message type and the byte
// offset in payload. On any error both maps are left empty. DecodePayload
// never panics on malformed input, and its allocations are bounded by
// len(payload) and MaxAttributes, whatever lengths the payload claims.
func DecodePayload(payload []byte, limits Limits, resource, attributes pcommon.Map) error {
	resource.Clear()
	attributes.Clear()
	if uint64(len(payload)) > uint64(limits.MaxPayloadSize) {
		return &payloadError{kind: ErrTooLarge, msg: fmt.Sprintf(
			"payload of %d bytes exceeds the limit of %d", len(payload), limits.MaxPayloadSize)}
	}
	d := payloadDecoder{limits: limits, str: string(payload)}
	if err := d.processContext(payload, resource, attributes); err != nil {
		resource.Clear()
		attributes.Clear()
		return err
	}
	return nil
}

// Field numbers of the messages decoded here.
const (
	pbFieldProcessContextResource   protowire.Number = 1
	pbFieldProcessContextAttributes protowire.Number = 2

	pbFieldResourceAttributes   protowire.Number = 1
	pbFieldResourceDroppedCount protowire.Number = 2
	pbFieldResourceEntityRefs   protowire.Number = 3

	pbFieldKeyValueKey   protowire.Number = 1
	pbFieldKeyValueValue protowire.Number = 2

	pbFieldAnyValueString protowire.Number = 1
	pbFieldAnyValueBool   protowire.Number = 2
	pbFieldAnyValueInt    protowire.Number = 3
	pbFieldAnyValueDouble protowire.Number = 4
	pbFieldAnyValueArray  protowire.Number = 5
	pbFieldAnyValueKvlist protowire.Number = 6
	pbFieldAnyValueBytes  protowire.Number = 7

	// ArrayValue.values and KeyValueList.values.
	pbFieldListValues protowire.Number = 1
)

// payloadError is the error DecodePayload returns: it wraps ErrInvalid or
// ErrTooLarge, and its message grows a path prefix as it bubbles up.
type payloadError struct {
	kind error
	msg  string
}

func (e *payloadError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *payloadError) Unwrap() error { return e.kind }

// payloadErrorIn prefixes the location of a nested error. Only called on
// error paths.
func payloadErrorIn(err error, format string, args ...any) error {
	var e *payloadError
	if errors.As(err, &e) {
		e.msg = fmt.Sprintf(format, args...) + ": " + e.msg
	}
	return err
}

// payloadField is one decoded field record.
type payloadField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // VarintType, Fixed32Type, Fixed64Type
	b   []byte // BytesType (aliases the payload)
	off int    // offset of the tag within its message
}

// readPayloadField reads the field record at b[off:]. msg names the message
// and base is the offset of b within the payload, both for error messages.
// It returns the field and the offset of the next record.
func readPayloadField(msg string, b []byte, base, off int) (payloadField, int, error) {
	f := payloadField{off: off}
	num, typ, n := protowire.ConsumeTag(b[off:])
	if n < 0 {
		return f, 0, &payloadError{kind: ErrInvalid, msg: fmt.Sprintf(
			"%s: tag at byte %d: %v", msg, base+off, protowire.ParseError(n))}
	}
	if !num.IsValid() {
		return f, 0, &payloadError{kind: ErrInvalid, msg: fmt.Sprintf(
			"%s: invalid field number %d at byte %d", msg, num, base+off)}
	}
	f.num, f.typ = num, typ
	rest := b[off+n:]
	var m int
	switch typ {
	case protowire.VarintType:
		f.v, m = protowire.ConsumeVarint(rest)
	case protowire.Fixed64Type:
		f.v, m = protowire.ConsumeFixed64(rest)
	case protowire.Fixed32Type:
		var v uint32
		v, m = protowire.ConsumeFixed32(rest)
		f.v = uint64(v)
	case protowire.BytesType:
		f.b, m = protowire.ConsumeBytes(rest)
	default: // groups (skipped whole, bounded recursion), reserved types
		m = protowire.ConsumeFieldValue(num, typ, rest)
	}
	if m < 0 {
		return f, 0, &payloadError{kind: ErrInvalid, msg: fmt.Sprintf(
			"%s: field %d (wire type %d) at byte %d: %v", msg, num, typ, base+off, protowire.ParseError(m))}
	}
	return f, off + n + m, nil
}

// wrongWireType is the error for a known field encoded with another wire type.
func wrongWireType(msg string, f payloadField, base int, want protowire.Type) error {
	return &payloadError{kind: ErrInvalid, msg: fmt.Sprintf(
		"%s: field %d at byte %d has wire type %d, want %d", msg, f.num, base+f.off, f.typ, want)}
}

// payloadDecoder holds the limits and the running counts of one decode.
type payloadDecoder struct {
	limits Limits
	str    string // a copy of the payload; keys and string values are its substrings
	count  int    // KeyValues and array elements seen so far
}

// substr returns the copy of b, which is payload[off:off+len(b)].
func (d *payloadDecoder) substr(b []byte, off int) string {
	return d.str[off : off+len(b)]
}

// capacity returns how many fields num of wire type bytes the message b
// holds, capped by the attributes left to the limit: the capacity to reserve
// for them. Malformed input stops the count; the decode reports it.
func (d *payloadDecoder) capacity(b []byte, num protowire.Number) int {
	left := d.limits.MaxAttributes - d.count
	n := 0
	for len(b) > 0 && n < left {
		fnum, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			break
		}
		b = b[m:]
		if typ == protowire.BytesType {
			_, m = protowire.ConsumeBytes(b)
			if fnum == num {
				n++
			}
		} else {
			m = protowire.ConsumeFieldValue(fnum, typ, b)
		}
		if m < 0 {
			break
		}
		b = b[m:]
	}
	return n
}

// countAttribute counts one KeyValue or array element.
func (d *payloadDecoder) countAttribute() error {
	d.count++
	if d.count > d.limits.MaxAttributes {
		return &payloadError{kind: ErrTooLarge, msg: fmt.Sprintf(
			"more than %d attributes and array elements (the limit)", d.limits.MaxAttributes)}
	}
	return nil
}

// checkDepth bounds the nesting before descending into a value at depth.
func (d *payloadDecoder) checkDepth(depth int) error {
	if depth > d.limits.MaxDepth {
		return &payloadError{kind: ErrTooLarge, msg: fmt.Sprintf(
			"value nested at depth %d exceeds the limit of %d", depth, d.limits.MaxDepth)}
	}
	return nil
}

func (d *payloadDecoder) processContext(b []byte, resource, attributes pcommon.Map) error {
	const msg = "ProcessContext"
	if n := d.capacity(b, pbFieldProcessContextAttributes); n > 1 {
		attributes.EnsureCapacity(n)
	}
	nattr := 0
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, 0, off)
		if err != nil {
			return err
		}
		switch f.num {
		case pbFieldProcessContextResource:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, 0, protowire.BytesType)
			}
			if err := d.resource(f.b, next-len(f.b), resource); err != nil {
				return payloadErrorIn(err, "resource")
			}
		case pbFieldProcessContextAttributes:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, 0, protowire.BytesType)
			}
			if err := d.keyValue(f.b, next-len(f.b), attributes, 1); err != nil {
				return payloadErrorIn(err, "attribute %d", nattr)
			}
			nattr++
		}
		off = next
	}
	return nil
}

// resource decodes a Resource message at payload offset base into m.
func (d *payloadDecoder) resource(b []byte, base int, m pcommon.Map) error {
	const msg = "Resource"
	if n := d.capacity(b, pbFieldResourceAttributes); n > 1 {
		m.EnsureCapacity(m.Len() + n)
	}
	nattr := 0
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, base, off)
		if err != nil {
			return err
		}
		switch f.num {
		case pbFieldResourceAttributes:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			if err := d.keyValue(f.b, base+next-len(f.b), m, 1); err != nil {
				return payloadErrorIn(err, "attribute %d", nattr)
			}
			nattr++
		case pbFieldResourceDroppedCount:
			if f.typ != protowire.VarintType {
				return wrongWireType(msg, f, base, protowire.VarintType)
			}
		case pbFieldResourceEntityRefs:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
		}
		off = next
	}
	return nil
}

// keyValue decodes a KeyValue message at payload offset base into m; its
// value is at depth.
func (d *payloadDecoder) keyValue(b []byte, base int, m pcommon.Map, depth int) error {
	const msg = "KeyValue"
	if err := d.countAttribute(); err != nil {
		return err
	}
	if err := d.checkDepth(depth); err != nil {
		return err
	}
	// Pass 1: the key (last one wins) and the value fields. The key may come
	// after the value, and it is needed before the value can be stored.
	var key []byte
	keyBase := 0
	var value []byte // the only value field, if exactly one
	valueBase, nvalues := 0, 0
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, base, off)
		if err != nil {
			return err
		}
		switch f.num {
		case pbFieldKeyValueKey:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			if len(f.b) > d.limits.MaxKeyLength {
				return &payloadError{kind: ErrTooLarge, msg: fmt.Sprintf(
					"key of %d bytes at byte %d exceeds the limit of %d", len(f.b), base+off, d.limits.MaxKeyLength)}
			}
			key, keyBase = f.b, base+next-len(f.b)
		case pbFieldKeyValueValue:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			value, valueBase = f.b, base+next-len(f.b)
			nvalues++
		}
		off = next
	}

	v := m.PutEmpty(d.substr(key, keyBase))
	switch nvalues {
	case 0:
		return nil
	case 1:
		if err := d.anyValue(value, valueBase, v, depth); err != nil {
			return payloadErrorIn(err, "%q", key)
		}
		return nil
	}
	// Pass 2, rare: several value fields are merged in order, as protobuf
	// merges repeated occurrences of a message field. Pass 1 validated the
	// framing.
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, base, off)
		if err != nil {
			return err
		}
		if f.num == pbFieldKeyValueValue {
			if err := d.anyValue(f.b, base+next-len(f.b), v, depth); err != nil {
				return payloadErrorIn(err, "%q", key)
			}
		}
		off = next
	}
	return nil
}

// anyValue decodes an AnyValue message at payload offset base into v, which
// is at depth. Fields merge into v: scalars replace it, an array or kvlist
// extends v if v already holds one (protobuf merge of a oneof message).
func (d *payloadDecoder) anyValue(b []byte, base int, v pcommon.Value, depth int) error {
	const msg = "AnyValue"
	if err := d.checkDepth(depth); err != nil {
		return err
	}
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, base, off)
		if err != nil {
			return err
		}
		switch f.num {
		case pbFieldAnyValueString:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			if err := d.checkValueLength(f, base); err != nil {
				return err
			}
			v.SetStr(d.substr(f.b, base+next-len(f.b)))
		case pbFieldAnyValueBool:
			if f.typ != protowire.VarintType {
				return wrongWireType(msg, f, base, protowire.VarintType)
			}
			v.SetBool(f.v != 0)
		case pbFieldAnyValueInt:
			if f.typ != protowire.VarintType {
				return wrongWireType(msg, f, base, protowire.VarintType)
			}
			v.SetInt(int64(f.v))
		case pbFieldAnyValueDouble:
			if f.typ != protowire.Fixed64Type {
				return wrongWireType(msg, f, base, protowire.Fixed64Type)
			}
			v.SetDouble(math.Float64frombits(f.v))
		case pbFieldAnyValueArray:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			var s pcommon.Slice
			if v.Type() == pcommon.ValueTypeSlice {
				s = v.Slice()
			} else {
				s = v.SetEmptySlice()
			}
			if err := d.arrayValue(f.b, base+next-len(f.b), s, depth+1); err != nil {
				return err
			}
		case pbFieldAnyValueKvlist:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			var m pcommon.Map
			if v.Type() == pcommon.ValueTypeMap {
				m = v.Map()
			} else {
				m = v.SetEmptyMap()
			}
			if err := d.keyValueList(f.b, base+next-len(f.b), m, depth+1); err != nil {
				return err
			}
		case pbFieldAnyValueBytes:
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			if err := d.checkValueLength(f, base); err != nil {
				return err
			}
			v.SetEmptyBytes().FromRaw(f.b) // copies
		}
		off = next
	}
	return nil
}

func (d *payloadDecoder) checkValueLength(f payloadField, base int) error {
	if len(f.b) > d.limits.MaxValueLength {
		return &payloadError{kind: ErrTooLarge, msg: fmt.Sprintf(
			"value of %d bytes at byte %d exceeds the limit of %d", len(f.b), base+f.off, d.limits.MaxValueLength)}
	}
	return nil
}

// arrayValue decodes an ArrayValue message at payload offset base, appending
// its elements (at depth) to s.
func (d *payloadDecoder) arrayValue(b []byte, base int, s pcommon.Slice, depth int) error {
	const msg = "ArrayValue"
	if c := d.capacity(b, pbFieldListValues); c > 1 {
		s.EnsureCapacity(s.Len() + c)
	}
	n := 0
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, base, off)
		if err != nil {
			return err
		}
		if f.num == pbFieldListValues {
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			if err := d.countAttribute(); err != nil {
				return err
			}
			if err := d.checkDepth(depth); err != nil {
				return err
			}
			if err := d.anyValue(f.b, base+next-len(f.b), s.AppendEmpty(), depth); err != nil {
				return payloadErrorIn(err, "[%d]", n)
			}
			n++
		}
		off = next
	}
	return nil
}

// keyValueList decodes a KeyValueList message at payload offset base into m;
// its values are at depth.
func (d *payloadDecoder) keyValueList(b []byte, base int, m pcommon.Map, depth int) error {
	const msg = "KeyValueList"
	if c := d.capacity(b, pbFieldListValues); c > 1 {
		m.EnsureCapacity(m.Len() + c)
	}
	n := 0
	for off := 0; off < len(b); {
		f, next, err := readPayloadField(msg, b, base, off)
		if err != nil {
			return err
		}
		if f.num == pbFieldListValues {
			if f.typ != protowire.BytesType {
				return wrongWireType(msg, f, base, protowire.BytesType)
			}
			if err := d.keyValue(f.b, base+next-len(f.b), m, depth); err != nil {
				return payloadErrorIn(err, "entry %d", n)
			}
			n++
		}
		off = next
	}
	return nil
}
