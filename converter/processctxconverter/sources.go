// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxconverter

// This file warns, at start, of the log receivers of the recipes
// (examples/journald.yaml, examples/filelog.yaml) whose source has nothing
// to read on this host: they start, and read nothing, without a word of
// their own. Only their configuration and the files it names are looked
// at, on the machine the collector resolves its configuration on.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// Where journald keeps a machine's journal: on disk, or in memory where
// it keeps none on disk.
var journalDirs = []string{"/var/log/journal", "/run/log/journal"}

// warnEmptySources logs a warning for each journald or file_log receiver
// of cfg's pipelines whose source finds nothing to read now.
func warnEmptySources(cfg map[string]any, logger *zap.Logger) {
	receivers, _ := cfg["receivers"].(map[string]any)
	for _, id := range pipelineReceivers(cfg) {
		settings, _ := receivers[id].(map[string]any)
		var why string
		switch typ, _, _ := strings.Cut(id, "/"); typ {
		case "journald":
			why = noJournal(settings)
		case "file_log", "filelog":
			why = noFiles(settings)
		}
		if why != "" {
			logger.Warn("receivers::"+id+" has nothing to read: "+why, zap.String("receiver", id))
		}
	}
}

// pipelineReceivers returns the receivers the pipelines of cfg use, in
// order, each once: the others are not started.
func pipelineReceivers(cfg map[string]any) []string {
	service, _ := cfg["service"].(map[string]any)
	pipelines, _ := service["pipelines"].(map[string]any)
	names := make([]string, 0, len(pipelines))
	for name := range pipelines {
		names = append(names, name)
	}
	slices.Sort(names)
	var ids []string
	for _, name := range names {
		pipeline, _ := pipelines[name].(map[string]any)
		list, _ := pipeline["receivers"].([]any)
		for _, v := range list {
			if id, ok := v.(string); ok && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// noJournal says why the journald receiver's journalctl finds no journal
// (its files, its directory, or this machine's journal in journalDirs,
// under its root_path), "" when it finds one.
func noJournal(settings map[string]any) string {
	root, _ := settings["root_path"].(string)
	if files := stringList(settings["files"]); len(files) > 0 {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(root, f)); err == nil {
				return ""
			}
		}
		return fmt.Sprintf("none of its files (%s) exists", strings.Join(files, ", "))
	}
	if dir, ok := settings["directory"].(string); ok && dir != "" {
		if anyMatch(filepath.Join(root, dir, "*.journal*"), filepath.Join(root, dir, "*", "*.journal*")) {
			return ""
		}
		return fmt.Sprintf("no journal files in its directory %s", dir)
	}
	// journalctl reads this machine's journal (by /etc/machine-id), or
	// every machine's with merge.
	machine := "*"
	if merge, _ := settings["merge"].(bool); !merge {
		id, err := os.ReadFile(filepath.Join(root, "/etc/machine-id"))
		if err != nil || strings.TrimSpace(string(id)) == "" {
			return "no /etc/machine-id, which says which journal is this machine's (in a container, mount the host's)"
		}
		machine = strings.TrimSpace(string(id)) + "*"
	}
	for _, dir := range journalDirs {
		if anyMatch(filepath.Join(root, dir, machine, "*.journal*")) {
			return ""
		}
	}
	return fmt.Sprintf("no journal of this machine in %s: journald keeps none here "+
		"(a container or a host without journald: read log files with examples/filelog.yaml; "+
		"a container on a host with journald: mount the host's /var/log, /run/log/journal and /etc/machine-id)",
		strings.Join(journalDirs, " or "))
}

// noFiles says why the file_log receiver reads no file (its include
// matches none now), "" when it matches one, or a pattern it cannot tell
// of (**, which filepath.Glob does not know).
func noFiles(settings map[string]any) string {
	include := stringList(settings["include"])
	if len(include) == 0 {
		return ""
	}
	denied := false
	for _, pattern := range include {
		if strings.Contains(pattern, "**") {
			return ""
		}
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			f, err := os.Open(m)
			if err == nil {
				_ = f.Close()
				return ""
			}
			denied = denied || os.IsPermission(err)
		}
	}
	if denied {
		return fmt.Sprintf("the files include matches (%s) cannot be read by the collector's user: "+
			"run it in their group (adm on Debian and Ubuntu) or as root", strings.Join(include, ", "))
	}
	return fmt.Sprintf("include matches no file (%s); it reads the files that appear later. "+
		"Point it at the files your applications write (FILELOG_INCLUDE in examples/filelog.yaml); "+
		"where only journald keeps the logs, use examples/journald.yaml", strings.Join(include, ", "))
}

// anyMatch reports whether a file matches one of the patterns.
func anyMatch(patterns ...string) bool {
	for _, p := range patterns {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			return true
		}
	}
	return false
}

// stringList returns v as a list of strings: a list, or one string.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
