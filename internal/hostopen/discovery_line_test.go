// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package hostopen

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/processctx/otelcol-processctx/internal/procevents"
	"github.com/processctx/otelcol-processctx/internal/pubevents"
)

// The start-up's second line names, for each source that could not be
// opened, what is polled instead, why and what to change; nothing when
// nothing is missing or when Open's container warning says it.
func TestMissingHint(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CollectionInterval = 7 * time.Second
	tracepoints := cfg
	tracepoints.PublicationEvents = pubevents.SyscallTracepoints.String()
	fexit := cfg
	fexit.PublicationEvents = pubevents.Fexit.String()
	kernelRefuses := fmt.Errorf("%w: this kernel refuses BPF trampolines", pubevents.ErrUnsupported)
	for _, tt := range []struct {
		name            string
		cfg             Config
		procErr, pubErr error
		foreign         []string
		want            string
	}{
		{name: "nothing missing", cfg: cfg},
		{name: "the kernel refuses fexit and kprobes", cfg: cfg, pubErr: kernelRefuses,
			want: "publications are polled (seconds after a process starts, not at once): this kernel refuses fexit and has no kprobes; " +
				"publication_events: syscall_tracepoints sees them at once at a cost to every syscall of the host"},
		{name: "the kernel refuses fexit, asked for by name", cfg: fexit, pubErr: kernelRefuses,
			want: "this kernel refuses fexit; publication_events: kprobe (auto tries it too) or syscall_tracepoints"},
		{name: "another mechanism unsupported", cfg: tracepoints, pubErr: pubevents.ErrUnsupported,
			want: "publications are polled (seconds after a process starts, not at once): this kernel cannot run publication_events: syscall_tracepoints; try another"},
		{name: "no CAP_BPF", cfg: cfg, pubErr: fmt.Errorf("%w: fexit", pubevents.ErrPermission),
			want: "publications are polled (seconds after a process starts, not at once): the collector lacks CAP_BPF and CAP_PERFMON"},
		{name: "other load error", cfg: cfg, pubErr: errors.New("map create: no memory"),
			want: "publication_events: fexit failed to load (its error is logged at debug level)"},
		{name: "no CAP_NET_ADMIN", cfg: cfg, procErr: fmt.Errorf("bind: %w", procevents.ErrPermission),
			want: "exits are seen by scans (within collection_interval, 7s): the collector lacks CAP_NET_ADMIN, which the proc connector needs: grant it"},
		{name: "another namespace", cfg: cfg, procErr: procevents.ErrUnsupported,
			want: "exits are seen by scans (within collection_interval, 7s): the proc connector needs the host's user, network and pid namespaces (Kubernetes: hostNetwork and hostPID)"},
		// In a container the kernel refuses the binding for want of
		// CAP_NET_ADMIN before it says anything of namespaces: they are
		// named first, the capability after.
		{name: "a container without CAP_NET_ADMIN", cfg: cfg, procErr: procevents.ErrPermission, foreign: []string{"network", "pid"},
			want: "exits are seen by scans (within collection_interval, 7s): the proc connector serves only the host's network and pid namespaces, " +
				"and the collector runs in its own: run it in the host's (podman or docker: --network host --pid host; Kubernetes: hostNetwork, hostPID), with CAP_NET_ADMIN"},
		{name: "a container with CAP_NET_ADMIN", cfg: cfg, procErr: procevents.ErrUnsupported, foreign: []string{"network"},
			want: "the proc connector serves only the host's network namespace, and the collector runs in its own: " +
				"run it in the host's (podman or docker: --network host; Kubernetes: hostNetwork)"},
		{name: "a user namespace", cfg: cfg, procErr: procevents.ErrUnsupported, foreign: []string{"user", "network", "pid"},
			want: "the host's user, network and pid namespaces, and the collector runs in its own: run it in the host's " +
				"(podman or docker: --userns host --network host --pid host; Kubernetes: hostUsers, hostNetwork, hostPID)"},
		{name: "both", cfg: cfg, procErr: procevents.ErrPermission, pubErr: kernelRefuses,
			want: "this kernel refuses fexit and has no kprobes; publication_events: syscall_tracepoints sees them at once at a cost to every syscall of the host; exits are seen by scans"},
		{name: "a container's procfs", cfg: cfg, procErr: errNotHostPids, pubErr: errNotHostPids},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := missingHint(tt.cfg, tt.procErr, tt.pubErr, tt.foreign)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}

func TestDiscoveryMode(t *testing.T) {
	assert.Equal(t, "kernel events (proc connector, eBPF fexit)", discoveryMode("proc connector", "eBPF fexit"))
	assert.Equal(t, "proc connector for processes, polling for publications", discoveryMode("proc connector", "none"))
	assert.Equal(t, "eBPF fexit for publications, polling for exits", discoveryMode("none", "eBPF fexit"))
	assert.Equal(t, "polling, without kernel events", discoveryMode("none", "none"))
}
