package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkImport imports a folder into an empty store per iteration: the
// folder MEMORY_BENCH_CORPUS names (such as bench/memory's copy of Git's
// documentation), or else generated Markdown files. With -cpuprofile it
// shows where an import's time goes.
func BenchmarkImport(b *testing.B) {
	requireFTS5(b)
	dir := os.Getenv("MEMORY_BENCH_CORPUS")
	if dir == "" {
		dir = b.TempDir()
		for i := range 200 {
			var sb strings.Builder
			fmt.Fprintf(&sb, "# Note %d\n\n", i)
			for j := range 40 {
				fmt.Fprintf(&sb, "Paragraph %d of note %d mentions alice%d@example.com, https://example.com/%d and #topic%d on 2026-01-%02d.\n\n",
					j, i, j, i, j%7, j%28+1)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%03d.md", i)), []byte(sb.String()), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	chunks := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := openProvider(b, b.TempDir(), nil)
		b.StartTimer()
		// A context that cannot be cancelled lets go-sqlite3 run each
		// statement on the calling goroutine, so that a profile puts
		// SQLite's time under the statement that spent it.
		sum, err := p.Import(context.Background(), []string{dir}, nil)
		if err != nil {
			b.Fatal(err)
		}
		chunks = sum.Chunks
	}
	b.ReportMetric(float64(chunks)*float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
}
