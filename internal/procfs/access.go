// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Capabilities that reading another process needs.
const (
	capDACReadSearch = 2
	capSysPtrace     = 19
)

// capNames are the capabilities' names (capabilities(7)), by number.
var capNames = [...]string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
	"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
	"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// capList names the capabilities of a mask: "cap_sys_resource, cap_bpf".
func capList(mask uint64) string {
	var names []string
	for mask != 0 {
		i := bits.TrailingZeros64(mask)
		mask &^= 1 << i
		if i < len(capNames) {
			names = append(names, "cap_"+capNames[i])
		} else {
			names = append(names, "cap_"+strconv.Itoa(i))
		}
	}
	return strings.Join(names, ", ")
}

// credentials are the parts of a status file that decide ptrace access.
type credentials struct {
	uid, euid              int
	capEff, capPrm, capBnd uint64
	seccomp                int
	ok                     bool
}

func readCredentials(path string) credentials {
	f, err := os.Open(path)
	if err != nil {
		return credentials{}
	}
	defer f.Close()
	return parseCredentials(f)
}

// parseCredentials reads the five fields itself: prometheus/procfs's
// Proc.NewStatus has no Seccomp and made ExplainDenied 1.4x-2x slower.
func parseCredentials(f interface{ Read([]byte) (int, error) }) credentials {
	c := credentials{uid: -1, euid: -1}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(value))
		if len(fields) == 0 {
			continue
		}
		hex := func() uint64 { v, _ := strconv.ParseUint(fields[0], 16, 64); return v }
		switch string(key) {
		case "Uid":
			c.uid, _ = strconv.Atoi(fields[0])
			if len(fields) > 1 {
				c.euid, _ = strconv.Atoi(fields[1])
			}
			c.ok = true
		case "CapEff":
			c.capEff = hex()
		case "CapPrm":
			c.capPrm = hex()
		case "CapBnd":
			c.capBnd = hex()
		case "Seccomp":
			c.seccomp, _ = strconv.Atoi(fields[0])
		}
	}
	return c
}

// Executable names pid's executable for reports: the base name of its exe
// link, or its comm when the link cannot be read (no permission, a kernel
// thread); "?" when the process is gone.
func (fs *FS) Executable(pid int) string {
	if exe, err := os.Readlink(fs.Path(pid, "exe")); err == nil {
		return filepath.Base(strings.TrimSuffix(exe, exeDeletedSuffix))
	}
	var buf [statBufSize]byte
	if st, err := fs.statFields(pid, &buf); err == nil {
		return string(st.comm)
	}
	return "?"
}

// unchangeable closes the explanation of a denial that no privilege or
// setting of the reader lifts; Unchangeable looks for it.
const unchangeable = ", so expect it for such processes"

// Unchangeable reports whether explanation, from ExplainDenied, says that
// no privilege or setting of the reader would let it read the process: a
// fact to state once, not a warning to repeat.
func Unchangeable(explanation string) bool { return strings.HasSuffix(explanation, unchangeable) }

// ExplainDenied says why the reader (this process, which the explanation
// names as WithReaderName says) cannot read pid, and what would fix it, from its own credentials, the target's and the kernel's
// ptrace policy (Yama). It reads a few small files; it is meant for the
// reports that name unreadable processes, not for every read.
func (fs *FS) ExplainDenied(pid int) string {
	self := readCredentials("/proc/self/status")
	target := readCredentials(fs.Path(pid, "status"))
	return explainDenied(fs.reader, self, target, fs.yama())
}

// CheckAccess reports, wrapping ErrPermissionDenied, when the reader's
// own privileges keep it from reading the processes of other users: no
// CAP_SYS_PTRACE (or no CAP_DAC_READ_SEARCH, which /proc/<pid>/mem of
// another user needs), or kernel.yama.ptrace_scope 3. It reads only the
// reader's own status and the sysctl, never another process's files.
func (fs *FS) CheckAccess() error {
	if why := checkAccess(fs.reader, readCredentials("/proc/self/status"), fs.yama()); why != "" {
		return fmt.Errorf("%s: %w", why, ErrPermissionDenied)
	}
	return nil
}

// yama returns kernel.yama.ptrace_scope, -1 without Yama.
func (fs *FS) yama() int {
	b, err := os.ReadFile(filepath.Join(fs.ProcDir(), "sys", "kernel", "yama", "ptrace_scope"))
	if err != nil {
		return -1
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return v
}

func checkAccess(reader string, self credentials, yama int) string {
	switch {
	case yama == 3:
		return "kernel.yama.ptrace_scope is 3: no process may read another's memory; set it to 2 or lower"
	case !self.ok:
		return ""
	case self.capEff&(1<<capSysPtrace) == 0:
		return fmt.Sprintf("%s (uid %d) lacks CAP_SYS_PTRACE, so it reads only processes of its own user: grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH", reader, self.euid)
	case self.capEff&(1<<capDACReadSearch) == 0:
		return fmt.Sprintf("%s (uid %d) lacks CAP_DAC_READ_SEARCH, which /proc/<pid>/mem of other users needs: grant it", reader, self.euid)
	}
	return ""
}

func explainDenied(reader string, self, target credentials, yama int) string {
	ptrace := self.capEff&(1<<capSysPtrace) != 0
	dac := self.capEff&(1<<capDACReadSearch) != 0
	otherUser := target.ok && self.ok && target.uid != self.euid
	switch {
	case yama == 3:
		return "kernel.yama.ptrace_scope is 3: no process may read another's memory, whatever its privileges; set it to 2 or lower"
	case !ptrace && yama == 2:
		return fmt.Sprintf("kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may read other processes, and %s (uid %d) lacks it: grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH", reader, self.euid)
	case !ptrace && otherUser:
		return fmt.Sprintf("%s runs as uid %d without CAP_SYS_PTRACE and the process belongs to uid %d: grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (or run as root)", reader, self.euid, target.uid)
	case !ptrace && target.capPrm&^self.capEff != 0:
		return fmt.Sprintf("the process holds capabilities %s lacks (%s): grant %s CAP_SYS_PTRACE", reader, capList(target.capPrm&^self.capEff), reader)
	case !ptrace:
		return fmt.Sprintf("%s lacks CAP_SYS_PTRACE (the process may be non-dumpable, or Yama restricts reads to descendants): grant CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH", reader)
	case !dac && otherUser:
		return fmt.Sprintf("%s has CAP_SYS_PTRACE but not CAP_DAC_READ_SEARCH, which /proc/<pid>/mem of uid %d needs: grant it", reader, target.uid)
	}
	msg := fmt.Sprintf("refused by the kernel although %s (uid %d) has CAP_SYS_PTRACE", reader, self.euid)
	if extra := target.capPrm &^ self.capBnd; target.ok && extra != 0 {
		msg += fmt.Sprintf("; the process holds capabilities outside %s's bounding set (%s)", reader, capList(extra))
	}
	if self.seccomp == 2 {
		msg += fmt.Sprintf("; %s runs under a seccomp filter", reader)
	}
	return msg + fmt.Sprintf(": typical of a VM's or sandbox's own init, a process of a more privileged user namespace, or a security module's policy; no setting of %s changes it", reader) + unchangeable
}
