// Command ctxdump lists the OpenTelemetry process contexts published on this
// host, with the tracker the collector components use: a readable table by
// default, one JSON object per publishing process with -json. Processes it
// cannot read are reported on stderr with their pid and why. It is the
// quickest way to check what a host publishes and whether the collector's
// user has the permissions it needs.
//
//	ctxdump [-root /hostfs] [-pid N] [-json] [-watch]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
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
}

func parse(args []string, errOut io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ctxdump", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.root, "root", "/", "root path whose proc directory is read (e.g. /hostfs)")
	fs.IntVar(&o.pid, "pid", 0, "show only this pid")
	fs.BoolVar(&o.json, "json", false, "one JSON object per line instead of a table")
	fs.BoolVar(&o.watch, "watch", false, "after the listing, print every change until interrupted")
	fs.DurationVar(&o.timeout, "read-timeout", time.Second, "deadline of the reads of one process")
	err := fs.Parse(args)
	return o, err
}

// entry is one publishing process, as -json prints it.
type entry struct {
	Event        string         `json:"event,omitempty"` // -watch: published, updated, ended
	PID          int            `json:"pid"`
	CreationTime string         `json:"process.creation.time,omitempty"`
	Executable   string         `json:"process.executable.name,omitempty"`
	ContainerID  string         `json:"container.id,omitempty"`
	PublishedAt  uint64         `json:"published_at_ns"`
	Resource     map[string]any `json:"resource"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

func entryOf(p *tracker.Process) entry {
	return entry{
		PID:          p.PID,
		CreationTime: p.Identity.CreationTimeString(),
		Executable:   p.Identity.ExecutableName,
		ContainerID:  p.Identity.ContainerID,
		PublishedAt:  p.Context.PublishedAt,
		Resource:     p.Context.Resource.AsRaw(),
		Attributes:   p.Context.Attributes.AsRaw(),
	}
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	o, err := parse(args, errOut)
	if err != nil {
		return err
	}
	cfg := tracker.DefaultConfig()
	cfg.RootPath = o.root
	cfg.CollectionInterval = 2 * time.Second
	cfg.RescanInterval = 2 * time.Second
	cfg.RescanMaxInterval = 2 * time.Second
	cfg.ReadTimeout = o.timeout
	cfg.WarningInterval = time.Hour
	// The tracker's warnings (permission denied, stalled reads) name the
	// processes and say why: they are what ctxdump reports on stderr.
	logger := zap.New(zapcore.NewCore(
		zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.CapitalLevelEncoder}),
		zapcore.AddSync(errOut), zapcore.WarnLevel))
	tr, err := tracker.Open(cfg, logger)
	if err != nil {
		return err
	}
	tr.Start()
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Stop(stopCtx)
	}()
	var changes inbox
	unsubscribe, err := tr.Subscribe(ctx, changes.add)
	if err != nil {
		return err
	}
	defer unsubscribe()
	if err := tr.Rescan(ctx); err != nil {
		return err
	}
	changes.take() // the listing below shows it all
	var list []*tracker.Process
	tr.Snapshot().All(func(p *tracker.Process) bool {
		if p.Live() && (o.pid == 0 || p.PID == o.pid) {
			list = append(list, p)
		}
		return true
	})
	slices.SortFunc(list, func(a, b *tracker.Process) int { return a.PID - b.PID })
	if err := print(out, o, "", list); err != nil {
		return err
	}
	if o.pid != 0 && len(list) == 0 {
		_, outcome := tr.Snapshot().Lookup(o.pid)
		fmt.Fprintf(errOut, "ctxdump: pid %d publishes no context (%s)\n", o.pid, outcome)
	}
	// Wait for the tracker's report of what it could not read.
	if err := tr.Idle(ctx); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes.wait():
		}
		for _, c := range changes.take() {
			if o.pid != 0 && c.Process.PID != o.pid {
				continue
			}
			event := map[tracker.ChangeKind]string{tracker.Published: "published", tracker.Updated: "updated"}[c.Kind]
			if c.Kind.Ends() {
				event = "ended"
			}
			if err := print(out, o, event, []*tracker.Process{c.Process}); err != nil {
				return err
			}
		}
	}
}

// print writes publications as a table or JSON lines; event, when set,
// says what happened to them.
func print(out io.Writer, o options, event string, list []*tracker.Process) error {
	if o.json {
		enc := json.NewEncoder(out)
		for _, p := range list {
			e := entryOf(p)
			e.Event = event
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	if len(list) == 0 {
		if event == "" {
			fmt.Fprintln(out, "No process publishes a context.")
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if event == "" {
		fmt.Fprintln(w, "PID\tEXECUTABLE\tSERVICE\tCONTAINER\tRESOURCE ATTRIBUTES")
	}
	for _, p := range list {
		name, _ := p.Context.Resource.Get("service.name")
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
		prefix := ""
		if event != "" {
			prefix = event + " "
		}
		fmt.Fprintf(w, "%s%d\t%s\t%s\t%s\t%s\n", prefix, p.PID, p.Identity.ExecutableName, name.AsString(), dash(container), strings.Join(attrs, " "))
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// inbox keeps the tracker's changes until the watch loop takes them.
type inbox struct {
	mu      sync.Mutex
	changes []tracker.Change
	c       chan struct{}
}

func (b *inbox) add(changes []tracker.Change, _ *tracker.ScanStats) {
	b.mu.Lock()
	b.changes = append(b.changes, changes...)
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

func (b *inbox) take() []tracker.Change {
	b.mu.Lock()
	defer b.mu.Unlock()
	changes := b.changes
	b.changes = nil
	return changes
}
