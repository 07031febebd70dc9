package registry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreExitedForget(t *testing.T) {
	r := New()
	k := Key{PID: 10, StartTicks: 5}
	r.Store(&Process{Key: k})
	p, ok := r.Lookup(10)
	require.True(t, ok)
	assert.True(t, p.ExitedAt.IsZero())

	// Another process on the same pid is untouched by the old key.
	r.Exited(Key{PID: 10, StartTicks: 4}, time.Now())
	p, _ = r.Lookup(10)
	assert.True(t, p.ExitedAt.IsZero())

	at := time.Unix(100, 0)
	r.Exited(k, at)
	p, _ = r.Lookup(10)
	assert.Equal(t, at, p.ExitedAt)

	r.Forget(Key{PID: 10, StartTicks: 4})
	assert.Equal(t, 1, r.Len())
	r.Forget(k)
	assert.Equal(t, 0, r.Len())
}

func TestAcquireSharesPerRoot(t *testing.T) {
	a, releaseA := Acquire("/")
	b, releaseB := Acquire("/")
	c, releaseC := Acquire("/hostfs")
	assert.Same(t, a, b)
	assert.NotSame(t, a, c)
	releaseA()
	releaseA() // idempotent
	d, releaseD := Acquire("/")
	assert.Same(t, b, d, "still held by b")
	releaseB()
	releaseD()
	releaseC()
	e, releaseE := Acquire("/")
	defer releaseE()
	assert.NotSame(t, a, e, "dropped after the last release")
}
