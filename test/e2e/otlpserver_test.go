// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the collector's exporters compress

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// otlpServer is an OTLP/gRPC server on loopback (pubtest.ServeGRPC) that
// keeps what it gets.
type otlpServer struct {
	plogotlp.UnimplementedGRPCServer
	addr string

	mu       sync.Mutex
	logs     []plog.Logs
	profiles []pprofile.Profiles
	// refuse, while set, is the error every export gets (e.g. a gRPC
	// Unavailable status, which the collector's exporters treat as
	// retryable); refused counts the exports refused.
	refuse  error
	refused int
}

type profilesService struct {
	pprofileotlp.UnimplementedGRPCServer
	s *otlpServer
}

func startOTLPServer(t *testing.T) *otlpServer {
	t.Helper()
	s := &otlpServer{}
	g := grpc.NewServer()
	plogotlp.RegisterGRPCServer(g, s)
	pprofileotlp.RegisterGRPCServer(g, &profilesService{s: s})
	s.addr = pubtest.ServeGRPC(t, g)
	return s
}

func (s *otlpServer) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse != nil {
		s.refused++
		return plogotlp.NewExportResponse(), s.refuse
	}
	logs := plog.NewLogs()
	req.Logs().CopyTo(logs)
	s.logs = append(s.logs, logs)
	return plogotlp.NewExportResponse(), nil
}

// setRefuse makes every later log export fail with err (nil: accept).
func (s *otlpServer) setRefuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = err
}

// refusals returns how many log exports were refused.
func (s *otlpServer) refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (p *profilesService) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	profiles := pprofile.NewProfiles()
	req.Profiles().CopyTo(profiles)
	p.s.mu.Lock()
	p.s.profiles = append(p.s.profiles, profiles)
	p.s.mu.Unlock()
	return pprofileotlp.NewExportResponse(), nil
}

func (s *otlpServer) allLogs() []plog.Logs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plog.Logs(nil), s.logs...)
}

func (s *otlpServer) allProfiles() []pprofile.Profiles {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pprofile.Profiles(nil), s.profiles...)
}

// observingServer is an OTLP/gRPC server on loopback that keeps nothing:
// every export is handed to a callback while the request is being served
// (the soak tests count millions of records). A nil callback accepts.
type observingServer struct {
	plogotlp.UnimplementedGRPCServer
	onLogs func(plog.Logs)
}

type observingProfiles struct {
	pprofileotlp.UnimplementedGRPCServer
	onProfiles func(pprofile.Profiles)
}

// startObservingServer starts an observingServer and returns its address.
func startObservingServer(t testing.TB, onLogs func(plog.Logs), onProfiles func(pprofile.Profiles)) string {
	t.Helper()
	g := grpc.NewServer()
	plogotlp.RegisterGRPCServer(g, &observingServer{onLogs: onLogs})
	pprofileotlp.RegisterGRPCServer(g, &observingProfiles{onProfiles: onProfiles})
	return pubtest.ServeGRPC(t, g)
}

func (s *observingServer) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	if s.onLogs != nil {
		s.onLogs(req.Logs())
	}
	return plogotlp.NewExportResponse(), nil
}

func (p *observingProfiles) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	if p.onProfiles != nil {
		p.onProfiles(req.Profiles())
	}
	return pprofileotlp.NewExportResponse(), nil
}
