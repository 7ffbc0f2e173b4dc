package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// localKit is a provider for the in-process tests: its tools panic, wait
// for their context, report events, call the host and grow the catalog.
type localKit struct {
	mu        sync.Mutex
	configure *sdk.ConfigureRequest
	extra     bool
	closed    int
	// started receives the request of every kit.wait call once it runs.
	started chan *sdk.CallToolRequest
	// ended receives what kit.wait's context said when the call ended.
	ended chan error
}

func newLocalKit() *localKit {
	return &localKit{started: make(chan *sdk.CallToolRequest, 4), ended: make(chan error, 4)}
}

func (k *localKit) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.configure = req
	return nil
}

func (k *localKit) Describe(context.Context) (*sdk.Catalog, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	tool := func(name string) sdk.Tool {
		return sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Class: sdk.ClassRead, Annotations: sdk.Annotations{ReadOnlyHint: sdk.Bool(true)}}
	}
	cat := &sdk.Catalog{Name: "local", Tools: []sdk.Tool{tool("kit.panic"), tool("kit.wait"), tool("kit.events"), tool("kit.ask"), tool("kit.grow")}}
	if k.extra {
		cat.Tools = append(cat.Tools, tool("kit.extra"))
	}
	return cat, nil
}

func (k *localKit) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	switch req.Name {
	case "kit.panic":
		panic("kit.panic called")
	case "kit.wait":
		k.started <- req
		<-ctx.Done()
		k.ended <- ctx.Err()
		return nil, ctx.Err()
	case "kit.events":
		if err := req.Progress(ctx, sdk.Progress{Progress: 1, Total: 2, Message: "half"}); err != nil {
			return nil, err
		}
		if err := req.Log(ctx, sdk.LogMessage{Level: "info", Logger: "kit", Data: "hello"}); err != nil {
			return nil, err
		}
		// Kept to send an event after the call ended.
		k.started <- req
		return sdk.TextResult("done"), nil
	case "kit.ask":
		k.mu.Lock()
		host := k.configure.Host
		k.mu.Unlock()
		out, err := host.RequestClient(ctx, &sdk.ClientRequest{Caller: req.Caller, Method: sdk.MethodElicit, Params: []byte(`{"message":"sure?"}`)})
		if err != nil {
			return nil, err
		}
		return sdk.TextResult(string(out)), nil
	case "kit.ctx":
		// What of the host's context the call's context carries.
		sc := trace.SpanContextFromContext(ctx)
		return sdk.TextResult(fmt.Sprintf("value=%v trace=%s", ctx.Value(hostKey{}), sc.TraceID())), nil
	case "kit.grow":
		k.mu.Lock()
		k.extra = true
		host := k.configure.Host
		k.mu.Unlock()
		if err := host.NotifyCatalogChanged(ctx); err != nil {
			return nil, err
		}
		return sdk.TextResult("grown"), nil
	}
	return sdk.ErrorResult("unknown tool %s", req.Name), nil
}

func (k *localKit) ReadResource(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, sdk.ErrResourceNotFound
}

func (k *localKit) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed++
	return nil
}

// hostKey keys a value of the host's context that must not reach an
// in-process provider.
type hostKey struct{}

// startLocal starts kit in the host's process under a manager with opts.
func startLocal(t *testing.T, opts Options, kit *localKit) (*Manager, *Provider) {
	t.Helper()
	spec := Spec{Name: "local", Path: "/nonexistent/openhuman-host", Args: []string{"provider", "local"}, DataDir: t.TempDir(),
		InProcess: func(hclog.Logger) sdk.Provider { return kit }}
	return startKit(t, opts, spec)
}

// recordingHost is the host service of the in-process tests: it answers
// RequestClient with the caller's client name.
type recordingHost struct {
	sdktest.StubHost
	requests chan *sdk.ClientRequest
}

func (h *recordingHost) RequestClient(_ context.Context, req *sdk.ClientRequest) ([]byte, error) {
	h.requests <- req
	return json.Marshal(map[string]string{"action": "accept", "client": req.Caller.ClientName})
}

// recordingEvents is the host's sink of a call's events.
type recordingEvents struct {
	mu     sync.Mutex
	events []string
}

func (e *recordingEvents) Progress(ctx context.Context, p sdk.Progress) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("progress %s (%v)", p.Message, ctx.Value(hostKey{})))
	return nil
}

func (e *recordingEvents) Log(ctx context.Context, m sdk.LogMessage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("log %s %s (%v)", m.Level, m.Data, ctx.Value(hostKey{})))
	return nil
}

// A provider run in the host's process starts without a process of its
// own, gets the environment a process would get (not the host's), and is
// closed when stopped.
func TestInProcessProviderStartsAndStops(t *testing.T) {
	t.Parallel()
	kit := newLocalKit()
	m, p := startLocal(t, Options{Env: []string{"PATH", "OPENHUMAN_TEST_UNSET_VARIABLE"}, ExtraEnv: []string{"GOGC=400"}}, kit)
	st := p.Status()
	if st.State != StateRunning || !st.InHost || st.Pid != os.Getpid() || st.Tools != 5 {
		t.Errorf("status = %+v, want running in the host (pid %d) with 5 tools", st, os.Getpid())
	}
	if v := p.Protocol(); v != plugin.ProtocolVersion {
		t.Errorf("protocol %d, want %d", v, plugin.ProtocolVersion)
	}
	kit.mu.Lock()
	env := kit.configure.Env
	kit.mu.Unlock()
	want := []string{"GOGC=400"}
	if path, ok := os.LookupEnv("PATH"); ok {
		want = []string{"PATH=" + path, "GOGC=400"}
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("Configure's environment (-want +got):\n%s", diff)
	}
	m.Stop(p, 0)
	kit.mu.Lock()
	closed := kit.closed
	kit.mu.Unlock()
	if closed != 1 {
		t.Errorf("Close called %d times after Stop, want 1", closed)
	}
	if _, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.events"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("call after Stop: %v, want ErrUnavailable", err)
	}
}

// A panic in an in-process provider's tool is an error of that call, as a
// recovered panic in a provider process is: the host serves on, and
// MaxFailures of them mark the provider failed and close it.
func TestInProcessPanicIsACallError(t *testing.T) {
	t.Parallel()
	kit := newLocalKit()
	_, p := startLocal(t, Options{Restart: RestartPolicy{MaxFailures: 3}}, kit)
	for i := range 3 {
		_, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.panic", Arguments: []byte("{}")})
		if !errors.Is(err, plugin.ErrPanicked) || err.Error() != "CallTool kit.panic panicked: kit.panic called" {
			t.Fatalf("call %d to a panicking tool: %v", i, err)
		}
		if i < 2 {
			if res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.events"}); err != nil || res.Content[0].Text != "done" {
				t.Fatalf("call after panic %d: %v %+v", i, err, res)
			}
			<-kit.started
		}
	}
	testwait.Until(t, "marked failed", func() bool { return p.Status().State == StateFailed })
	if st := p.Status(); !strings.Contains(st.LastError, "a tool panicked") || st.Restarts != 0 {
		t.Errorf("status = %+v", st)
	}
	testwait.Until(t, "closed", func() bool {
		kit.mu.Lock()
		defer kit.mu.Unlock()
		return kit.closed == 1
	})
}

// A panic while the provider is made is a start error, not a crash.
func TestInProcessPanicAtStart(t *testing.T) {
	t.Parallel()
	m := NewManager(&Options{})
	t.Cleanup(m.Close)
	spec := Spec{Name: "local", InProcess: func(hclog.Logger) sdk.Provider { panic("no provider today") }}
	loaded, failed, err := m.Start(t.Context(), []Spec{spec})
	if err != nil || len(loaded) != 0 || len(failed) != 1 || !errors.Is(failed[0].Err, plugin.ErrPanicked) ||
		!strings.Contains(failed[0].Err.Error(), "no provider today") {
		t.Fatalf("Start: loaded %d, failed %v, err %v", len(loaded), failed, err)
	}
}

// Cancelling a call's context reaches the in-process provider, and the
// call's error says it was cancelled.
func TestInProcessCancellationReachesTheProvider(t *testing.T) {
	t.Parallel()
	kit := newLocalKit()
	_, p := startLocal(t, Options{}, kit)
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 1)
	go func() {
		_, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "kit.wait"})
		errs <- err
	}()
	testwait.Recv(t, kit.started, "kit.wait running")
	cancel()
	if err := testwait.Recv(t, kit.ended, "kit.wait's context done"); !errors.Is(err, context.Canceled) {
		t.Errorf("the provider's context ended with %v, want context.Canceled", err)
	}
	if err := testwait.Recv(t, errs, "the call's error"); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "call kit.wait: ") {
		t.Errorf("call error = %v, want one naming the call and wrapping context.Canceled", err)
	}
}

// An in-process provider's context carries the call's trace context but
// none of the host's other values, as over gRPC.
func TestInProcessContextIsDetached(t *testing.T) {
	t.Parallel()
	_, p := startLocal(t, Options{}, newLocalKit())
	traceID := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	ctx := context.WithValue(trace.ContextWithSpanContext(t.Context(), sc), hostKey{}, "secret")
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "kit.ctx"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, "value=<nil> trace="+traceID.String(); got != want {
		t.Errorf("the provider's context: %s, want %s", got, want)
	}
}

// A tool's progress and log events reach the host's sink while it runs,
// with the call's context on the host's side (which the go-sdk relates
// them to the request by), and are refused once its call has returned.
func TestInProcessEventsReachTheHost(t *testing.T) {
	t.Parallel()
	kit := newLocalKit()
	_, p := startLocal(t, Options{}, kit)
	sink := &recordingEvents{}
	req := (&sdk.CallToolRequest{Name: "kit.events", Caller: sdk.Caller{ProgressToken: json.RawMessage(`"t1"`)}}).WithEvents(sink)
	res, err := p.CallTool(context.WithValue(t.Context(), hostKey{}, "call"), req)
	if err != nil || res.Content[0].Text != "done" {
		t.Fatalf("kit.events: %v %+v", err, res)
	}
	late := testwait.Recv(t, kit.started, "kit.events's request")
	if err := late.Progress(t.Context(), sdk.Progress{Progress: 2, Total: 2, Message: "late"}); !errors.Is(err, errCallEnded) {
		t.Errorf("progress after the call returned: %v, want errCallEnded", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if diff := cmp.Diff([]string{"progress half (call)", "log info hello (call)"}, sink.events); diff != "" {
		t.Errorf("events the host got (-want +got):\n%s", diff)
	}
}

// Requests to the client, and a catalog change, reach the host service
// from an in-process provider: the change makes the manager read the
// catalog again.
func TestInProcessHostServiceReachesTheHost(t *testing.T) {
	t.Parallel()
	kit := newLocalKit()
	host := &recordingHost{requests: make(chan *sdk.ClientRequest, 1)}
	changed := make(chan bool, 4)
	_, p := startLocal(t, Options{Host: host, OnChange: func(_ *Provider, c bool) { changed <- c }}, kit)
	res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.ask", Caller: sdk.Caller{ClientName: "inspector", CallToken: "c1"}})
	if err != nil || res.Content[0].Text != `{"action":"accept","client":"inspector"}` {
		t.Fatalf("kit.ask: %v %+v", err, res)
	}
	if req := testwait.Recv(t, host.requests, "the client request"); req.Method != sdk.MethodElicit || req.Caller.CallToken != "c1" || string(req.Params) != `{"message":"sure?"}` {
		t.Errorf("the host got %+v", req)
	}
	if _, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.grow"}); err != nil {
		t.Fatal(err)
	}
	if c := testwait.Recv(t, changed, "OnChange after the announcement"); !c {
		t.Error("OnChange called with catalogChanged false")
	}
	if !slices.ContainsFunc(p.Catalog().Tools, func(t sdk.Tool) bool { return t.Name == "kit.extra" }) {
		t.Error("kit.extra not in the catalog after the announcement")
	}
}

// The catalog the host keeps is its own: changing it changes nothing the
// provider returns next.
func TestInProcessCatalogIsACopy(t *testing.T) {
	t.Parallel()
	kit := newLocalKit()
	_, p := startLocal(t, Options{}, kit)
	cat := p.Catalog()
	cat.Tools[0].Name = "changed"
	cat.Tools[0].InputSchema[2] = 'X'
	*cat.Tools[0].Annotations.ReadOnlyHint = false
	inst, err := p.current()
	if err != nil {
		t.Fatal(err)
	}
	again, err := inst.impl.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if tool := again.Tools[0]; tool.Name != "kit.panic" || string(tool.InputSchema) != `{"type":"object"}` || !*tool.Annotations.ReadOnlyHint {
		t.Errorf("the provider's catalog changed with the host's copy: %+v", tool)
	}
}

// Methods of provider protocol 2 the provider does not implement fail
// with ErrNotImplemented, as over gRPC.
func TestInProcessOptionalMethods(t *testing.T) {
	t.Parallel()
	_, p := startLocal(t, Options{}, newLocalKit())
	if _, err := p.GetPrompt(t.Context(), &sdk.GetPromptRequest{Name: "x"}); !errors.Is(err, sdk.ErrNotImplemented) {
		t.Errorf("GetPrompt: %v, want ErrNotImplemented", err)
	}
	if err := p.SessionClosed(t.Context(), sdk.Caller{SessionToken: "s"}); !errors.Is(err, sdk.ErrNotImplemented) {
		t.Errorf("SessionClosed: %v, want ErrNotImplemented", err)
	}
	if _, err := p.ReadResource(t.Context(), &sdk.ReadResourceRequest{URI: "x://y"}); !errors.Is(err, sdk.ErrResourceNotFound) {
		t.Errorf("ReadResource: %v, want ErrResourceNotFound", err)
	}
}
