package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// upstreamServer is a Streamable HTTP MCP server on a fixed loopback
// address that a test can stop and start again (new process state, new
// session ids), as a restarted remote server would be.
type upstreamServer struct {
	addr string
	mcp  *mcp.Server
	http *httptest.Server
}

func newUpstreamServer(t *testing.T, tools ...string) *upstreamServer {
	t.Helper()
	u := &upstreamServer{}
	u.start(t, "127.0.0.1:0", tools...)
	t.Cleanup(func() { u.http.Close() })
	return u
}

func (u *upstreamServer) start(t *testing.T, addr string, tools ...string) {
	t.Helper()
	u.mcp = mcp.NewServer(&mcp.Implementation{Name: "relay-upstream", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	u.mcp.AddResource(&mcp.Resource{URI: "test://watched", Name: "watched", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "watched"}}}, nil
		})
	for _, name := range tools {
		u.addTool(name)
	}
	var l net.Listener
	testwait.Retry(t, "listen on "+addr, func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	})
	srv := u.mcp
	u.http = httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	u.http.Listener = l
	u.http.Start()
	u.addr = l.Addr().String()
}

// restart stops the server and serves a new one, with no memory of old
// sessions, on the same address.
func (u *upstreamServer) restart(t *testing.T, tools ...string) {
	t.Helper()
	u.http.CloseClientConnections()
	u.http.Close()
	u.start(t, u.addr, tools...)
}

func (u *upstreamServer) addTool(name string) {
	mcp.AddTool(u.mcp, &mcp.Tool{Name: name, Description: "Answers with its name and the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + in.Text}}}, nil, nil
		})
}

// startHost starts a host whose one provider is the upstream relay, with
// u as its server "up"; upstream is lines of the [upstream] table, or "".
// The host is closed when the test ends.
func (u *upstreamServer) startHost(t *testing.T, upstream string) *host.Host {
	t.Helper()
	h, _ := newTestHost(t, fmt.Sprintf("%s[upstream]\n%s[[upstream.servers]]\nname = \"up\"\nendpoint = %q\n", noBuiltins, upstream, "http://"+u.addr+"/"))
	return h
}

// callText calls tool with {"text": arg} and returns its text; an error
// result fails the test.
func callText(t *testing.T, cs *mcp.ClientSession, tool, arg string) string {
	t.Helper()
	out, isErr := mcpCallText(t, cs, tool, textArgs(t, arg))
	if isErr {
		t.Fatalf("call %s: isError: %s", tool, out)
	}
	return out
}

// textArgs is the JSON object {"text": s}, the arguments of the test
// servers' tools.
func textArgs(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"text": s})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An upstream's tools/list_changed reaches connected clients as the
// host's own list_changed, and the new tool is listed and callable.
func TestUpstreamListChangedIsReadvertised(t *testing.T) {
	up := newUpstreamServer(t, "first")
	h := up.startHost(t, "")
	changed := make(chan struct{}, 8)
	cs := connect(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"up__first"}) {
		t.Fatalf("tools before the change: %v", got)
	}
	up.addTool("second")
	testwait.Recv(t, changed, "notifications/tools/list_changed after the upstream's")
	testwait.Until(t, "up__second listed", func() bool { return slices.Contains(toolNames(t, cs), "up__second") })
	if got := callText(t, cs, "up__second", "hi"); got != "second:hi" {
		t.Errorf("up__second answered %q", got)
	}
}

// An HTTP upstream restarted mid-session (its old session ids unknown to
// it now) is used again on the next call, without an error.
func TestRestartedHTTPUpstreamIsUsedAgain(t *testing.T) {
	up := newUpstreamServer(t, "echo")
	h := up.startHost(t, "")
	cs := connect(t, h, nil)
	if got := callText(t, cs, "up__echo", "before"); got != "echo:before" {
		t.Fatalf("before the restart: %q", got)
	}
	up.restart(t, "echo")
	if got := callAfterRestart(t, cs, "after"); got != "echo:after" {
		t.Errorf("after the restart: %q", got)
	}
	// The command line's shared session survives it too.
	res := call(t, h, "up__echo", `{"text":"cli"}`)
	if res.IsError && strings.Contains(res.Text(), "could not be sent") {
		res = call(t, h, "up__echo", `{"text":"cli"}`)
	}
	if got := res.Text(); got != "echo:cli" {
		t.Errorf("command-line call after the restart: %q", got)
	}
}

// callAfterRestart calls up__echo with arg once the upstream restarted.
// The first call may go out on a keep-alive connection the old server
// closed under it, which Go's HTTP client does not retry for a POST: the
// relay then says the call could not be sent, and the next one is sent
// on a new connection.
func callAfterRestart(t *testing.T, cs *mcp.ClientSession, arg string) string {
	t.Helper()
	out, isErr := mcpCallText(t, cs, "up__echo", textArgs(t, arg))
	if isErr && strings.Contains(out, "could not be sent") {
		return callText(t, cs, "up__echo", arg)
	}
	if isErr {
		t.Fatalf("call up__echo: isError: %s", out)
	}
	return out
}

// A client's subscription survives a crash of the upstream provider run as
// a plugin process: the restarted provider is told it again, and the
// upstream's updates reach the client as before.
func TestSubscriptionSurvivesUpstreamProviderRestart(t *testing.T) {
	up := newUpstreamServer(t, "echo")
	h := up.startHost(t, "process = \"plugin\"\n")
	updated := make(chan string, 64)
	cs := connectVersion(t, h, "2025-11-25", &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "test://watched"}); err != nil {
		t.Fatal(err)
	}
	// until triggers an update every 100 ms until the client hears one.
	until := func(what string) {
		t.Helper()
		uri := testwait.RecvRepeating(t, updated, "notifications/resources/updated "+what, 100*time.Millisecond, func() {
			_ = up.mcp.ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: "test://watched"})
		})
		if uri != "test://watched" {
			t.Fatalf("%s: update for %q", what, uri)
		}
	}
	until("before the restart")
	p := providerByName(t, h, "upstream")
	pid := p.Pid()
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "upstream provider restarted", func() bool { return p.Pid() != 0 && p.Pid() != pid })
	for len(updated) > 0 {
		<-updated
	}
	until("after the restart")
}
