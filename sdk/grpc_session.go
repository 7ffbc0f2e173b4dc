package sdk

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
)

// This file carries the RPCs that provider protocol 2 added (see
// sdk/plugin.ProtocolVersion): on the provider side they dispatch to the optional
// interfaces of session.go, on the host side they are the methods
// host/plugins calls.

// ErrNotImplemented is wrapped by the errors of provider protocol 2
// methods called on a provider that does not implement the interface they
// belong to, or that speaks provider protocol 1; the host treats it as
// "nothing to do".
var ErrNotImplemented = errors.New("not implemented by the provider")

// optional returns impl as T, looking through wrappers that have an
// Unwrap() Provider method (as [Serve]'s own does), so an interface the
// author's provider implements is found however it was wrapped.
func optional[T any](impl Provider) (T, bool) {
	for {
		if t, ok := impl.(T); ok {
			return t, true
		}
		u, ok := impl.(interface{ Unwrap() Provider })
		if !ok {
			var zero T
			return zero, false
		}
		impl = u.Unwrap()
	}
}

func unimplemented(method, iface string) error {
	return status.Errorf(codes.Unimplemented, "%s: the provider does not implement sdk.%s", method, iface)
}

func (s *grpcProviderServer) GetPrompt(ctx context.Context, req *providerv1.GetPromptRequest) (_ *providerv1.GetPromptResponse, err error) {
	defer recoverAsError("GetPrompt "+req.GetName(), s.log, &err)
	impl, ok := optional[PromptProvider](s.impl)
	if !ok {
		return nil, unimplemented("GetPrompt", "PromptProvider")
	}
	res, err := impl.GetPrompt(ctx, &GetPromptRequest{Name: req.GetName(), Arguments: req.GetArguments(), Caller: callerFromProto(req.GetCaller()),
		InputResponses: rawOrNil(req.GetInputResponsesJson()), RequestState: req.GetRequestState()})
	if err != nil {
		return nil, toStatus(err)
	}
	if res == nil {
		return nil, status.Errorf(codes.Internal, "GetPrompt returned no prompt for %s", req.GetName())
	}
	out := &providerv1.GetPromptResponse{Description: res.Description, InputRequestsJson: res.InputRequests, RequestState: res.RequestState}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, &providerv1.PromptMessage{Role: m.Role, Content: contentToProto(m.Content)})
	}
	return out, nil
}

func (s *grpcProviderServer) Complete(ctx context.Context, req *providerv1.CompleteRequest) (_ *providerv1.CompleteResponse, err error) {
	defer recoverAsError("Complete", s.log, &err)
	impl, ok := optional[Completer](s.impl)
	if !ok {
		return nil, unimplemented("Complete", "Completer")
	}
	res, err := impl.Complete(ctx, &CompleteRequest{
		RefType: req.GetRefType(), RefName: req.GetRefName(), RefURI: req.GetRefUri(),
		ArgumentName: req.GetArgumentName(), ArgumentValue: req.GetArgumentValue(),
		Context: req.GetContext(), Caller: callerFromProto(req.GetCaller()),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	if res == nil {
		return &providerv1.CompleteResponse{}, nil
	}
	return &providerv1.CompleteResponse{Values: res.Values, Total: int32(min(max(res.Total, 0), 1<<31-1)), HasMore: res.HasMore}, nil
}

// dispatchOptional runs call on the provider as an I for the gRPC method
// method, whose response carries nothing: UNIMPLEMENTED when the provider
// does not implement I (named iface in the message), call's error as a
// status, and a panic in call as [recoverAsError] reports it.
func dispatchOptional[I any, Res any](s *grpcProviderServer, method, iface string, call func(I) error) (_ *Res, err error) {
	defer recoverAsError(method, s.log, &err)
	impl, ok := optional[I](s.impl)
	if !ok {
		return nil, unimplemented(method, iface)
	}
	if err := call(impl); err != nil {
		return nil, toStatus(err)
	}
	return new(Res), nil
}

func (s *grpcProviderServer) Subscribe(ctx context.Context, req *providerv1.SubscribeRequest) (*providerv1.SubscribeResponse, error) {
	return dispatchOptional[Subscriber, providerv1.SubscribeResponse](s, "Subscribe", "Subscriber", func(impl Subscriber) error {
		return impl.Subscribe(ctx, &SubscribeRequest{URI: req.GetUri(), Caller: callerFromProto(req.GetCaller())})
	})
}

func (s *grpcProviderServer) Unsubscribe(ctx context.Context, req *providerv1.UnsubscribeRequest) (*providerv1.UnsubscribeResponse, error) {
	return dispatchOptional[Subscriber, providerv1.UnsubscribeResponse](s, "Unsubscribe", "Subscriber", func(impl Subscriber) error {
		return impl.Unsubscribe(ctx, &SubscribeRequest{URI: req.GetUri(), Caller: callerFromProto(req.GetCaller())})
	})
}

func (s *grpcProviderServer) SetLoggingLevel(ctx context.Context, req *providerv1.SetLoggingLevelRequest) (*providerv1.SetLoggingLevelResponse, error) {
	return dispatchOptional[SessionObserver, providerv1.SetLoggingLevelResponse](s, "SetLoggingLevel", "SessionObserver", func(impl SessionObserver) error {
		return impl.SetLoggingLevel(ctx, &SetLoggingLevelRequest{Level: req.GetLevel(), Caller: callerFromProto(req.GetCaller())})
	})
}

func (s *grpcProviderServer) SessionClosed(ctx context.Context, req *providerv1.SessionClosedRequest) (*providerv1.SessionClosedResponse, error) {
	return dispatchOptional[SessionObserver, providerv1.SessionClosedResponse](s, "SessionClosed", "SessionObserver", func(impl SessionObserver) error {
		return impl.SessionClosed(ctx, callerFromProto(req.GetCaller()))
	})
}

// providerV2Error turns a gRPC error of an RPC that provider protocol 2
// added (not an MCP revision; see sdk/plugin.ProtocolVersion) into the sdk's:
// UNIMPLEMENTED wraps [ErrNotImplemented].
func providerV2Error(what string, err error, notFound error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%s: %w", what, ErrNotImplemented)
	}
	return fromStatusNotFound(what, err, notFound)
}

// GetPrompt calls the provider's [PromptProvider.GetPrompt]; the error
// wraps [ErrNotImplemented] when the provider has none.
func (c *grpcProviderClient) GetPrompt(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error) {
	res, err := c.client.GetPrompt(ctx, &providerv1.GetPromptRequest{Name: req.Name, Arguments: req.Arguments, Caller: callerToProto(req.Caller),
		InputResponsesJson: req.InputResponses, RequestState: req.RequestState})
	if err != nil {
		return nil, providerV2Error("get prompt "+req.Name, err, ErrPromptNotFound)
	}
	out := &GetPromptResult{Description: res.GetDescription(), InputRequests: rawOrNil(res.GetInputRequestsJson()), RequestState: res.GetRequestState()}
	for _, m := range res.GetMessages() {
		out.Messages = append(out.Messages, PromptMessage{Role: m.GetRole(), Content: contentFromProto(m.GetContent())})
	}
	return out, nil
}

// Complete calls the provider's [Completer.Complete].
func (c *grpcProviderClient) Complete(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
	res, err := c.client.Complete(ctx, &providerv1.CompleteRequest{
		RefType: req.RefType, RefName: req.RefName, RefUri: req.RefURI,
		ArgumentName: req.ArgumentName, ArgumentValue: req.ArgumentValue,
		Context: req.Context, Caller: callerToProto(req.Caller),
	})
	if err != nil {
		return nil, providerV2Error("complete", err, ErrPromptNotFound)
	}
	return &CompleteResult{Values: res.GetValues(), Total: int(res.GetTotal()), HasMore: res.GetHasMore()}, nil
}

// Subscribe calls the provider's [Subscriber.Subscribe].
func (c *grpcProviderClient) Subscribe(ctx context.Context, req *SubscribeRequest) error {
	_, err := c.client.Subscribe(ctx, &providerv1.SubscribeRequest{Uri: req.URI, Caller: callerToProto(req.Caller)})
	if err != nil {
		return providerV2Error("subscribe "+req.URI, err, ErrResourceNotFound)
	}
	return nil
}

// Unsubscribe calls the provider's [Subscriber.Unsubscribe].
func (c *grpcProviderClient) Unsubscribe(ctx context.Context, req *SubscribeRequest) error {
	_, err := c.client.Unsubscribe(ctx, &providerv1.UnsubscribeRequest{Uri: req.URI, Caller: callerToProto(req.Caller)})
	if err != nil {
		return providerV2Error("unsubscribe "+req.URI, err, ErrResourceNotFound)
	}
	return nil
}

// SetLoggingLevel calls the provider's [SessionObserver.SetLoggingLevel].
func (c *grpcProviderClient) SetLoggingLevel(ctx context.Context, req *SetLoggingLevelRequest) error {
	_, err := c.client.SetLoggingLevel(ctx, &providerv1.SetLoggingLevelRequest{Level: req.Level, Caller: callerToProto(req.Caller)})
	if err != nil {
		return providerV2Error("set logging level", err, ErrResourceNotFound)
	}
	return nil
}

// SessionClosed calls the provider's [SessionObserver.SessionClosed].
func (c *grpcProviderClient) SessionClosed(ctx context.Context, caller Caller) error {
	_, err := c.client.SessionClosed(ctx, &providerv1.SessionClosedRequest{Caller: callerToProto(caller)})
	if err != nil {
		return providerV2Error("session closed", err, ErrResourceNotFound)
	}
	return nil
}

func (s *grpcHostServer) RequestClient(ctx context.Context, req *providerv1.HostRequestClientRequest) (_ *providerv1.HostRequestClientResponse, err error) {
	defer recoverAsError("Host.RequestClient", nil, &err)
	res, err := s.impl.RequestClient(ctx, &ClientRequest{Caller: callerFromProto(req.GetCaller()), Method: req.GetMethod(), Params: req.GetParamsJson()})
	var cerr *ClientError
	if errors.As(err, &cerr) {
		return &providerv1.HostRequestClientResponse{ErrorCode: cerr.Code, ErrorMessage: cerr.Message}, nil
	}
	if err != nil {
		return nil, toStatus(err)
	}
	return &providerv1.HostRequestClientResponse{ResultJson: res}, nil
}

func (s *grpcHostServer) Notify(ctx context.Context, req *providerv1.HostNotifyRequest) (_ *providerv1.HostNotifyResponse, err error) {
	defer recoverAsError("Host.Notify", nil, &err)
	switch {
	case req.GetCatalogChanged() != nil:
		err = s.impl.NotifyCatalogChanged(ctx)
	case req.GetResourceUpdated() != nil:
		err = s.impl.NotifyResourceUpdated(ctx, req.GetResourceUpdated().GetUri())
	case req.GetLog() != nil:
		err = s.impl.NotifyLog(ctx, callerFromProto(req.GetCaller()), logFromProto(req.GetLog()))
	default:
		return nil, status.Error(codes.InvalidArgument, "Host.Notify: no event")
	}
	if err != nil {
		return nil, toStatus(err)
	}
	return &providerv1.HostNotifyResponse{}, nil
}

// hostError turns a gRPC error of a provider protocol 2 host RPC into the
// sdk's; a host that speaks provider protocol 1 cannot take the request.
func hostError(what string, err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%s: %w: the host speaks provider protocol 1", what, ErrClientUnavailable)
	}
	return fromStatus(what, err)
}

func (c *grpcHostClient) RequestClient(ctx context.Context, req *ClientRequest) ([]byte, error) {
	res, err := c.client.RequestClient(ctx, &providerv1.HostRequestClientRequest{Caller: callerToProto(req.Caller), Method: req.Method, ParamsJson: req.Params})
	if err != nil {
		return nil, hostError("host request "+req.Method, err)
	}
	if res.GetErrorCode() != 0 || res.GetErrorMessage() != "" {
		return nil, &ClientError{Code: res.GetErrorCode(), Message: res.GetErrorMessage()}
	}
	return res.GetResultJson(), nil
}

func (c *grpcHostClient) NotifyCatalogChanged(ctx context.Context) error {
	_, err := c.client.Notify(ctx, &providerv1.HostNotifyRequest{Event: &providerv1.HostNotifyRequest_CatalogChanged{CatalogChanged: &providerv1.CatalogChanged{}}})
	if err != nil {
		return hostError("host notify catalog changed", err)
	}
	return nil
}

func (c *grpcHostClient) NotifyResourceUpdated(ctx context.Context, uri string) error {
	_, err := c.client.Notify(ctx, &providerv1.HostNotifyRequest{Event: &providerv1.HostNotifyRequest_ResourceUpdated{ResourceUpdated: &providerv1.ResourceUpdated{Uri: uri}}})
	if err != nil {
		return hostError("host notify resource updated", err)
	}
	return nil
}

func (c *grpcHostClient) NotifyLog(ctx context.Context, caller Caller, m LogMessage) error {
	ev, err := logToProto(m)
	if err != nil {
		return fmt.Errorf("encode log data: %w", err)
	}
	_, err = c.client.Notify(ctx, &providerv1.HostNotifyRequest{Event: &providerv1.HostNotifyRequest_Log{Log: ev}, Caller: callerToProto(caller)})
	if err != nil {
		return hostError("host notify log", err)
	}
	return nil
}

var (
	_ PromptProvider  = (*grpcProviderClient)(nil)
	_ Completer       = (*grpcProviderClient)(nil)
	_ Subscriber      = (*grpcProviderClient)(nil)
	_ SessionObserver = (*grpcProviderClient)(nil)
)
