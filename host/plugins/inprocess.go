package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
	sdkplugin "github.com/openhuman/openhuman-host/sdk/plugin"
)

// This file runs a provider in the host's own process ([Spec].InProcess):
// the host calls its sdk.Provider directly, without go-plugin, gRPC, TLS
// or a process of its own, and hands it the host service directly. What
// the gRPC adapter does on the way stays: contexts cross without their
// values (detach), a panic in a method becomes an error of that call
// wrapping sdk/plugin.ErrPanicked (counted like one recovered in a
// provider process), errors name the method as the adapter's do, a tool's
// events reach the host with the call's own context and are refused after
// its result, Describe's catalog is the host's own copy, and the provider
// gets the environment its process would have got
// (sdk.ConfigureRequest.Env).

// launchInProcess makes p's provider with its spec's InProcess and runs
// Configure and Describe within the spec's start timeout.
func (m *Manager) launchInProcess(ctx context.Context, p *Provider) (*instance, *sdk.Catalog, error) {
	timeout := p.spec.StartTimeout
	if timeout <= 0 {
		timeout = m.opts.StartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	impl, err := newLocal(p.spec.InProcess, p.log)
	if err != nil {
		return nil, nil, err
	}
	inst := &instance{impl: impl, local: impl, pid: os.Getpid(), version: sdkplugin.ProtocolVersion, answered: new(atomic.Uint64)}
	return m.configure(ctx, p, inst, p.spec, p.log, startSteps{})
}

// local is a provider called in the host's process: an sdk.Provider, with
// the optional interfaces of provider protocol 2, around the provider's
// own implementation.
type local struct {
	impl sdk.Provider
	log  hclog.Logger
	// closed makes close run once.
	closed sync.Once
}

// newLocal makes a provider with newProvider; a panic in it is an error.
func newLocal(newProvider func(hclog.Logger) sdk.Provider, log hclog.Logger) (l *local, err error) {
	l = &local{log: log}
	defer l.recovered("making the provider", &err)
	if l.impl = newProvider(log); l.impl == nil {
		return nil, errors.New("making the provider: it returned none")
	}
	return l, nil
}

// panicked is the error of a method that panicked; it wraps
// sdk/plugin.ErrPanicked, as a panic recovered in a provider process does.
type panicked string

func (e panicked) Error() string { return string(e) }

// Is reports whether target is sdk/plugin.ErrPanicked.
func (e panicked) Is(target error) bool { return target == sdkplugin.ErrPanicked }

// recovered turns a panic in what into *err, logging its stack; deferred
// by every method.
func (l *local) recovered(what string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	l.log.Error("recovered from a panic", "in", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*err = panicked(fmt.Sprintf("%s panicked: %v", what, r))
}

// named prefixes a method's error with what failed, as the gRPC adapter
// does (its errors read "call <tool>: ...").
func named(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (l *local) Configure(ctx context.Context, req *sdk.ConfigureRequest) (err error) {
	defer l.recovered("Configure", &err)
	if req.Host != nil {
		c := *req
		c.Host = detachedHost{host: req.Host}
		req = &c
	}
	return named("configure", l.impl.Configure(detach(ctx), req))
}

func (l *local) Describe(ctx context.Context) (_ *sdk.Catalog, err error) {
	defer l.recovered("Describe", &err)
	cat, err := l.impl.Describe(detach(ctx))
	switch {
	case err != nil:
		return nil, named("describe", err)
	case cat == nil:
		return nil, errors.New("describe: Describe returned no catalog")
	}
	return cloneCatalog(cat), nil
}

func (l *local) CallTool(ctx context.Context, req *sdk.CallToolRequest) (_ *sdk.CallToolResult, err error) {
	what := "call " + req.Name
	defer l.recovered("CallTool "+req.Name, &err)
	events := &callEvents{req: req, ctx: ctx}
	defer events.end()
	res, err := l.impl.CallTool(detach(ctx), req.WithEvents(events))
	switch {
	case err != nil:
		return nil, named(what, err)
	case res == nil:
		return nil, fmt.Errorf("%s: tool %s returned no result", what, req.Name)
	}
	return res, nil
}

func (l *local) ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (_ *sdk.ReadResourceResult, err error) {
	defer l.recovered("ReadResource", &err)
	res, err := l.impl.ReadResource(detach(ctx), req)
	switch {
	case err != nil:
		return nil, named("read "+req.URI, err)
	case res == nil:
		return nil, fmt.Errorf("read %s: ReadResource returned no contents for %s", req.URI, req.URI)
	}
	return res, nil
}

// optional returns impl as T, looking through wrappers with an
// Unwrap() sdk.Provider method, as the SDK's gRPC server does.
func optional[T any](impl sdk.Provider) (T, bool) {
	for {
		if t, ok := impl.(T); ok {
			return t, true
		}
		u, ok := impl.(interface{ Unwrap() sdk.Provider })
		if !ok {
			var zero T
			return zero, false
		}
		impl = u.Unwrap()
	}
}

// callOptional calls the provider's implementation of T with call, given
// ctx detached; a provider without one gives an error wrapping
// sdk.ErrNotImplemented.
func callOptional[T, R any](ctx context.Context, l *local, method, what string, call func(context.Context, T) (R, error)) (_ R, err error) {
	var zero R
	defer l.recovered(method, &err)
	impl, ok := optional[T](l.impl)
	if !ok {
		return zero, fmt.Errorf("%s: %w", what, sdk.ErrNotImplemented)
	}
	res, err := call(detach(ctx), impl)
	if err != nil {
		return zero, named(what, err)
	}
	return res, nil
}

func (l *local) GetPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	res, err := callOptional(ctx, l, "GetPrompt "+req.Name, "get prompt "+req.Name, func(ctx context.Context, impl sdk.PromptProvider) (*sdk.GetPromptResult, error) {
		return impl.GetPrompt(ctx, req)
	})
	if err == nil && res == nil {
		return nil, fmt.Errorf("get prompt %s: GetPrompt returned no prompt for %s", req.Name, req.Name)
	}
	return res, err
}

func (l *local) Complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	res, err := callOptional(ctx, l, "Complete", "complete", func(ctx context.Context, impl sdk.Completer) (*sdk.CompleteResult, error) {
		return impl.Complete(ctx, req)
	})
	if err == nil && res == nil {
		res = &sdk.CompleteResult{}
	}
	return res, err
}

func (l *local) Subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	_, err := callOptional(ctx, l, "Subscribe", "subscribe "+req.URI, func(ctx context.Context, impl sdk.Subscriber) (struct{}, error) {
		return noResult(impl.Subscribe(ctx, req))
	})
	return err
}

func (l *local) Unsubscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	_, err := callOptional(ctx, l, "Unsubscribe", "unsubscribe "+req.URI, func(ctx context.Context, impl sdk.Subscriber) (struct{}, error) {
		return noResult(impl.Unsubscribe(ctx, req))
	})
	return err
}

func (l *local) SetLoggingLevel(ctx context.Context, req *sdk.SetLoggingLevelRequest) error {
	_, err := callOptional(ctx, l, "SetLoggingLevel", "set logging level", func(ctx context.Context, impl sdk.SessionObserver) (struct{}, error) {
		return noResult(impl.SetLoggingLevel(ctx, req))
	})
	return err
}

func (l *local) SessionClosed(ctx context.Context, caller sdk.Caller) error {
	_, err := callOptional(ctx, l, "SessionClosed", "session closed", func(ctx context.Context, impl sdk.SessionObserver) (struct{}, error) {
		return noResult(impl.SessionClosed(ctx, caller))
	})
	return err
}

// close lets the provider release what it holds (an io.Closer's Close),
// waiting at most grace: a provider that does not return by then is left
// to finish in the background, since nothing can stop code of the host's
// own process. Its error is logged.
func (l *local) close(grace time.Duration) {
	l.closed.Do(func() {
		c, ok := l.impl.(io.Closer)
		if !ok {
			return
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			var err error
			func() {
				defer l.recovered("Close", &err)
				err = c.Close()
			}()
			if err != nil {
				l.log.Warn("closing the provider failed", "error", err)
			}
		}()
		select {
		case <-done:
		case <-time.After(grace):
			l.log.Warn("the provider did not close in time; leaving it to finish", "grace", grace)
		}
	})
}

// errCallEnded is the error of a tool's event sent after its call
// returned: over gRPC its stream is closed by then.
var errCallEnded = errors.New("the tool call has ended")

// callEvents passes one call's progress and log events to the host's sink
// until the call returns, and refuses them after.
type callEvents struct {
	// req is the host's request, whose Progress and Log reach the host's
	// sink.
	req *sdk.CallToolRequest
	// ctx is the call's context on the host's side, which events are sent
	// with, as over gRPC: the go-sdk relates a notification to its
	// request by it.
	ctx context.Context
	// mu is held for reading while an event is passed on, and for
	// writing by end, so that no event is passed on after end returns.
	mu    sync.RWMutex
	ended bool
}

func (e *callEvents) Progress(_ context.Context, p sdk.Progress) error {
	return e.pass(func() error { return e.req.Progress(e.ctx, p) })
}

func (e *callEvents) Log(_ context.Context, m sdk.LogMessage) error {
	return e.pass(func() error { return e.req.Log(e.ctx, m) })
}

// pass runs send, which passes an event on, unless the call has ended.
func (e *callEvents) pass(send func() error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.ended {
		return errCallEnded
	}
	return send()
}

// end refuses later events, once those being passed on are through.
func (e *callEvents) end() {
	e.mu.Lock()
	e.ended = true
	e.mu.Unlock()
}

// cloneCatalog copies c deeply enough that the host never shares a slice
// or schema with the provider, as a catalog decoded from gRPC would not.
func cloneCatalog(c *sdk.Catalog) *sdk.Catalog {
	out := *c
	out.Tools = slices.Clone(c.Tools)
	for i := range out.Tools {
		t := &out.Tools[i]
		t.InputSchema, t.OutputSchema = slices.Clone(t.InputSchema), slices.Clone(t.OutputSchema)
		a := &t.Annotations
		a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint = cloneBool(a.ReadOnlyHint), cloneBool(a.DestructiveHint),
			cloneBool(a.IdempotentHint), cloneBool(a.OpenWorldHint)
	}
	out.Resources = slices.Clone(c.Resources)
	out.ResourceTemplates = slices.Clone(c.ResourceTemplates)
	out.Prompts = slices.Clone(c.Prompts)
	for i := range out.Prompts {
		out.Prompts[i].Arguments = slices.Clone(out.Prompts[i].Arguments)
	}
	return &out
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

var (
	_ sdk.Provider        = (*local)(nil)
	_ sdk.PromptProvider  = (*local)(nil)
	_ sdk.Completer       = (*local)(nil)
	_ sdk.Subscriber      = (*local)(nil)
	_ sdk.SessionObserver = (*local)(nil)
)
