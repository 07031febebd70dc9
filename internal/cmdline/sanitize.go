// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package cmdline

import (
	"path"
	"strings"
)

// Redacted replaces every secret value.
const Redacted = "****"

// Sanitize returns the arguments with their secrets replaced, joined with
// spaces (process.command_line). It does not modify args.
func Sanitize(args []string) string {
	return strings.Join(SanitizeArgs(args), " ")
}

// SanitizeArgs returns the arguments with their secrets replaced, one for
// each argument (process.command_args). It does not modify args.
func SanitizeArgs(args []string) []string {
	out := make([]string, len(args))
	z := sanitizer{}
	for i, a := range args {
		out[i] = z.arg(a)
	}
	return out
}

// SanitizeLine returns a command line whose argument boundaries are
// unknown with its secrets replaced: it is split into words at whitespace,
// which it keeps as it is, and a secret value that opens a shell quote is
// replaced up to the word that closes it.
func SanitizeLine(line string) string {
	z := sanitizer{line: true}
	return z.words(line)
}

// pending says what the sanitizer does with the next argument.
type pending uint8

const (
	pendNone     pending = iota
	pendValue            // it is a secret value
	pendUserPass         // it is user:password: the password is secret
)

// sanitizer carries what one argument says of the next.
type sanitizer struct {
	line    bool // arguments are the words of a line: quotes group them
	prog    program
	pending pending
	// In a line: open is the shell quote open before the current word,
	// cur the one open after it (0: none); quote is the quote a secret
	// value is in, which the words that follow are replaced until one
	// closes it.
	open, cur, quote byte
}

// arg returns one argument sanitized.
func (z *sanitizer) arg(a string) string {
	if z.quote != 0 {
		z.pending = pendNone // the quote holds the whole value
		if z.cur != z.quote {
			z.quote = 0 // this word closes it
		}
		return Redacted
	}
	if z.prog == progSSHPass && z.pending == pendNone && !isOption(a) {
		z.prog = progNone // the command sshpass runs, with options of its own
	}
	if p := z.pending; p != pendNone {
		z.pending = pendNone
		if !isOption(a) {
			return z.value(a, p)
		}
	}
	if out, ok := z.programOption(a); ok {
		return out
	}
	if p := programOf(a); p != progNone {
		z.prog = p
		return a
	}
	if isOption(a) {
		return z.option(a)
	}
	return z.plain(a)
}

// isOption reports whether a is an option ("-x", "--name"), not a value.
func isOption(a string) bool { return len(a) > 1 && a[0] == '-' }

// value returns the value of a secret option, given as its own argument.
func (z *sanitizer) value(a string, p pending) string {
	if p == pendUserPass {
		return userPass(a)
	}
	z.openQuote()
	if isScheme(strings.Trim(a, `'"`)) {
		z.pending = pendValue // "Authorization:" "Bearer" "<token>"
	}
	return Redacted
}

// openQuote, in a line, makes the words that follow a secret value that
// ends the current word secret until one closes the quote it is in.
func (z *sanitizer) openQuote() {
	if z.line {
		z.quote = z.cur
	}
}

// option returns an argument that starts with "-" sanitized.
func (z *sanitizer) option(a string) string {
	body := strings.TrimLeft(a, "-")
	prefix := a[:len(a)-len(body)]
	if (prefix == "-") && len(body) > 1 && (body[0] == 'D' || body[0] == 'P') && strings.IndexByte(body, '=') > 0 {
		prefix, body = a[:2], body[1:] // -Dsome.property=value
	}
	i := strings.IndexAny(body, "=:")
	if i < 0 {
		if isSecretName(body) {
			z.pending = pendValue
		}
		return a
	}
	if name := body[:i]; isName(name) && isSecretName(name) {
		z.openQuote()
		return prefix + body[:i+1] + Redacted
	}
	return z.text(a)
}

// plain returns an argument that is not an option sanitized: an
// assignment or a header with a secret name, or any other text.
func (z *sanitizer) plain(a string) string {
	name := a
	if z.line {
		name = strings.TrimLeft(a, `'"`) // a quoted word of a line
	}
	lead := len(a) - len(name)
	i := strings.IndexAny(name, "=:")
	if i <= 0 || !isName(name[:i]) || !isSecretName(name[:i]) {
		return z.text(a)
	}
	sep, rest := name[i], name[i+1:]
	if sep == ':' && strings.HasPrefix(rest, "//") {
		return z.text(a) // a URL whose scheme is a secret word
	}
	if sep == ':' && strings.TrimLeft(rest, " \t") == "" {
		// "Authorization:": the value is the next argument, or in a
		// line the rest of the quote it opened.
		if z.line && z.cur != 0 {
			z.quote = z.cur
		} else {
			z.pending = pendValue
		}
		return a
	}
	z.openQuote()
	spaces := len(rest) - len(strings.TrimLeft(rest, " \t"))
	return a[:lead+i+1+spaces] + Redacted
}

// text returns an argument that is no secret value as a whole with the
// secrets inside it replaced; one that holds whitespace word by word.
func (z *sanitizer) text(a string) string {
	if !z.line && strings.ContainsAny(a, " \t\n\r\v\f") {
		inner := sanitizer{line: true, prog: z.prog}
		return inner.words(a)
	}
	return z.scrub(a)
}

// words sanitizes a line word by word, keeping its whitespace.
func (z *sanitizer) words(line string) string {
	var b strings.Builder
	b.Grow(len(line))
	for i := 0; i < len(line); {
		j := i
		for j < len(line) && isSpace(line[j]) {
			j++
		}
		b.WriteString(line[i:j])
		k := j
		for k < len(line) && !isSpace(line[k]) {
			k++
		}
		if k > j {
			word := line[j:k]
			z.cur = quoteAfter(word, z.open)
			b.WriteString(z.arg(word))
			z.open = z.cur
		}
		i = k
	}
	return b.String()
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// isName reports whether s can be an option, variable, property or header
// name: letters, digits, "_", ".", "-", nothing else.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }

// isScheme reports whether a word is an HTTP authentication scheme, which
// the credentials follow.
func isScheme(w string) bool {
	switch strings.ToLower(w) {
	case "bearer", "basic", "digest", "negotiate", "ntlm", "token", "apikey", "aws4-hmac-sha256":
		return true
	}
	return false
}

// quoteAfter returns the shell quote character open after a word, given
// the one open before it (0: none). Backslashes are not followed.
func quoteAfter(w string, open byte) byte {
	q := open
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case q == 0 && (c == '\'' || c == '"'):
			q = c
		case c == q:
			q = 0
		}
	}
	return q
}

// userPass returns user:password with the password replaced.
func userPass(a string) string {
	if i := strings.IndexByte(a, ':'); i >= 0 {
		return a[:i+1] + Redacted
	}
	return a // the program asks for the password
}

// program is a program whose own options name secrets without saying so.
type program uint8

const (
	progNone    program = iota
	progMySQL           // -pSECRET ("-p value" asks, and value is the database)
	progMongo           // -p SECRET, -pSECRET
	progRedis           // -a SECRET
	progSSHPass         // -p SECRET, -pSECRET
	progCurl            // -u user:SECRET, -U, --user, --proxy-user; -b COOKIE
)

// programOf returns the program an argument names, by its base name.
func programOf(a string) program {
	if a == "" || strings.ContainsAny(a, "=: ") {
		return progNone
	}
	switch path.Base(a) {
	case "mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlslap",
		"mysqlpump", "mysqlbinlog", "mysqlsh", "mariadb", "mariadb-dump", "mariadb-admin",
		"mariadb-import", "mariadb-show", "mariadb-check", "mariadb-slap", "mariadb-binlog":
		return progMySQL
	case "mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat",
		"mongotop", "mongofiles":
		return progMongo
	case "redis-cli", "valkey-cli", "keydb-cli":
		return progRedis
	case "sshpass":
		return progSSHPass
	case "curl":
		return progCurl
	}
	return progNone
}

// programOption sanitizes an option of the current program that names a
// secret without saying so, and reports whether it was one.
func (z *sanitizer) programOption(a string) (string, bool) {
	switch z.prog {
	case progMySQL:
		return attached(a, "-p")
	case progMongo, progSSHPass:
		return z.attachedOrNext(a, "-p", pendValue)
	case progRedis:
		return z.attachedOrNext(a, "-a", pendValue)
	case progCurl:
		return z.curlOption(a)
	}
	return "", false
}

// attached replaces the value of a short option given in the same
// argument ("-pSECRET").
func attached(a, opt string) (string, bool) {
	if len(a) > len(opt) && strings.HasPrefix(a, opt) {
		return opt + Redacted, true
	}
	return "", false
}

// attachedOrNext replaces the value of a short option, given in the same
// argument or as the next.
func (z *sanitizer) attachedOrNext(a, opt string, p pending) (string, bool) {
	if a == opt {
		z.pending = p
		return a, true
	}
	return attached(a, opt)
}

func (z *sanitizer) curlOption(a string) (string, bool) {
	switch a {
	case "-u", "-U", "--user", "--proxy-user":
		z.pending = pendUserPass
		return a, true
	case "-b":
		z.pending = pendValue
		return a, true
	}
	for _, opt := range []string{"--user=", "--proxy-user=", "-u", "-U"} {
		if v, ok := strings.CutPrefix(a, opt); ok && v != "" {
			return opt + userPass(v), true
		}
	}
	return "", false
}
