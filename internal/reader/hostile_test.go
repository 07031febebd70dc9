// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// deepArray nests arrays depth times: AnyValue{array_value{values{...}}}.
func deepArray(depth int) []byte {
	v := protowire.AppendTag(nil, 1, protowire.BytesType) // innermost: string_value ""
	v = protowire.AppendBytes(v, nil)
	for range depth {
		arr := protowire.AppendTag(nil, 1, protowire.BytesType) // ArrayValue.values
		arr = protowire.AppendBytes(arr, v)
		v = protowire.AppendTag(nil, 5, protowire.BytesType) // AnyValue.array_value
		v = protowire.AppendBytes(v, arr)
	}
	return v
}

// payloadOf wraps raw KeyValue messages into ProcessContext{resource{...}}.
func payloadOf(kvs ...[]byte) []byte {
	var res []byte
	for _, kv := range kvs {
		res = protowire.AppendTag(res, 1, protowire.BytesType)
		res = protowire.AppendBytes(res, kv)
	}
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(out, res)
}

func keyValue(key string, value []byte) []byte {
	kv := protowire.AppendTag(nil, 1, protowire.BytesType)
	kv = protowire.AppendString(kv, key)
	if value != nil {
		kv = protowire.AppendTag(kv, 2, protowire.BytesType)
		kv = protowire.AppendBytes(kv, value)
	}
	return kv
}

func manyAttributes(n int) []byte {
	kvs := make([][]byte, n)
	for i := range kvs {
		kvs[i] = keyValue("a", nil)
	}
	return payloadOf(kvs...)
}

func TestHostilePublishers(t *testing.T) {
	good := serviceContext(t, "good")
	raised := otep.DefaultLimits()
	raised.MaxPayloadSize = 16 << 20
	tests := []struct {
		name    string
		publish []byte
		header  func(p *pubtest.Proc)
		limits  *otep.Limits
		kind    error
		reason  string
	}{
		{name: "wrong signature", header: func(p *pubtest.Proc) { p.Header("OTEL_CTZ", 2, uint32(len(good)), 1, "inline") }, kind: otep.ErrInvalid, reason: "signature"},
		{name: "version 1", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 1, uint32(len(good)), 1, "inline") }, kind: otep.ErrInvalid, reason: "version 1"},
		{name: "version 999", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 999, uint32(len(good)), 1, "inline") }, kind: otep.ErrInvalid, reason: "version 999"},
		{name: "size 0", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, 0, 1, "inline") }, kind: otep.ErrInvalid, reason: "payload size 0"},
		{name: "size over the limit", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, 64<<10+1, 1, "inline") }, kind: otep.ErrTooLarge, reason: "65537"},
		{name: "size 4 GiB", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, 1<<32-1, 1, "inline") }, kind: otep.ErrTooLarge, reason: "exceeds"},
		{name: "timestamp stuck at 0", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, uint32(len(good)), 0, "inline") }, kind: otep.ErrTorn, reason: "timestamp 0"},
		{name: "payload pointer unmapped", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, uint32(len(good)), 1, "unmapped") }, kind: otep.ErrInvalid, reason: "not readable"},
		{name: "payload pointer null", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, uint32(len(good)), 1, "0x0") }, kind: otep.ErrInvalid, reason: "not readable"},
		{name: "payload pointer kernel space", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, uint32(len(good)), 1, "0xffffffffffff0000") }, kind: otep.ErrInvalid, reason: "not readable"},
		{name: "payload pointer wraps around", header: func(p *pubtest.Proc) { p.Header("OTEL_CTX", 2, 100, 1, "0xfffffffffffffff0") }, kind: otep.ErrInvalid, reason: "not readable"},
		{name: "garbage protobuf", publish: []byte(strings.Repeat("\xff", 200)), kind: otep.ErrInvalid},
		{name: "truncated protobuf", publish: good[:len(good)-3], kind: otep.ErrInvalid},
		{name: "nesting 10,000 deep", publish: payloadOf(keyValue("deep", deepArray(10000))), limits: &raised, kind: otep.ErrTooLarge, reason: "depth"},
		{name: "nesting 100 deep", publish: payloadOf(keyValue("deep", deepArray(100))), kind: otep.ErrTooLarge, reason: "depth"},
		{name: "100,000 attributes", publish: manyAttributes(100000), kind: otep.ErrTooLarge, reason: "exceeds the limit of 65536"},
		{name: "100,000 attributes, payload limit raised", publish: manyAttributes(100000), limits: &raised, kind: otep.ErrTooLarge, reason: "attributes"},
		{name: "huge key", publish: payloadOf(keyValue(strings.Repeat("k", 60000), nil)), kind: otep.ErrTooLarge, reason: "key"},
		{name: "huge value", publish: payloadOf(keyValue("k", protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(strings.Repeat("v", 60000))))), kind: otep.ErrTooLarge, reason: "value"},
	}
	for _, kind := range pubtest.Kinds {
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				r := newTestReader(t)
				if tt.limits != nil {
					raw, err := New(r.FS(), *tt.limits)
					require.NoError(t, err)
					r = &testReader{Reader: raw}
				}
				p := pubtest.Start(t, kind, pubtest.Options{})
				if tt.publish != nil {
					p.Publish(tt.publish)
				} else {
					p.Publish(good)
					tt.header(p)
				}

				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				_, _, err := r.Read(p.Pid)
				elapsed := time.Since(start)
				runtime.ReadMemStats(&after)

				require.ErrorIs(t, err, tt.kind)
				assert.Contains(t, err.Error(), tt.reason)
				assert.Less(t, elapsed, 2*time.Second, "a hostile context must not stall the reader")
				allocated := after.TotalAlloc - before.TotalAlloc
				assert.Less(t, allocated, uint64(2*r.Limits().MaxPayloadSize+1<<20), "allocation bounded by the payload limit")
			})
		}
	}
}
