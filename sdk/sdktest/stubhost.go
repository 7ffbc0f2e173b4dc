package sdktest

import (
	"context"
	"errors"

	"github.com/openhuman/openhuman-host/sdk"
)

// StubHost is an [sdk.Host] that offers nothing: CallTool and ListTools
// fail or list nothing, CreateMessage and RequestClient answer that the
// client cannot take the request, and the notifications do nothing. Embed
// it in a test's fake host and define only the methods the test needs,
// then pass the fake as [Options.Host].
type StubHost struct{}

// CallTool fails: the stub serves no tools.
func (StubHost) CallTool(context.Context, *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	return nil, errors.New("sdktest.StubHost serves no tools")
}

// ListTools lists no tools.
func (StubHost) ListTools(context.Context) ([]sdk.Tool, error) { return nil, nil }

// CreateMessage fails with an error wrapping [sdk.ErrSamplingUnavailable].
func (StubHost) CreateMessage(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	return nil, sdk.ErrSamplingUnavailable
}

// RequestClient fails with an error wrapping [sdk.ErrClientUnavailable].
func (StubHost) RequestClient(context.Context, *sdk.ClientRequest) ([]byte, error) {
	return nil, sdk.ErrClientUnavailable
}

// NotifyCatalogChanged does nothing.
func (StubHost) NotifyCatalogChanged(context.Context) error { return nil }

// NotifyResourceUpdated does nothing.
func (StubHost) NotifyResourceUpdated(context.Context, string) error { return nil }

// NotifyLog does nothing.
func (StubHost) NotifyLog(context.Context, sdk.Caller, sdk.LogMessage) error { return nil }

var _ sdk.Host = StubHost{}
