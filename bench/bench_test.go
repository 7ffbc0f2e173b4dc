package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/bench/internal/noop"
	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// The benchmarks below run in one process, without child processes or
// stdio: they isolate the in-process part of what the bench command
// measures end to end. Each serves its no-op tool to a go-sdk client over
// the SDK's in-memory transport.
//
//	go test -tags sqlite_fts5 -run '^$' -bench . ./bench/
//
// BenchmarkFloor is the go-sdk alone. BenchmarkHostPipeline is the host's
// server (catalog lookup, argument validation, policy, dispatch, audit) in
// front of the no-op provider, which is either called directly or through
// the SDK's gRPC adapter over a local socket, and with or without an audit
// log on disk.

// connect serves srv on one end of an in-memory transport and returns a
// client session on the other.
func connect(b *testing.B, srv *mcp.Server) *mcp.ClientSession {
	b.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "openhuman-bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// callLoop calls tool b.N times from parallelism×GOMAXPROCS goroutines.
func callLoop(b *testing.B, cs *mcp.ClientSession, tool string, parallelism int) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if err != nil {
				b.Error(err)
				return
			}
			if res.IsError {
				b.Errorf("%s: %s", tool, mcpwire.Text(res))
				return
			}
		}
	})
}

func BenchmarkFloor(b *testing.B) {
	cs := connect(b, noop.NewFloorServer())
	for _, p := range []int{1, 4} {
		b.Run(fmt.Sprintf("par=%d", p), func(b *testing.B) { callLoop(b, cs, noop.FloorTool, p) })
	}
}

func BenchmarkHostPipeline(b *testing.B) {
	cases := []struct {
		name  string
		grpc  bool
		audit bool
	}{
		{"direct", false, false},
		{"direct+audit", false, true},
		{"grpc", true, false},
		{"grpc+audit", true, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var provider sdk.Provider = noop.Provider{}
			if tc.grpc {
				provider = sdktest.Start(b, provider, nil).Provider
			}
			cat, err := provider.Describe(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			opts := &server.Options{RecordReads: true}
			if tc.audit {
				log, err := audit.Open(context.Background(), filepath.Join(b.TempDir(), "audit.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = log.Close(ctx)
				})
				opts.Audit = log
			}
			srv, err := server.New(catalog.Build(nil, []catalog.Source{{Provider: "bench", Catalog: cat}}),
				map[string]server.Dispatcher{"bench": provider}, opts)
			if err != nil {
				b.Fatal(err)
			}
			cs := connect(b, srv.MCP())
			for _, p := range []int{1, 4} {
				b.Run(fmt.Sprintf("par=%d", p), func(b *testing.B) { callLoop(b, cs, noop.ProviderTool, p) })
			}
		})
	}
}
