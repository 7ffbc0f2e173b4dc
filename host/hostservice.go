package host

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/sdk"
)

// hostService is the host service providers reach through go-plugin's
// broker: their tool calls go through the server's full pipeline.
type hostService struct {
	srv atomic.Pointer[server.Server]
}

func (s *hostService) CallTool(ctx context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, errors.New("host is still starting")
	}
	caller := req.Caller
	caller.Depth++
	if req.Actor != "" {
		caller.SourceType = caller.SourceType + "/" + req.Actor
	}
	caller.ProgressToken = nil
	// The result goes to the provider (an agent's model reads its text),
	// not to the client whose call this serves.
	caller.ReadsStructuredContent = false
	res, err := srv.Call(ctx, server.Call{Tool: req.Name, Arguments: req.Arguments, Caller: caller})
	if errors.Is(err, server.ErrUnknownTool) {
		return sdk.ErrorResult("unknown tool %q", req.Name), nil
	}
	return res, err
}

// ListTools returns the tools the server serves now, as clients are told
// about them ([server.Server.Tools]): a sub-agent's model reads the same
// curated descriptions. Tools the policy always refuses stay in the list,
// so that a sub-agent's attempt at one is refused with the policy's reason
// and audited rather than taken for a typo.
func (s *hostService) ListTools(context.Context) ([]sdk.Tool, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, errors.New("host is still starting")
	}
	tools := srv.Tools()
	out := make([]sdk.Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Tool)
	}
	return out, nil
}

// CreateMessage relays a provider's sampling request to the client whose
// call it serves.
func (s *hostService) CreateMessage(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, errors.New("host is still starting")
	}
	return srv.CreateMessage(ctx, req)
}

// RequestClient relays a provider's request to the client of its
// caller's session (provider protocol 2).
func (s *hostService) RequestClient(ctx context.Context, req *sdk.ClientRequest) ([]byte, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, fmt.Errorf("%w: the host is still starting", sdk.ErrClientUnavailable)
	}
	return srv.RequestClient(ctx, req)
}

// NotifyCatalogChanged is answered per provider by host/plugins, which
// calls the provider's Describe again; nothing reaches this one.
func (s *hostService) NotifyCatalogChanged(context.Context) error { return nil }

// NotifyResourceUpdated tells the sessions subscribed to uri.
func (s *hostService) NotifyResourceUpdated(ctx context.Context, uri string) error {
	srv := s.srv.Load()
	if srv == nil {
		return nil
	}
	return srv.NotifyResourceUpdated(ctx, uri)
}

// NotifyLog sends a provider's log message to its caller's session.
func (s *hostService) NotifyLog(ctx context.Context, caller sdk.Caller, m sdk.LogMessage) error {
	srv := s.srv.Load()
	if srv == nil {
		return nil
	}
	return srv.NotifyLog(ctx, caller, m)
}
