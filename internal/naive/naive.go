// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package naive is the baseline the benchmarks measure the tracker and the
// collector against: a reader of process contexts without caching. Every
// scan lists the procfs and, for every process of its set, reads the whole
// maps file (the text: no PROCMAP_QUERY) and, where that names a context,
// the header and the whole payload, and decodes it. It is given the pids
// to read for free (no cost for the rest of the host): the comparison
// favours the baseline.
//
// The tracker's scan benchmark runs a Scanner in its own process; the
// whole-collector benchmark (test/e2e) runs one as a process of its own,
// driven over Serve's line protocol, so that its CPU is measured as the
// collector's is.
package naive

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
)

// Scanner is the naive reader. It is not safe for concurrent use.
type Scanner struct {
	reader   *reader.Reader
	pids     map[int]bool
	contexts map[int]otep.Context // what it would report
	buf      []byte
	// mapsFiles and mapsBytes count its maps reads (the reader's Stats
	// count those of reader.FindMapping only).
	mapsFiles, mapsBytes uint64
}

// New returns a Scanner of the processes pids names, through the procfs of
// the host's root.
func New(pids map[int]bool) (*Scanner, error) {
	fs, err := procfs.NewFS("/")
	if err != nil {
		return nil, fmt.Errorf("naive scanner: %w", err)
	}
	r, err := reader.New(fs, otep.DefaultLimits())
	if err != nil {
		return nil, fmt.Errorf("naive scanner: %w", err)
	}
	return &Scanner{reader: r, pids: pids, contexts: map[int]otep.Context{}, buf: make([]byte, otep.MapsBufferSize)}, nil
}

// Stats returns the reader's counts with the naive maps reads.
func (n *Scanner) Stats() reader.Stats {
	st := n.reader.Stats()
	st.MapsFiles += n.mapsFiles
	st.MapsBytes += n.mapsBytes
	return st
}

// read finds pid's context by reading the whole maps text.
func (n *Scanner) read(pid int) (otep.Context, error) {
	f, err := os.Open(n.reader.FS().Path(pid, "maps"))
	if err != nil {
		return otep.Context{}, err
	}
	m, read, err := otep.FindMapping(f, n.buf)
	_ = f.Close()
	n.mapsFiles++
	n.mapsBytes += uint64(read)
	if err != nil {
		return otep.Context{}, err
	}
	ctx, _, err := n.reader.ReadContext(pid, m.Start, 0, reader.ViaAuto)
	return ctx, err
}

// Result is what a scan read.
type Result struct {
	Contexts int // contexts read
	// Torn counts the contexts that every try met mid-update (a publisher
	// updating while it is read, or descheduled while it updates): not
	// read this time.
	Torn int
}

// Scan reads every process of its set that the procfs lists; a read that
// fails otherwise than for finding no context or meeting an update ends
// the scan with its error.
func (n *Scanner) Scan() (Result, error) {
	var res Result
	dir, err := os.Open(n.reader.FS().ProcDir())
	if err != nil {
		return res, err
	}
	names, err := dir.Readdirnames(-1)
	_ = dir.Close()
	if err != nil {
		return res, err
	}
	clear(n.contexts)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || !n.pids[pid] {
			continue
		}
		ctx, err := n.read(pid)
		switch {
		case err == nil:
			n.contexts[pid] = ctx
			res.Contexts++
		case errors.Is(err, otep.ErrNoContext):
		case errors.Is(err, otep.ErrTorn):
			res.Torn++
		default:
			return res, err
		}
	}
	return res, nil
}

// Serve runs a Scanner driven line by line from in, answering on out:
//
//	pids <pid> <pid> ...   -> ok <count>           (the set it reads)
//	scan                   -> ok <contexts> <torn> (one Scan)
//
// A failure is answered "err <message>". It returns at EOF.
func Serve(in io.Reader, out io.Writer) error {
	n, err := New(map[int]bool{})
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var reply string
		switch {
		case len(fields) > 0 && fields[0] == "pids":
			reply = n.setPids(fields[1:])
		case len(fields) == 1 && fields[0] == "scan":
			res, err := n.Scan()
			reply = fmt.Sprintf("ok %d %d", res.Contexts, res.Torn)
			if err != nil {
				reply = "err " + err.Error()
			}
		default:
			reply = fmt.Sprintf("err unknown command %.40q", sc.Text())
		}
		if _, err := fmt.Fprintln(out, reply); err != nil {
			return err
		}
	}
	return sc.Err()
}

func (n *Scanner) setPids(fields []string) string {
	pids := make(map[int]bool, len(fields))
	for _, f := range fields {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return fmt.Sprintf("err bad pid %.20q", f)
		}
		pids[pid] = true
	}
	n.pids = pids
	return fmt.Sprintf("ok %d", len(pids))
}
