package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/openhuman/openhuman-host/sdk"
)

// llmTable names the config table of the model endpoint in error messages.
const llmTable = "[providers.agent.llm]"

// DefaultOpenAITimeout bounds each model request when
// [OpenAIConfig].Timeout is zero.
const DefaultOpenAITimeout = 120 * time.Second

// openAIMaxRetries is how often a failed model request is retried. None: a
// chat completion is an expensive, non-idempotent generation, the run as a
// whole is bounded by a wall-clock timeout, and a failing endpoint is
// reported at once with an error the user can act on.
const openAIMaxRetries = 0

// maxAPIMessage bounds how much of an endpoint's error message is quoted.
const maxAPIMessage = 300

// OpenAIConfig configures an [OpenAIModel].
type OpenAIConfig struct {
	// BaseURL is the http or https URL of an OpenAI-compatible API root,
	// e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1; requests
	// go to <BaseURL>/chat/completions. It must not carry a user name,
	// password, query or fragment. Required.
	BaseURL string
	// Model is the model used when a request names none. Required.
	Model string
	// APIKey is sent as a bearer token; empty sends no Authorization header,
	// as local servers expect.
	APIKey string
	// Timeout bounds each model request; 0 means [DefaultOpenAITimeout].
	Timeout time.Duration
	// HTTPClient sends the requests; nil uses a client of its own that
	// connects to BaseURL directly, without proxies from the environment.
	HTTPClient *http.Client
}

// OpenAIModel is a [Model] backed by an OpenAI-compatible chat-completions
// endpoint, through the official openai-go client: non-streaming requests
// with native function calling (tool_choice "auto"), no retries, and no
// settings taken from the environment (no OPENAI_* variables, no proxy
// variables). It is safe for concurrent use.
//
// Tool names are mapped to names the API accepts (^[a-zA-Z0-9_-]{1,64}$)
// per request and mapped back in the response; see [OpenAIModel.Complete].
type OpenAIModel struct {
	service  openai.ChatCompletionService
	model    string
	endpoint string
	apiKey   string
	timeout  time.Duration
}

// NewOpenAIModel checks cfg and returns a model for it. Errors name the
// [providers.agent.llm] key at fault and never repeat the API key.
func NewOpenAIModel(cfg OpenAIConfig) (*OpenAIModel, error) {
	endpoint, err := checkLLMBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%s model is required, e.g. model = \"gpt-4o-mini\" or a model your server serves", llmTable)
	}
	timeout := cfg.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultOpenAITimeout
	case timeout < 0:
		return nil, fmt.Errorf("agent model request timeout must be positive, got %s", timeout)
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Transport: sdk.TraceHTTP(directTransport())}
	}
	// openai.NewClient would start from openai.DefaultClientOptions, which
	// read OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ADMIN_KEY, OPENAI_ORG_ID,
	// OPENAI_PROJECT_ID, OPENAI_WEBHOOK_SECRET and OPENAI_CUSTOM_HEADERS.
	// The chat-completions service built on its own gets exactly the
	// options below and reads no environment variable.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(openAIMaxRetries),
		option.WithRequestTimeout(timeout),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &OpenAIModel{
		service:  openai.NewChatCompletionService(opts...),
		model:    cfg.Model,
		endpoint: endpoint,
		apiKey:   cfg.APIKey,
		timeout:  timeout,
	}, nil
}

// MaxResponseBytes bounds the body of one model endpoint answer: 16 MiB.
// A larger answer fails the request with an error that says so, instead
// of growing the provider's memory without limit.
const MaxResponseBytes = 16 << 20

// ErrResponseTooLarge is wrapped by the error of a request whose answer
// passed MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the model endpoint's answer is larger than 16 MiB")

// directTransport is the default transport without proxies: the model
// endpoint is the only address the agent connects to. Answers are cut at
// MaxResponseBytes.
func directTransport() http.RoundTripper {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return limitedTransport{next: &http.Transport{}}
	}
	t := base.Clone()
	t.Proxy = nil
	return limitedTransport{next: t}
}

// limitedTransport fails a response body once it passes MaxResponseBytes.
type limitedTransport struct{ next http.RoundTripper }

func (l limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := l.next.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	if res.ContentLength > MaxResponseBytes {
		_ = res.Body.Close()
		return nil, ErrResponseTooLarge
	}
	res.Body = &limitedBody{ReadCloser: res.Body, left: MaxResponseBytes}
	return res, nil
}

// limitedBody reads at most left more bytes, then fails.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, ErrResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, ErrResponseTooLarge
	}
	return n, err
}

// checkLLMBaseURL checks the base_url key and returns the endpoint as
// scheme://host[:port], the form used in error messages.
func checkLLMBaseURL(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", fmt.Errorf("%s base_url is required, e.g. base_url = \"http://127.0.0.1:11434/v1\"", llmTable)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		if strings.Contains(raw, "@") {
			// Not echoed: it may carry a password.
			return "", fmt.Errorf("%s base_url must be an http or https URL", llmTable)
		}
		return "", fmt.Errorf("%s base_url must be an http or https URL, got %q", llmTable, raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%s base_url must not contain a user name or password; name the environment variable holding the API key in api_key_env", llmTable)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("%s base_url must not have a query or fragment, got %q", llmTable, raw)
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions") {
		return "", fmt.Errorf("%s base_url is the API root, requests go to <base_url>/chat/completions; "+
			"drop the trailing /chat/completions from %q", llmTable, raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Complete implements [Model]: one non-streaming chat completion. The
// request carries req.System as a leading "system" message (when not
// empty), then req.Messages, the tools as function tools with tool_choice
// "auto" (when there are any), req.Model or else the configured model, and
// req.Temperature when set.
//
// Tool names: each host name is mapped to an API name made of its
// characters with every character outside [a-zA-Z0-9_-] replaced by "_",
// cut to 64 bytes ("memory_search" → "memory_search"). Names that are
// already valid keep themselves; a mapped name that would collide with one
// taken earlier (valid names first, then the others in request order) gets
// the smallest free suffix "_2", "_3", …. The response's calls are mapped
// back through the same per-request table; a call to a name outside it is
// returned with the name as sent (a host name sent verbatim is accepted),
// so that [Run] reports an unknown tool. Earlier tool calls in
// req.Messages are sent with their API names, and with "{}" as arguments
// when theirs were not a JSON object.
//
// Errors name the endpoint as scheme://host[:port] and never contain the
// API key: an HTTP error gives the status, the endpoint's own message and
// what to check; an unreachable endpoint gives "cannot reach <endpoint>";
// a request exceeding the timeout says so; a cancelled ctx is wrapped.
func (m *OpenAIModel) Complete(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	names, err := newToolNames(req.Tools)
	if err != nil {
		return ModelResponse{}, err
	}
	params, err := m.params(req, names)
	if err != nil {
		return ModelResponse{}, err
	}
	completion, err := m.service.New(ctx, params)
	if err != nil {
		return ModelResponse{}, m.requestError(ctx, err)
	}
	if completion == nil {
		return ModelResponse{}, fmt.Errorf("model endpoint %s returned an answer that is not a chat completion (the body was null)", m.endpoint)
	}
	if len(completion.Choices) == 0 {
		return ModelResponse{}, fmt.Errorf("model endpoint %s returned no choices", m.endpoint)
	}
	choice := completion.Choices[0]
	msg := choice.Message
	resp := ModelResponse{Content: msg.Content}
	if resp.Content == "" && msg.Refusal != "" {
		resp.Content = msg.Refusal
	}
	for _, tc := range msg.ToolCalls {
		call := ToolCall{ID: tc.ID}
		switch tc.Type {
		case "custom":
			call.Name, call.Arguments = names.hostName(tc.Custom.Name), tc.Custom.Input
		default:
			call.Name, call.Arguments = names.hostName(tc.Function.Name), tc.Function.Arguments
		}
		resp.ToolCalls = append(resp.ToolCalls, call)
	}
	if len(resp.ToolCalls) == 0 && strings.TrimSpace(resp.Content) == "" && choice.FinishReason == "length" {
		return ModelResponse{}, fmt.Errorf("model endpoint %s stopped at the model's output token limit before answering", m.endpoint)
	}
	return resp, nil
}

// params builds the API request for req.
func (m *OpenAIModel) params(req ModelRequest, names *toolNames) (openai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = m.model
	}
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case "user":
			p.Messages = append(p.Messages, openai.UserMessage(msg.Content))
		case "assistant":
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = openai.String(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      names.apiName(c.Name),
							Arguments: historyArguments(c.Arguments),
						},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case "tool":
			p.Messages = append(p.Messages, openai.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return p, fmt.Errorf("agent model request: message %d has role %q, want user, assistant or tool", i+1, msg.Role)
		}
	}
	for i, t := range req.Tools {
		schema, err := toolParameters(t)
		if err != nil {
			return p, err
		}
		def := shared.FunctionDefinitionParam{Name: names.api[i], Parameters: schema}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if len(p.Tools) > 0 {
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	return p, nil
}

// historyArguments returns the arguments of an earlier tool call as sent
// back to the endpoint: as the model wrote them when they are a JSON
// object, else "{}". Several OpenAI-compatible servers parse these
// arguments and reject the whole request when they are not valid JSON; the
// model learns what was wrong from the call's tool message.
func historyArguments(args string) string {
	if _, problem := objectArguments(args); problem != "" || strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// toolParameters turns a tool's JSON Schema into the API's parameters
// object. Each property's value stays the raw JSON the tool declared, so
// numbers, key order inside values and large integers are sent as written.
// An empty schema is an object without properties.
func toolParameters(t ToolSpec) (shared.FunctionParameters, error) {
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 || string(raw) == "null" {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("agent model request: the parameters of tool %s are not a JSON Schema object", t.Name)
	}
	schema := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		schema[k] = v
	}
	return schema, nil
}

// toolNames is the per-request table between host tool names and the names
// sent to the API.
type toolNames struct {
	api    []string          // API name of req.Tools[i]
	toHost map[string]string // API name → host name
	toAPI  map[string]string // host name → API name
}

// maxAPIToolName is the API's limit on function name length, the
// same as the host's for tool names (^[a-zA-Z0-9_-]{1,64}$).
const maxAPIToolName = sdk.MaxClientNameLen

// newToolNames maps tools to unique valid API names; see
// [OpenAIModel.Complete] for the rule.
func newToolNames(tools []ToolSpec) (*toolNames, error) {
	n := &toolNames{
		api:    make([]string, len(tools)),
		toHost: make(map[string]string, len(tools)),
		toAPI:  make(map[string]string, len(tools)),
	}
	for _, t := range tools {
		if t.Name == "" {
			return nil, errors.New("agent model request: a tool has no name")
		}
		if _, dup := n.toAPI[t.Name]; dup {
			return nil, fmt.Errorf("agent model request: tool %s is offered twice", t.Name)
		}
		n.toAPI[t.Name] = ""
	}
	assign := func(i int, name string) {
		n.api[i] = name
		n.toHost[name] = tools[i].Name
		n.toAPI[tools[i].Name] = name
	}
	// Valid names first, so that a tool whose name the API accepts is
	// never renamed because of another tool's mapping.
	for i, t := range tools {
		if sdk.IsClientName(t.Name) {
			assign(i, t.Name)
		}
	}
	for i, t := range tools {
		if n.api[i] != "" {
			continue
		}
		base := sanitizeToolName(t.Name)
		name := base
		for k := 2; ; k++ {
			if _, taken := n.toHost[name]; !taken {
				break
			}
			suffix := "_" + strconv.Itoa(k)
			name = truncateBytes(base, maxAPIToolName-len(suffix)) + suffix
		}
		assign(i, name)
	}
	return n, nil
}

// apiName returns the API name of a host tool name. A name outside the
// table, such as an unknown tool the model called earlier, is sanitised so
// that the conversation stays acceptable to the API.
func (n *toolNames) apiName(host string) string {
	if name, ok := n.toAPI[host]; ok {
		return name
	}
	return sanitizeToolName(host)
}

// hostName maps a name the model called back to the host tool name. The
// model may also send a host name verbatim; any other name is kept as sent.
func (n *toolNames) hostName(api string) string {
	if host, ok := n.toHost[api]; ok {
		return host
	}
	return api
}

// sanitizeToolName is the host's client-safe form of name
// ([sdk.ClientName]), which the API accepts; "" becomes "tool".
func sanitizeToolName(name string) string {
	if name == "" {
		return "tool"
	}
	return sdk.ClientName(name)
}

// truncateBytes cuts an ASCII string to at most n bytes.
func truncateBytes(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// modelError is a failed model request: a message for the user wrapping
// the client's error without repeating its text.
type modelError struct {
	msg string
	err error
}

// Error returns the message for the user.
func (e *modelError) Error() string { return e.msg }

// Unwrap returns the client's error.
func (e *modelError) Unwrap() error { return e.err }

// requestError explains a failed request in words the user can act on.
func (m *OpenAIModel) requestError(ctx context.Context, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		status := strconv.Itoa(apiErr.StatusCode)
		if text := http.StatusText(apiErr.StatusCode); text != "" {
			status += " " + text
		}
		msg := fmt.Sprintf("model endpoint %s answered %s", m.endpoint, status)
		if detail := m.apiMessage(apiErr); detail != "" {
			msg += ": " + detail
		}
		switch code := apiErr.StatusCode; {
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			msg += "; the endpoint refused the API key (set " + llmTable + " api_key_env)"
		case code == http.StatusNotFound:
			msg += "; no such model or endpoint path: check base_url and model"
		case code == http.StatusTooManyRequests:
			msg += "; the endpoint is rate limiting or out of quota: try again later"
		case code >= 500:
			msg += "; the endpoint failed: try again later"
		case code >= 400:
			msg += "; the endpoint rejected the request: check that the model supports tool calling"
		}
		return &modelError{msg: msg, err: err}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("model request to %s cancelled: %w", m.endpoint, ctxErr)
	}
	if errors.Is(err, ErrResponseTooLarge) {
		return &modelError{msg: fmt.Sprintf("model endpoint %s: %v; ask for a shorter answer", m.endpoint, ErrResponseTooLarge), err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &modelError{
			msg: fmt.Sprintf("model endpoint %s did not answer within %s; use a faster model or a longer timeout", m.endpoint, m.timeout),
			err: err,
		}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &modelError{
			msg: fmt.Sprintf("cannot reach %s: connection refused; check %s base_url and that the server is running", m.endpoint, llmTable),
			err: err,
		}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		// url.Error's own text quotes the full URL; only its cause is kept.
		return &modelError{
			msg: fmt.Sprintf("cannot reach %s: %s; check %s base_url and that the server is running",
				m.endpoint, m.redact(urlErr.Err.Error()), llmTable),
			err: err,
		}
	}
	return &modelError{
		msg: fmt.Sprintf("model endpoint %s returned an answer that is not a chat completion (%s); "+
			"check that %s base_url is the root of an OpenAI-compatible API", m.endpoint, m.redact(err.Error()), llmTable),
		err: err,
	}
}

// apiMessage returns the endpoint's own error message, or the start of the
// response body when it has none, on one line, bounded and without the
// API key.
func (m *OpenAIModel) apiMessage(apiErr *openai.Error) string {
	text := apiErr.Message
	if text == "" && apiErr.Response != nil && apiErr.Response.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 4*maxAPIMessage))
		if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			text = string(body)
		}
	}
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	text = m.redact(text)
	if r := []rune(text); len(r) > maxAPIMessage {
		text = string(r[:maxAPIMessage]) + "…"
	}
	return text
}

// redact removes the API key, and anything that looks like a key, from s.
func (m *OpenAIModel) redact(s string) string {
	if m.apiKey != "" {
		s = strings.ReplaceAll(s, m.apiKey, "[redacted]")
	}
	words := strings.Fields(s)
	changed := false
	for i, w := range words {
		core := strings.Trim(w, ".,;:'\"()[]")
		if strings.HasPrefix(core, "sk-") || strings.Contains(core, "***") || m.sharesKeyPart(core) {
			words[i] = strings.Replace(w, core, "[redacted]", 1)
			changed = true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(words, " ")
}

// sharesKeyPart reports whether word carries a recognisable piece of the
// API key: its first or last 8 characters, as endpoints that mask keys in
// their messages still show.
func (m *OpenAIModel) sharesKeyPart(word string) bool {
	const part = 8
	if len(m.apiKey) < 2*part || len(word) < part {
		return false
	}
	return strings.Contains(word, m.apiKey[:part]) || strings.Contains(word, m.apiKey[len(m.apiKey)-part:])
}
