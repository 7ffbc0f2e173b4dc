package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// grpcProviderClient is the host side of the plugin connection: a Provider
// whose methods are gRPC calls.
type grpcProviderClient struct {
	client providerv1.ProviderClient
	broker *plugin.GRPCBroker
}

func (c *grpcProviderClient) Configure(ctx context.Context, req *ConfigureRequest) error {
	preq := &providerv1.ConfigureRequest{
		ConfigJson:  req.Config,
		DataDir:     req.DataDir,
		Secrets:     req.Secrets,
		HostVersion: req.HostVersion,
		LogLevel:    req.LogLevel,
		ConfigDir:   req.ConfigDir,
	}
	if req.Host != nil && c.broker != nil {
		id := c.broker.NextId()
		host := req.Host
		go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
			s := grpc.NewServer(append(opts, wire.GRPCServerOptions()...)...)
			providerv1.RegisterHostServer(s, &grpcHostServer{impl: host})
			return s
		})
		preq.HostBrokerId = id
	}
	if _, err := c.client.Configure(ctx, preq); err != nil {
		return fromStatus("configure", err)
	}
	return nil
}

func (c *grpcProviderClient) Describe(ctx context.Context) (*Catalog, error) {
	res, err := c.client.Describe(ctx, &providerv1.DescribeRequest{})
	if err != nil {
		return nil, fromStatus("describe", err)
	}
	return catalogFromProto(res), nil
}

func (c *grpcProviderClient) CallTool(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
	stream, err := c.client.CallTool(ctx, &providerv1.CallToolRequest{
		Name:               req.Name,
		ArgumentsJson:      req.Arguments,
		Caller:             callerToProto(req.Caller),
		InputResponsesJson: req.InputResponses,
		RequestState:       req.RequestState,
	})
	if err != nil {
		return nil, fromStatus("call "+req.Name, err)
	}
	return receiveResult(ctx, req, "call "+req.Name, stream.Recv)
}

func (c *grpcProviderClient) ReadResource(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
	res, err := c.client.ReadResource(ctx, &providerv1.ReadResourceRequest{Uri: req.URI, Caller: callerToProto(req.Caller)})
	if err != nil {
		return nil, fromStatus("read "+req.URI, err)
	}
	return contentsFromProto(res), nil
}

// callEvent is what both CallTool streams carry.
type callEvent interface {
	GetProgress() *providerv1.ProgressEvent
	GetLog() *providerv1.LogEvent
	GetResult() *providerv1.CallToolResult
}

// receiveResult drains a CallTool stream: events go to req's sink, the
// result is returned. A stream that ends without a result is an error.
func receiveResult[E callEvent](ctx context.Context, req *CallToolRequest, what string, recv func() (E, error)) (*CallToolResult, error) {
	for {
		ev, err := recv()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: stream ended without a result", what)
		}
		if err != nil {
			return nil, fromStatus(what, err)
		}
		switch {
		case ev.GetResult() != nil:
			return resultFromProto(ev.GetResult()), nil
		case ev.GetProgress() != nil:
			if req.events != nil {
				_ = req.events.Progress(ctx, progressFromProto(ev.GetProgress()))
			}
		case ev.GetLog() != nil:
			if req.events != nil {
				_ = req.events.Log(ctx, logFromProto(ev.GetLog()))
			}
		}
	}
}

// grpcHostServer serves the host's [Host] implementation to a provider.
type grpcHostServer struct {
	providerv1.UnimplementedHostServer

	impl Host
}

func (s *grpcHostServer) CallTool(req *providerv1.HostCallToolRequest, stream providerv1.Host_CallToolServer) (err error) {
	defer recoverAsError("Host.CallTool "+req.GetName(), nil, &err)
	res, err := s.impl.CallTool(stream.Context(), &HostCallToolRequest{
		Name:      req.GetName(),
		Arguments: rawOrNil(req.GetArgumentsJson()),
		Caller:    callerFromProto(req.GetCaller()),
		Actor:     req.GetActor(),
	})
	if err != nil {
		return toStatus(err)
	}
	return stream.Send(&providerv1.HostCallToolResponse{Event: &providerv1.HostCallToolResponse_Result{Result: resultToProto(res)}})
}

func (s *grpcHostServer) ListTools(ctx context.Context, _ *providerv1.HostListToolsRequest) (_ *providerv1.HostListToolsResponse, err error) {
	defer recoverAsError("Host.ListTools", nil, &err)
	tools, err := s.impl.ListTools(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &providerv1.HostListToolsResponse{}
	for _, t := range tools {
		out.Tools = append(out.Tools, toolToProto(t))
	}
	return out, nil
}

func (s *grpcHostServer) CreateMessage(ctx context.Context, req *providerv1.HostCreateMessageRequest) (_ *providerv1.HostCreateMessageResponse, err error) {
	defer recoverAsError("Host.CreateMessage", nil, &err)
	res, err := s.impl.CreateMessage(ctx, samplingRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return &providerv1.HostCreateMessageResponse{Content: samplingContentToProto(res.Content), Model: res.Model, StopReason: res.StopReason}, nil
}

// grpcHostClient is the provider side of the host service.
type grpcHostClient struct {
	client providerv1.HostClient
}

func (c *grpcHostClient) CallTool(ctx context.Context, req *HostCallToolRequest) (*CallToolResult, error) {
	stream, err := c.client.CallTool(ctx, &providerv1.HostCallToolRequest{
		Name:          req.Name,
		ArgumentsJson: req.Arguments,
		Caller:        callerToProto(req.Caller),
		Actor:         req.Actor,
	})
	if err != nil {
		return nil, fromStatus("host call "+req.Name, err)
	}
	return receiveResult(ctx, &CallToolRequest{Name: req.Name}, "host call "+req.Name, stream.Recv)
}

func (c *grpcHostClient) ListTools(ctx context.Context) ([]Tool, error) {
	res, err := c.client.ListTools(ctx, &providerv1.HostListToolsRequest{})
	if err != nil {
		return nil, fromStatus("host list tools", err)
	}
	out := make([]Tool, 0, len(res.GetTools()))
	for _, t := range res.GetTools() {
		out = append(out, toolFromProto(t))
	}
	return out, nil
}

func (c *grpcHostClient) CreateMessage(ctx context.Context, req *CreateMessageRequest) (*CreateMessageResult, error) {
	res, err := c.client.CreateMessage(ctx, samplingRequestToProto(req))
	if err != nil {
		return nil, fromStatus("host create message", err)
	}
	return &CreateMessageResult{Content: samplingContentFromProto(res.GetContent()), Model: res.GetModel(), StopReason: res.GetStopReason()}, nil
}

var (
	_ Provider = (*grpcProviderClient)(nil)
	_ Host     = (*grpcHostClient)(nil)
)
