// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package cmdline

import "strings"

// isSecretName reports whether an option, variable, property or header
// name says its value is a secret (see the package documentation).
func isSecretName(name string) bool {
	parts := nameParts(name)
	if len(parts) == 0 || parts[0] == "no" && len(parts) > 1 {
		return false // "--no-password" takes no value
	}
	if len(parts) > 1 && isDescriptor(parts[len(parts)-1]) {
		return false // "--password-file": the value says where the secret is
	}
	for _, p := range parts {
		if isSecretPart(p) {
			return true
		}
	}
	return false
}

// nameParts splits name at every character that is not an ASCII letter or
// digit and at camelCase boundaries ("keyStorePassword", "APIKey",
// "s3Key"), lowercased.
func nameParts(name string) []string {
	var parts []string
	start := -1
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) {
			if start >= 0 {
				parts = append(parts, strings.ToLower(name[start:i]))
				start = -1
			}
			continue
		}
		if start >= 0 && camelBoundary(name, i) {
			parts = append(parts, strings.ToLower(name[start:i]))
			start = i
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		parts = append(parts, strings.ToLower(name[start:]))
	}
	return parts
}

// camelBoundary reports whether a new part starts at name[i], which is a
// letter or digit after another: a capital after a lower-case letter or a
// digit ("keyStore", "s3Key"), or a capital followed by a lower-case letter
// after a capital ("APIKey").
func camelBoundary(name string, i int) bool {
	c, prev := name[i], name[i-1]
	if !isUpper(c) {
		return false
	}
	if isLower(prev) || isDigit(prev) {
		return true
	}
	return isUpper(prev) && i+1 < len(name) && isLower(name[i+1])
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isUpper(c) || isLower(c) || isDigit(c) }

// isSecretPart reports whether one lower-case part of a name says secret.
func isSecretPart(p string) bool {
	switch p {
	case "pwd", "pass", "passwd", "password", "passwords", "passphrase", "passcode",
		"secret", "secrets", "token", "tokens", "key", "keys", "apikey",
		"credential", "credentials", "cred", "creds", "auth", "authorization",
		"bearer", "cookie", "cookies", "session", "sessionid", "private",
		"signature", "sig", "jwt", "otp", "passin", "passout":
		return true
	}
	for _, s := range []string{"password", "passwd", "secret", "credential", "passphrase", "apikey", "accesstoken"} {
		if strings.Contains(p, s) {
			return true
		}
	}
	for _, s := range []string{"token", "tokens", "pwd", "storepass", "keypass"} {
		if strings.HasSuffix(p, s) {
			return true // authtoken, csrftoken, mysqlpwd, keytool's -srcstorepass
		}
	}
	return isQualified(p, "key", "access", "private", "signing", "encryption", "license", "master",
		"client", "session", "account", "storage", "shared", "app", "sas", "ingest", "admin", "service", "auth", "hmac") ||
		isQualified(p, "pass", "require", "master", "store", "key", "db", "user", "admin", "root", "auth", "proxy",
			"sasl", "http", "ftp", "smtp", "ldap", "bind") ||
		isQualified(p, "auth", "master", "basic", "proxy", "http", "o", "digest")
}

// isQualified reports whether p is head after one of the qualifiers
// ("accesskey"): head alone is checked by the caller, and head after any
// other word may be innocent ("monkey", "bypass").
func isQualified(p, head string, qualifiers ...string) bool {
	q, ok := strings.CutSuffix(p, head)
	if !ok {
		return false
	}
	for _, want := range qualifiers {
		if q == want {
			return true
		}
	}
	return false
}

// isDescriptor reports whether a name that ends with the part p names
// something about a secret rather than the secret: where it is, what it is
// called, its size or its kind.
func isDescriptor(p string) bool {
	switch p {
	case "file", "filename", "files", "path", "paths", "dir", "directory", "store",
		"config", "conf", "name", "names", "url", "uri", "endpoint", "host", "port",
		"size", "length", "bits", "type", "format", "mode", "method", "algorithm",
		"encryption", "timeout", "ttl":
		return true
	}
	return false
}
