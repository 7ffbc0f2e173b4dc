package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhuman/openhuman-host/internal/platform"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
)

// State is a loaded provider's state.
type State string

// States of a provider.
const (
	// StateStarting is a provider whose first start has not finished.
	StateStarting State = "starting"
	// StateRunning is a provider whose process answers calls.
	StateRunning State = "running"
	// StateRestarting is a provider whose process exited or stopped
	// answering and is being started again; its calls fail at once.
	StateRestarting State = "restarting"
	// StateFailed is a provider that failed too often to be restarted
	// again (see [RestartPolicy]); it stays failed until the host restarts.
	StateFailed State = "failed"
	// StateStopped is a provider the host stopped.
	StateStopped State = "stopped"
)

// Status is a snapshot of one provider, for `providers status`.
type Status struct {
	// Name is the provider's config name.
	Name string `json:"name"`
	// State is the provider's state.
	State State `json:"state"`
	// Pid is the process id of its running process, 0 when none; the
	// host's own when InHost.
	Pid int `json:"pid,omitempty"`
	// InHost is true for a provider run in the host's process
	// ([Spec].InProcess).
	InHost bool `json:"in_host,omitempty"`
	// Restarts counts the restarts that succeeded since the host started.
	Restarts int `json:"restarts"`
	// Since is when the provider entered State.
	Since time.Time `json:"since"`
	// Tools is how many tools its current catalog lists.
	Tools int `json:"tools"`
	// LastError says why it last stopped or failed to start; empty when it
	// never did.
	LastError string `json:"last_error,omitempty"`
}

// Provider is one loaded provider. Its methods are safe for concurrent use.
type Provider struct {
	// Name is the provider's config name.
	Name string

	spec Spec
	m    *Manager
	log  hclog.Logger

	mu       sync.Mutex
	inst     *instance
	catalog  *sdk.Catalog
	state    State
	since    time.Time
	restarts int
	lastErr  string
	failures []time.Time
	// giveUp, when set, tells the supervisor to mark the provider failed
	// with this reason (too many panics).
	giveUp string

	// inflight counts calls running in the provider; close waits for them
	// (up to its grace) before stopping the process.
	inflight sync.WaitGroup

	kick chan struct{} // wakes the supervisor after a failed call
	// refresh asks the supervisor to call Describe again: the provider
	// said its catalog changed (protocol 2).
	refresh atomic.Bool
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the supervisor returns
	once    sync.Once
}

// Spec returns the spec the provider was started from.
func (p *Provider) Spec() Spec { return p.spec }

// Catalog returns what the provider's Describe returned at its last
// (re)start.
func (p *Provider) Catalog() *sdk.Catalog {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.catalog
}

// Status returns a snapshot of the provider's state.
func (p *Provider) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Status{Name: p.Name, State: p.state, Restarts: p.restarts, Since: p.since, LastError: p.lastErr, InHost: p.spec.InProcess != nil}
	if p.inst != nil {
		s.Pid = p.inst.pid
	}
	if p.catalog != nil {
		s.Tools = len(p.catalog.Tools)
	}
	return s
}

// Exited reports whether the provider has no running process: it exited
// and was not restarted yet, failed, or was stopped.
func (p *Provider) Exited() bool {
	inst, _ := p.current()
	return inst == nil || inst.exited()
}

// Pid returns the provider's current process id, 0 when it is not
// running; the host's own for a provider run in the host's process.
func (p *Provider) Pid() int {
	inst, _ := p.current()
	if inst == nil {
		return 0
	}
	return inst.pid
}

// wake asks the supervisor to look at the process now.
func (p *Provider) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// running returns the instance that serves calls, or an error wrapping
// [ErrUnavailable]. An instance whose process has exited and which the
// supervisor has not replaced yet counts as gone.
func (p *Provider) running() (*instance, error) {
	inst, err := p.current()
	if err != nil {
		return nil, err
	}
	if inst.exited() {
		p.wake()
		return nil, fmt.Errorf("provider %s: %w: its process exited; it is being restarted, try again in a moment", p.Name, ErrUnavailable)
	}
	return inst, nil
}

// enter returns the running instance and counts a call in, under p.mu so
// that close, which stops new calls under the same lock, never misses
// one; the caller must call p.inflight.Done.
func (p *Provider) enter() (*instance, error) {
	inst, err := p.running()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == StateStopped {
		return nil, fmt.Errorf("provider %s: %w: it was stopped", p.Name, ErrUnavailable)
	}
	p.inflight.Add(1)
	return inst, nil
}

// current returns the instance the supervisor holds, or an error wrapping
// [ErrUnavailable] that says why there is none.
func (p *Provider) current() (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inst != nil {
		return p.inst, nil
	}
	switch p.state {
	case StateFailed:
		return nil, fmt.Errorf("provider %s: %w: it failed %d times within %s and is not restarted again (last error: %s); fix it, then %s",
			p.Name, ErrUnavailable, p.m.opts.Restart.MaxFailures, p.m.opts.Restart.Window, p.lastErr, platform.ReloadAdvice)
	case StateStopped:
		return nil, fmt.Errorf("provider %s: %w: it was stopped", p.Name, ErrUnavailable)
	}
	return nil, fmt.Errorf("provider %s: %w: it is restarting after %s; try again in a moment", p.Name, ErrUnavailable, p.lastErr)
}

// CallTool forwards a call to the provider. A provider that is not
// running fails at once with an error wrapping [ErrUnavailable]; one whose
// process dies during the call fails the call the same way and is
// restarted.
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	res, err := forward(ctx, p, p.enter, "call", func(inst *instance) (*sdk.CallToolResult, error) {
		return inst.impl.CallTool(ctx, req)
	})
	if errors.Is(err, plugin.ErrPanicked) {
		p.panicked(err)
	}
	return res, err
}

// panicked counts a recovered panic as a failure: a provider that panics
// MaxFailures times within Window is marked failed like one that crashes.
func (p *Provider) panicked(err error) {
	p.mu.Lock()
	n := p.recordFailureLocked(time.Now())
	p.lastErr = err.Error()
	limit := n >= p.m.opts.Restart.MaxFailures && p.giveUp == ""
	if limit {
		p.giveUp = "a tool panicked: " + err.Error()
	}
	p.mu.Unlock()
	p.log.Error("provider call panicked", "failures", n, "error", err)
	if limit {
		p.wake()
	}
}

// ReadResource forwards a resource read to the provider, failing at once
// when it is not running.
func (p *Provider) ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return forward(ctx, p, p.enter, "read", func(inst *instance) (*sdk.ReadResourceResult, error) {
		return inst.impl.ReadResource(ctx, req)
	})
}

// forward runs call on the instance enter returns, counted in as an
// inflight call (enter counts it in). When ended is not empty, an error
// that means the process went away during the call becomes
// [Provider.endedError] of ended.
func forward[R any](ctx context.Context, p *Provider, enter func() (*instance, error), ended string, call func(*instance) (R, error)) (R, error) {
	var zero R
	inst, err := enter()
	if err != nil {
		return zero, err
	}
	defer p.inflight.Done()
	res, err := call(inst)
	if ended != "" && err != nil && ctx.Err() == nil && p.lost(inst, err) {
		return zero, p.endedError(ended)
	}
	return res, err
}

// endedError explains a call (or read) whose process ended under it: the
// provider was stopped (a config reload, or shutdown), or it is being
// restarted.
func (p *Provider) endedError(what string) error {
	p.mu.Lock()
	stopped := p.state == StateStopped
	p.mu.Unlock()
	if stopped {
		return fmt.Errorf("provider %s: %w: it was stopped during the %s (a config reload or shutdown)", p.Name, ErrUnavailable, what)
	}
	return fmt.Errorf("provider %s: %w: its process ended during the %s; it is being restarted", p.Name, ErrUnavailable, what)
}

// lost reports whether err means inst's process is gone, waking the
// supervisor if so. A broken connection (plugin.ErrUnavailable) shows up
// slightly before go-plugin notices the exit, so that is waited for
// briefly.
func (p *Provider) lost(inst *instance, err error) bool {
	if inst.local != nil {
		return false
	}
	if !inst.exited() && !errors.Is(err, plugin.ErrUnavailable) && status.Code(err) != codes.Unavailable {
		return false
	}
	select {
	case <-inst.gone():
	case <-time.After(500 * time.Millisecond):
	}
	p.wake()
	return true
}
