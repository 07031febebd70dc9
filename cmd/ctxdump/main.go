// Command ctxdump lists the OpenTelemetry process contexts published on this
// host, one JSON object per publishing process, with the reader the
// collector components use. It is the quickest way to check what a host
// publishes and whether the reader has the permissions it needs.
//
//	ctxdump [-root /hostfs] [-pid N] [-watch 2s]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procmem"
)

type entry struct {
	PID          int            `json:"pid"`
	CreationTime string         `json:"process.creation.time,omitempty"`
	Executable   string         `json:"process.executable.name,omitempty"`
	ContainerID  string         `json:"container.id,omitempty"`
	Mapping      string         `json:"mapping"`
	PublishedAt  uint64         `json:"published_at_ns"`
	Resource     map[string]any `json:"resource"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

func main() {
	root := flag.String("root", "/", "root path whose proc directory is read (e.g. /hostfs)")
	pid := flag.Int("pid", 0, "read only this pid")
	watch := flag.Duration("watch", 0, "scan again at this interval until interrupted (0 = once)")
	flag.Parse()

	fs, err := procmem.NewFS(*root)
	if err != nil {
		fatal(err)
	}
	reader, err := procmem.NewReader(fs, procmem.DefaultLimits())
	if err != nil {
		fatal(err)
	}
	ids := procmem.NewIdentityReader(fs)
	seen := map[int]uint64{}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	for {
		if err := scan(os.Stdout, os.Stderr, reader, ids, *pid, seen, *watch > 0); err != nil {
			fatal(err)
		}
		if *watch <= 0 {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(*watch):
		}
	}
}

// scan prints every context; in watch mode only new or changed ones.
func scan(out, errOut io.Writer, reader *procmem.Reader, ids *procmem.IdentityReader, only int, seen map[int]uint64, watching bool) error {
	pids, err := listPids(reader.FS(), only)
	if err != nil {
		return err
	}
	denied := 0
	enc := json.NewEncoder(out)
	for _, pid := range pids {
		ctx, m, err := reader.Read(pid)
		switch {
		case errors.Is(err, procmem.ErrPermissionDenied):
			denied++
			continue
		case errors.Is(err, procmem.ErrNoContext), errors.Is(err, procmem.ErrProcessGone):
			continue
		case err != nil:
			fmt.Fprintln(errOut, "ctxdump:", err)
			continue
		}
		if watching && seen[pid] == ctx.PublishedAt {
			continue
		}
		seen[pid] = ctx.PublishedAt
		e := entry{PID: pid, Mapping: m.Name, PublishedAt: ctx.PublishedAt,
			Resource: ctx.Resource.AsRaw(), Attributes: ctx.Attributes.AsRaw()}
		if id, err := ids.Identity(pid); err == nil {
			e.CreationTime, e.Executable, e.ContainerID = id.CreationTimeString(), id.ExecutableName, id.ContainerID
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if denied > 0 {
		fmt.Fprintf(errOut, "ctxdump: permission denied for %d processes: run as root or with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH\n", denied)
	}
	return nil
}

func listPids(fs *procmem.FS, only int) ([]int, error) {
	if only > 0 {
		return []int{only}, nil
	}
	var lister procmem.PidLister
	entries, err := lister.List(fs)
	if err != nil {
		return nil, err
	}
	pids := make([]int, len(entries))
	for i, e := range entries {
		pids[i] = e.Pid
	}
	sort.Ints(pids)
	return pids, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "ctxdump:", err)
	os.Exit(1)
}
