// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package cmdline

import (
	"strings"
	"testing"
)

// FuzzSanitize: the sanitizer never panics, keeps one argument per
// argument and a line's whitespace as it is, and never lets the value of
// an option whose name says secret through, in either form, whatever the
// arguments around it.
func FuzzSanitize(f *testing.F) {
	for _, seed := range [][4]string{
		{"mysql\x00-uroot", "password", "S3cret", "db"},
		{"curl\x00-u", "api-key", "abc def", "https://u:p@h/?token=x"},
		{"sh\x00-c\x00'Authorization: Bearer", "token", "'a b'", "x\""},
		{"java\x00-Dx=\"", "keyStorePassword", "changeit", "-jar\x00app.jar"},
		{"", "X-Api-Key", "", ""},
		{"env\x00OTEL_EXPORTER_OTLP_HEADERS=authorization=Basic", "secret", "-", "--no-password"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, before, name, value, after string) {
		pre, post := split(before), split(after)
		line := SanitizeLine(strings.Join(append(append(pre, name, value), post...), " "))
		if shape(line) != shape(strings.Join(append(append(pre, name, value), post...), " ")) {
			t.Fatalf("the line's whitespace changed: %q", line)
		}
		if !isName(name) || !isSecretName(name) {
			SanitizeArgs(append(append(pre, name, value), post...))
			return
		}
		k := len(pre)
		args := append(append(append([]string(nil), pre...), "--"+name+"="+value), post...)
		if out := SanitizeArgs(args); len(out) != len(args) || out[k] != "--"+name+"="+Redacted {
			t.Fatalf("SanitizeArgs(%q) = %q", args, out)
		}
		args = append(append(append([]string(nil), pre...), "--"+name, value), post...)
		out := SanitizeArgs(args)
		if len(out) != len(args) || !isOption(value) && out[k+1] != Redacted {
			t.Fatalf("SanitizeArgs(%q) = %q", args, out)
		}
		if strings.ContainsAny(value, " \t\n\r\v\f'\"") || value == "" {
			return
		}
		words := fields(SanitizeLine(strings.Join(append(append(pre, "--"+name+"="+value), post...), " ")))
		if w := words[len(fields(strings.Join(pre, " ")))]; w != "--"+name+"="+Redacted && w != Redacted {
			t.Fatalf("SanitizeLine: %q for --%s=%s", w, name, value)
		}
	})
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// fields splits s at the whitespace SanitizeLine splits it at.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
}

// shape returns s with every run of non-whitespace as one "x".
func shape(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			b.WriteByte(s[i])
			in = false
		} else if !in {
			b.WriteByte('x')
			in = true
		}
	}
	return b.String()
}
