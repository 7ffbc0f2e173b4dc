package plugins

import (
	"context"
	"fmt"
	"reflect"

	"github.com/openhuman/openhuman-host/sdk"
)

// This file holds the provider protocol 2 side of a Provider: prompts,
// completion, subscriptions, session events, and catalog changes the
// provider announces. Calls to a provider that negotiated protocol 1 fail
// with an error wrapping [sdk.ErrNotImplemented] without reaching it.

// Protocol returns the provider protocol version its running process
// negotiated in the handshake (1 or 2), 0 when it is not running.
func (p *Provider) Protocol() int {
	inst, _ := p.current()
	if inst == nil {
		return 0
	}
	return inst.version
}

// enter2 is enter for a protocol 2 method: a provider on protocol 1 has
// none of them.
func (p *Provider) enter2(method string) (*instance, error) {
	inst, err := p.enter()
	if err != nil {
		return nil, err
	}
	if inst.version < 2 {
		p.inflight.Done()
		return nil, fmt.Errorf("provider %s: %s: %w (it speaks provider protocol %d)", p.Name, method, sdk.ErrNotImplemented, inst.version)
	}
	return inst, nil
}

// as returns inst's implementation as T, or an error wrapping
// [sdk.ErrNotImplemented].
func as[T any](p *Provider, inst *instance, method string) (T, error) {
	impl, ok := inst.impl.(T)
	if !ok {
		return impl, fmt.Errorf("provider %s: %s: %w", p.Name, method, sdk.ErrNotImplemented)
	}
	return impl, nil
}

// forward2 is [forward] for a method of the protocol 2 interface T: a
// provider on protocol 1, or one that does not implement T, fails with an
// error wrapping [sdk.ErrNotImplemented] without being called.
func forward2[T, R any](ctx context.Context, p *Provider, method, ended string, call func(T) (R, error)) (R, error) {
	var impl T
	enter := func() (*instance, error) {
		inst, err := p.enter2(method)
		if err != nil {
			return nil, err
		}
		if impl, err = as[T](p, inst, method); err != nil {
			p.inflight.Done()
			return nil, err
		}
		return inst, nil
	}
	return forward(ctx, p, enter, ended, func(*instance) (R, error) { return call(impl) })
}

// noResult adapts a method that returns only an error to [forward2].
func noResult(err error) (struct{}, error) { return struct{}{}, err }

// GetPrompt forwards prompts/get (protocol 2); see [sdk.PromptProvider].
func (p *Provider) GetPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	return forward2(ctx, p, "get prompt", "prompt", func(impl sdk.PromptProvider) (*sdk.GetPromptResult, error) {
		return impl.GetPrompt(ctx, req)
	})
}

// Complete forwards completion/complete (protocol 2); see [sdk.Completer].
func (p *Provider) Complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	return forward2(ctx, p, "complete", "", func(impl sdk.Completer) (*sdk.CompleteResult, error) {
		return impl.Complete(ctx, req)
	})
}

// Subscribe forwards resources/subscribe (protocol 2); see
// [sdk.Subscriber].
func (p *Provider) Subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	_, err := forward2(ctx, p, "subscribe", "", func(impl sdk.Subscriber) (struct{}, error) {
		return noResult(impl.Subscribe(ctx, req))
	})
	return err
}

// Unsubscribe forwards resources/unsubscribe (protocol 2).
func (p *Provider) Unsubscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	_, err := forward2(ctx, p, "unsubscribe", "", func(impl sdk.Subscriber) (struct{}, error) {
		return noResult(impl.Unsubscribe(ctx, req))
	})
	return err
}

// SetLoggingLevel forwards a session's logging/setLevel (protocol 2); see
// [sdk.SessionObserver].
func (p *Provider) SetLoggingLevel(ctx context.Context, req *sdk.SetLoggingLevelRequest) error {
	_, err := forward2(ctx, p, "set logging level", "", func(impl sdk.SessionObserver) (struct{}, error) {
		return noResult(impl.SetLoggingLevel(ctx, req))
	})
	return err
}

// SessionClosed tells the provider a client session ended (protocol 2).
func (p *Provider) SessionClosed(ctx context.Context, caller sdk.Caller) error {
	_, err := forward2(ctx, p, "session closed", "", func(impl sdk.SessionObserver) (struct{}, error) {
		return noResult(impl.SessionClosed(ctx, caller))
	})
	return err
}

// host returns the host service offered to this provider: the manager's,
// with catalog-change notices routed to this provider's supervisor.
func (p *Provider) host() sdk.Host {
	if p.m.opts.Host == nil {
		return nil
	}
	return &providerHost{Host: p.m.opts.Host, p: p}
}

// providerHost is the host service as one provider sees it.
type providerHost struct {
	sdk.Host
	p *Provider
}

// NotifyCatalogChanged asks the supervisor to call Describe again; it
// returns at once, and notices that arrive while one is pending count
// once.
func (h *providerHost) NotifyCatalogChanged(context.Context) error {
	h.p.refresh.Store(true)
	h.p.wake()
	return nil
}

// describeAgain reads inst's catalog again after the provider announced a
// change, and tells the host when it differs. A failed Describe keeps the
// catalog served so far and is logged.
func (p *Provider) describeAgain(inst *instance) {
	timeout := p.spec.StartTimeout
	if timeout <= 0 {
		timeout = p.m.opts.StartTimeout
	}
	ctx, cancel := context.WithTimeout(p.m.ctx, timeout)
	defer cancel()
	cat, err := inst.impl.Describe(ctx)
	if err != nil {
		p.log.Warn("provider announced a catalog change, but Describe failed; keeping its catalog", "error", err)
		return
	}
	p.mu.Lock()
	if p.inst != inst {
		p.mu.Unlock()
		return
	}
	changed := !reflect.DeepEqual(p.catalog, cat)
	p.catalog = cat
	p.mu.Unlock()
	p.log.Debug("provider catalog read again", "changed", changed, "tools", len(cat.Tools))
	if changed {
		p.notify(true)
	}
}
