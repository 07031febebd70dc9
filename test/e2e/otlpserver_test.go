package e2e

import (
	"context"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the collector's exporters compress
)

// otlpServer is an OTLP/gRPC server on loopback that keeps what it gets.
type otlpServer struct {
	plogotlp.UnimplementedGRPCServer
	addr string

	mu       sync.Mutex
	logs     []plog.Logs
	profiles []pprofile.Profiles
}

type profilesService struct {
	pprofileotlp.UnimplementedGRPCServer
	s *otlpServer
}

func startOTLPServer(t *testing.T) *otlpServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &otlpServer{addr: lis.Addr().String()}
	g := grpc.NewServer()
	plogotlp.RegisterGRPCServer(g, s)
	pprofileotlp.RegisterGRPCServer(g, &profilesService{s: s})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return s
}

func (s *otlpServer) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	logs := plog.NewLogs()
	req.Logs().CopyTo(logs)
	s.mu.Lock()
	s.logs = append(s.logs, logs)
	s.mu.Unlock()
	return plogotlp.NewExportResponse(), nil
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
