// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package sdkenv reads the two OpenTelemetry SDK environment variables,
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, from another process's
// environment (the bytes of /proc/<pid>/environ) and turns them into the
// resource attributes an OpenTelemetry SDK in that process would take from
// them. It is the fallback for a process that publishes no context.
//
// /proc/<pid>/environ holds the environment the process received from
// execve, not what it changed afterwards with setenv. Right after execve it
// can read empty: the kernel sets the environment's bounds when it loads the
// binary, after the close-on-exec descriptors are closed (so after
// exec.Cmd.Start returns; here 192 of 300 reads right after Start were
// empty). An empty environ is no proof of an empty environment.
//
// # Bounds
//
// Scan streams the environment through one fixed 4 KiB buffer: it reads at
// most MaxEnvironment bytes, keeps at most maxValue bytes of each of the two
// values and allocates nothing for the other entries, which it skips.
//
// # Secrecy
//
// An environment holds passwords and tokens. Nothing but the values of the
// two variables is ever kept, and no error this package returns contains a
// byte of the environment, not even of the two values: an error names the
// variable, the entry number and what is wrong.
//
// # Errors
//
// Errors wrap at most one of the kinds below per problem (test with
// errors.Is); Scan joins several problems with errors.Join. Scan also
// returns, wrapped as "read environment: %w", any error of its io.Reader
// other than io.EOF, and io.ErrNoProgress after 100 reads in a row that
// returned nothing. Vars returned with an error are valid: they hold what
// was found.
//
//   - ErrTooLarge (Scan): a value exceeds maxValue (that variable is treated
//     as absent), or the environment exceeds MaxEnvironment (what was found
//     in its first MaxEnvironment bytes is returned).
//   - ErrInvalid (Vars.Resource): OTEL_RESOURCE_ATTRIBUTES is malformed; no
//     attribute of it is put, OTEL_SERVICE_NAME still applies.
//   - ErrEmpty (Scan): the environment has no bytes: right after an exec,
//     /proc/<pid>/environ reads empty until the kernel has set the new
//     environment up; read it again later.
package sdkenv
