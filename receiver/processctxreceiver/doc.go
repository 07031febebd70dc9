// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package processctxreceiver implements the process_context receiver: it
// turns the changes of the process_context extension's tracker
// (internal/tracker) into entity events (log records), one per process
// entity: a state event when an identity (a published context, or the SDK
// environment of a process that publishes none) is first seen, when it
// changes and every report interval, and a delete event when the process
// exits, unpublishes or publishes something unreadable. What it owes the next
// consumer (book) survives refusals: states are retried until accepted or
// restated, deletes for a report interval.
package processctxreceiver
