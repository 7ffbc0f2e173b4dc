// Command replicaprovider is the provider the replica tests and the
// replica benchmark load into every replica: a read tool, an act tool and
// a tool that blocks, each naming the call it serves by two numbers that
// the audit log keeps ({"client": C, "seq": S}).
//
//   - rep.read (read) and rep.write (act) answer "client C seq S";
//   - rep.block (read) creates the file blocking-C-S in the provider's
//     data directory, then waits until its call is cancelled, so that a
//     test knows which replica holds it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/openhuman/openhuman-host/sdk"
)

func main() { sdk.Serve(&provider{}) }

type provider struct {
	mu      sync.Mutex
	dataDir string
}

var input = json.RawMessage(`{"type":"object","properties":{"client":{"type":"integer"},"seq":{"type":"integer"}},` +
	`"required":["client","seq"],"additionalProperties":false}`)

// Configure remembers the data directory.
func (p *provider) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dataDir = req.DataDir
	return nil
}

// Describe lists the three tools.
func (p *provider) Describe(context.Context) (*sdk.Catalog, error) {
	tool := func(name, desc string, class sdk.PolicyClass) sdk.Tool {
		return sdk.Tool{Name: name, Description: desc, InputSchema: input, Class: class}
	}
	return &sdk.Catalog{Name: "rep", Version: "1", Tools: []sdk.Tool{
		tool("rep.read", "Answers which call it served.", sdk.ClassRead),
		tool("rep.write", "Answers which call it served; an act, so it counts against the hourly budget.", sdk.ClassAct),
		tool("rep.block", "Marks its call in the data directory, then waits until it is cancelled.", sdk.ClassRead),
	}}, nil
}

type args struct {
	Client int `json:"client"`
	Seq    int `json:"seq"`
}

// CallTool serves the tools.
func (p *provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var a args
	if err := json.Unmarshal(req.Arguments, &a); err != nil {
		return sdk.ErrorResult("arguments: %v", err), nil
	}
	switch req.Name {
	case "rep.read", "rep.write":
		return sdk.TextResult(fmt.Sprintf("client %d seq %d", a.Client, a.Seq)), nil
	case "rep.block":
		p.mu.Lock()
		dir := p.dataDir
		p.mu.Unlock()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("make the data directory: %w", err)
		}
		mark := filepath.Join(dir, fmt.Sprintf("blocking-%d-%d", a.Client, a.Seq))
		if err := os.WriteFile(mark, nil, 0o600); err != nil {
			return nil, fmt.Errorf("mark the call: %w", err)
		}
		<-ctx.Done()
		_ = os.Remove(mark)
		return nil, ctx.Err()
	}
	return sdk.ErrorResult("unknown tool %s", req.Name), nil
}

// ReadResource serves no resources.
func (p *provider) ReadResource(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, sdk.ErrResourceNotFound
}
