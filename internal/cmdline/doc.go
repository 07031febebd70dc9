// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package cmdline sanitizes process command lines before they leave the
// host. Semantic conventions say process.command_line SHOULD NOT be
// collected by default unless it is sanitized: command lines carry
// passwords, tokens and URLs with credentials.
//
// Sanitize and SanitizeArgs work on the arguments as the process received
// them (/proc/<pid>/cmdline split at NUL), so that "--password" and its
// value are two arguments whatever they hold; SanitizeLine works on a
// command line whose argument boundaries are lost (one an SDK published, a
// shell's -c script) and splits it at whitespace, with shell quotes
// grouping the words of a secret.
//
// # What is replaced
//
// Every secret value is replaced with Redacted ("****", as contrib's
// redaction processor masks values); the name before it stays, so that the
// command line still says which options were given:
//
//   - --name=value, -name=value, name=value (environment assignments such
//     as "env TOKEN=…" or "docker run -e PASSWORD=…"), -Dname=value and
//     -Pname=value (Java system properties, Gradle properties) and
//     -name:value: the whole value, up to the end of the argument.
//   - --name value, -name value: the next argument, unless it starts with
//     "-" (it is then the next option: "psql --password -h db").
//   - Name: value (an HTTP header, "curl -H 'Authorization: Bearer …'"):
//     the whole value; given as its own word ("Authorization:"), the next
//     argument, and the one after when that is an authentication scheme
//     (Bearer, Basic, …).
//   - inside any other argument or value, name=value and name:value pairs
//     separated by ",", ";", "&" or whitespace (URL queries,
//     OTEL_EXPORTER_OTLP_HEADERS=api-key=…,…), up to the separator.
//   - the credentials of a URL (scheme://user:password@host): the password,
//     keeping the user (scheme://user:****@host); a user alone
//     (scheme://token@host) is replaced whole, since it is often a token.
//   - a few programs' own short options whose names say nothing: the
//     MySQL and MariaDB clients' -pVALUE, the MongoDB tools' and sshpass's
//     -p VALUE, redis-cli's -a VALUE, curl's -u/--user and -U/--proxy-user
//     user:VALUE and -b/--cookie VALUE. They apply to the arguments after the
//     program's name, wherever it appears ("docker exec db mysql -p…").
//
// An argument that holds whitespace and is not itself a secret value (a
// shell's -c script, a process title that setproctitle rewrote) is
// sanitized word by word as SanitizeLine does.
//
// # Which names say secret
//
// A name is split into parts at every character that is not a letter or a
// digit and at camelCase boundaries, case-insensitively
// ("javax.net.ssl.keyStorePassword" is javax, net, ssl, key, store,
// password). It says secret when a part is one of password, passwd, pwd,
// pass, passphrase, passcode, secret, token, key, apikey, credential(s),
// cred(s), auth, authorization, bearer, cookie, session, sessionid,
// private, signature, sig, jwt, otp (and the plurals), or contains
// password, passwd, secret, credential, passphrase, apikey or accesstoken,
// or ends with token, pwd, storepass or keypass (keytool's -srcstorepass),
// or is key, pass or auth after a qualifier that makes it a secret
// (accesskey, privatekey, requirepass, masterauth, oauth, …). So api-key, apikey, access_key, --key,
// X-Api-Key, MYSQL_PWD, requirepass and masterauth say secret; keyboard,
// monkey, hotkey, authors, author, authority and tokenizer do not.
//
// A name does not say secret when it is a negation ("--no-password": it
// takes no value) or when its last part says the value is about the secret
// rather than the secret: its file, path, dir, store, config, name, url,
// host, port, size, length, type, format, mode, method, algorithm,
// encryption, timeout or ttl ("--password-file", "-Djavax.net.ssl.keyStore",
// "password_encryption"); such a value is still searched like any other
// text ("--auth-url=https://user:****@keystone/v3").
//
// Sanitizing errs towards replacing: "PWD=/home/me", "--key-id …",
// "?authSource=admin" in a MongoDB URL, a positional argument after an
// option that takes no value ("psql -h db --password orders") and the rest
// of a shell script that starts with an assignment ("sh -c 'PGPASSWORD=…
// pg_dump …'": the value of an assignment is the rest of its argument,
// since a passphrase may hold spaces) are replaced too. A secret passed in
// a form none of these rules knows (a positional password, "aws configure
// set aws_secret_access_key …", JSON) goes through: the receiver's
// command_line setting "none" drops command lines altogether.
package cmdline
