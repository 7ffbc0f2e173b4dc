package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/bench/internal/noop"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testproc"
)

// target is one server the bench drives.
type target struct {
	name string
	// tool and args are what every measured call sends.
	tool string
	args map[string]any
	// command returns a fresh, unstarted command for the server.
	command func() *exec.Cmd
	// configPath and env are the host's config and environment; empty for
	// the floor.
	configPath string
	env        []string
	// listed is a tool `tools list` must show for the config to count as
	// loaded; empty skips the check.
	listed string
	// seed prepares a freshly started server for measurement; nil for none.
	seed func(context.Context, *running) error
	// coldOnly targets are launched for their cold start only, not
	// measured under load.
	coldOnly bool
	// url is the Streamable HTTP endpoint the server serves once started;
	// empty for a server driven over its stdio.
	url string
}

// runtimeEnv are the variables the bench takes out of the inherited
// environment, so that only the -host-env and -floor-env flags set them.
var runtimeEnv = []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "GOMAXPROCS", "XDG_DATA_HOME", "XDG_CONFIG_HOME"}

// childEnv is the bench's environment without runtimeEnv and OPENHUMAN_*
// variables, plus extra.
func childEnv(extra ...string) []string {
	var env []string
outer:
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENHUMAN_") {
			continue
		}
		for _, r := range runtimeEnv {
			if k == r {
				continue outer
			}
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// hostTool is the no-op provider's tool as the host advertises it: the
// provider declares bench.noop, clients call bench_noop.
var hostTool = sdk.ClientName(noop.ProviderTool)

// noAuditTarget is the host without audit rows for its (read) tool.
const noAuditTarget = "host/no-audit"

// telemetryTarget is the host with every [telemetry] signal on.
const telemetryTarget = "host/telemetry"

// relayTarget is the host relaying the floor server as an upstream MCP
// server, and relayTool the floor's tool as the host serves it.
//
// peerTarget is the floor behind bench/peerproxy, a plain MCP proxy built
// on another Go MCP library: what relaying costs without a host.
//
// relayHostTarget and relayPluginTarget are host/relay with the upstream
// provider in the host's process and in a plugin process of its own,
// whatever the default.
const (
	peerTarget        = "peer/mcp-go-proxy"
	relayTarget       = "host/relay"
	relayHostTarget   = "host/relay-in-host"
	relayPluginTarget = "host/relay-plugin"
	relayTool         = "floor__" + noop.FloorTool
)

// floorHTTPTarget, relayHTTPTarget and peerHTTPTarget are the floor, the
// host's relay and the peer proxy driven over Streamable HTTP instead of
// stdio (the floor behind the relay and the peer is still a stdio
// server).
const (
	floorHTTPTarget = "floor/http"
	relayHTTPTarget = "host/relay/http"
	peerHTTPTarget  = "peer/mcp-go-proxy/http"
)

// memoryTarget is the host serving memory_search from the memory provider
// as configured by default (in the host's process); memoryPluginTarget the
// same with the provider in a plugin process of its own.
const (
	memoryTarget       = "host+memory"
	memoryPluginTarget = "host+memory/plugin"
)

// setupTargets writes the host configs and returns floor, host, one
// host/NAME per -variant, with -audit-cost host/no-audit, with -telemetry
// host/telemetry, with -relay host/relay and, when peerBin is set, the
// peer proxy, and with -memory host+memory, in that order.
func setupTargets(o *options, tmp, floorBin, provBin, provSHA, peerBin string) ([]*target, error) {
	floorEnv := childEnv(o.floorEnv...)
	floor := floorToolTarget("floor", "", floorEnv, floorBin)

	audit := fmt.Sprintf("[audit]\nrecord_reads = %t\n\n", o.recordReads)
	noopConfig := func(provArgs []string) string {
		c := audit +
			"[providers.memory]\nenabled = false\n\n" +
			"[providers.agent]\nenabled = false\n\n" +
			"[providers.bench]\n" +
			"command = " + tomlString(provBin) + "\n" +
			"sha256 = " + tomlString(provSHA) + "\n"
		if len(provArgs) > 0 {
			quoted := make([]string, len(provArgs))
			for i, a := range provArgs {
				quoted[i] = tomlString(a)
			}
			c += "args = [" + strings.Join(quoted, ", ") + "]\n"
		}
		return c
	}
	dirs := 0
	dir := func() string {
		dirs++
		return filepath.Join(tmp, fmt.Sprintf("host%d", dirs))
	}
	targets := []*target{floor}
	// addHost adds a host target with config and env, in a directory of
	// its own, whose timed call is tool (listed under that name) without
	// arguments.
	addHost := func(name, config string, env []string, tool string) (*target, error) {
		t, err := hostTarget(o, dir(), name, config, env)
		if err != nil {
			return nil, err
		}
		t.tool, t.args, t.listed = tool, map[string]any{}, tool
		targets = append(targets, t)
		return t, nil
	}
	if _, err := addHost("host", noopConfig(strings.Fields(o.providerArgs)), nil, hostTool); err != nil {
		return nil, err
	}

	for _, v := range o.variants {
		if _, err := addHost("host/"+v.name, noopConfig(v.providerArgs), v.env, hostTool); err != nil {
			return nil, err
		}
	}

	if o.auditCost && o.recordReads {
		// The same host with reads not audited: the audit's cost is the
		// difference, measured in the same rounds.
		noAudit := strings.Replace(noopConfig(strings.Fields(o.providerArgs)), "record_reads = true", "record_reads = false", 1)
		if _, err := addHost(noAuditTarget, noAudit, nil, hostTool); err != nil {
			return nil, err
		}
	}

	if o.telemetry {
		// The same host tracing every call into its provider and
		// exporting spans and metrics over OTLP, to a sink that takes
		// them, every second; telemetry's cost is the difference.
		sink := otlpSink()
		tel := noopConfig(strings.Fields(o.providerArgs)) + "\n[telemetry]\ntraces = true\nmetrics = true\nprometheus = true\n" +
			"metric_interval_secs = 1\notlp_endpoint = " + tomlString(sink) + "\n"
		if _, err := addHost(telemetryTarget, tel, nil, hostTool); err != nil {
			return nil, err
		}
	}

	// relayConfig has the floor server behind the host as an upstream MCP
	// server, with the upstream provider where process says ("" for its
	// default): every call crosses the host, the upstream provider and the
	// floor's stdio, so against the floor alone it is the relay's cost.
	relayConfig := func(process string) string {
		c := audit + "[providers.memory]\nenabled = false\n\n[providers.agent]\nenabled = false\n\n"
		if process != "" {
			c += "[upstream]\nprocess = " + tomlString(process) + "\n\n"
		}
		return c + "[[upstream.servers]]\nname = \"floor\"\ncommand = " + tomlString(floorBin) + "\n" +
			"read_only_tools = [" + tomlString(noop.FloorTool) + "]\n"
	}
	if o.relay {
		modes := [][2]string{{relayTarget, ""}}
		if o.relayModes {
			modes = append(modes, [2]string{relayHostTarget, "host"}, [2]string{relayPluginTarget, "plugin"})
		}
		for _, m := range modes {
			if _, err := addHost(m[0], relayConfig(m[1]), nil, relayTool); err != nil {
				return nil, err
			}
		}
	}

	peerEnv := childEnv(o.floorEnv...)
	if o.relay && peerBin != "" {
		// The floor behind a plain proxy: the relay's peer.
		targets = append(targets, floorToolTarget(peerTarget, "", peerEnv, peerBin, floorBin))
	}

	if o.relay && o.http {
		// The same comparison with the client on Streamable HTTP: the
		// floor serving HTTP itself, the host relaying the stdio floor,
		// and the peer proxy relaying it.
		port := func() (string, error) {
			p, err := testproc.FreePort()
			return strconv.Itoa(p), err
		}
		p, err := port()
		if err != nil {
			return nil, err
		}
		targets = append(targets, floorToolTarget(floorHTTPTarget, "http://127.0.0.1:"+p+"/", floorEnv, floorBin, "-http", "127.0.0.1:"+p))
		rp, err := port()
		if err != nil {
			return nil, err
		}
		rt, err := addHost(relayHTTPTarget, relayConfig(""), nil, relayTool)
		if err != nil {
			return nil, err
		}
		rt.url = "http://127.0.0.1:" + rp + "/"
		rt.command = func() *exec.Cmd {
			cmd := exec.Command(o.hostBin, "--config", rt.configPath, "serve", "--transport", "http", "--port", rp)
			cmd.Env = rt.env
			return cmd
		}
		if peerBin != "" {
			pp, err := port()
			if err != nil {
				return nil, err
			}
			targets = append(targets, floorToolTarget(peerHTTPTarget, "http://127.0.0.1:"+pp+"/mcp", peerEnv, peerBin, "-http", "127.0.0.1:"+pp, floorBin))
		}
	}

	if o.memory {
		docs := o.memoryDocs
		modes := [][2]string{{memoryTarget, ""}}
		if o.memoryModes {
			modes = append(modes, [2]string{memoryPluginTarget, "plugin"})
		}
		for _, m := range modes {
			c := audit + "[providers.memory]\nenabled = true\n"
			if m[1] != "" {
				c += "process = " + tomlString(m[1]) + "\n"
			}
			mem, err := addHost(m[0], c+"\n[providers.agent]\nenabled = false\n", nil, memorytool.Search)
			if err != nil {
				return nil, err
			}
			mem.args = map[string]any{"query": "reef harbour", "k": 10}
			mem.seed = func(ctx context.Context, r *running) error { return seedMemory(ctx, r.cs, docs) }
		}
	}

	if o.coldDefaults {
		t, err := defaultsHost(o, dir())
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// floorToolTarget is a server whose timed call is the floor's tool without
// arguments: bin run with args in env, serving url (empty for stdio).
func floorToolTarget(name, url string, env []string, bin string, args ...string) *target {
	return &target{name: name, tool: noop.FloorTool, args: map[string]any{}, url: url,
		command: func() *exec.Cmd {
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			return cmd
		}}
}

// hostTarget writes config into dir and gives the host its own XDG
// directories there; env is added to the host's environment after
// -host-env.
func hostTarget(o *options, dir, name, config string, env []string) (*target, error) {
	data, conf := filepath.Join(dir, "data"), filepath.Join(dir, "config")
	for _, d := range []string{data, conf} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, err
	}
	t := &target{name: name, configPath: path}
	extra := append([]string{"XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + conf}, o.hostEnv...)
	t.env = childEnv(append(extra, env...)...)
	bin := o.hostBin
	t.command = func() *exec.Cmd {
		cmd := exec.Command(bin, "--config", path, "serve")
		cmd.Env = t.env
		return cmd
	}
	return t, nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// checkToolsList runs `openhuman-host --config F tools list` and fails,
// quoting what the host printed, unless t.listed is among the tools.
func (t *target) checkToolsList(ctx context.Context, hostBin string) error {
	if t.listed == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := []string{"tools", "list"}
	if t.configPath != "" {
		args = append([]string{"--config", t.configPath}, args...)
	}
	cmd := exec.CommandContext(ctx, hostBin, args...)
	cmd.Env = t.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for _, line := range strings.Split(stdout.String(), "\n") {
		if name, _, _ := strings.Cut(line, "\t"); name == t.listed {
			return nil
		}
	}
	return fmt.Errorf("%s: `openhuman-host --config %s tools list` does not list %s (exit: %v)\nstdout:\n%s\nstderr:\n%s",
		t.name, t.configPath, t.listed, err, stdout.String(), stderr.String())
}

// running is a started server with an initialized client session. For a
// server driven over Streamable HTTP, whose process closing the session
// does not end, exited is closed once the process has exited, with
// waitErr set; it is nil for a stdio server.
type running struct {
	cmd     *exec.Cmd
	cs      *mcp.ClientSession
	stderr  *tailBuffer
	exited  chan struct{}
	waitErr error
	once    sync.Once
	err     error
}

// start launches the server, connects the go-sdk client and lists the
// tools. The duration is from just before the launch to the tools/list
// response: the cold start.
func (t *target) start(ctx context.Context) (*running, time.Duration, error) {
	cmd := t.command()
	r := &running{cmd: cmd, stderr: &tailBuffer{max: 16 << 10}}
	cmd.Stderr = r.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "openhuman-bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0 := time.Now()
	var cs *mcp.ClientSession
	var err error
	if t.url == "" {
		cs, err = client.Connect(ctx, &mcpwire.CommandTransport{Cmd: cmd, Terminate: 3 * time.Second}, nil)
	} else {
		cs, err = connectHTTP(ctx, client, r, t.url)
	}
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			if r.exited != nil {
				<-r.exited
			} else {
				_ = cmd.Wait()
			}
		}
		return nil, 0, fmt.Errorf("%s: connect: %w%s", t.name, err, r.stderr.suffix())
	}
	r.cs = cs
	lt, err := cs.ListTools(ctx, nil)
	elapsed := time.Since(t0)
	if err != nil {
		_ = r.close()
		return nil, 0, fmt.Errorf("%s: tools/list: %w%s", t.name, err, r.stderr.suffix())
	}
	found := false
	for _, tool := range lt.Tools {
		found = found || tool.Name == t.tool
	}
	if !found {
		_ = r.close()
		return nil, 0, fmt.Errorf("%s: tools/list has no %s (%d tools)%s", t.name, t.tool, len(lt.Tools), r.stderr.suffix())
	}
	return r, elapsed, nil
}

// close ends the session: stdin is closed and the server is waited for
// (SIGTERM, then SIGKILL, if it lingers); over HTTP the server is sent
// SIGTERM (killed where signals are not supported) and waited for, and
// killed if it lingers.
func (r *running) close() error {
	r.once.Do(func() {
		r.err = r.cs.Close()
		if r.exited == nil {
			return
		}
		if r.cmd.Process.Signal(syscall.SIGTERM) != nil {
			_ = r.cmd.Process.Kill()
		}
		select {
		case <-r.exited:
		case <-time.After(3 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	})
	return r.err
}

// connectHTTP starts r.cmd, a server that will serve Streamable HTTP at
// url, and connects client to it, trying again every 5 ms until the
// server listens, exits, or ctx ends. r.exited is closed, with r.waitErr
// set, when the process has exited.
func connectHTTP(ctx context.Context, client *mcp.Client, r *running, url string) (*mcp.ClientSession, error) {
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	r.exited = make(chan struct{})
	go func() {
		r.waitErr = r.cmd.Wait()
		close(r.exited)
	}()
	for {
		transport := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true}
		cs, err := client.Connect(ctx, transport, nil)
		if err == nil {
			return cs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", url, err)
		case <-r.exited:
			return nil, fmt.Errorf("the server exited (%v) before it served %s", r.waitErr, url)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// measureColdStarts launches every target o.coldRuns times, interleaved,
// and records the median time to the first tools/list response.
func measureColdStarts(ctx context.Context, o *options, targets []*target, res *results) error {
	times := make([][]time.Duration, len(targets))
	for range o.coldRuns {
		for i, t := range targets {
			r, d, err := t.start(ctx)
			if err != nil {
				return err
			}
			if err := r.close(); err != nil {
				return fmt.Errorf("%s: exit after cold start: %w%s", t.name, err, r.stderr.suffix())
			}
			times[i] = append(times[i], d)
		}
	}
	for i, t := range targets {
		tr := res.Targets[t.name]
		tr.ColdStarts = times[i]
		tr.ColdStartMedian = median(times[i])
	}
	return nil
}

// seedWords is the vocabulary of the seeded documents.
var seedWords = strings.Fields(`reef harbour tide coral lagoon anchor current sail north south
	storm chart compass island shore wave kelp beacon channel depth
	meeting budget review draft schedule invoice travel visa report notes
	garden kitchen recipe bread coffee music river mountain forest bridge`)

// seedMemory stores n documents of about 300 words through
// [memorytool.Store]; about one in four mentions the reef.
func seedMemory(ctx context.Context, cs *mcp.ClientSession, n int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		var b strings.Builder
		for w := range 300 {
			if w > 0 {
				b.WriteByte(' ')
			}
			word := seedWords[rng.IntN(len(seedWords))]
			if word == "reef" && i%4 != 0 {
				word = "shoal"
			}
			b.WriteString(word)
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: memorytool.Store, Arguments: map[string]any{
			"title":   fmt.Sprintf("Bench document %d", i),
			"content": b.String(),
		}})
		cancel()
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf(memorytool.Store+": %s", mcpwire.Text(res))
		}
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String is the captured output.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// suffix is the captured stderr as an error-message suffix, or "".
func (b *tailBuffer) suffix() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return ""
	}
	return "\nserver stderr:\n" + s
}

// otlpSink starts, for the run, an OTLP/HTTP receiver on loopback that
// reads and drops what it is sent, and returns its base URL.
func otlpSink() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	return srv.URL
}
