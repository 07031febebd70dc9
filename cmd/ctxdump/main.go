// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Command ctxdump lists the OpenTelemetry process contexts published on this
// host and, for processes that publish none, the service their
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name (the SOURCE column
// says which), with the tracker the collector components use: a readable
// table by default, one JSON object per process with -json. The processes
// it cannot read are listed too, with why (in JSON, with "outcome" and
// "reason" instead of a resource). It is the quickest way to check what a host
// publishes and whether the collector's user has the permissions it needs.
//
//	ctxdump [-root /hostfs] [-pid N] [-json] [-watch] [-read-timeout 1s]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

const description = `ctxdump lists the OpenTelemetry process contexts published on this host
(the resource each process publishes, such as service.name) and, for the
processes that publish none, what their OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES say (source: environment; nothing else of an
environment is read or printed), read with the process tracker of the
collector's process_context components, and the processes it cannot read,
with why. With the same privileges, the collector
reads what ctxdump reads.

Reading other processes needs root, or CAP_SYS_PTRACE and
CAP_DAC_READ_SEARCH: without them ctxdump reads only the processes of its
own user. In a container, mount the host's /proc (e.g. at /hostfs/proc)
and pass -root /hostfs.

`

const synopsis = "Usage: ctxdump [-root /hostfs] [-pid N] [-json] [-watch] [-read-timeout 1s]"

// errUsage: the command line is wrong; what and the usage are printed.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "ctxdump:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	root    string
	pid     int
	json    bool
	watch   bool
	timeout time.Duration
	help    bool
}

// parse parses args; -h prints the description and the flags to out, a
// wrong command line what is wrong and the flags to errOut (errUsage).
func parse(args []string, out, errOut io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ctxdump", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // printed below, to the right writer
	fs.StringVar(&o.root, "root", "/", "root path whose proc directory is read (e.g. /hostfs)")
	fs.IntVar(&o.pid, "pid", 0, "show only this pid")
	fs.BoolVar(&o.json, "json", false, "one JSON object per line instead of a table")
	fs.BoolVar(&o.watch, "watch", false, "after the listing, print every change, with its time, until interrupted")
	fs.DurationVar(&o.timeout, "read-timeout", time.Second, "deadline of the reads of one process")
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		o.help = true
		fmt.Fprint(out, description)
		printFlags(out, fs)
		return o, nil
	case err != nil:
		fmt.Fprintln(errOut, "ctxdump:", err)
		printFlags(errOut, fs)
		return o, errUsage
	}
	return o, nil
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nFlags:\n", synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// entry is one publishing process, as -json prints it.
type entry struct {
	Time         time.Time      `json:"time,omitzero"`   // -watch: when the change was seen
	Event        string         `json:"event,omitempty"` // -watch: published, updated, ended
	PID          int            `json:"pid"`
	CreationTime string         `json:"process.creation.time,omitempty"`
	Executable   string         `json:"process.executable.name,omitempty"`
	ContainerID  string         `json:"container.id,omitempty"`
	Source       string         `json:"source"` // context, or environment
	PublishedAt  uint64         `json:"published_at_ns"`
	Resource     map[string]any `json:"resource"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

func entryOf(p *tracker.Publication) entry {
	return entry{
		PID:          p.PID,
		CreationTime: p.Identity.CreationTimeString(),
		Executable:   p.Identity.ExecutableName,
		ContainerID:  p.Identity.ContainerID,
		Source:       p.Source.String(),
		PublishedAt:  p.Context.PublishedAt,
		Resource:     p.Context.Resource.AsRaw(),
		Attributes:   p.Context.Attributes.AsRaw(),
	}
}

// failure is a process that cannot be read, as -json prints it.
type failure struct {
	PID        int    `json:"pid"`
	Executable string `json:"process.executable.name,omitempty"`
	Outcome    string `json:"outcome"` // the tracker's name of it
	Reason     string `json:"reason"`
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	o, err := parse(args, out, errOut)
	if err != nil || o.help {
		return err
	}
	if err := exists(o); err != nil {
		return err
	}
	tr, err := open(o, errOut)
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Stop(stopCtx)
	}()
	var changes inbox
	unsubscribe, err := tr.Subscribe(ctx, changes.add)
	if err != nil {
		return fmt.Errorf("subscribe to the tracker: %w", err)
	}
	defer unsubscribe()
	if err := tr.Rescan(ctx); err != nil {
		return fmt.Errorf("scan the host: %w", err)
	}
	changes.take() // the listing below shows it all
	if err := readDue(ctx, tr, o); err != nil {
		return err
	}
	if err := list(tr, o, out, errOut); err != nil {
		return err
	}
	// Wait for the tracker's report of what it could not read.
	if err := tr.WaitIdle(ctx); err != nil {
		return fmt.Errorf("wait for the tracker: %w", err)
	}
	if !o.watch {
		return nil
	}
	return watch(ctx, o, &changes, out)
}

// open starts a tracker of the host whose warnings go to errOut and speak
// of ctxdump.
func open(o options, errOut io.Writer) (*tracker.Tracker, error) {
	cfg := hostopen.DefaultConfig()
	cfg.RootPath = o.root
	cfg.CollectionInterval = 2 * time.Second
	cfg.RescanInterval = 2 * time.Second
	cfg.RescanMaxInterval = 2 * time.Second
	cfg.ReadTimeout = o.timeout
	cfg.WarningInterval = time.Hour
	cfg.ReaderName = "ctxdump"
	// The tracker's warnings (stalled reads, permissions a capability
	// would give) say when the next one comes: nothing to a command's
	// user.
	logger := zap.New(withoutField{zapcore.NewCore(
		zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.CapitalLevelEncoder}),
		zapcore.AddSync(errOut), zapcore.WarnLevel), "next_warning_in"})
	tr, err := hostopen.Open(cfg, logger)
	if err != nil {
		return nil, err
	}
	tr.Start()
	return tr, nil
}

// readDue reads, and waits for, the processes to show whose read is due
// (tracker.AnswerUnknown): one that exec'd while the tracker started, say,
// known from its exec event and not read yet.
func readDue(ctx context.Context, tr *tracker.Tracker, o options) error {
	pids, err := pidsOf(o)
	if err != nil {
		return err
	}
	snap := tr.Snapshot()
	due := slices.DeleteFunc(pids, func(pid int) bool {
		p, outcome := snap.Lookup(pid)
		return p != nil || outcome != tracker.AnswerUnknown
	})
	// Each read has its deadline: as long as one, and a little more.
	within := o.timeout + time.Second
	done := tr.Probe(due, within)
	if done == nil {
		return nil
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// list prints the publications, then the processes that cannot be read.
func list(tr *tracker.Tracker, o options, out, errOut io.Writer) error {
	snap := tr.Snapshot()
	var pubs []*tracker.Publication
	snap.All(func(p *tracker.Publication) bool {
		if p.Live() && (o.pid == 0 || p.PID == o.pid) {
			pubs = append(pubs, p)
		}
		return true
	})
	slices.SortFunc(pubs, func(a, b *tracker.Publication) int { return a.PID - b.PID })
	failures, err := unreadable(tr, snap, o)
	if err != nil {
		return err
	}
	if o.json {
		err = printJSON(out, pubs, failures)
	} else if err = printTable(out, pubs, o.pid == 0); err == nil {
		err = printFailures(out, failures, len(pubs) > 0 || o.pid == 0)
	}
	if err != nil {
		return err
	}
	if o.pid != 0 && len(pubs) == 0 && len(failures) == 0 {
		if _, outcome := snap.Lookup(o.pid); outcome == tracker.AnswerGone {
			return fmt.Errorf("pid %d: no such process (it exited)", o.pid)
		}
		fmt.Fprintf(errOut, "ctxdump: pid %d publishes no context and names no service in its environment\n", o.pid)
	}
	return nil
}

// exists fails when -pid names no process of the host.
func exists(o options) error {
	if o.pid == 0 {
		return nil
	}
	fs, err := procfs.NewFS(o.root)
	if err != nil {
		return fmt.Errorf("root %q: %w", o.root, err)
	}
	if _, err := os.Stat(filepath.Join(fs.ProcDir(), strconv.Itoa(o.pid))); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pid %d: no such process", o.pid)
	}
	return nil
}

// unreadable returns the processes whose last read failed, by pid, with
// why.
func unreadable(tr *tracker.Tracker, snap *tracker.Snapshot, o options) ([]failure, error) {
	pids, err := pidsOf(o)
	if err != nil {
		return nil, err
	}
	var failures []failure
	for _, pid := range pids {
		p, outcome := snap.Lookup(pid)
		if p != nil {
			continue
		}
		if why := reason(tr.Host(), pid, outcome, o.timeout); why != "" {
			failures = append(failures, failure{PID: pid, Executable: tr.Host().Executable(pid), Outcome: outcome.String(), Reason: why})
		}
	}
	return failures, nil
}

// pidsOf returns the pids to show, in order: -pid's, or the host's.
func pidsOf(o options) ([]int, error) {
	if o.pid != 0 {
		return []int{o.pid}, nil
	}
	fs, err := procfs.NewFS(o.root)
	if err != nil {
		return nil, fmt.Errorf("root %q: %w", o.root, err)
	}
	var lister procfs.PidLister
	entries, err := lister.List(fs)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		pids = append(pids, e.Pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// reason says why pid, whose lookup answers answer, cannot be read; "" when
// that is no failure (no context, gone, not seen).
func reason(h tracker.Host, pid int, answer tracker.Answer, timeout time.Duration) string {
	switch tracker.Outcome(answer) {
	case tracker.OutcomePermissionDenied:
		return h.ExplainDenied(pid)
	case tracker.OutcomeStalled:
		return fmt.Sprintf("its memory did not answer a read within %s (-read-timeout)", timeout)
	case tracker.OutcomeInvalid:
		return "it publishes something that is not a valid context"
	case tracker.OutcomeTooLarge:
		return "its context exceeds the size limit"
	case tracker.OutcomeTorn:
		return "its context was being updated on every read"
	case tracker.OutcomeError:
		return "a file of its procfs directory did not parse"
	}
	return ""
}

func printJSON(out io.Writer, pubs []*tracker.Publication, failures []failure) error {
	enc := json.NewEncoder(out)
	for _, p := range pubs {
		if err := enc.Encode(entryOf(p)); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	for _, f := range failures {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

// printTable prints the publications; all says the host's were asked
// for, which none is news of (list says so of one pid).
func printTable(out io.Writer, pubs []*tracker.Publication, all bool) error {
	if len(pubs) == 0 {
		if all {
			fmt.Fprintln(out, "No process publishes a context or names its service in its environment.")
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PID\tEXECUTABLE\tSERVICE\tSOURCE\tCONTAINER\tRESOURCE ATTRIBUTES")
	for _, p := range pubs {
		fmt.Fprintln(w, strings.Join(columns(p), "\t"))
	}
	return w.Flush()
}

// printFailures prints the processes that cannot be read, after a blank
// line when below the table (below); a reason the row above gives already
// is not repeated.
func printFailures(out io.Writer, failures []failure, below bool) error {
	if len(failures) == 0 {
		return nil
	}
	if below {
		fmt.Fprintln(out)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PID\tEXECUTABLE\tOUTCOME\tWHY")
	for i, f := range failures {
		why := f.Reason
		if i > 0 && why == failures[i-1].Reason {
			why = "(as above)"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", f.PID, f.Executable, f.Outcome, why)
	}
	return w.Flush()
}

// columns are an identity's cells in the table: pid, executable, service,
// source (context, or environment), container, the other resource
// attributes.
func columns(p *tracker.Publication) []string {
	var name string
	if v, ok := p.Context.Resource.Get("service.name"); ok {
		name = v.AsString()
	}
	var attrs []string
	for k, v := range p.Context.Resource.All() {
		if k != "service.name" {
			attrs = append(attrs, k+"="+v.AsString())
		}
	}
	container := p.Identity.ContainerID
	if len(container) > 12 {
		container = container[:12]
	}
	return []string{strconv.Itoa(p.PID), dash(p.Identity.ExecutableName), dash(name), p.Source.String(), dash(container), strings.Join(attrs, " ")}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// watch prints every change until ctx ends.
func watch(ctx context.Context, o options, changes *inbox, out io.Writer) error {
	enc := json.NewEncoder(out)
	table := watchTable{out: out}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes.wait():
		}
		for _, c := range changes.take() {
			if o.pid != 0 && c.Publication.PID != o.pid {
				continue
			}
			event := map[tracker.ChangeKind]string{tracker.Published: "published", tracker.Updated: "updated"}[c.Kind]
			if c.Kind.Ends() {
				event = "ended"
			}
			var err error
			if o.json {
				e := entryOf(c.Publication)
				e.Time, e.Event = c.at, event
				err = enc.Encode(e)
			} else {
				err = table.row(append([]string{c.at.Format("15:04:05.000"), event}, columns(c.Publication)...))
			}
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
	}
}

// watchTable prints rows whose columns line up with the header above them:
// a value wider than its column widens it, and the header is printed
// again.
type watchTable struct {
	out    io.Writer
	widths []int // of every column but the last; nil until the header is out
}

func (t *watchTable) row(cells []string) error {
	wider := t.widths == nil
	if wider {
		t.widths = []int{len("15:04:05.000"), len("published"), len("4194304"), 15, 15, len("environment"), 12}
	}
	for i, w := range t.widths {
		if n := utf8.RuneCountInString(cells[i]); n > w {
			t.widths[i], wider = n, true
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		var l strings.Builder
		for i, w := range t.widths {
			l.WriteString(cells[i])
			l.WriteString(strings.Repeat(" ", w-utf8.RuneCountInString(cells[i])+2))
		}
		l.WriteString(cells[len(t.widths)])
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	if wider {
		line([]string{"TIME", "EVENT", "PID", "EXECUTABLE", "SERVICE", "SOURCE", "CONTAINER", "RESOURCE ATTRIBUTES"})
	}
	line(cells)
	_, err := io.WriteString(t.out, b.String())
	return err
}

// withoutField is a zap core that leaves out the field key.
type withoutField struct {
	zapcore.Core
	key string
}

func (c withoutField) With(fields []zapcore.Field) zapcore.Core {
	return withoutField{c.Core.With(c.drop(fields)), c.key}
}

func (c withoutField) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c withoutField) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return c.Core.Write(e, c.drop(fields))
}

func (c withoutField) drop(fields []zapcore.Field) []zapcore.Field {
	return slices.DeleteFunc(slices.Clone(fields), func(f zapcore.Field) bool { return f.Key == c.key })
}

// stamped is a change and when ctxdump was told of it.
type stamped struct {
	tracker.Change
	at time.Time
}

// inbox keeps the tracker's changes until the watch loop takes them.
type inbox struct {
	mu      sync.Mutex
	changes []stamped
	c       chan struct{}
}

func (b *inbox) add(changes []tracker.Change, _ *tracker.ScanStats) {
	now := time.Now()
	b.mu.Lock()
	for _, c := range changes {
		b.changes = append(b.changes, stamped{c, now})
	}
	c := b.signal()
	b.mu.Unlock()
	select {
	case c <- struct{}{}:
	default:
	}
}

func (b *inbox) signal() chan struct{} {
	if b.c == nil {
		b.c = make(chan struct{}, 1)
	}
	return b.c
}

func (b *inbox) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.signal()
}

func (b *inbox) take() []stamped {
	b.mu.Lock()
	defer b.mu.Unlock()
	changes := b.changes
	b.changes = nil
	return changes
}
