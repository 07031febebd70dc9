// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sdkenv

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

const serviceNameKey = "service.name"

// Empty reports whether both variables are absent or blank (empty or only
// white space): the case in which the Go SDK's environment detector returns
// an empty resource without looking further (go.opentelemetry.io/otel/sdk
// resource/env.go, fromEnv.Detect). Resource may put nothing for a Vars
// that is not Empty either: a list of empty entries, or an invalid one.
func (v Vars) Empty() bool {
	return strings.TrimSpace(v.ServiceName) == "" && strings.TrimSpace(v.ResourceAttributes) == ""
}

// Resource puts into dst the string attributes an SDK would take from v,
// replacing attributes of dst with the same keys and leaving others alone:
//
//   - OTEL_RESOURCE_ATTRIBUTES, trimmed of white space, is a list of
//     key=value entries separated by ','; key and value are cut at the
//     first '=' and each trimmed of white space (Go SDK, env.go
//     constructOTResources), then percent-decoded: the specification
//     (resource/sdk.md, v1.55.0) requires ',' and '=' to be percent-encoded
//     "in keys and values"; the Go SDK decodes values only, with
//     url.PathUnescape, whose rules (a '%' and two hexadecimal digits, '+'
//     stays '+') these are. All values are strings (specification). Of keys
//     met more than once, the last wins (the Go SDK builds an attribute.Set).
//   - Entries that are empty or white space are skipped (the Go SDK reports
//     them as missing a value; a trailing ',' is common).
//   - An entry without '=', an empty key or a bad percent-encoding is an
//     error wrapping ErrInvalid, and then no attribute of
//     OTEL_RESOURCE_ATTRIBUTES is put: "In case of any error, e.g. failure
//     during the decoding process, the entire environment variable value
//     SHOULD be discarded" (resource/sdk.md). The Go SDK keeps the other
//     entries, and an undecodable value as it is.
//   - OTEL_SERVICE_NAME, trimmed of white space, sets service.name and wins
//     over a service.name in OTEL_RESOURCE_ATTRIBUTES
//     (configuration/sdk-environment-variables.md; the Go SDK merges it as
//     the updating resource). Empty or blank, it is ignored, as the Go SDK
//     does (fromEnv.Detect). No unknown_service default is put: what is
//     reported is what the process says.
//   - Bytes that are not UTF-8 (decoded or not) become U+FFFD: W3C Baggage
//     requires it of decoded values, and OTLP strings must be UTF-8.
func (v Vars) Resource(dst pcommon.Map) error {
	var err error
	if v.HasResourceAttributes {
		var attrs []keyValue
		if attrs, err = parseAttributes(v.ResourceAttributes); err == nil {
			for _, kv := range attrs {
				dst.PutStr(kv.key, kv.value)
			}
		}
	}
	if name := strings.TrimSpace(v.ServiceName); v.HasServiceName && name != "" {
		dst.PutStr(serviceNameKey, validUTF8(name))
	}
	return err
}

type keyValue struct{ key, value string }

// parseAttributes parses an OTEL_RESOURCE_ATTRIBUTES value; its errors
// number the entries from 1 and quote nothing of s.
func parseAttributes(s string) ([]keyValue, error) {
	var attrs []keyValue
	entry := 0
	for e := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		entry++
		if strings.TrimSpace(e) == "" {
			continue
		}
		k, val, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("%s: entry %d: no '=': %w", ResourceAttributesVar, entry, ErrInvalid)
		}
		key, okKey := unescape(strings.TrimSpace(k))
		value, okValue := unescape(strings.TrimSpace(val))
		switch {
		case !okKey:
			return nil, fmt.Errorf("%s: entry %d: invalid percent-encoding in key: %w", ResourceAttributesVar, entry, ErrInvalid)
		case !okValue:
			return nil, fmt.Errorf("%s: entry %d: invalid percent-encoding: %w", ResourceAttributesVar, entry, ErrInvalid)
		case key == "":
			return nil, fmt.Errorf("%s: entry %d: empty key: %w", ResourceAttributesVar, entry, ErrInvalid)
		}
		attrs = append(attrs, keyValue{validUTF8(key), validUTF8(value)})
	}
	return attrs, nil
}

// unescape percent-decodes s as url.PathUnescape does, without its error,
// which quotes the input.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) {
				return "", false
			}
			hi, okHi := unhex(s[i+1])
			lo, okLo := unhex(s[i+2])
			if !okHi || !okLo {
				return "", false
			}
			c, i = hi<<4|lo, i+2
		}
		b = append(b, c)
	}
	return string(b), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
