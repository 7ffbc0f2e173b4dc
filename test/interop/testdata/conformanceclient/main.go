// Command conformanceclient lets the MCP conformance suite's client mode
// test openhuman-host's upstream side: run as the suite's client command,
// it writes a config with the scenario's mock server as the host's one
// upstream server (signing in with OAuth for the auth scenarios), starts
// `openhuman-host serve` on stdio, and does through the host what the
// go-sdk's conformance everything-client does against the server directly.
//
//	conformanceclient URL            (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT and
//	                                  OPENHUMAN_HOST_BIN in the environment)
//	conformanceclient --as-browser URL
//
// With --as-browser it is the user's browser for the host's OAuth sign-in:
// it follows the authorization URL to the host's loopback redirect, as a
// user who approves at once would (the mock authorization server approves
// without a page).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/providers/upstream/oauthtest"
	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) == 3 && os.Args[1] == "--as-browser" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := oauthtest.Follow(ctx, os.Args[2]); err != nil {
			log.Fatalf("browser: %v", err)
		}
		return
	}
	if len(os.Args) < 2 {
		log.Fatal("usage: conformanceclient URL")
	}
	if err := run(os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		log.Fatalf("scenario %q through openhuman-host: %v", os.Getenv("MCP_CONFORMANCE_SCENARIO"), err)
	}
}

// run does scenario against serverURL through the host.
func run(serverURL, scenario string) error {
	host := os.Getenv("OPENHUMAN_HOST_BIN")
	if host == "" {
		return fmt.Errorf("OPENHUMAN_HOST_BIN is not set")
	}
	var confCtx map[string]any
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &confCtx)
	dir, err := os.MkdirTemp("", "conformance-client-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	authLine, env := "", []string{}
	if scenario == "auth/client-credentials-basic" {
		// Machine to machine: the client credentials grant.
		id, _ := confCtx["client_id"].(string)
		secret, _ := confCtx["client_secret"].(string)
		authLine = fmt.Sprintf("auth = { kind = \"oauth_client_credentials\", client_id = %q, client_secret_env = \"CONFORMANCE_CLIENT_SECRET\" }\n", id)
		env = append(env, "CONFORMANCE_CLIENT_SECRET="+secret)
	} else if strings.HasPrefix(scenario, "auth/") {
		authLine = `auth = { kind = "oauth", client_metadata_url = "https://conformance-test.local/client-metadata.json"`
		if id, ok := confCtx["client_id"].(string); ok {
			authLine += fmt.Sprintf(", client_id = %q", id)
			if secret, ok := confCtx["client_secret"].(string); ok {
				authLine += `, client_secret_env = "CONFORMANCE_CLIENT_SECRET"`
				env = append(env, "CONFORMANCE_CLIENT_SECRET="+secret)
			}
		}
		authLine += " }\n"
	}
	cfg := fmt.Sprintf(`[server]
data_dir = %q
log_level = "debug"
provider_start_timeout_secs = 60

[autonomy]
level = "full"
confirm_acts = "off"

[providers.memory]
enabled = false

[providers.agent]
enabled = false

[[upstream.servers]]
name = %q
endpoint = %q
prefix = ""
trust_annotations = true
%s`, filepath.Join(dir, "data"), upstreamName, serverURL, authLine)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	cmd := exec.Command(host, "--config", cfgPath, "serve")
	cmd.Env = append(append(os.Environ(), env...), "BROWSER="+self+" --as-browser")
	cmd.Stderr = os.Stderr
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if scenario == "sep-2322-client-request-state" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sessionOptions(scenario))
	if err != nil {
		return fmt.Errorf("connect to openhuman-host: %w", err)
	}
	defer session.Close()
	h := &hostSession{session: session, changed: changed, host: host, cfgPath: cfgPath}

	switch scenario {
	case "json-schema-2020-12-preservation":
		// Echo the focal tool's input schema as the host lists it, so the
		// referee sees which keywords survived the relay.
		tools, err := h.waitForTools(ctx, "json_schema_2020_12_tool", "json_schema_echo")
		if err != nil {
			return err
		}
		i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
		return call(ctx, session, "json_schema_echo", map[string]any{"schema": tools[i].InputSchema}, false)
	case "http-custom-headers":
		calls, _ := confCtx["toolCalls"].([]any)
		var names []string
		for _, c := range calls {
			if m, ok := c.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					names = append(names, n)
				}
			}
		}
		if _, err := h.waitForTools(ctx, names...); err != nil {
			return err
		}
		for _, c := range calls {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			args, _ := m["arguments"].(map[string]any)
			callForReferee(ctx, session, name, args)
		}
		return nil
	case "sep-2322-client-request-state":
		// The server answers each tool with an InputRequiredResult; the
		// host passes it on and the client answers and retries, as the
		// reference client does directly.
		tools := []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"}
		if _, err := h.waitForTools(ctx, tools...); err != nil {
			return err
		}
		for _, name := range tools {
			callForReferee(ctx, session, name, map[string]any{})
		}
		return nil
	case "http-invalid-tool-headers":
		tools, err := h.waitForTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			callForReferee(ctx, session, t.Name, map[string]any{"region": "us-west1"})
		}
		return nil
	case "http-standard-headers":
		tools, err := h.waitForTools(ctx)
		if err != nil {
			return err
		}
		_ = call(ctx, session, tools[0].Name, map[string]any{}, true)
		if res, err := session.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
			_, _ = session.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
		}
		if res, err := session.ListPrompts(ctx, nil); err == nil && len(res.Prompts) > 0 {
			_, _ = session.GetPrompt(ctx, &mcp.GetPromptParams{Name: res.Prompts[0].Name, Arguments: map[string]string{}})
		}
		return nil
	}

	tool, args := "", map[string]any{}
	switch {
	case scenario == "tools_call":
		tool, args = "add_numbers", map[string]any{"a": 5, "b": 3}
	case scenario == "elicitation-sep1034-client-defaults":
		tool = "test_client_elicitation_defaults"
	case scenario == "sse-retry":
		tool = "test_reconnection"
	case strings.HasPrefix(scenario, "auth/"):
		tool = "test-tool"
	}
	switch {
	case scenario == "initialize" || scenario == "request-metadata" || scenario == "json-schema-ref-no-deref":
		// The server has no tools: as the reference client connects (and
		// lists its tools), the host connects to it, and that is all.
		return h.waitConnected(ctx)
	case tool == "":
		_, err := h.waitForTools(ctx)
		return err
	}
	if _, err := h.waitForTools(ctx, tool); err != nil {
		return err
	}
	return call(ctx, session, tool, args, false)
}

// hostSession is a client's session with the host, and where to ask how
// the host fares with its upstream server.
type hostSession struct {
	session *mcp.ClientSession
	changed <-chan struct{} // tools/list_changed from the host
	host    string          // the openhuman-host binary
	cfgPath string          // its config
}

// upstreamState returns the state the running host reports for its
// upstream server, as `providers status --json` prints it (connecting,
// connected or failed), and the error of a failed one; "" when it cannot
// tell yet.
func (h *hostSession) upstreamState(ctx context.Context) (state, why string) {
	out, _ := exec.CommandContext(ctx, h.host, "--config", h.cfgPath, "providers", "status", "--json").Output()
	var reports []struct {
		Upstream []upstreamwire.ServerStatus `json:"upstream"`
	}
	if json.Unmarshal(out, &reports) != nil || len(reports) != 1 {
		return "", ""
	}
	for _, u := range reports[0].Upstream {
		if u.Name == upstreamName {
			return u.State, u.Error
		}
	}
	return "", ""
}

// waitForTools lists the host's tools until they include every name in
// want (or, with none, any tool): the server's tools arrive once the host
// has connected (and signed in) to it, at start or later with
// tools/list_changed. Once the host reports that it failed to connect (a
// sign-in it refused, as the reference client does), it returns that
// error instead of waiting on.
func (h *hostSession) waitForTools(ctx context.Context, want ...string) ([]*mcp.Tool, error) {
	for {
		res, err := h.session.ListTools(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		all := len(res.Tools) > 0
		for _, w := range want {
			all = all && slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == w })
		}
		if all {
			return res.Tools, nil
		}
		if state, why := h.upstreamState(ctx); state == upstreamwire.StateFailed {
			return nil, fmt.Errorf("the host failed to connect to the server: %s", why)
		}
		select {
		case <-h.changed:
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("the host never listed the server's tools %v", want)
		}
	}
}

// waitConnected waits until the host reports its upstream server
// connected, or failed, then lists the host's tools once.
func (h *hostSession) waitConnected(ctx context.Context) error {
	for {
		state, why := h.upstreamState(ctx)
		if state == upstreamwire.StateFailed {
			return fmt.Errorf("the host failed to connect to the server: %s", why)
		}
		if state == upstreamwire.StateConnected {
			_, err := h.session.ListTools(ctx, nil)
			return err
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("the host never connected to the server")
		}
	}
}

// upstreamName is the name of the host's one upstream server in the
// config run writes.
const upstreamName = "conformance"

// call calls tool through the host; an isError result is an error unless
// allowed.
func call(ctx context.Context, session *mcp.ClientSession, tool string, args map[string]any, allowIsError bool) error {
	if args == nil {
		args = map[string]any{}
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		if !allowIsError {
			return fmt.Errorf("tools/call %s: isError: %s", tool, b)
		}
		log.Printf("tools/call %s: isError: %s", tool, b)
	}
	return nil
}

// callForReferee calls tool through the host for a scenario whose mock
// server judges the calls it receives: a failed call or an isError result
// is only logged.
func callForReferee(ctx context.Context, session *mcp.ClientSession, tool string, args map[string]any) {
	if err := call(ctx, session, tool, args, true); err != nil {
		log.Print(err)
	}
}

// sessionOptions asks the host for the newest protocol the go-sdk speaks,
// as the reference client does.
func sessionOptions(string) *mcp.ClientSessionOptions { return nil }
