// Command discovery measures progressive discovery on a large catalog: the
// bytes of tools/list a client receives in discovery mode against full
// mode, and how often tool_search ranks the right tool in its top 3 for a
// committed set of natural-language tasks (testdata/tasks.json), each
// judged once with the tool that should do it.
//
// The catalog is what a real host serves: the built-in providers (memory,
// agent, searxng), the reference "everything" MCP server from npm, and
// generated upstream servers for 23 common products (fixtures.go), each a
// separate stdio server the host connects to. The bench starts
// `openhuman-host serve --transport http` with two profiles, full and lean
// (discovery = true), and drives both with the go-sdk client.
//
//	go run -tags sqlite_fts5 ./bench/discovery -host "$PWD/bin/openhuman-host" -everything DIR
//	make bench-discovery
//
// -everything is the @modelcontextprotocol/server-everything package
// directory (make interop-deps installs it under .cache/interop).
//
// -embed-url and -embed-model point tool_search at an OpenAI-compatible
// embeddings endpoint ([discovery.embeddings]; -embed-key-env names the
// variable holding its key, which the host reads from this process's
// environment): the bench then waits until every tool is embedded and
// reports how many searches ran in hybrid mode. Without them tool_search
// ranks by keywords, as make bench-discovery measures it. Targets,
// printed and never asserted: at least 10x fewer tools/list bytes in
// discovery mode, and the right tool in the top 3 for at least 90 % of the
// tasks.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testproc"
)

//go:embed testdata/tasks.json
var tasksJSON []byte

type task struct {
	Task string `json:"task"`
	Tool string `json:"tool"`
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "fixture" {
		if err := serveFixture(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	hostBin := flag.String("host", "", "the openhuman-host binary (required)")
	everything := flag.String("everything", "", "the @modelcontextprotocol/server-everything package directory; empty leaves that server out")
	node := flag.String("node", "node", "the Node.js runtime that runs the everything server")
	var emb embedFlags
	flag.StringVar(&emb.url, "embed-url", "", "base_url of an OpenAI-compatible embeddings endpoint for tool_search, such as http://127.0.0.1:11434/v1; empty ranks by keywords only")
	flag.StringVar(&emb.model, "embed-model", "", "the embedding model (required with -embed-url)")
	flag.StringVar(&emb.keyEnv, "embed-key-env", "", "the environment variable holding the endpoint's API key; empty sends none")
	flag.IntVar(&emb.dimensions, "embed-dimensions", 0, "the dimensions parameter; 0 keeps the model's default")
	flag.Parse()
	if *hostBin == "" {
		fmt.Fprintln(os.Stderr, "discovery: -host is required")
		os.Exit(2)
	}
	if (emb.url == "") != (emb.model == "") {
		fmt.Fprintln(os.Stderr, "discovery: -embed-url and -embed-model go together")
		os.Exit(2)
	}
	if err := run(*hostBin, *everything, *node, emb); err != nil {
		fmt.Fprintln(os.Stderr, "discovery:", err)
		os.Exit(1)
	}
}

// embedFlags are the [discovery.embeddings] settings from the command
// line; url "" leaves the table out.
type embedFlags struct {
	url, model, keyEnv string
	dimensions         int
}

// toml returns the [discovery.embeddings] table, or "" without a url.
func (e embedFlags) toml() string {
	if e.url == "" {
		return ""
	}
	s := fmt.Sprintf("[discovery.embeddings]\nbase_url = %q\nmodel = %q\ndimensions = %d\n", e.url, e.model, e.dimensions)
	if e.keyEnv != "" {
		s += fmt.Sprintf("api_key_env = %q\n", e.keyEnv)
	}
	return s + "\n"
}

func run(hostBin, everything, node string, emb embedFlags) error {
	var tasks []task
	if err := json.Unmarshal(tasksJSON, &tasks); err != nil {
		return fmt.Errorf("read the tasks: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "openhuman-bench-discovery-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var cfg strings.Builder
	cfg.WriteString("[providers.searxng]\nenabled = true\nbase_url = \"http://127.0.0.1:9\"\n\n")
	cfg.WriteString("[profiles.full]\n\n[profiles.lean]\ndiscovery = true\npinned_tools = [\"" + memorytool.Search + "\", \"" + memorytool.Store + "\"]\n\n")
	cfg.WriteString(emb.toml())
	if everything != "" {
		fmt.Fprintf(&cfg, "[[upstream.servers]]\nname = \"everything\"\ncommand = %q\nargs = [%q, \"stdio\"]\n\n", node, filepath.Join(everything, "dist", "index.js"))
	}
	generated := 0
	for _, svc := range services {
		fmt.Fprintf(&cfg, "[[upstream.servers]]\nname = %q\ncommand = %q\nargs = [\"fixture\", %q]\n\n", svc.name, self, svc.name)
		generated += len(fixtureTools(svc))
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		return err
	}
	port, err := testproc.FreePort()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, hostBin, "--config", cfgPath, "serve", "--transport", "http", "--port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "OPENHUMAN_DATA_DIR="+filepath.Join(dir, "data"), "OPENHUMAN_LOG_LEVEL=error")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the host: %w", err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)

	// The upstream servers connect in the background: wait until every
	// generated server's tools are listed.
	want := []string{"twilio__create_sms", "github__create_issue", memorytool.Store}
	if everything != "" {
		want = append(want, "everything__echo")
	}
	var full *mcp.ListToolsResult
	deadline := time.Now().Add(3 * time.Minute)
	for {
		full, err = listTools(ctx, base+"/profile/full")
		if err == nil && hasAll(full, want) && len(full.Tools) >= generated {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the catalog did not fill within 3 minutes (last: %v, %d tools)", err, toolCount(full))
		}
		time.Sleep(500 * time.Millisecond)
	}
	lean, err := listTools(ctx, base+"/profile/lean")
	if err != nil {
		return err
	}
	fullBytes, leanBytes := jsonSize(full), jsonSize(lean)

	cs, err := connect(ctx, base+"/profile/lean")
	if err != nil {
		return err
	}
	defer cs.Close()
	if emb.url != "" {
		// The tools are embedded in the background: wait until a search
		// fuses with every tool's vector.
		deadline := time.Now().Add(10 * time.Minute)
		for {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": tasks[0].Task, "k": 3}})
			if err != nil {
				return fmt.Errorf("tool_search: %w", err)
			}
			mode, reason, without := searchMode(res)
			if mode == "hybrid" && without == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the tools were not embedded within 10 minutes (mode %s, %d without embedding, %s)", mode, without, reason)
			}
			time.Sleep(time.Second)
		}
	}
	modes := map[string]int{}
	var (
		top1, top3 int
		rr         float64
		misses     []string
		latencies  []time.Duration
	)
	for _, tk := range tasks {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": tk.Task, "k": 3}})
		latencies = append(latencies, time.Since(start))
		if err != nil {
			return fmt.Errorf("tool_search %q: %w", tk.Task, err)
		}
		if res.IsError {
			return fmt.Errorf("tool_search %q: %v", tk.Task, res.Content)
		}
		mode, _, _ := searchMode(res)
		modes[mode]++
		names := foundNames(res)
		rank := slices.Index(names, tk.Tool) + 1
		switch {
		case rank == 1:
			top1++
			top3++
		case rank > 1:
			top3++
		}
		if rank > 0 {
			rr += 1 / float64(rank)
		} else {
			misses = append(misses, fmt.Sprintf("%-70q want %-32s got %s", tk.Task, tk.Tool, strings.Join(names, ", ")))
		}
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })

	n := float64(len(tasks))
	fmt.Printf("progressive discovery: %d tools served (%d generated over %d upstream servers%s)\n\n",
		len(full.Tools), generated, len(services), map[bool]string{true: ", everything", false: ""}[everything != ""])
	fmt.Printf("%-22s %8s %12s %14s\n", "tools/list", "tools", "bytes", "≈tokens")
	fmt.Printf("%-22s %8d %12d %14d\n", "full mode", len(full.Tools), fullBytes, fullBytes/4)
	fmt.Printf("%-22s %8d %12d %14d\n", "discovery mode", len(lean.Tools), leanBytes, leanBytes/4)
	ratio := float64(fullBytes) / float64(leanBytes)
	fmt.Printf("\nfull/discovery bytes: %.1fx (target >= 10x: %s)\n", ratio, verdict(ratio >= 10))
	fmt.Printf("tool_search over %d tasks: top-1 %.0f%%, top-3 %.0f%% (target >= 90%%: %s), MRR@3 %.3f, p50 %s, max %s\n",
		len(tasks), 100*float64(top1)/n, 100*float64(top3)/n, verdict(float64(top3)/n >= 0.9), rr/n,
		latencies[len(latencies)/2].Round(10*time.Microsecond), latencies[len(latencies)-1].Round(10*time.Microsecond))
	if emb.url != "" {
		fmt.Printf("ranked with embeddings from %s, model %s: %d searches hybrid, %d keyword\n",
			emb.url, emb.model, modes["hybrid"], modes["keyword"])
	}
	if len(misses) > 0 {
		fmt.Printf("\nnot in the top 3:\n")
		for _, m := range misses {
			fmt.Println("  " + m)
		}
	}
	fmt.Println("\ntokens are estimated as bytes/4 of the tools/list result's JSON.")
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func connect(ctx context.Context, endpoint string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "bench-discovery", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// listTools returns the whole tools/list of endpoint, every page.
func listTools(ctx context.Context, endpoint string) (*mcp.ListToolsResult, error) {
	cs, err := connect(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	out := &mcp.ListToolsResult{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, t)
	}
	return out, nil
}

func hasAll(r *mcp.ListToolsResult, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(r.Tools, func(t *mcp.Tool) bool { return t.Name == n }) {
			return false
		}
	}
	return true
}

func toolCount(r *mcp.ListToolsResult) int {
	if r == nil {
		return 0
	}
	return len(r.Tools)
}

func jsonSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

func foundNames(res *mcp.CallToolResult) []string {
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(b, &out)
	var names []string
	for _, t := range out.Tools {
		names = append(names, t.Name)
	}
	return names
}

// searchMode returns tool_search's mode, its fallback reason and how many
// tools it ranked without an embedding.
func searchMode(res *mcp.CallToolResult) (mode, reason string, without int) {
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Mode             string `json:"mode"`
		FallbackReason   string `json:"fallback_reason"`
		WithoutEmbedding int    `json:"without_embedding"`
	}
	_ = json.Unmarshal(b, &out)
	return out.Mode, out.FallbackReason, out.WithoutEmbedding
}
