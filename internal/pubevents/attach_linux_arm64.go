// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubevents

// syscallPrefix names the syscall entry points on arm64: their single
// argument is the saved user registers (struct pt_regs *), whatever the
// syscall's own arguments.
const syscallPrefix = "__arm64_sys_"
