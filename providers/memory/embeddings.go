package memory

import (
	"context"
	"encoding/binary"
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

// embeddingsTable names the config table in error messages.
const embeddingsTable = "[providers.memory.embeddings]"

// Defaults and bounds of the [providers.memory.embeddings] keys.
const (
	defaultEmbedBatchSize   = 64
	maxEmbedBatchSize       = 2048 // the API's limit on inputs per request
	defaultEmbedTimeoutSecs = 30
	maxEmbedTimeoutSecs     = 600
	maxEmbedDimensions      = 16384
)

// embedMaxRetries is how often the client retries a failed request
// (connection errors, 408, 409, 429 and 5xx) before Embed gives up.
const embedMaxRetries = 2

// embeddingsConfig is the [providers.memory.embeddings] table.
type embeddingsConfig struct {
	// BaseURL is the http or https URL of an OpenAI-compatible API root such
	// as https://api.openai.com/v1 or http://127.0.0.1:11434/v1; requests go
	// to <base_url>/embeddings. Required.
	BaseURL string `json:"base_url"`
	// Model is the embedding model, e.g. text-embedding-3-small. Required.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable holding the API key. The host
	// resolves it and hands the value to newOpenAIEmbedder; providers never
	// read the environment themselves. Optional.
	APIKeyEnv string `json:"api_key_env"`
	// BatchSize is the number of texts per request, 1..2048; 0 means 64.
	BatchSize int `json:"batch_size"`
	// TimeoutSecs bounds each request attempt, 1..600 seconds; 0 means 30.
	TimeoutSecs int `json:"timeout_secs"`
	// Dimensions is passed as the API's dimensions parameter when > 0;
	// 0 keeps the model's default.
	Dimensions int `json:"dimensions"`
}

// validate checks the table and applies defaults. Its errors name the key
// and never repeat a value that may be a secret.
func (c *embeddingsConfig) validate() error {
	if err := validateBaseURL(c.BaseURL); err != nil {
		return err
	}
	if strings.TrimSpace(c.Model) == "" {
		return fmt.Errorf("%s model is required, e.g. model = \"text-embedding-3-small\"", embeddingsTable)
	}
	if c.APIKeyEnv != "" && !isEnvVarName(c.APIKeyEnv) {
		// The value is not echoed: a key pasted here by mistake must not
		// end up in logs.
		return fmt.Errorf("%s api_key_env must be the name of an environment variable holding the key "+
			"(letters, digits and _, not starting with a digit, e.g. OPENAI_API_KEY), not the key itself", embeddingsTable)
	}
	switch {
	case c.BatchSize == 0:
		c.BatchSize = defaultEmbedBatchSize
	case c.BatchSize < 1 || c.BatchSize > maxEmbedBatchSize:
		return fmt.Errorf("%s batch_size must be between 1 and %d, got %d", embeddingsTable, maxEmbedBatchSize, c.BatchSize)
	}
	switch {
	case c.TimeoutSecs == 0:
		c.TimeoutSecs = defaultEmbedTimeoutSecs
	case c.TimeoutSecs < 1 || c.TimeoutSecs > maxEmbedTimeoutSecs:
		return fmt.Errorf("%s timeout_secs must be between 1 and %d, got %d", embeddingsTable, maxEmbedTimeoutSecs, c.TimeoutSecs)
	}
	if c.Dimensions < 0 || c.Dimensions > maxEmbedDimensions {
		return fmt.Errorf("%s dimensions must be 0 (the model's default) or between 1 and %d, got %d",
			embeddingsTable, maxEmbedDimensions, c.Dimensions)
	}
	return nil
}

// validateBaseURL checks the base_url key. The URL may appear in error
// messages later, so it must not carry credentials.
func validateBaseURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%s base_url is required, e.g. base_url = \"https://api.openai.com/v1\"", embeddingsTable)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		if strings.Contains(raw, "@") {
			// Not echoed: it may hold a password.
			return fmt.Errorf("%s base_url must be an http or https URL", embeddingsTable)
		}
		return fmt.Errorf("%s base_url must be an http or https URL, got %q", embeddingsTable, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%s base_url must not contain a user name or password; name the environment variable holding the API key in api_key_env", embeddingsTable)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("%s base_url must not have a query or fragment, got %q", embeddingsTable, raw)
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/embeddings") {
		return fmt.Errorf("%s base_url is the API root, requests go to <base_url>/embeddings; drop the trailing /embeddings from %q",
			embeddingsTable, raw)
	}
	return nil
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

// embedder turns texts into unit-length vectors.
type embedder interface {
	// Embed returns one L2-normalised vector per text, in the order of
	// texts, all of the same dimension. It sends the texts in batches of the
	// configured size, one request per batch and one batch at a time,
	// honours ctx, and returns either every vector or an error, never a
	// partial result.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model is the configured model name; stored vectors are tagged with it
	// and vectors of different models are never compared.
	Model() string
}

// openAIEmbedder is the embedder for OpenAI-compatible /embeddings
// endpoints, built on the official client.
type openAIEmbedder struct {
	cfg     embeddingsConfig
	service openai.EmbeddingService
}

// newOpenAIEmbedder returns an embedder for cfg using the official OpenAI
// client. apiKey is the value of the variable named by api_key_env, resolved
// by the host; "" sends no Authorization header. httpClient may be nil for a
// default client without a global timeout (each attempt is bounded by
// timeout_secs instead).
func newOpenAIEmbedder(cfg embeddingsConfig, apiKey string, httpClient *http.Client) (embedder, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(embedMaxRetries),
		option.WithRequestTimeout(time.Duration(cfg.TimeoutSecs) * time.Second),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	// Providers never read the host's environment. openai.NewClient starts
	// from openai.DefaultClientOptions, which read OPENAI_BASE_URL,
	// OPENAI_API_KEY, OPENAI_ADMIN_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID,
	// OPENAI_WEBHOOK_SECRET and OPENAI_CUSTOM_HEADERS; overriding the key
	// with an empty one would still leak the organization, project and
	// custom headers. So no Client is built: the embeddings service alone
	// reads no environment variables and gets exactly the options above (an
	// empty key sends no Authorization header). The tests set those
	// variables and check that nothing of them reaches the server.
	service := openai.NewEmbeddingService(opts...)
	return &openAIEmbedder{cfg: cfg, service: service}, nil
}

// Model returns the configured model name.
func (e *openAIEmbedder) Model() string { return e.cfg.Model }

// Embed implements [embedder].
func (e *openAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for i, text := range texts {
		if text == "" {
			return nil, fmt.Errorf("cannot embed text %d of %d: it is empty", i+1, len(texts))
		}
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embedding was cancelled: %w", err)
		}
		end := min(start+e.cfg.BatchSize, len(texts))
		vectors, err := e.embedBatch(ctx, texts[start:end], start)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(out[0]) != len(vectors[0]) {
			return nil, e.errorf("returned vectors of differing dimensions (%d and %d)", len(out[0]), len(vectors[0]))
		}
		out = append(out, vectors...)
	}
	return out, nil
}

// embedBatch embeds one batch, whose first text is text number offset of
// the whole Embed call, and checks and normalises the answer.
func (e *openAIEmbedder) embedBatch(ctx context.Context, batch []string, offset int) ([][]float32, error) {
	params := openai.EmbeddingNewParams{
		Model: e.cfg.Model,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: batch},
	}
	if e.cfg.Dimensions > 0 {
		params.Dimensions = openai.Int(int64(e.cfg.Dimensions))
	}
	res, err := e.service.New(ctx, params)
	if err != nil {
		return nil, e.requestError(ctx, len(batch), err)
	}
	if len(res.Data) != len(batch) {
		return nil, e.errorf("returned %d vectors for %d texts", len(res.Data), len(batch))
	}
	vectors := make([][]float32, len(batch))
	dims := 0
	for _, item := range res.Data {
		if !item.JSON.Index.Valid() {
			return nil, e.errorf("returned a vector without a valid index")
		}
		i := item.Index
		if i < 0 || i >= int64(len(batch)) {
			return nil, e.errorf("returned a vector with index %d for a batch of %d texts", i, len(batch))
		}
		if vectors[i] != nil {
			return nil, e.errorf("returned two vectors with index %d", i)
		}
		text := offset + int(i) + 1
		if !item.JSON.Embedding.Valid() {
			return nil, e.errorf("returned a malformed vector for text %d", text)
		}
		if len(item.Embedding) == 0 {
			return nil, e.errorf("returned an empty vector for text %d", text)
		}
		if dims == 0 {
			dims = len(item.Embedding)
		} else if len(item.Embedding) != dims {
			return nil, e.errorf("returned vectors of differing dimensions (%d and %d)", dims, len(item.Embedding))
		}
		v := make([]float32, len(item.Embedding))
		for j, x := range item.Embedding {
			v[j] = float32(x)
		}
		if !normalize(v) {
			return nil, e.errorf("returned a zero, NaN or infinite vector for text %d", text)
		}
		vectors[i] = v
	}
	if e.cfg.Dimensions > 0 && dims != e.cfg.Dimensions {
		return nil, e.errorf("returned %d-dimensional vectors, but %s dimensions = %d; "+
			"remove dimensions if the model does not support it", dims, embeddingsTable, e.cfg.Dimensions)
	}
	return vectors, nil
}

// embedError is an Embed failure: a message for the user that wraps the
// underlying error without repeating its text.
type embedError struct {
	msg string
	err error
}

// Error returns the message for the user.
func (e *embedError) Error() string { return e.msg }

// Unwrap returns the underlying error.
func (e *embedError) Unwrap() error { return e.err }

// errorf returns an error about the endpoint's answer.
func (e *openAIEmbedder) errorf(format string, args ...any) error {
	return fmt.Errorf("embeddings endpoint %s %s", e.cfg.BaseURL, fmt.Sprintf(format, args...))
}

// requestError explains err, the client's failure to embed a batch of n
// texts, in words a user can act on. It reports the status and the API's
// error code but not the API's message, which may quote the key or the
// texts.
func (e *openAIEmbedder) requestError(ctx context.Context, n int, err error) error {
	endpoint := e.cfg.BaseURL
	attempts := embedMaxRetries + 1
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
				endpoint, status, embeddingsTable)
		case code == http.StatusNotFound:
			msg = fmt.Sprintf("embeddings endpoint %s answered %s; check %s base_url and model",
				endpoint, status, embeddingsTable)
		case code == http.StatusTooManyRequests:
			msg = fmt.Sprintf("embeddings endpoint %s is rate limiting or out of quota: %s after %d attempts; "+
				"try again later or lower %s batch_size", endpoint, status, attempts, embeddingsTable)
		case code >= 500:
			msg = fmt.Sprintf("embeddings endpoint %s failed: %s after %d attempts; try again later",
				endpoint, status, attempts)
		case code >= 400:
			msg = fmt.Sprintf("embeddings endpoint %s rejected a batch of %s: %s; check %s model, dimensions and batch_size",
				endpoint, plural(n, "text"), status, embeddingsTable)
		default:
			msg = fmt.Sprintf("embeddings endpoint %s answered %s", endpoint, status)
		}
		return &embedError{msg: msg, err: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("embedding was cancelled: %w", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("embeddings endpoint %s did not answer within %d seconds; raise %s timeout_secs or lower batch_size: %w",
			endpoint, e.cfg.TimeoutSecs, embeddingsTable, err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Errorf("cannot reach embeddings endpoint %s after %d attempts; check %s base_url and that the server is running: %w",
			endpoint, attempts, embeddingsTable, err)
	}
	return fmt.Errorf("embeddings endpoint %s returned an unusable answer: %w", endpoint, err)
}

// isTextRefusal reports whether err is the endpoint refusing the texts it
// was given (400, 413 or 422: too long for the model, say) rather than
// being unreachable, unauthorised, rate limited or failing: other texts may
// still embed.
func isTextRefusal(err error) bool {
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

// encodeVector encodes v as little-endian float32 values, 4 bytes per
// dimension, for storage as a BLOB.
func encodeVector(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// decodeVector decodes a BLOB written by encodeVector.
func decodeVector(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, errors.New("vector blob is empty")
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector blob of %d bytes is not a whole number of float32 values", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// dot returns the dot product of a and b, which is their cosine similarity
// when both have unit length, or 0 when their lengths differ (callers check
// dimensions first).
func dot(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var sum float64
	for i := range a {
		sum += float64(a[i]) * float64(b[i])
	}
	return float32(sum)
}

// normalize scales v in place to unit length. It returns false, leaving v
// unchanged, for an empty or zero vector or one holding NaN or Inf.
func normalize(v []float32) bool {
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
