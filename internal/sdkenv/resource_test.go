// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sdkenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func attrs(ra string) Vars { return Vars{ResourceAttributes: ra, HasResourceAttributes: true} }

func TestResource(t *testing.T) {
	tests := []struct {
		name    string
		vars    Vars
		initial map[string]any
		want    map[string]any
		wantErr string // the whole message of an ErrInvalid error
	}{
		{name: "nothing", want: map[string]any{}},
		{name: "service name", vars: Vars{ServiceName: "svc", HasServiceName: true}, want: map[string]any{"service.name": "svc"}},
		{name: "service name trimmed", vars: Vars{ServiceName: " \tsvc \n", HasServiceName: true}, want: map[string]any{"service.name": "svc"}},
		{name: "blank service name ignored", vars: Vars{ServiceName: "  ", HasServiceName: true}, want: map[string]any{}},
		{name: "absent service name ignored", vars: Vars{ServiceName: "svc"}, want: map[string]any{}},
		{name: "absent attributes ignored", vars: Vars{ResourceAttributes: "a=b"}, want: map[string]any{}},
		{name: "pairs", vars: attrs("a=b,c=d"), want: map[string]any{"a": "b", "c": "d"}},
		{name: "spaces trimmed", vars: attrs("  a = b ,\tc= d e \n"), want: map[string]any{"a": "b", "c": "d e"}},
		{name: "percent-encoded , and =", vars: attrs("k=a%2Cb%3Dc"), want: map[string]any{"k": "a,b=c"}},
		{name: "percent-encoded UTF-8", vars: attrs("city=Montr%C3%A9al"), want: map[string]any{"city": "Montréal"}},
		{name: "lower-case hex", vars: attrs("k=%c3%a9"), want: map[string]any{"k": "é"}},
		{name: "percent-encoded key", vars: attrs("a%3Db%2Cc=v"), want: map[string]any{"a=b,c": "v"}},
		{name: "plus stays", vars: attrs("k=a+b"), want: map[string]any{"k": "a+b"}},
		{name: "trimmed before decoding", vars: attrs("k= %20x%20 "), want: map[string]any{"k": " x "}},
		{name: "= in value", vars: attrs("k=a=b"), want: map[string]any{"k": "a=b"}},
		{name: "empty entries", vars: attrs("a=b,,c=d"), want: map[string]any{"a": "b", "c": "d"}},
		{name: "trailing comma", vars: attrs("a=b, "), want: map[string]any{"a": "b"}},
		{name: "only commas", vars: attrs(" , ,"), want: map[string]any{}},
		{name: "empty value", vars: attrs("a="), want: map[string]any{"a": ""}},
		{name: "last duplicate wins", vars: attrs("a=1,a=2"), want: map[string]any{"a": "2"}},
		{name: "invalid UTF-8 replaced", vars: attrs("k=%FFx,\xfe=v"), want: map[string]any{"k": "\uFFFDx", "\uFFFD": "v"}},
		{
			name: "OTEL_SERVICE_NAME wins",
			vars: Vars{ServiceName: "svc", HasServiceName: true, ResourceAttributes: "service.name=other,x=y", HasResourceAttributes: true},
			want: map[string]any{"service.name": "svc", "x": "y"},
		},
		{
			name: "service.name from attributes when OTEL_SERVICE_NAME is empty",
			vars: Vars{HasServiceName: true, ResourceAttributes: "service.name=other", HasResourceAttributes: true},
			want: map[string]any{"service.name": "other"},
		},
		{
			name:    "replaces same keys only",
			vars:    attrs("a=new"),
			initial: map[string]any{"a": "old", "process.pid": int64(42)},
			want:    map[string]any{"a": "new", "process.pid": int64(42)},
		},
		{
			name:    "bad escape",
			vars:    attrs("a=b,c=d,e=%ZZ"),
			want:    map[string]any{},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 3: invalid percent-encoding: sdkenv: invalid",
		},
		{
			name:    "trailing %",
			vars:    attrs("a=b%"),
			want:    map[string]any{},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 1: invalid percent-encoding: sdkenv: invalid",
		},
		{
			name:    "short escape",
			vars:    attrs("a=%4"),
			want:    map[string]any{},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 1: invalid percent-encoding: sdkenv: invalid",
		},
		{
			name:    "bad escape in key",
			vars:    attrs("a=b,100%=c"),
			want:    map[string]any{},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 2: invalid percent-encoding in key: sdkenv: invalid",
		},
		{
			name:    "entry without =",
			vars:    attrs("a=b,c,d=e"),
			want:    map[string]any{},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 2: no '=': sdkenv: invalid",
		},
		{
			name:    "empty key",
			vars:    attrs("a=b,,=e"),
			want:    map[string]any{},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 3: empty key: sdkenv: invalid",
		},
		{
			name:    "service name applies despite invalid attributes",
			vars:    Vars{ServiceName: "svc", HasServiceName: true, ResourceAttributes: "service.name=x,a=%", HasResourceAttributes: true},
			initial: map[string]any{"keep": "me"},
			want:    map[string]any{"service.name": "svc", "keep": "me"},
			wantErr: "OTEL_RESOURCE_ATTRIBUTES: entry 2: invalid percent-encoding: sdkenv: invalid",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pcommon.NewMap()
			require.NoError(t, m.FromRaw(tt.initial))
			err := tt.vars.Resource(m)
			assert.Equal(t, tt.want, m.AsRaw())
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestEmpty(t *testing.T) {
	assert.True(t, Vars{}.Empty())
	assert.True(t, Vars{HasServiceName: true, HasResourceAttributes: true}.Empty())
	assert.True(t, Vars{ServiceName: " ", HasServiceName: true, ResourceAttributes: "\t", HasResourceAttributes: true}.Empty())
	assert.False(t, Vars{ServiceName: "svc", HasServiceName: true}.Empty())
	assert.False(t, attrs(",").Empty()) // not Empty, yet Resource puts nothing
}

const secret = "hunter2"

// TestSecrets: no byte of an environment leaves the package other than as
// one of the two variables' values, in Vars and in the attributes they
// legitimately yield. Errors quote nothing.
func TestSecrets(t *testing.T) {
	envs := []struct {
		env        string
		legitimate bool // the secret is legitimately in one of the two values
	}{
		{env: "DB_PASSWORD=" + secret + "\x00OTEL_SERVICE_NAME=svc\x00"},
		{env: "DB_PASSWORD=" + secret + "\x00OTEL_RESOURCE_ATTRIBUTES=token=" + secret + "%ZZ\x00", legitimate: true},
		{env: "DB_PASSWORD=" + secret + "\x00OTEL_RESOURCE_ATTRIBUTES=" + secret + "\x00", legitimate: true},
		{env: "DB_PASSWORD=" + secret + "\x00OTEL_RESOURCE_ATTRIBUTES=a=b,=" + secret + "\x00", legitimate: true},
		{env: "DB_PASSWORD=" + secret + "\x00OTEL_RESOURCE_ATTRIBUTES=" + secret + "%=x\x00", legitimate: true},
		{env: "OTEL_SERVICE_NAME=" + strings.Repeat(secret, 100) + "\x00DB_PASSWORD=" + secret, legitimate: true},
		{env: "OTEL_RESOURCE_ATTRIBUTES=" + strings.Repeat(secret, 100) + "\x00", legitimate: true},
		{env: "OTEL_SERVICE_NAME" + secret + "\x00OTEL_RESOURCE_ATTRIBUTES" + secret + "=x\x00" + secret + "OTEL_SERVICE_NAME=x"},
		{env: "DB_PASSWORD=" + secret},
	}
	for _, e := range envs {
		for rname, r := range readers(e.env) {
			v, err := Scan(r, 64)
			if err != nil {
				assert.NotContains(t, err.Error(), secret, rname)
			}
			m := pcommon.NewMap()
			rerr := v.Resource(m)
			if rerr != nil {
				assert.NotContains(t, rerr.Error(), secret, rname)
			}
			put := ""
			m.Range(func(k string, val pcommon.Value) bool {
				put += "\x00" + k + "=" + val.AsString()
				return true
			})
			if !e.legitimate {
				assert.NotContains(t, v.ServiceName+v.ResourceAttributes, secret, "%q via %s", e.env, rname)
			}
			if !e.legitimate || rerr != nil { // a malformed value puts nothing
				assert.NotContains(t, put, secret, "%q via %s", e.env, rname)
			}
			out := v.ServiceName + v.ResourceAttributes + put
			// Whatever holds the secret came from the two variables.
			assert.NotContains(t, out, "DB_PASSWORD")
		}
	}
}
