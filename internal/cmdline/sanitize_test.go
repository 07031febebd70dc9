// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package cmdline

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Command lines of common programs, as /proc/<pid>/cmdline gives their
// arguments, and what leaves the host.
func TestSanitizeArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{
			"postgres server",
			[]string{"/usr/lib/postgresql/16/bin/postgres", "-D", "/var/lib/postgresql/16/main", "-c", "config_file=/etc/postgresql/16/main/postgresql.conf", "-c", "password_encryption=scram-sha-256"},
			nil, // nothing secret: a setting about passwords is not one
		},
		{
			"postgres process title",
			[]string{"postgres: 16/main: checkpointer "},
			nil,
		},
		{
			"psql with a connection URL",
			[]string{"psql", "postgresql://app:s3cr3t@db.internal:5432/orders?sslmode=require"},
			[]string{"psql", "postgresql://app:****@db.internal:5432/orders?sslmode=require"},
		},
		{
			"psql keyword/value connection string",
			[]string{"psql", "host=db user=app password=s3cr3t dbname=orders"},
			[]string{"psql", "host=db user=app password=**** dbname=orders"},
		},
		{
			"mysql client -pSECRET",
			[]string{"mysql", "-h", "db", "-u", "root", "-pS3cret", "orders"},
			[]string{"mysql", "-h", "db", "-u", "root", "-p****", "orders"},
		},
		{
			"mysql client -p asks: the next argument is the database",
			[]string{"/usr/bin/mysql", "-u", "root", "-p", "orders"},
			nil,
		},
		{
			"mysqldump --password=",
			[]string{"mysqldump", "--user=backup", "--password=S3cret", "--all-databases"},
			[]string{"mysqldump", "--user=backup", "--password=****", "--all-databases"},
		},
		{
			"mysql inside docker exec",
			[]string{"docker", "exec", "-i", "db", "mysql", "-uroot", "-pS3cret"},
			[]string{"docker", "exec", "-i", "db", "mysql", "-uroot", "-p****"},
		},
		{
			"mysqld server",
			[]string{"/usr/sbin/mysqld", "--basedir=/usr", "--datadir=/var/lib/mysql", "--user=mysql", "--port=3306"},
			nil,
		},
		{
			"redis-server --requirepass --masterauth",
			[]string{"redis-server", "/etc/redis/redis.conf", "--requirepass", "S3cret", "--masterauth", "S3cret2", "--port", "6379"},
			[]string{"redis-server", "/etc/redis/redis.conf", "--requirepass", "****", "--masterauth", "****", "--port", "6379"},
		},
		{
			"redis-server process title",
			[]string{"redis-server *:6379"},
			nil,
		},
		{
			"redis-cli -a",
			[]string{"redis-cli", "-h", "cache", "-a", "S3cret", "--no-auth-warning", "ping"},
			[]string{"redis-cli", "-h", "cache", "-a", "****", "--no-auth-warning", "ping"},
		},
		{
			"redis-cli -u URL",
			[]string{"redis-cli", "-u", "redis://default:S3cret@cache:6379/0"},
			[]string{"redis-cli", "-u", "redis://default:****@cache:6379/0"},
		},
		{
			"java system properties",
			[]string{"java", "-Xmx512m", "-Djavax.net.ssl.keyStore=/etc/ssl/app.jks", "-Djavax.net.ssl.keyStorePassword=changeit", "-Djavax.net.ssl.keyStoreType=PKCS12", "-Dspring.datasource.password=S3cret", "-Dkeycloak.clientSecret=abc123", "-jar", "app.jar", "--server.port=8080"},
			[]string{"java", "-Xmx512m", "-Djavax.net.ssl.keyStore=/etc/ssl/app.jks", "-Djavax.net.ssl.keyStorePassword=****", "-Djavax.net.ssl.keyStoreType=PKCS12", "-Dspring.datasource.password=****", "-Dkeycloak.clientSecret=****", "-jar", "app.jar", "--server.port=8080"},
		},
		{
			"java agent with OTLP headers",
			[]string{"java", "-javaagent:/opt/otel/opentelemetry-javaagent.jar", "-Dotel.exporter.otlp.headers=Authorization=Basic dXNlcjpwYXNz", "-Dotel.service.name=checkout", "-cp", "/opt/app/keys:/opt/app/lib/*", "com.example.Main"},
			[]string{"java", "-javaagent:/opt/otel/opentelemetry-javaagent.jar", "-Dotel.exporter.otlp.headers=Authorization=**** ****", "-Dotel.service.name=checkout", "-cp", "/opt/app/keys:/opt/app/lib/*", "com.example.Main"},
		},
		{
			"gradle property",
			[]string{"gradle", "publish", "-PsigningKey=abc", "-PossrhPassword=S3cret", "-Pversion=1.2"},
			[]string{"gradle", "publish", "-PsigningKey=****", "-PossrhPassword=****", "-Pversion=1.2"},
		},
		{
			"curl -u and an Authorization header",
			[]string{"curl", "-sS", "-u", "admin:S3cret", "-H", "Authorization: Bearer eyJhbGciOi.x.y", "-H", "Accept: application/json", "https://api.example.com/v1/items?limit=10&access_token=abc"},
			[]string{"curl", "-sS", "-u", "admin:****", "-H", "Authorization: ****", "-H", "Accept: application/json", "https://api.example.com/v1/items?limit=10&access_token=****"},
		},
		{
			"curl attached and long forms",
			[]string{"curl", "-uadmin:S3cret", "--proxy-user=p:S3cret2", "-b", "session=abc", "--cookie", "sid=def", "-H", "X-Api-Key:abc", "https://example.com"},
			[]string{"curl", "-uadmin:****", "--proxy-user=p:****", "-b", "****", "--cookie", "****", "-H", "X-Api-Key:****", "https://example.com"},
		},
		{
			"curl -u without a password asks for it",
			[]string{"curl", "-u", "admin", "https://example.com"},
			nil,
		},
		{
			"mongodb URL",
			[]string{"mongosh", "mongodb://root:S3cret@mongo-0.mongo,mongo-1.mongo:27017/admin?replicaSet=rs0"},
			[]string{"mongosh", "mongodb://root:****@mongo-0.mongo,mongo-1.mongo:27017/admin?replicaSet=rs0"},
		},
		{
			"mongodump -p",
			[]string{"mongodump", "-u", "backup", "-p", "S3cret", "--authenticationDatabase", "admin", "--out", "/backup"},
			[]string{"mongodump", "-u", "backup", "-p", "****", "--authenticationDatabase", "admin", "--out", "/backup"},
		},
		{
			"node --api-key",
			[]string{"node", "server.js", "--api-key", "sk-live-123", "--port", "3000"},
			[]string{"node", "server.js", "--api-key", "****", "--port", "3000"},
		},
		{
			"python --api_key= and --apikey",
			[]string{"python3", "-m", "worker", "--api_key=sk-123", "--apikey", "sk-456", "--verbose"},
			[]string{"python3", "-m", "worker", "--api_key=****", "--apikey", "****", "--verbose"},
		},
		{
			"aws secret access key",
			[]string{"aws", "configure", "set", "aws_secret_access_key", "wJalrXUtnFEMI", "--profile", "prod"},
			nil, // a positional secret: no rule knows it (the setting none drops it)
		},
		{
			"aws --secret-access-key",
			[]string{"aws-tool", "--access-key", "AKIAEXAMPLE", "--secret-access-key", "wJalrXUtnFEMI", "--region", "eu-west-1"},
			[]string{"aws-tool", "--access-key", "****", "--secret-access-key", "****", "--region", "eu-west-1"},
		},
		{
			"docker run -e",
			[]string{"docker", "run", "-e", "POSTGRES_PASSWORD=S3cret", "-e", "POSTGRES_USER=app", "--env", "API_TOKEN=abc", "-p", "5432:5432", "postgres:16"},
			[]string{"docker", "run", "-e", "POSTGRES_PASSWORD=****", "-e", "POSTGRES_USER=app", "--env", "API_TOKEN=****", "-p", "5432:5432", "postgres:16"},
		},
		{
			"env assignments",
			[]string{"env", "TOKEN=abc", "GITHUB_TOKEN=ghp_x", "MYSQL_PWD=S3cret", "AWS_SECRET_ACCESS_KEY=wJalr", "LANG=C", "OTEL_EXPORTER_OTLP_HEADERS=api-key=abc,x-tenant=a", "./run"},
			[]string{"env", "TOKEN=****", "GITHUB_TOKEN=****", "MYSQL_PWD=****", "AWS_SECRET_ACCESS_KEY=****", "LANG=C", "OTEL_EXPORTER_OTLP_HEADERS=api-key=****,x-tenant=a", "./run"},
		},
		{
			"kubectl --token",
			[]string{"kubectl", "--server=https://10.0.0.1:6443", "--token", "eyJhbGciOi", "get", "pods"},
			[]string{"kubectl", "--server=https://10.0.0.1:6443", "--token", "****", "get", "pods"},
		},
		{
			"kube-apiserver files are not secrets",
			[]string{"kube-apiserver", "--token-auth-file=/etc/k8s/tokens.csv", "--service-account-key-file=/etc/k8s/sa.pub", "--authorization-mode=Node,RBAC", "--tls-private-key-file=/etc/k8s/apiserver.key"},
			nil,
		},
		{
			"git clone with a token in the URL",
			[]string{"git", "clone", "https://x-access-token:ghs_abc@github.com/org/repo.git"},
			[]string{"git", "clone", "https://x-access-token:****@github.com/org/repo.git"},
		},
		{
			"a user alone in a URL may be a token",
			[]string{"git", "clone", "https://ghp_abc@github.com/org/repo.git"},
			[]string{"git", "clone", "https://****@github.com/org/repo.git"},
		},
		{
			"git extra header",
			[]string{"git", "-c", "http.extraHeader=Authorization: Basic dXNlcjpwYXNz", "fetch"},
			[]string{"git", "-c", "http.extraHeader=Authorization: **** ****", "fetch"},
		},
		{
			"sshpass",
			[]string{"sshpass", "-p", "S3cret", "ssh", "-p", "22", "user@host"},
			[]string{"sshpass", "-p", "****", "ssh", "-p", "22", "user@host"},
		},
		{
			"openssl pass: argument and keytool",
			[]string{"keytool", "-importkeystore", "-srcstorepass", "changeit", "-deststorepass", "changeit2", "-destkeystore", "/etc/ks.jks"},
			[]string{"keytool", "-importkeystore", "-srcstorepass", "****", "-deststorepass", "****", "-destkeystore", "/etc/ks.jks"},
		},
		{
			"openssl -passin pass:",
			[]string{"openssl", "pkcs12", "-in", "cert.p12", "-passin", "pass:S3cret"},
			[]string{"openssl", "pkcs12", "-in", "cert.p12", "-passin", "****"},
		},
		{
			"-name:value",
			[]string{"tool.exe", "-password:S3cret", "-user:admin"},
			[]string{"tool.exe", "-password:****", "-user:admin"},
		},
		{
			"a shell script",
			[]string{"/bin/sh", "-c", "pg_dump -h db orders | gzip > /backup/orders.gz; curl -fsS --user backup:S3cret https://hc/ping"},
			[]string{"/bin/sh", "-c", "pg_dump -h db orders | gzip > /backup/orders.gz; curl -fsS --user backup:**** https://hc/ping"},
		},
		{
			"an assignment's value is the rest of its argument, whitespace and all",
			[]string{"/bin/sh", "-c", "PGPASSWORD=S3cret pg_dump -h db orders", "docker", "run", "-e", "PASSPHRASE=correct horse battery staple", "img"},
			[]string{"/bin/sh", "-c", "PGPASSWORD=****", "docker", "run", "-e", "PASSPHRASE=****", "img"},
		},
		{
			"a shell script with quoted secrets",
			[]string{"bash", "-c", `curl -H "Authorization: Bearer abc" -d 'password=a b' https://u:p@h/x && mysql -pS3cret`},
			[]string{"bash", "-c", `curl -H "Authorization: **** **** -d 'password=**** **** https://u:****@h/x && mysql -p****`},
		},
		{
			"a secret value that starts with - is the next option",
			[]string{"psql", "--password", "-h", "db", "orders"},
			nil,
		},
		{
			"a flag that takes no value: the next argument is replaced all the same",
			[]string{"psql", "-h", "db", "--password", "orders"},
			[]string{"psql", "-h", "db", "--password", "****"},
		},
		{
			"negations take no value",
			[]string{"psql", "--no-password", "orders"},
			nil,
		},
		{
			"names that only look like secrets",
			[]string{"setxkbmap", "--keyboard-layout", "us", "--monkey", "island", "--authors", "AUTHORS", "--author=me", "--authority", "ca", "--tokenizer", "bpe", "--hotkey", "F1", "--bypass", "x"},
			nil,
		},
		{
			"descriptors of secrets",
			[]string{"app", "--password-file", "/run/secrets/db", "--key-size", "4096", "--secret-name", "db-creds", "--token-ttl", "1h", "--session-timeout", "30m", "--auth-url=https://keystone/v3"},
			nil,
		},
		{
			"-- and a lone -",
			[]string{"cat", "--", "-", "--token"},
			nil,
		},
		{
			"empty",
			[]string{},
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.args)
			want := tt.want
			if want == nil {
				want = tt.args
			}
			got := SanitizeArgs(tt.args)
			assert.Equal(t, want, got)
			assert.Equal(t, in, tt.args, "the arguments are not modified")
			assert.Equal(t, strings.Join(want, " "), Sanitize(tt.args))
		})
	}
}

// A command line whose argument boundaries are lost: words, with shell
// quotes grouping a secret's.
func TestSanitizeLine(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"nothing secret", "/usr/bin/python3 -m http.server 8000", ""},
		{"whitespace kept", "  app \t--token  abc\n--port 1 ", "  app \t--token  ****\n--port 1 "},
		{"java command", "java -Dpassword=a -Dkey=b -jar app.jar --token=c", "java -Dpassword=**** -Dkey=**** -jar app.jar --token=****"},
		{"quoted value", `app --token 'a b c' --port 1`, `app --token **** **** **** --port 1`},
		{"quoted assignment", `app "PASSWORD=a b" next`, `app "PASSWORD=**** **** next`},
		{"quoted header", `curl -H 'X-Api-Key: a b' url`, `curl -H 'X-Api-Key: **** **** url`},
		{"header words", `curl -H Authorization: Bearer abc url`, `curl -H Authorization: **** **** url`},
		{"scheme in a value", `env OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer abc other`, `env OTEL_EXPORTER_OTLP_HEADERS=authorization=**** **** other`},
		{"quoted scheme in a value", `env H="authorization=Bearer abc" other`, `env H="authorization=**** **** other`},
		{"unterminated quote", `app --token 'abc def`, `app --token **** ****`},
		{"quoted non-secret then a secret", `app "a b" --token c`, `app "a b" --token ****`},
		{"URL", "git clone https://u:p@h/r.git", "git clone https://u:****@h/r.git"},
		{"mysql", "mysql -uroot -pS3cret db", "mysql -uroot -p**** db"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.line
			}
			assert.Equal(t, want, SanitizeLine(tt.line))
		})
	}
}

func TestSecretNames(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"password", true},
		{"PASSWORD", true},
		{"db_password", true},
		{"dbPassword", true},
		{"keyStorePassword", true},
		{"passwd", true},
		{"pwd", true},
		{"MYSQL_PWD", true},
		{"pass", true},
		{"requirepass", true},
		{"masterauth", true},
		{"storepass", true},
		{"srcstorepass", true},
		{"destkeypass", true},
		{"secret", true},
		{"client_secret", true},
		{"clientSecret", true},
		{"secret-access-key", true},
		{"token", true},
		{"access_token", true},
		{"accessToken", true},
		{"authtoken", true},
		{"GITHUB_TOKEN", true},
		{"X-Auth-Token", true},
		{"key", true},
		{"api-key", true},
		{"api_key", true},
		{"apikey", true},
		{"apiKey", true},
		{"APIKey", true},
		{"X-API-KEY", true},
		{"access_key", true},
		{"accesskey", true},
		{"privatekey", true},
		{"private-key", true},
		{"s3Key", true},
		{"credential", true},
		{"credentials", true},
		{"X-Amz-Credential", true},
		{"auth", true},
		{"oauth", true},
		{"Authorization", true},
		{"Proxy-Authorization", true},
		{"cookie", true},
		{"Set-Cookie", true},
		{"session", true},
		{"sessionid", true},
		{"private", true},
		{"signature", true},
		{"X-Amz-Signature", true},
		{"sig", true},
		{"passphrase", true},
		{"keyboard", false},
		{"keyboard-layout", false},
		{"monkey", false},
		{"hotkey", false},
		{"authors", false},
		{"author", false},
		{"authority", false},
		{"authenticationDatabase", false},
		{"tokenizer", false},
		{"bypass", false},
		{"compass", false},
		{"user", false},
		{"port", false},
		{"password-file", false},
		{"passwordFile", false},
		{"keyStore", false},
		{"keyStoreType", false},
		{"password_encryption", false},
		{"token-auth-file", false},
		{"no-password", false},
		{"no", false},
		{"", false},
		{"-", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, isSecretName(tt.name))
		})
	}
}

func TestNameParts(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"javax.net.ssl.keyStorePassword", []string{"javax", "net", "ssl", "key", "store", "password"}},
		{"APIKey", []string{"api", "key"}},
		{"s3Key", []string{"s3", "key"}},
		{"--api-key", []string{"api", "key"}},
		{"AWS_SECRET_ACCESS_KEY", []string{"aws", "secret", "access", "key"}},
		{"X-Amz-Security-Token", []string{"x", "amz", "security", "token"}},
		{"", nil},
		{"--", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, nameParts(tt.name))
		})
	}
}
