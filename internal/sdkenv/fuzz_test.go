// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sdkenv

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// errorLine matches every line an error of Scan or Resource may hold (reads
// from a bytes.Reader never fail): nothing in them comes from the
// environment but numbers of Scan's own counting.
var errorLine = regexp.MustCompile(`^(?:` +
	`OTEL_(?:SERVICE_NAME|RESOURCE_ATTRIBUTES): value longer than \d+ bytes: sdkenv: too large|` +
	`environment longer than \d+ bytes: sdkenv: too large|` +
	`sdkenv: empty environment|` +
	`OTEL_RESOURCE_ATTRIBUTES: entry \d+: (?:no '='|empty key|invalid percent-encoding(?: in key)?): sdkenv: invalid` +
	`)$`)

// reference is Scan without streaming: split at NUL, first occurrence wins.
func reference(env []byte, maxValue int) Vars {
	var v Vars
	var seen [2]bool
	for _, e := range bytes.Split(env, []byte{0}) {
		for i, pre := range prefixes {
			val, ok := bytes.CutPrefix(e, []byte(pre))
			if !ok || seen[i] {
				continue
			}
			seen[i] = true
			if len(val) > maxValue {
				continue
			}
			if i == 0 {
				v.ServiceName, v.HasServiceName = string(val), true
			} else {
				v.ResourceAttributes, v.HasResourceAttributes = string(val), true
			}
		}
	}
	return v
}

func FuzzScanResource(f *testing.F) {
	for _, seed := range []string{
		"",
		"OTEL_SERVICE_NAME=svc\x00OTEL_RESOURCE_ATTRIBUTES=a=b,c=%2C\x00",
		"OTEL_RESOURCE_ATTRIBUTES=a=b,,c,=d,e=%ZZ,f=%\x00OTEL_SERVICE_NAME=",
		"OTEL_SERVICE_NAME=a\x00OTEL_SERVICE_NAME=b\x00OTEL_SERV\x00OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_RESOURCE_ATTRIBUTES= service.name = x%C3%A9 , k%3D=v\xff",
	} {
		f.Add([]byte(seed), uint16(64))
	}
	f.Fuzz(func(t *testing.T, env []byte, maxValue uint16) {
		full := append([]byte("DB_PASSWORD="+secret+"\x00"), env...)
		full = append(full, "\x00DB_PASSWORD="+secret+"\x00"...)
		v, err := Scan(bytes.NewReader(full), int(maxValue))
		v1, err1 := Scan(iotest.OneByteReader(bytes.NewReader(full)), int(maxValue))
		if v != v1 || errString(err) != errString(err1) {
			t.Fatalf("whole and byte-by-byte reads differ: %#v %v / %#v %v", v, err, v1, err1)
		}
		if ref := reference(full, int(maxValue)); len(full) <= MaxEnvironment && v != ref {
			t.Fatalf("Scan = %#v, reference = %#v", v, ref)
		}
		if len(v.ServiceName) > int(maxValue) || len(v.ResourceAttributes) > int(maxValue) ||
			(!v.HasServiceName && v.ServiceName != "") || (!v.HasResourceAttributes && v.ResourceAttributes != "") {
			t.Fatalf("out of bounds: %#v", v)
		}
		m := pcommon.NewMap()
		rerr := v.Resource(m)
		checkError(t, err)
		checkError(t, rerr)
		if m.Len() > strings.Count(v.ResourceAttributes, ",")+2 {
			t.Fatalf("%d attributes from %q", m.Len(), v.ResourceAttributes)
		}
		// The secret cannot be formed from env: no output may hold it.
		if bytes.Contains(env, []byte("hunter")) || bytes.Contains(env, []byte("%")) {
			return
		}
		out := v.ServiceName + v.ResourceAttributes
		m.Range(func(k string, val pcommon.Value) bool {
			out += k + val.Str()
			return true
		})
		if strings.Contains(out, secret) {
			t.Fatalf("secret in output %q", out)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for line := range strings.SplitSeq(err.Error(), "\n") {
		if !errorLine.MatchString(line) {
			t.Fatalf("unexpected error text %q", line)
		}
	}
}
