package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

// BenchmarkSearch runs memory_search for two words over 200 documents of
// 300 words drawn from 40, as the bench's host+memory target does, so
// that -cpuprofile and -memprofile show where a search's time and
// allocations go.
func BenchmarkSearch(b *testing.B) {
	p := openProvider(b, b.TempDir(), nil)
	words := strings.Fields(`reef harbour tide coral lagoon anchor current sail north south
		storm chart compass island shore wave kelp beacon channel depth
		meeting budget review draft schedule invoice travel visa report notes
		garden kitchen recipe bread coffee music river mountain forest bridge`)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		text := make([]string, 300)
		for w := range text {
			text[w] = words[rng.IntN(len(words))]
		}
		raw, _ := json.Marshal(map[string]any{"title": fmt.Sprintf("Bench document %d", i), "content": strings.Join(text, " ")})
		if res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolStore, Arguments: raw}); err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", ToolStore, err, res)
		}
	}
	args := json.RawMessage(`{"query":"reef harbour","k":10}`)
	b.ReportAllocs()
	for b.Loop() {
		res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolSearch, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", ToolSearch, err, res)
		}
	}
}
