// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package cmdline

import "strings"

// scrub returns a text that is no secret value as a whole (an argument, a
// word of a line, the value of an option whose name says nothing) with the
// secrets inside it replaced: the values of name=value and name:value
// pairs with a secret name, up to the next separator, and the credentials
// of URLs. It returns s itself when it holds none.
func (z *sanitizer) scrub(s string) string {
	var b strings.Builder
	last := 0 // s[last:] is not written yet
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		if strings.HasPrefix(s[i:], "://") {
			end, auth := redactAuthority(s[i+3:])
			end += i + 3
			if auth != "" {
				b.WriteString(s[last : i+3])
				b.WriteString(auth)
				last = end
			}
			i = end - 1
			continue
		}
		if !secretBefore(s, i) {
			continue
		}
		from := i + 1
		if c == ':' {
			for from < len(s) && (s[from] == ' ' || s[from] == '\t') {
				from++
			}
		}
		if from == len(s) {
			if z.line {
				z.pending = pendValue // "Authorization:" "Basic" "<credentials>"
			}
			break
		}
		end := z.valueEnd(s, from)
		b.WriteString(s[last:from])
		b.WriteString(Redacted)
		last = end
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretBefore reports whether the name that ends at s[i] (an "=" or a
// ":") says secret. A name before ":" that follows "/" or "\" is the end of
// a path ("/etc/keys:/opt/keys"), not a name.
func secretBefore(s string, i int) bool {
	start := i
	for start > 0 && isNameByte(s[start-1]) {
		start--
	}
	name := s[start:i]
	if name == "" || s[i] == ':' && start > 0 && (s[start-1] == '/' || s[start-1] == '\\') {
		return false
	}
	if len(name) > 2 && name[0] == '-' && (name[1] == 'D' || name[1] == 'P') {
		name = name[2:] // -Dsome.property=value in JAVA_OPTS
	}
	return isSecretName(name)
}

// valueEnd returns where a secret value that starts at s[from] ends: at
// its closing quote when it is quoted, else at the next separator (",",
// ";", "&", whitespace or a quote). In a line, a value that ends the word
// inside a quote, or that is an authentication scheme, goes on in the
// words that follow.
func (z *sanitizer) valueEnd(s string, from int) int {
	if from < len(s) && (s[from] == '\'' || s[from] == '"') {
		if j := strings.IndexByte(s[from+1:], s[from]); j >= 0 {
			return from + 1 + j + 1
		}
		z.openQuote()
		return len(s)
	}
	end := from
	for end < len(s) && !isSeparator(s[end]) {
		end++
	}
	if end == len(s) {
		z.openQuote()
		if z.line && isScheme(s[from:end]) {
			z.pending = pendValue
		}
	}
	return end
}

func isSeparator(c byte) bool {
	return c == ',' || c == ';' || c == '&' || c == '\'' || c == '"' || isSpace(c)
}

// redactAuthority returns where the authority of a URL that starts at
// rest[0] (after "://") ends, and the authority with its credentials
// replaced, or "" when it has none.
func redactAuthority(rest string) (int, string) {
	end := strings.IndexAny(rest, "/?#'\" \t\n\r\v\f")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return end, ""
	}
	if user, _, ok := strings.Cut(auth[:at], ":"); ok {
		return end, user + ":" + Redacted + auth[at:]
	}
	return end, Redacted + auth[at:]
}
