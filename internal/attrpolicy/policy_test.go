// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package attrpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestFamilyOf(t *testing.T) {
	for key, want := range map[string]Family{
		"service.name": Identity, "service.instance.id": Identity, "service.shard": Identity,
		"deployment.environment.name": Identity, "telemetry.sdk.language": Identity,
		"telemetry.distro.name": Identity, "process.runtime.name": Identity,
		"host.name": Observed, "host.id": Observed, "os.type": Observed, "cloud.region": Observed,
		"container.id": Observed, "k8s.pod.uid": Observed, "process.pid": Observed,
		"process.executable.name": Observed, "process.command_line": Observed, "process.runtime": Observed,
		"threadlocal.schema_version": ThreadContext,
		"datadog.process_tags":       Other, "telemetry.auto.version": Other, "service": Other, "hostname": Other,
		"servicename": Other, "": Other, "Service.name": Other,
	} {
		assert.Equal(t, want, FamilyOf(key), key)
	}
}

func TestEmpty(t *testing.T) {
	bytes := pcommon.NewValueBytes()
	bytes.Bytes().Append(0)
	list := pcommon.NewValueSlice()
	list.Slice().AppendEmpty()
	m := pcommon.NewValueMap()
	m.Map().PutStr("k", "")
	for _, tt := range []struct {
		v    pcommon.Value
		want bool
	}{
		{pcommon.NewValueEmpty(), true},
		{pcommon.NewValueStr(""), true},
		{pcommon.NewValueBytes(), true},
		{pcommon.NewValueSlice(), true},
		{pcommon.NewValueMap(), true},
		{pcommon.NewValueStr(" "), false},
		{pcommon.NewValueInt(0), false},
		{pcommon.NewValueBool(false), false},
		{pcommon.NewValueDouble(0), false},
		{bytes, false},
		{list, false},
		{m, false},
	} {
		assert.Equal(t, tt.want, Empty(tt.v), "%s %q", tt.v.Type(), tt.v.AsString())
	}
}

// What becomes of a published value, by family and configuration.
func TestPublished(t *testing.T) {
	str := pcommon.NewValueStr
	keys := []string{"service.name", "host.name", "container.id", "process.pid", "datadog.x", "threadlocal.schema_version", "pid"}
	for _, tt := range []struct {
		name  string
		cfg   Config
		never []string
		want  map[string]Action // by key of keys
	}{
		{"defaults", DefaultConfig(), nil, map[string]Action{
			"service.name": AddMissing, "host.name": Skip, "container.id": Skip, "process.pid": Skip,
			"datadog.x": AddMissing, "threadlocal.schema_version": Skip, "pid": AddMissing,
		}},
		{"identity override", Config{Identity: IdentityConfig{Override: true}, Other: OtherConfig{Copy: true}}, nil, map[string]Action{
			"service.name": Replace, "host.name": Skip, "container.id": Skip, "process.pid": Skip,
			"datadog.x": AddMissing, "threadlocal.schema_version": Skip, "pid": AddMissing,
		}},
		{"observed copy: where missing only", Config{Observed: ObservedConfig{Copy: true}, Other: OtherConfig{Copy: true}}, nil, map[string]Action{
			"service.name": AddMissing, "host.name": AddMissing, "container.id": AddMissing, "process.pid": AddMissing,
			"datadog.x": AddMissing, "threadlocal.schema_version": Skip, "pid": AddMissing,
		}},
		{"other off", Config{}, nil, map[string]Action{
			"service.name": AddMissing, "host.name": Skip, "container.id": Skip, "process.pid": Skip,
			"datadog.x": Skip, "threadlocal.schema_version": Skip, "pid": Skip,
		}},
		{"other override", Config{Other: OtherConfig{Copy: true, Override: true}}, nil, map[string]Action{
			"service.name": AddMissing, "host.name": Skip, "container.id": Skip, "process.pid": Skip,
			"datadog.x": Replace, "threadlocal.schema_version": Skip, "pid": Replace,
		}},
		{"never: the caller's pid keys", Config{Observed: ObservedConfig{Copy: true}, Other: OtherConfig{Copy: true}}, []string{"process.pid", "pid"}, map[string]Action{
			"service.name": AddMissing, "host.name": AddMissing, "container.id": AddMissing, "process.pid": Skip,
			"datadog.x": AddMissing, "threadlocal.schema_version": Skip, "pid": Skip,
		}},
		{"exclude by regexp", Config{Other: OtherConfig{Copy: true}, Exclude: []filter.Config{{Regex: `^datadog\.`}}}, nil, map[string]Action{
			"service.name": AddMissing, "host.name": Skip, "container.id": Skip, "process.pid": Skip,
			"datadog.x": Skip, "threadlocal.schema_version": Skip, "pid": AddMissing,
		}},
		{"include narrows, and adds no family back", Config{Other: OtherConfig{Copy: true}, Include: Strict("service.name", "host.name", "threadlocal.schema_version")}, nil, map[string]Action{
			"service.name": AddMissing, "host.name": Skip, "container.id": Skip, "process.pid": Skip,
			"datadog.x": Skip, "threadlocal.schema_version": Skip, "pid": Skip,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.cfg, tt.never...)
			for _, k := range keys {
				assert.Equal(t, tt.want[k].String(), p.Published(k, str("v")).String(), k)
				assert.Equal(t, Skip, p.Published(k, str("")), "%s: empty, never", k)
			}
		})
	}
}

// Admits: include and exclude alone decide for the collector's own
// observations.
func TestAdmits(t *testing.T) {
	assert.True(t, Default().Admits("container.id"))
	p := New(Config{Include: Strict("service.name", "process.creation.time"), Exclude: []filter.Config{{Regex: "^k8s"}}})
	assert.True(t, p.Admits("process.creation.time"))
	assert.False(t, p.Admits("container.id"))
	p = New(Config{Exclude: []filter.Config{{Regex: "^k8s"}}})
	assert.False(t, p.Admits("k8s.pod.uid"))
	assert.True(t, p.Admits("container.id"))
}
