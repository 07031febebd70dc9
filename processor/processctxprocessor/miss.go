// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

// miss.go owns what the processor says of telemetry that carries no pid
// (none of the pid_attributes keys where the signal looks): the count of
// such items, and a log line at most once per missLogInterval per
// instance naming the configured keys and the pid-like keys the items did
// carry, so that a wrong pid_attributes is found in a minute. Called by
// batch.go, regroup.go and each signal's process function.

import (
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"
)

// missLogInterval is the least time between two log lines about telemetry
// without a pid, per instance.
const missLogInterval = time.Minute

// maxMissKeys bounds the pid-like keys a log line names.
const maxMissKeys = 16

// missKeys are the pid-like keys a batch saw on items without a pid,
// while its line is due; a few, each once.
type missKeys []string

// note adds key when it looks like a pid's.
func (m *missKeys) note(key string) {
	if len(*m) < maxMissKeys && pidLike(key) && !slices.Contains(*m, key) {
		*m = append(*m, key)
	}
}

// noteMap notes the pid-like keys of attrs.
func (m *missKeys) noteMap(attrs pcommon.Map) {
	for k := range attrs.All() {
		m.note(k)
	}
}

// noteDictionary notes the pid-like keys of a profiles dictionary's
// attributes: those samples refer to.
func (m *missKeys) noteDictionary(dict pprofile.ProfilesDictionary) {
	strs := dict.StringTable()
	for _, kv := range dict.AttributeTable().All() {
		if i := int(kv.KeyStrindex()); i >= 0 && i < strs.Len() {
			m.note(strs.At(i))
		}
	}
}

// pidLike reports whether key looks like it holds a pid, as shippers name
// it: process.pid, pid, _PID (journald), process_id, syslog.procid, and
// any *.pid or *_pid, in any case.
func pidLike(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "pid", "process_id", "syslog.procid":
		return true
	}
	return strings.HasSuffix(k, ".pid") || strings.HasSuffix(k, "_pid")
}

// missed counts n items without a pid under a resource whose attributes
// are attrs, noting attrs' pid-like keys while the batch's line is due.
func (b *batch) missed(attrs pcommon.Map, n int) {
	if n == 0 {
		return
	}
	b.counts.noPID += int64(n)
	if b.missDue {
		b.missKeys.noteMap(attrs)
	}
}

// reportMisses writes the line about the batch's items without a pid, if
// it has any and the line is due.
func (b *batch) reportMisses() {
	// One of the batches running at once writes it.
	if b.counts.noPID == 0 || !b.missDue || !b.p.misses.Allow(time.Now().UnixNano(), missLogInterval) {
		return
	}
	fields := []zap.Field{
		zap.String("signal", b.p.signal),
		zap.Int64("items", b.counts.noPID),
		zap.Strings("pid_attributes", []string(b.p.pids)),
		zap.Strings("pid_like_keys_seen", []string(b.missKeys)),
		zap.Duration("next_report_after", missLogInterval),
	}
	if len(b.missKeys) > 0 {
		b.p.logger.Warn("Telemetry carries none of the pid_attributes keys, but pid-like keys: "+
			"if one of them holds the pid, add it to pid_attributes; these items pass through unenriched", fields...)
		return
	}
	b.p.logger.Info("Telemetry carries none of the pid_attributes keys and nothing that looks like a pid; "+
		"these items pass through unenriched", fields...)
}
