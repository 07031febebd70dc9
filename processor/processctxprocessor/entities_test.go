// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// refView is an entity reference as the tests compare it: description
// keys sorted (they follow the published attributes' order, which a Go
// map in a test does not fix).
type refView struct {
	Type string
	ID   []string
	Desc []string
}

// refsOf returns the entity references of res.
func refsOf(res pcommon.Resource) []refView {
	var out []refView
	for _, r := range entity.ResourceEntityRefs(res).All() {
		v := refView{Type: r.Type(), ID: r.IdKeys().AsRaw()}
		if r.DescriptionKeys().Len() > 0 {
			v.Desc = r.DescriptionKeys().AsRaw()
			slices.Sort(v.Desc)
		}
		out = append(out, v)
	}
	return out
}

// putRefs appends refs to res, as telemetry that references entities
// itself carries them.
func putRefs(res pcommon.Resource, refs []refView) {
	for _, r := range refs {
		ref := entity.ResourceEntityRefs(res).AppendEmpty()
		ref.SetType(r.Type)
		ref.IdKeys().Append(r.ID...)
		ref.DescriptionKeys().Append(r.Desc...)
	}
}

// fakeCreated is process.creation.time of a process of the fake host.
func fakeCreated(h *trackertest.Host, pid int) string {
	var start uint64
	h.Set(pid, func(p *trackertest.Proc) { start = p.Start })
	return procfs.Identity{CreationTime: fakeCreationTime(start)}.CreationTimeString()
}

// References of a process of the fake host that publishes service.name
// and service.instance.id (retryHost's, and the "cart" of the tests here).
func processRef(desc ...string) refView {
	if len(desc) == 0 {
		desc = nil
	}
	return refView{Type: "process", ID: []string{"process.pid", "process.creation.time"}, Desc: desc}
}

func serviceRef() refView { return refView{Type: "service", ID: []string{"service.name"}} }

// namespacedServiceRef is the reference of a service whose namespace is
// published: service.name with service.namespace identify it.
func namespacedServiceRef() refView {
	return refView{Type: "service", ID: []string{"service.name", "service.namespace"}}
}

func instanceRef() refView {
	return refView{Type: "service.instance", ID: []string{"service.instance.id"}}
}

func namespaceRef() refView {
	return refView{Type: "service.namespace", ID: []string{"service.namespace"}}
}

func TestCreationTime(t *testing.T) {
	for _, tt := range []struct {
		name     string
		booted   bool // the host knows creation times
		override bool
		exclude  []string
		in       any // the telemetry's process.creation.time, nil for none
		want     any // "created": the process's
	}{
		{name: "added beside process.pid", booted: true, want: "created"},
		{name: "the telemetry's value is not replaced", booted: true, in: "2000-01-01T00:00:00Z", want: "2000-01-01T00:00:00Z"},
		{name: "identity override does not replace it: observed", booted: true, override: true, in: "2000-01-01T00:00:00Z", want: "2000-01-01T00:00:00Z"},
		{name: "excluded", booted: true, exclude: []string{"process.creation.time"}},
		{name: "unknown: not added", booted: false},
		{name: "unknown: the telemetry's value stays", booted: false, in: "2000-01-01T00:00:00Z", want: "2000-01-01T00:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(10)
			host.Publish(10, "cart")
			cfg := testConfig()
			cfg.Attributes.Identity.Override, cfg.Attributes.Exclude = tt.override, attrpolicy.Strict(tt.exclude...)
			var h *harness
			if tt.booted {
				h = newBootedHarness(t, cfg, host)
			} else {
				h = newFakeHarness(t, cfg, fakeTrackerConfig(), host)
			}
			ld := resourceLogs(10)
			if tt.in != nil {
				ld.ResourceLogs().At(0).Resource().Attributes().PutStr("process.creation.time", tt.in.(string))
			}
			got := h.consumeLogs(ld).ResourceLogs().At(0).Resource().Attributes().AsRaw()
			assert.Equal(t, "cart", got["service.name"])
			if tt.want == "created" {
				tt.want = fakeCreated(host, 10)
			}
			assert.Equal(t, tt.want, got["process.creation.time"])
		})
	}
}

func TestEntityRefs(t *testing.T) {
	published := map[string]any{
		"service.name": "cart", "service.version": "1.2.0", "service.instance.id": "cart-1",
		"service.namespace": "shop", "deployment.environment.name": "prod",
	}
	every := []refView{
		processRef("deployment.environment.name"),
		{Type: "service", ID: []string{"service.name", "service.namespace"}, Desc: []string{"service.version"}},
		instanceRef(), namespaceRef(),
	}
	for _, tt := range []struct {
		name      string
		edit      func(*Config)
		unbooted  bool           // the host knows no creation time
		published map[string]any // more published keys
		proc      func(*trackertest.Proc)
		in        map[string]any // the telemetry's resource attributes beside process.pid
		existing  []refView      // the telemetry's references
		want      []refView
	}{
		{name: "every key added", want: every},
		{name: "entity_refs off", edit: func(c *Config) { c.EntityRefs = false }},
		{name: "creation time unknown: no process reference", unbooted: true, want: every[1:]},
		{
			name: "a key the telemetry had is not the processor's to reference",
			in:   map[string]any{"service.name": "cart"},
			want: []refView{processRef("deployment.environment.name", "service.version"), instanceRef(), namespaceRef()},
		},
		{
			name: "identity override: the keys it replaced are the processor's",
			edit: func(c *Config) { c.Attributes.Identity.Override = true },
			in:   map[string]any{"service.name": "cart", "deployment.environment.name": "staging"},
			want: every,
		},
		{
			name:     "a type referenced already is neither replaced nor repeated",
			existing: []refView{serviceRef()},
			// service.version describes the service, referenced already.
			want: []refView{serviceRef(), processRef("deployment.environment.name"), instanceRef(), namespaceRef()},
		},
		{
			name:     "a process referenced already",
			existing: []refView{processRef()},
			want:     append([]refView{processRef()}, every[1:]...),
		},
		{
			name:     "keys another entity claims do not describe the process",
			existing: []refView{{Type: "deployment", ID: []string{"deployment.name"}, Desc: []string{"deployment.environment.name"}}},
			want: append([]refView{{Type: "deployment", ID: []string{"deployment.name"}, Desc: []string{"deployment.environment.name"}},
				processRef()}, every[1:]...),
		},
		{
			name: "excluded identifying key: no service reference",
			edit: func(c *Config) { c.Attributes.Exclude = attrpolicy.Strict("service.name") },
			want: []refView{processRef("deployment.environment.name", "service.version"), instanceRef(), namespaceRef()},
		},
		{
			name: "excluded descriptive key",
			edit: func(c *Config) { c.Attributes.Exclude = attrpolicy.Strict("service.version") },
			want: []refView{processRef("deployment.environment.name"), namespacedServiceRef(), instanceRef(), namespaceRef()},
		},
		{
			name: "included without the creation time: no process reference",
			edit: func(c *Config) { c.Attributes.Include = attrpolicy.Strict("service.name", "service.version") },
			want: []refView{{Type: "service", ID: []string{"service.name"}, Desc: []string{"service.version"}}},
		},
		{
			name: "included with the creation time",
			edit: func(c *Config) { c.Attributes.Include = attrpolicy.Strict("service.name", "process.creation.time") },
			want: []refView{processRef(), serviceRef()},
		},
		{
			name:      "service.criticality describes the service",
			published: map[string]any{"service.criticality": "high"},
			want: []refView{processRef("deployment.environment.name"),
				{Type: "service", ID: []string{"service.name", "service.namespace"}, Desc: []string{"service.criticality", "service.version"}}, instanceRef(), namespaceRef()},
		},
		{
			name: "the pod and the pid in the container describe the process",
			proc: func(p *trackertest.Proc) { p.PodUID, p.NSpid = "5e0a1f2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b", []int{10, 1} },
			want: append([]refView{processRef("deployment.environment.name", "k8s.pod.uid", "process.vpid")}, every[1:]...),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(10)
			if tt.proc != nil {
				host.Set(10, tt.proc)
			}
			res := pcommon.NewMap()
			require.NoError(t, res.FromRaw(withAttrs(published, tt.published)))
			host.PublishResource(10, res)
			cfg := testConfig()
			if tt.edit != nil {
				tt.edit(cfg)
			}
			var h *harness
			if tt.unbooted {
				h = newFakeHarness(t, cfg, fakeTrackerConfig(), host)
			} else {
				h = newBootedHarness(t, cfg, host)
			}
			ld := logsWithResource(withAttrs(tt.in, map[string]any{"process.pid": int64(10)}))
			putRefs(ld.ResourceLogs().At(0).Resource(), tt.existing)

			out := h.consumeLogs(ld).ResourceLogs().At(0).Resource()
			assert.Equal(t, tt.want, refsOf(out))
			for _, r := range refsOf(out) {
				for _, k := range append(r.ID, r.Desc...) {
					_, ok := out.Attributes().Get(k)
					assert.True(t, ok || slices.ContainsFunc(tt.existing, func(e refView) bool { return e.Type == r.Type }),
						"%s references %s, not on the resource", r.Type, k)
				}
			}
		})
	}
}

// TestEntityRefsEverySignal: every resource the processor enriches, in
// place or made by regrouping, references its process and services; the
// others none.
func TestEntityRefsEverySignal(t *testing.T) {
	host := retryHost()
	h := newBootedHarness(t, testConfig(), host)
	want := []refView{processRef("deployment.environment.name", "service.shard"), serviceRef(), instanceRef()}

	// check checks every resource: enriched ones (with a service.name) are
	// those of services.
	check := func(t *testing.T, resources []pcommon.Resource, services ...string) {
		t.Helper()
		var got []string
		for _, res := range resources {
			svc := serviceOf(res.Attributes())
			if svc == "" {
				assert.Empty(t, refsOf(res), "not enriched")
				continue
			}
			got = append(got, svc)
			assert.Equal(t, want, refsOf(res), svc)
			assert.Contains(t, []string{fakeCreated(host, retryCart), fakeCreated(host, retryPay)},
				res.Attributes().AsRaw()["process.creation.time"], svc)
		}
		assert.ElementsMatch(t, services, got)
	}
	t.Run("logs, resource pid", func(t *testing.T) {
		check(t, logsResources(h.consumeLogs(resourceLogs(retryCart, retryNoContext))), "cart")
	})
	t.Run("logs, record pids regrouped", func(t *testing.T) {
		check(t, logsResources(h.consumeLogs(recordLogs(retryCart, retryPay, retryNoContext, nil))), "cart", "pay")
	})
	t.Run("logs, every record of one process", func(t *testing.T) {
		check(t, logsResources(h.consumeLogs(recordLogs(retryCart, retryCart))), "cart")
	})
	t.Run("profiles, resource pid", func(t *testing.T) {
		pb := newProfileBuilder()
		rp := pb.pd.ResourceProfiles().AppendEmpty()
		rp.Resource().Attributes().PutInt(entitymodel.ProcessPIDKey, retryPay)
		pb.sample(pb.profile(rp.ScopeProfiles().AppendEmpty(), 1), 1, nil)
		check(t, profilesResources(h.consumeProfiles(pb.pd)), "pay")
	})
	t.Run("profiles, sample pids regrouped", func(t *testing.T) {
		pb := newProfileBuilder()
		p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
		for n, pid := range []int{retryCart, retryPay, retryNoContext, retryCart} {
			pb.sample(p, n, pid)
		}
		check(t, profilesResources(h.consumeProfiles(pb.pd)), "cart", "pay")
	})
	t.Run("metrics", func(t *testing.T) {
		out := h.consumeMetrics(hostmetricsLike(retryCart, retryNoContext))
		var resources []pcommon.Resource
		for _, rm := range out.ResourceMetrics().All() {
			resources = append(resources, rm.Resource())
		}
		check(t, resources, "cart")
	})
	t.Run("traces", func(t *testing.T) {
		out := h.consumeTraces(tracesWithPid(retryPay))
		check(t, []pcommon.Resource{out.ResourceSpans().At(0).Resource()}, "pay")
	})
}

// recordLogs is one resource without a pid, with a record per pid (nil:
// a record without one).
func recordLogs(pids ...any) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("host.name", "node-1")
	sl := rl.ScopeLogs().AppendEmpty()
	for i, pid := range pids {
		addRecord(sl, strconv.Itoa(i), pid)
	}
	return ld
}

func logsResources(ld plog.Logs) []pcommon.Resource {
	var out []pcommon.Resource
	for _, rl := range ld.ResourceLogs().All() {
		out = append(out, rl.Resource())
	}
	return out
}

func profilesResources(pd pprofile.Profiles) []pcommon.Resource {
	var out []pcommon.Resource
	for _, rp := range pd.ResourceProfiles().All() {
		out = append(out, rp.Resource())
	}
	return out
}

// TestEnvironmentIdentity: a process identified by its environment
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) is enriched as a
// publisher is, and counted under source=environment. The tracker does
// not yet make such identities in this tree, so the view of one is
// applied directly, through the batch's own enrich and count.
func TestEnvironmentIdentity(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	p, err := newInstance(set, testConfig(), signalLogs)
	require.NoError(t, err)
	t.Cleanup(p.tel.shutdown)

	env := pcommon.NewMap()
	env.PutStr("service.name", "from-env")
	env.PutStr("deployment.environment.name", "prod")
	proc := &tracker.Publication{
		Key:      tracker.Key{PID: 42, StartTicks: 1042},
		Identity: procfs.Identity{PID: 42, StartTicks: 1042, CreationTime: fakeCreationTime(1042)},
		Source:   tracker.SourceEnvironment,
		Context:  otep.Context{Resource: env},
	}
	e, ok := p.enrichmentOf(proc).(*enrichment)
	require.True(t, ok)

	ld := resourceLogs(42)
	b := &batch{p: p}
	require.True(t, b.enrichWith(ld.ResourceLogs().At(0).Resource(), e, true, false, 42, 42))
	b.countEnriched(e, ld.LogRecordCount())
	p.tel.add(&b.counts)

	res := ld.ResourceLogs().At(0).Resource()
	assert.Equal(t, map[string]any{
		"process.pid": int64(42), "service.name": "from-env", "deployment.environment.name": "prod",
		"process.creation.time": proc.Identity.CreationTimeString(),
	}, res.Attributes().AsRaw())
	assert.Equal(t, []refView{processRef("deployment.environment.name"), serviceRef()}, refsOf(res))
	assert.Equal(t, map[string]int64{"logs/environment": 1}, counterOf(t, tel, "otelcol_processor_process_context_enriched"))
}
