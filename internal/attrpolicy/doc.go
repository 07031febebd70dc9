// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package attrpolicy decides what a published resource may contribute to
// telemetry and entity events, by family: what a key describes decides
// whom to trust for it.
//
//   - identity: what the process declares about itself (service.*,
//     deployment.*, telemetry.sdk.*, telemetry.distro.*,
//     process.runtime.*). Added where missing; replacing a value the
//     telemetry carries is the user's switch (identity.override).
//   - observed: what the machine and the runtime are (host.*, os.*,
//     cloud.*, container.*, k8s.*, and process.* but process.runtime.*).
//     The collector reads these itself (/proc, the cgroup, its host
//     identity); the telemetry's own value always stays, and a published
//     value is never copied unless observed.copy says so (then only where
//     neither the telemetry nor the collector has one).
//   - other: every other key (vendor namespaces such as datadog.*, unknown
//     ones): added where missing unless other.copy is off; replacing is
//     other.override.
//   - thread context: threadlocal.* (OTEP 4947's coordination keys, "not
//     expected to appear in OTLP exports"): never copied.
//
// Whatever the family, an empty value (an empty string, bytes, array or
// map) is never copied, and include / exclude key patterns narrow what is.
// The family of a key is FamilyOf's answer alone; docs/configuration.md
// has the table, and a test of this package walks it.
//
// The processor (what it stamps for a publication, computed once per
// publication) and the receiver (the descriptions of the process and
// service entities, at Default) both ask a Policy; nothing else decides.
// ProcessContext.attributes (the context's non-resource attributes) never
// reach a Policy: callers hand it the resource only.
package attrpolicy
