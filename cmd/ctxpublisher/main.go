// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Command ctxpublisher publishes an OpenTelemetry process context from its
// own process with the Go reference publisher.
//
// Demo mode (the default) publishes service.name and the -attr pairs, then
// waits for SIGINT/SIGTERM (optionally updating a counter attribute every
// -update-every). Control mode (-control) is driven line by line on stdin by
// the tests, with the same protocol as testdata/cpublisher/publisher.c:
//
//	publish <hex>            -> ok 0x<header address>
//	update <hex>             -> ok 0x<header address>
//	unpublish                -> ok
//	header <sighex> <version> <size> <timestamp> <inline|unmapped|0xADDR>  -> ok
//	spin <millis>            -> ok <updates>   (self-checking payloads)
//	exit                     -> ok, then exit 0
package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/publisher"
)

// description is what -h says first.
const description = `ctxpublisher publishes an OpenTelemetry process context (OTEP 4719) from
its own process, as an SDK that supports it does: a mapping named OTEL_CTX
holding service.name, a service.instance.id and the -attr pairs. It is a
demo and test tool: start it, then see the collector (make run) or ctxdump
report it, and send telemetry with its pid to see it enriched. It runs
until interrupted (Ctrl-C).

Usage: ctxpublisher [-service-name NAME] [-attr key=value]... [-update-every 30s]

Flags:
`

type attrFlags []string

func (a *attrFlags) String() string     { return strings.Join(*a, ",") }
func (a *attrFlags) Set(v string) error { *a = append(*a, v); return nil }

func main() {
	var (
		control     = flag.Bool("control", false, "read commands from stdin (test protocol)")
		separate    = flag.Bool("separate", false, "put the payload in a separate allocation instead of inline")
		anonymous   = flag.Bool("anon", false, "skip memfd_create and use an anonymous mapping")
		serviceName = flag.String("service-name", "ctxpublisher-demo", "service.name to publish (demo mode)")
		updateEvery = flag.Duration("update-every", 0, "update a demo.generation attribute this often (demo mode, 0 = never)")
		attrs       attrFlags
	)
	flag.Var(&attrs, "attr", "extra resource attribute key=value (repeatable, demo mode)")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), description)
		flag.PrintDefaults()
	}
	flag.Parse()

	opts := publisher.Options{Anonymous: *anonymous}
	if *separate {
		opts.Placement = publisher.Separate
	}
	var err error
	if *control {
		err = runControl(os.Stdin, os.Stdout, opts)
	} else {
		err = runDemo(opts, *serviceName, attrs, *updateEvery)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctxpublisher:", err)
		os.Exit(1)
	}
}

func runDemo(opts publisher.Options, serviceName string, attrs []string, every time.Duration) error {
	generation := 0
	payload := func() ([]byte, error) {
		res := pcommon.NewMap()
		res.PutStr("service.name", serviceName)
		res.PutStr("service.instance.id", fmt.Sprintf("%s-%d", serviceName, os.Getpid()))
		res.PutStr("telemetry.sdk.language", "go")
		res.PutStr("telemetry.sdk.name", "ctxpublisher")
		for _, kv := range attrs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("-attr %q: want key=value", kv)
			}
			res.PutStr(k, v)
		}
		if every > 0 {
			res.PutInt("demo.generation", int64(generation))
		}
		return otep.Encode(res, pcommon.NewMap())
	}
	b, err := payload()
	if err != nil {
		return err
	}
	pub, err := publisher.Publish(b, opts)
	if err != nil {
		return err
	}
	fmt.Printf("ctxpublisher: pid %d publishes service.name=%s at %#x\n", os.Getpid(), serviceName, pub.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-stop:
			return pub.Unpublish()
		case <-tick:
			generation++
			if b, err = payload(); err != nil {
				return err
			}
			if err := pub.Update(b); err != nil {
				return err
			}
		}
	}
}

func runControl(in io.Reader, out io.Writer, opts publisher.Options) error {
	fmt.Fprintf(out, "ready %d\n", os.Getpid())
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var pub *publisher.Publication
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			fmt.Fprintln(out, "err empty command")
			continue
		}
		reply, err := command(&pub, opts, fields)
		if err != nil {
			reply = "err " + err.Error()
		}
		fmt.Fprintln(out, reply)
		if fields[0] == "exit" {
			return nil
		}
	}
	return sc.Err()
}

func command(pub **publisher.Publication, opts publisher.Options, f []string) (string, error) {
	switch f[0] {
	case "publish", "update":
		if len(f) != 2 {
			return "", fmt.Errorf("usage: %s <hex>", f[0])
		}
		payload, err := hex.DecodeString(f[1])
		if err != nil {
			return "", err
		}
		if f[0] == "publish" {
			if *pub != nil {
				return "", errors.New("already published")
			}
			p, err := publisher.Publish(payload, opts)
			if err != nil {
				return "", err
			}
			*pub = p
		} else {
			if *pub == nil {
				return "", publisher.ErrUnpublished
			}
			if err := (*pub).Update(payload); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("ok %#x", (*pub).Addr()), nil
	case "unpublish":
		if *pub == nil {
			return "", publisher.ErrUnpublished
		}
		err := (*pub).Unpublish()
		*pub = nil
		return "ok", err
	case "header":
		if *pub == nil {
			return "", publisher.ErrUnpublished
		}
		h, err := parseRawHeader(*pub, f[1:])
		if err != nil {
			return "", err
		}
		return "ok", (*pub).OverwriteHeader(h)
	case "spin":
		if *pub == nil {
			return "", publisher.ErrUnpublished
		}
		if len(f) != 2 {
			return "", errors.New("usage: spin <millis>")
		}
		ms, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		n, err := spin(*pub, time.Duration(ms)*time.Millisecond)
		return fmt.Sprintf("ok %d", n), err
	case "exit":
		return "ok", nil
	}
	return "", fmt.Errorf("unknown command %q", f[0])
}

func parseRawHeader(pub *publisher.Publication, f []string) (publisher.RawHeader, error) {
	var h publisher.RawHeader
	if len(f) != 5 {
		return h, errors.New("usage: header <sighex> <version> <size> <timestamp> <inline|unmapped|0xADDR>")
	}
	sig, err := hex.DecodeString(f[0])
	if err != nil || len(sig) != 8 {
		return h, fmt.Errorf("signature %q: want 16 hex digits", f[0])
	}
	copy(h.Signature[:], sig)
	version, err1 := strconv.ParseUint(f[1], 10, 32)
	size, err2 := strconv.ParseUint(f[2], 10, 32)
	ts, err3 := strconv.ParseUint(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return h, err
	}
	h.Version, h.PayloadSize, h.PublishedAt = uint32(version), uint32(size), ts
	switch f[4] {
	case "inline":
		h.PayloadAddress = pub.InlineAddr()
	case "unmapped":
		h.PayloadAddress, err = unmappedAddress()
	default:
		h.PayloadAddress, err = strconv.ParseUint(strings.TrimPrefix(f[4], "0x"), 16, 64)
	}
	return h, err
}

// unmappedAddress returns an address that was just unmapped.
func unmappedAddress() (uint64, error) {
	m, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0, err
	}
	addr := uint64(uintptr(unsafe.Pointer(&m[0])))
	return addr, unix.Munmap(m)
}

// spin updates in a tight loop with self-checking payloads: update n carries
// seq = n, filler = (n % 300) copies of 'a'+n%26, check = n.
func spin(pub *publisher.Publication, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	n := 0
	for time.Now().Before(deadline) {
		n++
		if err := pub.Update(SpinPayload(n)); err != nil {
			return n, err
		}
	}
	return n, nil
}

// SpinPayload is the self-checking payload of update n.
func SpinPayload(n int) []byte {
	res := pcommon.NewMap()
	seq := strconv.Itoa(n)
	res.PutStr("seq", seq)
	res.PutStr("filler", strings.Repeat(string(rune('a'+n%26)), n%300))
	res.PutStr("check", seq)
	b, err := otep.Encode(res, pcommon.NewMap())
	if err != nil {
		panic(err)
	}
	return b
}
