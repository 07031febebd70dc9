// Package reader reads the process context of a live process on this host:
// it finds the context mapping in <root>/proc/<pid>/maps and reads the
// header and payload out of the process's memory with the protocol of
// internal/otep, through process_vm_readv or pread on <root>/proc/<pid>/mem.
//
// Every call may block as long as the target lets it (process_vm_readv on
// userfaultfd-registered pages waits until the fault is served): callers
// that must not stall run reads under a deadline, as internal/tracker does.
// ViaMemFile avoids process_vm_readv for a process that stalled it once:
// pread of the mem file fails at once where process_vm_readv waits.
//
// # Errors
//
// Errors name the pid and wrap the kinds of internal/otep (ErrNoContext,
// ErrTorn, ErrInvalid, ErrTooLarge) and of internal/procfs (ErrProcessGone,
// ErrPermissionDenied); an error of neither kind wraps the OS error.
package reader
