package plugins

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/sdk"
)

// detached is what a provider run in the host's process gets as the
// context of a call, and what the host gets as the context of the
// provider's calls to it: the other side's cancellation and deadline, and
// its trace context and baggage, but none of its other values, as over
// gRPC. Both sides use the go-sdk, which keeps a request's protocol
// version and JSON-RPC id in context values: carried across, the host's
// would steer the relay's own client sessions, and the relay's the host's
// requests to its clients.
type detached struct {
	parent context.Context
	values context.Context
}

// detach returns ctx without its values but its trace context and
// baggage.
func detach(ctx context.Context) context.Context {
	values := context.Background()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		values = trace.ContextWithSpanContext(values, sc)
	}
	if b := baggage.FromContext(ctx); b.Len() > 0 {
		values = baggage.ContextWithBaggage(values, b)
	}
	return &detached{parent: ctx, values: values}
}

func (d *detached) Deadline() (time.Time, bool) { return d.parent.Deadline() }
func (d *detached) Done() <-chan struct{}       { return d.parent.Done() }
func (d *detached) Err() error                  { return d.parent.Err() }
func (d *detached) Value(key any) any           { return d.values.Value(key) }

// AfterFunc lets contexts derived from d (context.WithCancel, WithTimeout)
// follow its cancellation without a goroutine each.
func (d *detached) AfterFunc(f func()) func() bool { return context.AfterFunc(d.parent, f) }

// detachedHost is the host service as a provider in the host's process
// calls it: each call's context detached from the provider's.
type detachedHost struct {
	host sdk.Host
}

func (h detachedHost) CallTool(ctx context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	return h.host.CallTool(detach(ctx), req)
}

func (h detachedHost) ListTools(ctx context.Context) ([]sdk.Tool, error) {
	return h.host.ListTools(detach(ctx))
}

func (h detachedHost) CreateMessage(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	return h.host.CreateMessage(detach(ctx), req)
}

func (h detachedHost) RequestClient(ctx context.Context, req *sdk.ClientRequest) ([]byte, error) {
	return h.host.RequestClient(detach(ctx), req)
}

func (h detachedHost) NotifyCatalogChanged(ctx context.Context) error {
	return h.host.NotifyCatalogChanged(detach(ctx))
}

func (h detachedHost) NotifyResourceUpdated(ctx context.Context, uri string) error {
	return h.host.NotifyResourceUpdated(detach(ctx), uri)
}

func (h detachedHost) NotifyLog(ctx context.Context, caller sdk.Caller, m sdk.LogMessage) error {
	return h.host.NotifyLog(detach(ctx), caller, m)
}

var _ sdk.Host = detachedHost{}
