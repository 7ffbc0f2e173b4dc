// Package embeddings is a client for OpenAI-compatible /embeddings
// endpoints (OpenAI's API and servers that mimic it, such as Ollama's
// /v1), used by the memory provider (its recall tool) and the host
// (tool_search in progressive discovery), and open to any provider that
// ranks text by meaning. It validates an embeddings config table (the
// keys base_url, model, api_key_env, batch_size, timeout_secs and
// dimensions, as the host's config uses them), sends texts in batches
// through the official openai-go client, returns L2-normalised vectors,
// and explains failures in words a user can act on without ever repeating
// the API key or the texts.
//
// The client never reads the environment: callers resolve api_key_env and
// pass the key's value to [New].
package embeddings

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Defaults and bounds of the config keys.
const (
	// DefaultBatchSize is batch_size when it is 0: texts per request.
	DefaultBatchSize = 64
	// MaxBatchSize is the largest batch_size, the API's limit on inputs
	// per request.
	MaxBatchSize = 2048
	// DefaultTimeoutSecs is timeout_secs when it is 0, in seconds.
	DefaultTimeoutSecs = 30
	// MaxTimeoutSecs is the largest timeout_secs, in seconds.
	MaxTimeoutSecs = 600
	// MaxDimensions is the largest dimensions.
	MaxDimensions = 16384
)

// MaxRetries is how often the client retries a failed request (connection
// errors, 408, 409, 429 and 5xx) before [Client.Embed] gives up, so a
// request is attempted at most MaxRetries+1 times.
const MaxRetries = 2

// Config is an embeddings table such as [providers.memory.embeddings] or
// [discovery.embeddings]. The zero value is invalid: BaseURL and Model are
// required. [Config.Validate] applies the defaults.
type Config struct {
	// BaseURL is the http or https URL of an OpenAI-compatible API root such
	// as https://api.openai.com/v1 or http://127.0.0.1:11434/v1; requests go
	// to <base_url>/embeddings. It may not carry a user name, password,
	// query or fragment. Required.
	BaseURL string `json:"base_url" toml:"base_url"`
	// Model is the embedding model, e.g. text-embedding-3-small. Required.
	Model string `json:"model" toml:"model"`
	// APIKeyEnv names the environment variable holding the API key
	// (letters, digits and _, not starting with a digit). The caller
	// resolves it and passes the value to [New]; this package never reads
	// the environment. Optional: "" sends no Authorization header.
	APIKeyEnv string `json:"api_key_env" toml:"api_key_env"`
	// BatchSize is the number of texts per request, 1..[MaxBatchSize]; 0
	// means [DefaultBatchSize].
	BatchSize int `json:"batch_size" toml:"batch_size"`
	// TimeoutSecs bounds each request attempt, 1..[MaxTimeoutSecs]
	// seconds; 0 means [DefaultTimeoutSecs].
	TimeoutSecs int `json:"timeout_secs" toml:"timeout_secs"`
	// Dimensions is passed as the API's dimensions parameter when > 0, up
	// to [MaxDimensions]; 0 keeps the model's default.
	Dimensions int `json:"dimensions" toml:"dimensions"`
}

// ConfigError is a [Config.Validate] failure: Key of Table is wrong. Its
// message never repeats a value that may be a secret.
type ConfigError struct {
	// Table names the config table as the user wrote it, such as
	// "[discovery.embeddings]".
	Table string
	// Key is the key within Table, such as "base_url".
	Key string
	// Msg says what is wrong and what is accepted, without the key's
	// name, such as "is required, e.g. ...".
	Msg string
}

// Error returns "<table> <key> <msg>".
func (e *ConfigError) Error() string { return e.Table + " " + e.Key + " " + e.Msg }

// Validate checks the table named table (used in messages only, such as
// "[providers.memory.embeddings]") and applies the defaults of BatchSize
// and TimeoutSecs. It is idempotent. A failure is a *[ConfigError] naming
// the first bad key.
func (c *Config) Validate(table string) error {
	fail := func(key, format string, args ...any) error {
		return &ConfigError{Table: table, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if msg := checkBaseURL(c.BaseURL); msg != "" {
		return fail("base_url", "%s", msg)
	}
	if strings.TrimSpace(c.Model) == "" {
		return fail("model", `is required, e.g. model = "text-embedding-3-small"`)
	}
	if c.APIKeyEnv != "" && !isEnvVarName(c.APIKeyEnv) {
		// The value is not echoed: a key pasted here by mistake must not
		// end up in logs.
		return fail("api_key_env", "must be the name of an environment variable holding the key "+
			"(letters, digits and _, not starting with a digit, e.g. OPENAI_API_KEY), not the key itself")
	}
	switch {
	case c.BatchSize == 0:
		c.BatchSize = DefaultBatchSize
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return fail("batch_size", "must be between 1 and %d, got %d", MaxBatchSize, c.BatchSize)
	}
	switch {
	case c.TimeoutSecs == 0:
		c.TimeoutSecs = DefaultTimeoutSecs
	case c.TimeoutSecs < 1 || c.TimeoutSecs > MaxTimeoutSecs:
		return fail("timeout_secs", "must be between 1 and %d, got %d", MaxTimeoutSecs, c.TimeoutSecs)
	}
	if c.Dimensions < 0 || c.Dimensions > MaxDimensions {
		return fail("dimensions", "must be 0 (the model's default) or between 1 and %d, got %d", MaxDimensions, c.Dimensions)
	}
	return nil
}

// Timeout returns TimeoutSecs as a duration, or [DefaultTimeoutSecs]
// seconds when it is 0 or less.
func (c Config) Timeout() time.Duration {
	if c.TimeoutSecs <= 0 {
		return DefaultTimeoutSecs * time.Second
	}
	return time.Duration(c.TimeoutSecs) * time.Second
}

// checkBaseURL checks the base_url key and returns what is wrong, or "".
// The URL may appear in error messages later, so it must not carry
// credentials.
func checkBaseURL(raw string) string {
	if raw == "" {
		return `is required, e.g. base_url = "https://api.openai.com/v1"`
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		if strings.Contains(raw, "@") {
			// Not echoed: it may hold a password.
			return "must be an http or https URL"
		}
		return fmt.Sprintf("must be an http or https URL, got %q", raw)
	}
	if u.User != nil {
		return "must not contain a user name or password; name the environment variable holding the API key in api_key_env"
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Sprintf("must not have a query or fragment, got %q", raw)
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/embeddings") {
		return fmt.Sprintf("is the API root, requests go to <base_url>/embeddings; drop the trailing /embeddings from %q", raw)
	}
	return ""
}

// isEnvVarName reports whether s is a portable environment variable name.
func isEnvVarName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// Client embeds texts through an OpenAI-compatible /embeddings endpoint,
// built on the official client. Its methods are safe for concurrent use.
type Client struct {
	cfg     Config
	table   string
	service openai.EmbeddingService
}

// New returns a client for cfg, which it validates first (see
// [Config.Validate]); table names cfg's config table in every error
// message, such as "[discovery.embeddings]". apiKey is the value of the
// variable named by api_key_env, resolved by the caller; "" sends no
// Authorization header. httpClient may be nil for a default client without
// a global timeout (each attempt is bounded by timeout_secs instead).
func New(cfg Config, table, apiKey string, httpClient *http.Client) (*Client, error) {
	if err := cfg.Validate(table); err != nil {
		return nil, err
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(MaxRetries),
		option.WithRequestTimeout(cfg.Timeout()),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	// Nothing reads the environment here. openai.NewClient starts from
	// openai.DefaultClientOptions, which read OPENAI_BASE_URL,
	// OPENAI_API_KEY, OPENAI_ADMIN_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID,
	// OPENAI_WEBHOOK_SECRET and OPENAI_CUSTOM_HEADERS; overriding the key
	// with an empty one would still leak the organization, project and
	// custom headers. So no Client is built: the embeddings service alone
	// reads no environment variables and gets exactly the options above (an
	// empty key sends no Authorization header). The memory provider's tests
	// set those variables and check that nothing of them reaches the server.
	service := openai.NewEmbeddingService(opts...)
	return &Client{cfg: cfg, table: table, service: service}, nil
}

// Model returns the configured model name; vectors of different models
// must never be compared.
func (c *Client) Model() string { return c.cfg.Model }

// Config returns the validated configuration, defaults applied.
func (c *Client) Config() Config { return c.cfg }

// Embed returns one L2-normalised vector per text, in the order of texts,
// all of the same dimension. It sends the texts in batches of batch_size,
// one request per batch and one batch at a time, honours ctx, and returns
// either every vector or an error, never a partial result. An empty text
// is an error, as is an answer of the wrong count, index or dimension, or
// a zero, NaN or infinite vector; errors name the endpoint and the config
// table but never the API key or a text. No texts is no request and no
// vectors.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for i, text := range texts {
		if text == "" {
			return nil, fmt.Errorf("cannot embed text %d of %d: it is empty", i+1, len(texts))
		}
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.BatchSize {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embedding was cancelled: %w", err)
		}
		end := min(start+c.cfg.BatchSize, len(texts))
		vectors, err := c.embedBatch(ctx, texts[start:end], start)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(out[0]) != len(vectors[0]) {
			return nil, c.errorf("returned vectors of differing dimensions (%d and %d)", len(out[0]), len(vectors[0]))
		}
		out = append(out, vectors...)
	}
	return out, nil
}

// embedBatch embeds one batch, whose first text is text number offset of
// the whole Embed call, and checks and normalises the answer.
func (c *Client) embedBatch(ctx context.Context, batch []string, offset int) ([][]float32, error) {
	params := openai.EmbeddingNewParams{
		Model: c.cfg.Model,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: batch},
	}
	if c.cfg.Dimensions > 0 {
		params.Dimensions = openai.Int(int64(c.cfg.Dimensions))
	}
	res, err := c.service.New(ctx, params)
	if err != nil {
		return nil, c.requestError(ctx, len(batch), err)
	}
	if len(res.Data) != len(batch) {
		return nil, c.errorf("returned %d vectors for %d texts", len(res.Data), len(batch))
	}
	vectors := make([][]float32, len(batch))
	dims := 0
	for _, item := range res.Data {
		if !item.JSON.Index.Valid() {
			return nil, c.errorf("returned a vector without a valid index")
		}
		i := item.Index
		if i < 0 || i >= int64(len(batch)) {
			return nil, c.errorf("returned a vector with index %d for a batch of %d texts", i, len(batch))
		}
		if vectors[i] != nil {
			return nil, c.errorf("returned two vectors with index %d", i)
		}
		text := offset + int(i) + 1
		if !item.JSON.Embedding.Valid() {
			return nil, c.errorf("returned a malformed vector for text %d", text)
		}
		if len(item.Embedding) == 0 {
			return nil, c.errorf("returned an empty vector for text %d", text)
		}
		if dims == 0 {
			dims = len(item.Embedding)
		} else if len(item.Embedding) != dims {
			return nil, c.errorf("returned vectors of differing dimensions (%d and %d)", dims, len(item.Embedding))
		}
		v := make([]float32, len(item.Embedding))
		for j, x := range item.Embedding {
			v[j] = float32(x)
		}
		if !Normalize(v) {
			return nil, c.errorf("returned a zero, NaN or infinite vector for text %d", text)
		}
		vectors[i] = v
	}
	if c.cfg.Dimensions > 0 && dims != c.cfg.Dimensions {
		return nil, c.errorf("returned %d-dimensional vectors, but %s dimensions = %d; "+
			"remove dimensions if the model does not support it", dims, c.table, c.cfg.Dimensions)
	}
	return vectors, nil
}

// endpointError is an Embed failure: a message for the user that wraps the
// underlying error without repeating its text.
type endpointError struct {
	msg string
	err error
}

// Error returns the message for the user.
func (e *endpointError) Error() string { return e.msg }

// Unwrap returns the underlying error.
func (e *endpointError) Unwrap() error { return e.err }

// errorf returns an error about the endpoint's answer.
func (c *Client) errorf(format string, args ...any) error {
	return fmt.Errorf("embeddings endpoint %s %s", c.cfg.BaseURL, fmt.Sprintf(format, args...))
}

// requestError explains err, the client's failure to embed a batch of n
// texts, in words a user can act on. It reports the status and the API's
// error code but not the API's message, which may quote the key or the
// texts.
func (c *Client) requestError(ctx context.Context, n int, err error) error {
	endpoint, table := c.cfg.BaseURL, c.table
	attempts := MaxRetries + 1
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		status := fmt.Sprint(apiErr.StatusCode)
		if text := http.StatusText(apiErr.StatusCode); text != "" {
			status += " " + text
		}
		if code := apiErrorCode(apiErr); code != "" {
			status += " (" + code + ")"
		}
		var msg string
		switch code := apiErr.StatusCode; {
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			msg = fmt.Sprintf("embeddings endpoint %s refused the request: %s; check the API key named by %s api_key_env",
				endpoint, status, table)
		case code == http.StatusNotFound:
			msg = fmt.Sprintf("embeddings endpoint %s answered %s; check %s base_url and model",
				endpoint, status, table)
		case code == http.StatusTooManyRequests:
			msg = fmt.Sprintf("embeddings endpoint %s is rate limiting or out of quota: %s after %d attempts; "+
				"try again later or lower %s batch_size", endpoint, status, attempts, table)
		case code >= 500:
			msg = fmt.Sprintf("embeddings endpoint %s failed: %s after %d attempts; try again later",
				endpoint, status, attempts)
		case code >= 400:
			msg = fmt.Sprintf("embeddings endpoint %s rejected a batch of %s: %s; check %s model, dimensions and batch_size",
				endpoint, plural(n, "text"), status, table)
		default:
			msg = fmt.Sprintf("embeddings endpoint %s answered %s", endpoint, status)
		}
		return &endpointError{msg: msg, err: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("embedding was cancelled: %w", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("embeddings endpoint %s did not answer within %d seconds; raise %s timeout_secs or lower batch_size: %w",
			endpoint, c.cfg.TimeoutSecs, table, err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Errorf("cannot reach embeddings endpoint %s after %d attempts; check %s base_url and that the server is running: %w",
			endpoint, attempts, table, err)
	}
	return fmt.Errorf("embeddings endpoint %s returned an unusable answer: %w", endpoint, err)
}

// IsTextRefusal reports whether err, from [Client.Embed], is the endpoint
// refusing the texts it was given (400, 413 or 422: too long for the
// model, say) rather than being unreachable, unauthorised, rate limited or
// failing: other texts may still embed.
func IsTextRefusal(err error) bool {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// apiErrorCode returns the API's error code, or its type when it has no
// code, if it looks like an identifier; anything else is dropped so that
// the error message never carries free text from the server.
func apiErrorCode(apiErr *openai.Error) string {
	code := apiErr.Code
	if code == "" {
		code = apiErr.Type
	}
	if len(code) > 64 {
		return ""
	}
	for _, r := range code {
		if r != '_' && r != '-' && r != '.' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && !('0' <= r && r <= '9') {
			return ""
		}
	}
	return code
}

// plural returns "1 text" or "n texts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Dot returns the dot product of a and b, which is their cosine similarity
// when both have unit length (as [Client.Embed] returns them), or 0 when
// their lengths differ.
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var sum float64
	for i := range a {
		sum += float64(a[i]) * float64(b[i])
	}
	return float32(sum)
}

// Normalize scales v in place to unit length. It returns false, leaving v
// unchanged, for an empty or zero vector or one holding NaN or Inf.
func Normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		sum += f * f
	}
	norm := math.Sqrt(sum)
	if norm == 0 || math.IsInf(norm, 0) {
		return false
	}
	for i, x := range v {
		v[i] = float32(float64(x) / norm)
	}
	return true
}
