package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// grpcProviderServer serves a Provider on the provider side of the plugin
// connection.
type grpcProviderServer struct {
	providerv1.UnimplementedProviderServer

	impl   Provider
	broker *plugin.GRPCBroker
	log    hclog.Logger // receives the stacks of panics; may be nil
}

func (s *grpcProviderServer) Configure(ctx context.Context, req *providerv1.ConfigureRequest) (_ *providerv1.ConfigureResponse, err error) {
	defer recoverAsError("Configure", s.log, &err)
	creq := &ConfigureRequest{
		Config:      rawOrNil(req.GetConfigJson()),
		DataDir:     req.GetDataDir(),
		Secrets:     req.GetSecrets(),
		HostVersion: req.GetHostVersion(),
		LogLevel:    req.GetLogLevel(),
		ConfigDir:   req.GetConfigDir(),
	}
	if creq.Config == nil {
		creq.Config = []byte("{}")
	}
	if id := req.GetHostBrokerId(); id != 0 && s.broker != nil {
		conn, err := s.broker.DialWithOptions(id, wire.GRPCDialOptions()...)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "dial host service: %v", err)
		}
		creq.Host = &grpcHostClient{client: providerv1.NewHostClient(conn)}
	}
	if err := s.impl.Configure(ctx, creq); err != nil {
		return nil, toStatus(err)
	}
	return &providerv1.ConfigureResponse{}, nil
}

func (s *grpcProviderServer) Describe(ctx context.Context, _ *providerv1.DescribeRequest) (_ *providerv1.DescribeResponse, err error) {
	defer recoverAsError("Describe", s.log, &err)
	c, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	if c == nil {
		return nil, status.Error(codes.Internal, "Describe returned no catalog")
	}
	return catalogToProto(c), nil
}

func (s *grpcProviderServer) CallTool(req *providerv1.CallToolRequest, stream providerv1.Provider_CallToolServer) (err error) {
	defer recoverAsError("CallTool "+req.GetName(), s.log, &err)
	sink := &streamSink{send: func(ev *providerv1.CallToolResponse) error { return stream.Send(ev) }}
	creq := (&CallToolRequest{
		Name:           req.GetName(),
		Arguments:      rawOrNil(req.GetArgumentsJson()),
		Caller:         callerFromProto(req.GetCaller()),
		InputResponses: rawOrNil(req.GetInputResponsesJson()),
		RequestState:   req.GetRequestState(),
	}).WithEvents(sink)
	res, err := s.impl.CallTool(stream.Context(), creq)
	if err != nil {
		return toStatus(err)
	}
	if res == nil {
		return status.Errorf(codes.Internal, "tool %s returned no result", req.GetName())
	}
	return sink.sendLocked(&providerv1.CallToolResponse{Event: &providerv1.CallToolResponse_Result{Result: resultToProto(res)}})
}

func (s *grpcProviderServer) ReadResource(ctx context.Context, req *providerv1.ReadResourceRequest) (_ *providerv1.ReadResourceResponse, err error) {
	defer recoverAsError("ReadResource", s.log, &err)
	res, err := s.impl.ReadResource(ctx, &ReadResourceRequest{URI: req.GetUri(), Caller: callerFromProto(req.GetCaller())})
	if err != nil {
		return nil, toStatus(err)
	}
	if res == nil {
		return nil, status.Errorf(codes.Internal, "ReadResource returned no contents for %s", req.GetUri())
	}
	return contentsToProto(res), nil
}

// streamSink turns a tool's events into stream messages. gRPC streams allow
// one sender at a time, and a tool may report from several goroutines.
type streamSink struct {
	mu   sync.Mutex
	send func(*providerv1.CallToolResponse) error
}

func (s *streamSink) sendLocked(ev *providerv1.CallToolResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.send(ev)
}

func (s *streamSink) Progress(_ context.Context, p Progress) error {
	return s.sendLocked(&providerv1.CallToolResponse{Event: &providerv1.CallToolResponse_Progress{Progress: progressToProto(p)}})
}

func (s *streamSink) Log(_ context.Context, m LogMessage) error {
	ev, err := logToProto(m)
	if err != nil {
		return fmt.Errorf("encode log data: %w", err)
	}
	return s.sendLocked(&providerv1.CallToolResponse{Event: &providerv1.CallToolResponse_Log{Log: ev}})
}

// toStatus maps a provider error to a gRPC status so that the host can tell
// cancellation and unknown resources from failures.
func toStatus(err error) error {
	var missing *MissingCapabilityError
	if errors.As(err, &missing) {
		st := status.New(codes.FailedPrecondition, missing.Message)
		if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{
			Reason: missingCapabilityReason, Domain: errorDomain,
			Metadata: map[string]string{"required_capabilities": string(missing.Required)},
		}); derr == nil {
			st = withInfo
		}
		return st.Err()
	}
	switch {
	case errors.Is(err, ErrSamplingUnavailable), errors.Is(err, ErrClientUnavailable):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, ErrInvalidParams):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrPromptNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, ErrResourceNotFound):
		return status.Error(codes.NotFound, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

// The ErrorInfo (google.rpc.ErrorInfo) that carries a
// [MissingCapabilityError] across the plugin connection.
const (
	errorDomain             = "provider.openhuman.dev"
	missingCapabilityReason = "MISSING_CLIENT_CAPABILITY"
)

// fromStatus turns a gRPC error back into an error that wraps the matching
// sentinel.
func fromStatus(what string, err error) error {
	return fromStatusNotFound(what, err, ErrResourceNotFound)
}

// fromStatusNotFound is fromStatus with notFound as what NOT_FOUND means.
func fromStatusNotFound(what string, err error, notFound error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == missingCapabilityReason && info.GetDomain() == errorDomain {
			required := json.RawMessage(info.GetMetadata()["required_capabilities"])
			if !json.Valid(required) {
				required = json.RawMessage("{}")
			}
			return &MissingCapabilityError{Required: required, Message: st.Message()}
		}
	}
	switch st.Code() {
	case codes.Canceled:
		return fmt.Errorf("%s: %w", what, context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w", what, context.DeadlineExceeded)
	case codes.NotFound:
		return fmt.Errorf("%s: %w: %s", what, notFound, st.Message())
	case codes.InvalidArgument:
		return fmt.Errorf("%s: %w: %s", what, ErrInvalidParams, st.Message())
	case codes.Unavailable:
		return fmt.Errorf("%s: %w: %s", what, wire.ErrUnavailable, st.Message())
	case codes.FailedPrecondition:
		return fmt.Errorf("%s: %w", what, unavailableError(st.Message()))
	case codes.Internal:
		if isPanic(st) {
			return fmt.Errorf("%s: %w", what, panicError(st.Message()))
		}
	}
	return fmt.Errorf("%s: %s", what, st.Message())
}

// panicDomain and panicReason mark a recovered panic in a gRPC status, as
// a google.rpc.ErrorInfo detail.
const (
	panicDomain = "openhuman.provider.v1"
	panicReason = "PANIC"
)

// recoverAsError keeps a panicking method from killing its process: the
// call fails with codes.Internal, a message naming what panicked and the
// panic value, and a detail that [fromStatus] turns into sdk/plugin.ErrPanicked;
// the stack goes to log (when set), never to the other side.
func recoverAsError(what string, log hclog.Logger, err *error) {
	r := recover()
	if r == nil {
		return
	}
	if log != nil {
		log.Error("recovered from a panic", "in", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	}
	st := status.New(codes.Internal, fmt.Sprintf("%s panicked: %v", what, r))
	if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Domain: panicDomain, Reason: panicReason}); derr == nil {
		st = withInfo
	}
	*err = st.Err()
}

// unavailableError is the message of a FAILED_PRECONDITION status, which
// the host sends only for [ErrSamplingUnavailable] and
// [ErrClientUnavailable]: the client cannot take a request.
type unavailableError string

func (e unavailableError) Error() string { return string(e) }

// Is reports whether target is [ErrSamplingUnavailable] or
// [ErrClientUnavailable].
func (e unavailableError) Is(target error) bool {
	return target == ErrSamplingUnavailable || target == ErrClientUnavailable
}

// panicError is a recovered panic's message; it matches
// sdk/plugin.ErrPanicked.
type panicError string

func (e panicError) Error() string { return string(e) }

// Is reports whether target is sdk/plugin.ErrPanicked.
func (e panicError) Is(target error) bool { return target == wire.ErrPanicked }

// isPanic reports whether st carries the detail recoverAsError adds.
func isPanic(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == panicDomain && info.GetReason() == panicReason {
			return true
		}
	}
	return false
}
