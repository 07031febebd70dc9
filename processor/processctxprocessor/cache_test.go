package processctxprocessor

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/publisher"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/registry"
)

// resourceLogs builds one resource per pid, each with a record.
func resourceLogs(pids ...int) plog.Logs {
	ld := plog.NewLogs()
	for _, pid := range pids {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutInt("process.pid", int64(pid))
		addRecord(rl.ScopeLogs().AppendEmpty(), "x", nil)
	}
	return ld
}

// serviceNames returns the service.name of each resource ("" when none).
func serviceNames(ld plog.Logs) []string {
	var out []string
	for _, rl := range ld.ResourceLogs().All() {
		out = append(out, serviceOf(rl.Resource().Attributes()))
	}
	return out
}

func TestCacheHitCostsNoProcIO(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "cart")
	b := startPublisher(t, pubtest.C, "payment")
	h := newHarness(t, testConfig())
	pids := []int{a.Pid, b.Pid, noContextPID(), unusedPID(t)}

	out := h.consumeLogs(resourceLogs(pids...))
	assert.Equal(t, []string{"cart", "payment", "", ""}, serviceNames(out))
	first := h.io()
	assert.Equal(t, uint64(3), first.Maps, "one maps scan per live pid")

	for range 5 {
		h.clock.Advance(500 * time.Millisecond) // within both TTLs
		out = h.consumeLogs(resourceLogs(pids...))
		assert.Equal(t, []string{"cart", "payment", "", ""}, serviceNames(out))
	}
	// Another signal's pipeline shares the cache.
	md := hostmetricsLike(a.Pid, b.Pid, noContextPID())
	h.consumeMetrics(md)
	pb := newProfileBuilder()
	p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
	for n, pid := range pids {
		pb.sample(p, n, pid)
	}
	h.consumeProfiles(pb.pd)
	assert.Equal(t, first, h.io(), "warm cache: no stat, maps or memory read")
}

func TestCacheRevalidatesCheaplyAfterTTL(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			pub := startPublisher(t, kind, "cart")
			h := newHarness(t, testConfig())
			h.consumeLogs(resourceLogs(pub.Pid))
			before := h.io()

			// Unchanged: the start time and one 8-byte read of the change key.
			h.clock.Advance(defaultTTL)
			out := h.consumeLogs(resourceLogs(pub.Pid))
			assert.Equal(t, []string{"cart"}, serviceNames(out))
			assert.Equal(t, ioCounts{Stats: before.Stats + 1, Maps: before.Maps, Memory: before.Memory + 1}, h.io())

			// Changed in place: read again at the same address, no maps scan.
			pub.update(t, withAttrs(pub.resource, map[string]any{"service.name": "cart-v2"}))
			out = h.consumeLogs(resourceLogs(pub.Pid))
			assert.Equal(t, []string{"cart"}, serviceNames(out), "within the TTL the cached context is used")
			h.clock.Advance(defaultTTL)
			out = h.consumeLogs(resourceLogs(pub.Pid))
			assert.Equal(t, []string{"cart-v2"}, serviceNames(out))
			assert.Equal(t, before.Maps, h.io().Maps)
		})
	}
}

func TestNegativeCache(t *testing.T) {
	h := newHarness(t, testConfig())
	self, gone := noContextPID(), unusedPID(t)
	h.consumeLogs(resourceLogs(self, gone))
	first := h.io()
	assert.Equal(t, ioCounts{Stats: 2, Maps: 1}, first, "one stat each, one maps scan for the live pid")

	h.clock.Advance(defaultNegativeTTL - time.Millisecond)
	for range 10 {
		h.consumeLogs(resourceLogs(self, gone))
	}
	assert.Equal(t, first, h.io(), "remembered: no maps scan per batch")

	h.clock.Advance(time.Millisecond)
	h.consumeLogs(resourceLogs(self, gone))
	assert.Equal(t, ioCounts{Stats: 4, Maps: 2}, h.io(), "looked up again after negative_ttl")
}

func TestNegativeEntryFindsLatePublisher(t *testing.T) {
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	h := newHarness(t, testConfig())
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(p.Pid))))
	p.Publish(publisher.EncodeStrings(map[string]string{"service.name": "late"}))
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(p.Pid))), "still remembered as without context")
	h.clock.Advance(defaultNegativeTTL)
	assert.Equal(t, []string{"late"}, serviceNames(h.consumeLogs(resourceLogs(p.Pid))))
}

func TestGracePeriodAfterExit(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			pub := startPublisher(t, kind, "batch-job")
			h := newHarness(t, testConfig())
			pid := pub.Pid
			assert.Equal(t, []string{"batch-job"}, serviceNames(h.consumeLogs(resourceLogs(pid))))

			pub.Exit()
			// Within the TTL nothing looks at the process.
			assert.Equal(t, []string{"batch-job"}, serviceNames(h.consumeLogs(resourceLogs(pid))))
			// Re-validation finds it gone: its context stays for the grace period.
			h.clock.Advance(defaultTTL)
			assert.Equal(t, []string{"batch-job"}, serviceNames(h.consumeLogs(resourceLogs(pid))))
			h.clock.Advance(defaultGracePeriod - time.Second)
			assert.Equal(t, []string{"batch-job"}, serviceNames(h.consumeLogs(resourceLogs(pid))), "late logs within the grace period")
			// Profiles arrive late too.
			pb := newProfileBuilder()
			p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
			pb.sample(p, 1, pid)
			out := h.consumeProfiles(pb.pd)
			assert.Equal(t, "batch-job", serviceOf(out.ResourceProfiles().At(0).Resource().Attributes()))

			h.clock.Advance(2 * time.Second)
			ld := resourceLogs(pid)
			in := plog.NewLogs()
			ld.CopyTo(in)
			assert.Equal(t, in, h.consumeLogs(ld), "after the grace period: passes through unchanged")
		})
	}
}

func TestGracePeriodAfterUnpublish(t *testing.T) {
	pub := startPublisher(t, pubtest.C, "svc")
	h := newHarness(t, testConfig())
	assert.Equal(t, []string{"svc"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))

	pub.Unpublish()
	h.clock.Advance(defaultTTL)
	assert.Equal(t, []string{"svc"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))), "unpublished: kept for the grace period")

	// Published again (e.g. after exec) within the grace period: found at
	// the next re-validation.
	pub.publish(t, withAttrs(pub.resource, map[string]any{"service.name": "svc-new"}))
	h.clock.Advance(defaultTTL)
	assert.Equal(t, []string{"svc-new"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))

	pub.Unpublish()
	h.clock.Advance(defaultTTL)
	assert.Equal(t, []string{"svc-new"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	h.clock.Advance(defaultGracePeriod + time.Second)
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
}

func TestZeroGracePeriod(t *testing.T) {
	pub := startPublisher(t, pubtest.Go, "svc")
	cfg := testConfig()
	cfg.Cache.GracePeriod = 0
	h := newHarness(t, cfg)
	assert.Equal(t, []string{"svc"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	pub.Exit()
	h.clock.Advance(defaultTTL)
	h.consumeLogs(resourceLogs(pub.Pid)) // finds it gone
	h.clock.Advance(time.Nanosecond)
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
}

// TestPidReuse: an entry whose process is replaced by another on the same
// pid is not used for the new process once re-validated.
func TestPidReuse(t *testing.T) {
	pub := startPublisher(t, pubtest.Go, "new-process")
	h := newHarness(t, testConfig())
	h.consumeLogs(resourceLogs(pub.Pid))
	// Pretend the cached context belonged to an earlier process on this pid.
	c := h.resolver().cache
	c.mu.Lock()
	old := c.entries[pub.Pid]
	stale := &entry{key: registry.Key{PID: pub.Pid, StartTicks: old.key.StartTicks - 1}, attrs: pcommon.NewMap(),
		outcome: outcomeEnriched, addr: old.addr, publishedAt: old.publishedAt, checkedAt: old.checkedAt}
	stale.attrs.PutStr("service.name", "old-process")
	c.entries[pub.Pid] = stale
	c.mu.Unlock()

	assert.Equal(t, []string{"old-process"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))), "within the TTL")
	maps := h.io().Maps
	h.clock.Advance(defaultTTL)
	assert.Equal(t, []string{"new-process"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	assert.Equal(t, maps+1, h.io().Maps, "the new process is read from scratch")
}

func TestCacheEviction(t *testing.T) {
	pubs := []*publishing{
		startPublisher(t, pubtest.Go, "a"),
		startPublisher(t, pubtest.C, "b"),
		startPublisher(t, pubtest.Go, "c"),
	}
	cfg := testConfig()
	cfg.Cache.MaxEntries = 2
	h := newHarness(t, cfg)
	c := h.resolver().cache

	h.consumeLogs(resourceLogs(pubs[0].Pid))
	h.clock.Advance(2 * time.Second)
	h.consumeLogs(resourceLogs(pubs[1].Pid))
	h.clock.Advance(2 * time.Second)
	h.consumeLogs(resourceLogs(pubs[0].Pid)) // a is now more recent than b
	h.clock.Advance(2 * time.Second)
	h.consumeLogs(resourceLogs(pubs[2].Pid))
	assert.Equal(t, 2, c.len())
	c.mu.RLock()
	_, hasA := c.entries[pubs[0].Pid]
	_, hasB := c.entries[pubs[1].Pid]
	c.mu.RUnlock()
	assert.True(t, hasA, "recently used: kept")
	assert.False(t, hasB, "least recently used: evicted")

	// Still correct after eviction.
	out := h.consumeLogs(resourceLogs(pubs[0].Pid, pubs[1].Pid, pubs[2].Pid))
	assert.Equal(t, []string{"a", "b", "c"}, serviceNames(out))
	assert.LessOrEqual(t, c.len(), 2)
}

func TestEvictionBatch(t *testing.T) {
	c := newCache(64)
	for pid := 1; pid <= 64; pid++ {
		e := &entry{}
		e.lastUsed.Store(int64(pid))
		c.entries[pid] = e
	}
	c.putLocked(100, &entry{})
	assert.Len(t, c.entries, 64-8+1, "an eighth evicted at once")
	for pid := 1; pid <= 8; pid++ {
		assert.NotContains(t, c.entries, pid)
	}
	assert.Contains(t, c.entries, 9)
}

// registryProcess builds the registry record the receiver would store for a
// live publisher, with a context that differs from what it publishes so
// that the test can tell where the processor took it from.
func registryProcess(t *testing.T, pid int, service string) *registry.Process {
	t.Helper()
	fs, err := procmem.NewFS("/")
	require.NoError(t, err)
	start, err := fs.StartTime(pid)
	require.NoError(t, err)
	res := pcommon.NewMap()
	res.PutStr("service.name", service)
	res.PutInt("process.pid", 1)
	return &registry.Process{
		Key:     registry.Key{PID: pid, StartTicks: start},
		Context: procmem.Context{PublishedAt: 42, Resource: res, Attributes: threadlocal()},
	}
}

func TestRegistryPreferred(t *testing.T) {
	pub := startPublisher(t, pubtest.Go, "from-procfs")
	reg, release := registry.Acquire("/")
	defer release()
	p := registryProcess(t, pub.Pid, "from-registry")
	reg.Store(p)
	defer reg.Forget(p.Key)

	h := newHarness(t, testConfig())
	for range 3 {
		out := h.consumeLogs(resourceLogs(pub.Pid))
		assert.Equal(t, map[string]any{"service.name": "from-registry", "process.pid": int64(pub.Pid)},
			out.ResourceLogs().At(0).Resource().Attributes().AsRaw(), "registry context, without its pid or threadlocal attributes")
		h.clock.Advance(defaultTTL) // TTLs do not apply: the receiver keeps it fresh
	}
	assert.Equal(t, ioCounts{}, h.io(), "no /proc I/O for a pid the registry has")

	// The receiver saw it exit: still used within the grace period...
	reg.Exited(p.Key, h.clock.Now())
	h.clock.Advance(defaultGracePeriod)
	assert.Equal(t, []string{"from-registry"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	assert.Equal(t, ioCounts{}, h.io())
	// ...and not after it: the processor reads the pid itself (here the
	// process is in fact alive and publishing).
	h.clock.Advance(time.Second)
	assert.Equal(t, []string{"from-procfs"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	assert.Equal(t, uint64(1), h.io().Maps)
}

func TestRegistryUpdatedContext(t *testing.T) {
	pub := startPublisher(t, pubtest.C, "from-procfs")
	reg, release := registry.Acquire("/")
	defer release()
	h := newHarness(t, testConfig())

	// Unknown to the registry: read from procfs.
	assert.Equal(t, []string{"from-procfs"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	// Stored by the receiver: preferred from then on.
	p := registryProcess(t, pub.Pid, "v1")
	reg.Store(p)
	defer reg.Forget(p.Key)
	assert.Equal(t, []string{"v1"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
	p2 := registryProcess(t, pub.Pid, "v2")
	p2.Context.PublishedAt = 43
	reg.Store(p2)
	assert.Equal(t, []string{"v2"}, serviceNames(h.consumeLogs(resourceLogs(pub.Pid))))
}

// TestConcurrentBatches runs every signal from many goroutines while the
// clock moves past TTLs and a publisher updates: for the race detector, and
// for consistency (every output is enriched with one of the contexts).
func TestConcurrentBatches(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "a")
	b := startPublisher(t, pubtest.C, "b")
	cfg := testConfig()
	cfg.Cache.MaxEntries = 3 // eviction under load too
	h := newHarness(t, cfg)
	gone := unusedPID(t)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			h.clock.Advance(defaultTTL / 3)
			if i%10 == 0 {
				a.update(t, withAttrs(a.resource, map[string]any{"generation": int64(i)}))
			}
			time.Sleep(time.Millisecond)
		}
	})
	var workers sync.WaitGroup
	for w := range 8 {
		workers.Go(func() {
			for i := range 200 {
				ld := plog.NewLogs()
				rl := ld.ResourceLogs().AppendEmpty()
				sl := rl.ScopeLogs().AppendEmpty()
				for j, pid := range []int{a.Pid, b.Pid, gone, noContextPID()} {
					addRecord(sl, strconv.Itoa(w*1000+i*10+j), pid)
				}
				res, err := h.direct.processLogs(t.Context(), ld)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, 4, res.LogRecordCount())
				names := serviceNames(res)
				assert.ElementsMatch(t, []string{"", "a", "b"}, names)
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
}

// TestWarmHitAllocations: with a warm cache, the lookup path allocates
// nothing per resource or record; only inserting attributes into pdata does.
// Data that already carries every key (override off) is processed with a
// constant number of allocations per batch, whatever its size.
func TestWarmHitAllocations(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "a")
	b := startPublisher(t, pubtest.C, "b")
	h := newHarness(t, testConfig())
	ld := plog.NewLogs()
	for r := range 100 {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutInt("process.pid", int64([]int{a.Pid, b.Pid}[r%2]))
		sl := rl.ScopeLogs().AppendEmpty()
		for i := range 10 {
			addRecord(sl, strconv.Itoa(i), nil)
		}
	}
	ctx := t.Context()
	_, err := h.direct.processLogs(ctx, ld) // enriches, warms the cache
	require.NoError(t, err)
	io := h.io()
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per batch of 100 resources", allocs)
	assert.LessOrEqual(t, allocs, float64(5), "per-batch allocations only (telemetry)")
	assert.Equal(t, io, h.io())
	assert.Equal(t, []string{"a", "b"}, serviceNames(ld)[:2])
}
