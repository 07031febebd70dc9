// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Command otlpsend sends one OTLP log record over gRPC and exits: the
// container tests run it in a container of its own, as an SDK in a pod
// would send telemetry naming its own pid and container.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:4317", "OTLP gRPC endpoint")
	pid := flag.Int("pid", 0, "process.pid of the resource (0: none)")
	containerID := flag.String("container-id", "", "container.id of the resource")
	body := flag.String("body", "otlpsend", "the record's body")
	flag.Parse()
	if err := send(*endpoint, *pid, *containerID, *body); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsend:", err)
		os.Exit(1)
	}
}

func send(endpoint string, pid int, containerID, body string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	if pid != 0 {
		rl.Resource().Attributes().PutInt("process.pid", int64(pid))
	}
	if containerID != "" {
		rl.Resource().Attributes().PutStr("container.id", containerID)
	}
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}
