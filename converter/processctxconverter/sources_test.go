// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxconverter

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// journalctl reads this machine's journal (by /etc/machine-id) in
// /var/log/journal or /run/log/journal, under root_path (its chroot).
func TestNoJournal(t *testing.T) {
	root := t.TempDir()
	settings := map[string]any{"root_path": root}
	assert.Contains(t, noJournal(settings), "no /etc/machine-id")

	write(t, filepath.Join(root, "etc/machine-id"), "0123abcd\n")
	assert.Contains(t, noJournal(settings), "no journal of this machine in /var/log/journal or /run/log/journal")

	write(t, filepath.Join(root, "var/log/journal/ffff0000/system.journal"), "")
	assert.Contains(t, noJournal(settings), "no journal of this machine", "another machine's")
	assert.Empty(t, noJournal(map[string]any{"root_path": root, "merge": true}), "merge reads every machine's")

	write(t, filepath.Join(root, "run/log/journal/0123abcd/system.journal"), "")
	assert.Empty(t, noJournal(settings))

	assert.Contains(t, noJournal(map[string]any{"root_path": root, "directory": "/srv/journal"}), "no journal files in its directory /srv/journal")
	write(t, filepath.Join(root, "srv/journal/remote-x.journal"), "")
	assert.Empty(t, noJournal(map[string]any{"root_path": root, "directory": "/srv/journal"}))

	assert.Contains(t, noJournal(map[string]any{"root_path": root, "files": []any{"/a.journal"}}), "none of its files (/a.journal) exists")
	assert.Empty(t, noJournal(map[string]any{"root_path": root, "files": []any{"/a.journal", "/srv/journal/remote-x.journal"}}))
}

// file_log reads the files include matches: none now is said, with where
// to point it.
func TestNoFiles(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	assert.Empty(t, noFiles(map[string]any{}), "no include: the receiver refuses it")
	assert.Contains(t, noFiles(map[string]any{"include": log}), "include matches no file ("+log+")")
	assert.Contains(t, noFiles(map[string]any{"include": []any{filepath.Join(dir, "*.log"), "/nowhere/x"}}), "FILELOG_INCLUDE")
	write(t, log, "")
	assert.Empty(t, noFiles(map[string]any{"include": log}))
	assert.Empty(t, noFiles(map[string]any{"include": []any{"/nowhere/x", filepath.Join(dir, "*.log")}}))
	assert.Empty(t, noFiles(map[string]any{"include": []any{"/nowhere/**/*.log"}}), "** cannot be told of")
}

// The warning comes from Convert, once per receiver the pipelines use,
// named by its ID; a receiver no pipeline uses is not started, nor said.
func TestConvertWarnsOfEmptySources(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	conv := NewFactory().Create(confmap.ConverterSettings{Logger: zap.New(core)})
	missing := filepath.Join(t.TempDir(), "missing.log")
	conf := confmap.NewFromStringMap(map[string]any{
		"receivers": map[string]any{
			"file_log/app": map[string]any{"include": []any{missing}},
			"file_log/off": map[string]any{"include": []any{missing}},
		},
		"service": map[string]any{"pipelines": map[string]any{
			"logs":   map[string]any{"receivers": []any{"file_log/app"}, "exporters": []any{"debug"}},
			"logs/2": map[string]any{"receivers": []any{"file_log/app"}, "exporters": []any{"debug"}},
		}},
	})
	require.NoError(t, conv.Convert(context.Background(), conf))
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, "receivers::file_log/app has nothing to read: include matches no file ("+missing+"); "+
		"it reads the files that appear later. Point it at the files your applications write (FILELOG_INCLUDE in examples/filelog.yaml); "+
		"where only journald keeps the logs, use examples/journald.yaml", logs.All()[0].Message)
}
