// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"fmt"
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a collector's receiver or telemetry endpoint: the collector binds it
// itself, so the port is closed again before it is returned (another
// process may take it in between; nothing the tests run does).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// ExportingTo is the configuration of an otlp_grpc exporter to server (an
// address ServeGRPC returned), flushing its batches after 50ms so that
// what a test measures is not the exporter's wait, and the beginning of a
// service without internal metrics: the text ends inside service, for the
// caller to add its extensions and pipelines indented by two spaces.
func ExportingTo(server string) string {
	return fmt.Sprintf(`
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
    sending_queue:
      batch:
        flush_timeout: 50ms
service:
  telemetry:
    metrics:
      level: none
`, server)
}

// GRPCServer is what ServeGRPC serves: a *grpc.Server, named by the
// methods it needs so that pubtest does not link gRPC into the test
// binaries of every package that starts a publisher (the kernel matrix's
// guests carry some of them).
type GRPCServer interface {
	Serve(net.Listener) error
	Stop()
}

// ServeGRPC serves server, its services registered, on a new port of
// 127.0.0.1 (loopback: nothing outside the machine reaches what the test
// receives) and returns its address; server stops at the end of the test.
// A server the collector's exporters send to needs gzip registered
// (google.golang.org/grpc/encoding/gzip): they compress.
func ServeGRPC(t testing.TB, server GRPCServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for a gRPC server: %v", err)
	}
	// Serve's error goes unchecked: Stop ends it at cleanup, and a server
	// failing before shows in what the test did not receive.
	go func() { _ = server.Serve(lis) }()
	t.Cleanup(server.Stop)
	return lis.Addr().String()
}
