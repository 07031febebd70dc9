// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// block is a fenced code block of a Markdown file.
type block struct {
	file   string // relative to the repository's root
	line   int    // of its opening fence
	lang   string // the first word of the fence's info string
	marker string // the HTML comment on the nearest line above it that is not blank, "" when none
	text   string // its lines, without the fence's indentation
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// shellLangs are the languages of the blocks a reader runs in a shell.
var shellLangs = []string{"sh", "bash", "shell", "console"}

var (
	fenceRe  = regexp.MustCompile("^([ \t]*)(```+|~~~+)[ \t]*([^ \t`]*)")
	markerRe = regexp.MustCompile(`^<!--\s*(?:doc-test:\s*(Test\w+)|not run here:\s*(\S.*?))\s*-->$`)
)

// skipped are the directories no Markdown of this repository's is in:
// builds, and tools/mdatagen-src, a copy of the collector's mdatagen.
var skipped = []string{".git", "_build", "_build-custom", "_image", "bin", "tools/mdatagen-src"}

// markdownFiles returns the Markdown files of the repository, relative to
// its root, sorted.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	root := pubtest.RepoRoot()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && slices.Contains(skipped, filepath.ToSlash(rel)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(files)
	require.Contains(t, files, "README.md")
	return files
}

// readLines returns the lines of the repository's file rel.
func readLines(t *testing.T, rel string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(pubtest.RepoRoot(), rel))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.NoError(t, sc.Err())
	return lines
}

// parseBlocks returns the fenced blocks of the Markdown file rel, and its
// lines outside them (those inside are "", so that line numbers hold).
func parseBlocks(t *testing.T, rel string) (blocks []block, prose []string) {
	t.Helper()
	lines := readLines(t, rel)
	prose = slices.Clone(lines)
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := m[1], m[2]
		b := block{file: rel, line: i + 1, lang: m[3]}
		for j := i - 1; j >= 0; j-- {
			if s := strings.TrimSpace(lines[j]); s != "" {
				if strings.HasPrefix(s, "<!--") {
					b.marker = s
				}
				break
			}
		}
		var text []string
		prose[i] = ""
		for i++; i < len(lines); i++ {
			prose[i] = ""
			if s := strings.TrimSpace(lines[i]); strings.HasPrefix(s, fence) && strings.Trim(s, fence[:1]) == "" {
				break
			}
			text = append(text, strings.TrimPrefix(lines[i], indent))
		}
		b.text = strings.Join(text, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks, prose
}

// docTests returns the names of this package's tests.
func docTests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	var names []string
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}

// Every shell block of the repository's Markdown (docs/history aside: it
// records what was run then) is run by a test of this package, which
// exists, or says why it is not run here; every fenced block says its
// language, so that no shell block goes unseen.
func TestShellBlocksAreRunOrMarked(t *testing.T) {
	tests := docTests(t)
	require.Contains(t, tests, "TestQuickStart", "the package's own tests are found")
	checked := 0
	for _, file := range markdownFiles(t) {
		if strings.HasPrefix(file, "docs/history/") {
			continue
		}
		blocks, _ := parseBlocks(t, file)
		for _, b := range blocks {
			if b.lang == "" {
				t.Errorf("%s: a fenced block without a language: say what it holds (```sh, ```yaml, ```text, …)", b)
				continue
			}
			if !slices.Contains(shellLangs, b.lang) {
				continue
			}
			checked++
			m := markerRe.FindStringSubmatch(b.marker)
			switch {
			case m == nil:
				t.Errorf("%s: a shell block that no test runs: mark it <!-- doc-test: TestName --> (a test of test/docs that runs it) "+
					"or <!-- not run here: why --> on the line before it", b)
			case m[1] != "" && !slices.Contains(tests, m[1]):
				t.Errorf("%s: marked as run by %s, which test/docs does not have", b, m[1])
			}
		}
	}
	assert.Greater(t, checked, 10, "shell blocks checked")
}

// markedBlocks returns the shell blocks of file marked as run by test.
func markedBlocks(t *testing.T, file, test string) []string {
	t.Helper()
	blocks, _ := parseBlocks(t, file)
	var texts []string
	for _, b := range blocks {
		if m := markerRe.FindStringSubmatch(b.marker); m != nil && m[1] == test && slices.Contains(shellLangs, b.lang) {
			texts = append(texts, b.text)
		}
	}
	return texts
}

// docBlocks returns the n shell blocks of file marked as run by the
// calling test, in order.
func docBlocks(t *testing.T, file string, n int) []string {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	texts := markedBlocks(t, file, name)
	require.Len(t, texts, n, "%s: the shell blocks marked <!-- doc-test: %s -->", file, name)
	return texts
}

// docSays fails unless the Markdown file says each of texts, verbatim:
// what a test asserts of a block's output is what the doc says to expect.
func docSays(t *testing.T, file string, texts ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pubtest.RepoRoot(), file))
	require.NoError(t, err)
	for _, s := range texts {
		assert.Contains(t, string(b), s, "%s says what to expect", file)
	}
}

// A link of a file: where it is, its target, and the directory a
// relative target is relative to (the file's own; the root for a link to
// this repository on GitHub).
type link struct {
	file   string
	line   int
	target string
	dir    string
}

var (
	inlineLinkRe = regexp.MustCompile(`\]\(([^()\s]+(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\)`)
	refLinkRe    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	codeSpanRe   = regexp.MustCompile("`+[^`]*`+")
	headingRe    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchorRe = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	schemeRe     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// thisRepo is how code and docs link to this repository's files on
	// GitHub (e.g. the start-up line's link to docs/discovery.md): checked
	// against the work tree.
	thisRepoRe = regexp.MustCompile(`https://github\.com/processctx/otelcol-processctx/(?:blob|tree)/main/([^\s"'<>)\]]+)`)
)

// links returns the links of the Markdown file rel: inline ones and
// reference definitions, outside code blocks and code spans.
func links(t *testing.T, rel string) []link {
	t.Helper()
	_, prose := parseBlocks(t, rel)
	var out []link
	for i, line := range prose {
		line = codeSpanRe.ReplaceAllString(line, "")
		for _, m := range inlineLinkRe.FindAllStringSubmatch(line, -1) {
			out = append(out, link{rel, i + 1, m[1], filepath.Dir(rel)})
		}
		if m := refLinkRe.FindStringSubmatch(line); m != nil {
			out = append(out, link{rel, i + 1, m[1], filepath.Dir(rel)})
		}
	}
	return out
}

// anchors returns the anchors of the Markdown file rel: its headings'
// GitHub slugs (a repeated one numbered -1, -2, …) and HTML anchors.
func anchors(t *testing.T, rel string) []string {
	t.Helper()
	_, prose := parseBlocks(t, rel)
	var out []string
	seen := map[string]int{}
	for _, line := range prose {
		if m := headingRe.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				out = append(out, fmt.Sprintf("%s-%d", s, n))
			} else {
				out = append(out, s)
			}
			seen[s]++
		}
		for _, m := range htmlAnchorRe.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

var linkTextRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor of a heading: its text lower-cased, links by
// their text, spaces made hyphens, every other character but letters,
// digits, hyphens and underscores dropped.
func slug(heading string) string {
	heading = linkTextRe.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Extension `process_context` (the tracker)":          "extension-process_context-the-tracker",
		"What a publication adds: by what a key describes":   "what-a-publication-adds-by-what-a-key-describes",
		"The collector's own metrics":                        "the-collectors-own-metrics",
		"otelcol-processctx — OpenTelemetry process context": "otelcol-processctx--opentelemetry-process-context",
		"See [the README](../README.md) now":                 "see-the-readme-now",
	} {
		assert.Equal(t, want, slug(heading), heading)
	}
}

// resolve checks the target of l, relative to its file: the file or
// directory exists and, for a Markdown file, so does the anchor.
func resolve(t *testing.T, l link, anchorsOf func(string) []string) {
	t.Helper()
	path, anchor, _ := strings.Cut(l.target, "#")
	target := l.file
	if path != "" {
		target = filepath.ToSlash(filepath.Clean(filepath.Join(l.dir, path)))
	}
	if strings.HasPrefix(target, "../") {
		t.Errorf("%s:%d: %s leaves the repository", l.file, l.line, l.target)
		return
	}
	if _, err := os.Stat(filepath.Join(pubtest.RepoRoot(), target)); err != nil {
		t.Errorf("%s:%d: %s: no such file or directory (%s)", l.file, l.line, l.target, target)
		return
	}
	if anchor != "" && strings.HasSuffix(target, ".md") && !slices.Contains(anchorsOf(target), anchor) {
		t.Errorf("%s:%d: %s: %s has no heading #%s", l.file, l.line, l.target, target, anchor)
	}
}

// Every relative link of every Markdown file resolves, to a file or a
// directory of the repository and, in a Markdown file, to a heading; so do
// the links to this repository's files on GitHub, in Markdown and in Go
// code (the start-up line's link to docs/discovery.md).
func TestLinksResolve(t *testing.T) {
	cache := map[string][]string{}
	anchorsOf := func(rel string) []string {
		if _, ok := cache[rel]; !ok {
			cache[rel] = anchors(t, rel)
		}
		return cache[rel]
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		for _, l := range links(t, file) {
			l.target = strings.TrimSuffix(strings.TrimPrefix(l.target, "<"), ">") // <target>; <> is none
			switch {
			case thisRepoRe.MatchString(l.target):
				l.target, l.dir = thisRepoRe.FindStringSubmatch(l.target)[1], "."
			case schemeRe.MatchString(l.target) || l.target == "":
				continue
			}
			checked++
			resolve(t, l, anchorsOf)
		}
	}
	assert.Greater(t, checked, 100, "relative links checked")

	// Go code linking to this repository's files.
	root := pubtest.RepoRoot()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && slices.Contains(skipped, filepath.ToSlash(rel)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		for i, line := range readLines(t, rel) {
			for _, m := range thisRepoRe.FindAllStringSubmatch(line, -1) {
				resolve(t, link{rel, i + 1, m[1], "."}, anchorsOf)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// docs/README.md links every page of docs/: the index says what each
// answers.
func TestDocsIndexListsEveryPage(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range links(t, "docs/README.md") {
		path, _, _ := strings.Cut(l.target, "#")
		linked[filepath.ToSlash(filepath.Clean(filepath.Join("docs", path)))] = true
	}
	pages := 0
	for _, file := range markdownFiles(t) {
		if strings.HasPrefix(file, "docs/") && file != "docs/README.md" {
			pages++
			assert.True(t, linked[file], "docs/README.md does not list %s", file)
		}
	}
	assert.Greater(t, pages, 5)
}
