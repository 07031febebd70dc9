// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package attrpolicy

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// docTableHeader starts the table of families in docs/configuration.md.
const docTableHeader = "| keys | family | example | default | why |"

// TestDocumentedTable walks the table of families in
// docs/configuration.md: each row's example key is of the row's family and
// gets the row's default, and the rows' key patterns are the prefixes of
// the families table, no more and no fewer, so that the documentation and
// the code cannot drift.
func TestDocumentedTable(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "configuration.md"))
	require.NoError(t, err)
	rows := tableRows(t, string(doc), docTableHeader)
	require.NotEmpty(t, rows, "no table %q", docTableHeader)

	documented := map[string]Family{}
	sawOther := false
	for _, row := range rows {
		require.Len(t, row, 5, "row %q", row)
		keys, family, example, def := row[0], row[1], unquote(row[2]), row[3]
		t.Run(example, func(t *testing.T) {
			assert.Equal(t, family, FamilyOf(example).String(), "family of %s", example)
			assert.Equal(t, def, Default().Published(example, pcommon.NewValueStr("x")).String(), "default of %s", example)
		})
		if keys == "any other key" {
			sawOther = true
			continue
		}
		pattern := unquote(strings.Fields(keys)[0])
		require.True(t, strings.HasSuffix(pattern, ".*"), "row %q: a pattern ending in .*", keys)
		documented[strings.TrimSuffix(pattern, "*")] = FamilyOf(example)
		assert.True(t, strings.HasPrefix(example, strings.TrimSuffix(pattern, "*")), "the example %s is one of %s", example, pattern)
	}
	assert.True(t, sawOther, "a row for every other key")
	inCode := map[string]Family{}
	for _, p := range families {
		inCode[p.prefix] = p.family
	}
	assert.Equal(t, inCode, documented, "the documented prefixes are the code's")
}

// tableRows returns the cells of the rows of the markdown table whose
// header line is header.
func tableRows(t *testing.T, doc, header string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	var rows [][]string
	for i, l := range lines {
		if strings.TrimSpace(l) != header {
			continue
		}
		require.Less(t, i+1, len(lines))
		require.True(t, strings.HasPrefix(lines[i+1], "|---"), "separator after %q", header)
		for _, r := range lines[i+2:] {
			if !strings.HasPrefix(r, "|") {
				break
			}
			var cells []string
			for _, c := range strings.Split(strings.Trim(strings.TrimSpace(r), "|"), " | ") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
		}
		break
	}
	return rows
}

// unquote removes a markdown code span's backquotes.
func unquote(s string) string { return strings.Trim(s, "`") }
