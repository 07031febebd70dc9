package tracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOutcomeTable(t *testing.T) {
	var tab outcomeTable
	for _, pid := range []int{1, 15, 16, 4095, 4096, maxPID - 1} {
		assert.Equal(t, OutcomeUnknown, tab.get(pid))
		tab.set(pid, OutcomePermissionDenied)
		assert.Equal(t, OutcomePermissionDenied, tab.get(pid))
	}
	assert.Equal(t, OutcomeUnknown, tab.get(2), "neighbours untouched")
	assert.Equal(t, OutcomeUnknown, tab.get(17))
	tab.set(15, OutcomeNoContext)
	assert.Equal(t, OutcomeNoContext, tab.get(15))
	assert.Equal(t, OutcomePermissionDenied, tab.get(16))
	tab.set(15, OutcomeUnknown)
	assert.Equal(t, OutcomeUnknown, tab.get(15))
	for _, pid := range []int{0, -1, maxPID, 1 << 40} {
		tab.set(pid, OutcomeOK)
		assert.Equal(t, OutcomeUnknown, tab.get(pid))
	}
}
