package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// testAPIKey is the key the tests configure; no error may contain it.
const testAPIKey = "sk-test-secret-key"

// testTexts returns n distinct texts that all contain "confidential", so
// that tests can check no error repeats them.
func testTexts(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("confidential note %d about topic%d", i, i%7)
	}
	return texts
}

// newTestEmbedder returns an embedder for cfg with the test key, failing t
// if cfg is invalid.
func newTestEmbedder(t *testing.T, cfg embeddingsConfig) embedder {
	t.Helper()
	e, err := newOpenAIEmbedder(cfg, testAPIKey, nil)
	if err != nil {
		t.Fatalf("newOpenAIEmbedder: %v", err)
	}
	return e
}

// checkNoSecrets fails t if err's message holds the API key or a text.
func checkNoSecrets(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); strings.Contains(msg, testAPIKey) || strings.Contains(msg, "confidential") {
		t.Errorf("error leaks the key or a text: %s", msg)
	}
}

func TestNewOpenAIEmbedderValidates(t *testing.T) {
	_, err := newOpenAIEmbedder(embeddingsConfig{BaseURL: "ftp://x", Model: "m"}, "", nil)
	want := `[providers.memory.embeddings] base_url must be an http or https URL, got "ftp://x"`
	if err == nil || err.Error() != want {
		t.Fatalf("newOpenAIEmbedder() error = %v, want %s", err, want)
	}
}

func TestEmbedBatching(t *testing.T) {
	tests := []struct {
		texts, batch int
		wantSizes    []int
	}{
		{texts: 0, batch: 64, wantSizes: nil},
		{texts: 1, batch: 64, wantSizes: []int{1}},
		{texts: 64, batch: 64, wantSizes: []int{64}},
		{texts: 65, batch: 64, wantSizes: []int{64, 1}},
		{texts: 150, batch: 64, wantSizes: []int{64, 64, 22}},
		{texts: 150, batch: 0, wantSizes: []int{64, 64, 22}}, // default batch size
		{texts: 5, batch: 1, wantSizes: []int{1, 1, 1, 1, 1}},
		{texts: 3, batch: 2048, wantSizes: []int{3}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d texts by %d", tt.texts, tt.batch), func(t *testing.T) {
			const dims = 32
			f := newFakeEmbeddings(t, dims)
			cfg := embeddingsConfig{BaseURL: f.URL(), Model: "fake-embed", BatchSize: tt.batch}
			e, err := newOpenAIEmbedder(cfg, testAPIKey, f.server.Client())
			if err != nil {
				t.Fatal(err)
			}
			texts := testTexts(tt.texts)
			got, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if f.Requests() != len(tt.wantSizes) || !slices.Equal(f.BatchSizes(), tt.wantSizes) {
				t.Errorf("requests %d of sizes %v, want %v", f.Requests(), f.BatchSizes(), tt.wantSizes)
			}
			if len(got) != len(texts) {
				t.Fatalf("got %d vectors for %d texts", len(got), len(texts))
			}
			for i, text := range texts {
				want := f.vector(text, dims)
				embeddings.Normalize(want)
				if !slices.Equal(got[i], want) {
					t.Fatalf("vector %d = %v, want %v", i, got[i], want)
				}
			}
			if len(tt.wantSizes) > 0 && f.LastModel() != "fake-embed" {
				t.Errorf("model sent = %q, want fake-embed", f.LastModel())
			}
			if e.Model() != "fake-embed" {
				t.Errorf("Model() = %q, want fake-embed", e.Model())
			}
		})
	}
}

func TestEmbedNormalises(t *testing.T) {
	f := newFakeEmbeddings(t, 64)
	e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m"})
	// The fake answers word counts, far from unit length.
	texts := []string{"word", "word word word word", "a b c d e f g h", "repeat repeat other"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if n := math.Sqrt(float64(embeddings.Dot(v, v))); math.Abs(n-1) > 1e-6 {
			t.Errorf("vector %d has length %v, want 1", i, n)
		}
	}
	// "word" and "word word word word" point the same way.
	if d := embeddings.Dot(got[0], got[1]); math.Abs(float64(d)-1) > 1e-6 {
		t.Errorf("dot of same-direction vectors = %v, want 1", d)
	}
}

func TestEmbedDimensionsParameter(t *testing.T) {
	tests := []struct {
		dimensions, wantSent, wantLen int
	}{
		{dimensions: 0, wantSent: 0, wantLen: 32},
		{dimensions: 8, wantSent: 8, wantLen: 8},
		{dimensions: 100, wantSent: 100, wantLen: 100},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.dimensions), func(t *testing.T) {
			f := newFakeEmbeddings(t, 32)
			e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m", Dimensions: tt.dimensions})
			got, err := e.Embed(context.Background(), []string{"one two three"})
			if err != nil {
				t.Fatal(err)
			}
			if f.LastDimensions() != tt.wantSent || len(got[0]) != tt.wantLen {
				t.Errorf("sent dimensions %d, got %d-dimensional vector; want %d and %d",
					f.LastDimensions(), len(got[0]), tt.wantSent, tt.wantLen)
			}
		})
	}
}

// TestEmbedAuthorization checks the key is sent as a bearer token when
// given, and that nothing from the OPENAI_* environment reaches the server.
func TestEmbedAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-environment")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-from-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-from-environment")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-environment")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Environment: yes")
	tests := []struct {
		name, key string
		wantAuth  []string
	}{
		{name: "key", key: "sk-configured", wantAuth: []string{"Bearer sk-configured"}},
		{name: "no key", key: "", wantAuth: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEmbeddings(t, 8)
			e, err := newOpenAIEmbedder(embeddingsConfig{BaseURL: f.URL(), Model: "m"}, tt.key, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Embed(context.Background(), []string{"hello"}); err != nil {
				t.Fatalf("Embed: %v (did OPENAI_BASE_URL win over base_url?)", err)
			}
			h := f.LastHeaders()
			if got := h.Values("Authorization"); !slices.Equal(got, tt.wantAuth) {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if want := strings.Join(tt.wantAuth, ""); f.LastAuthorization() != want {
				t.Errorf("LastAuthorization() = %q, want %q", f.LastAuthorization(), want)
			}
			for name, values := range h {
				for _, v := range values {
					if strings.Contains(v, "environment") || strings.Contains(v, "yes") {
						t.Errorf("header %s: %q comes from the environment", name, v)
					}
				}
			}
			for _, name := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Environment"} {
				if h.Get(name) != "" {
					t.Errorf("header %s sent", name)
				}
			}
		})
	}
}

func TestEmbedShuffledIndicesArePlaced(t *testing.T) {
	const dims = 16
	f := newFakeEmbeddings(t, dims)
	f.SetMode(fakeShuffled)
	e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m", BatchSize: 4})
	texts := testTexts(10)
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		want := f.vector(text, dims)
		embeddings.Normalize(want)
		if !slices.Equal(got[i], want) {
			t.Errorf("vector %d = %v, want %v", i, got[i], want)
		}
	}
}

func TestEmbedErrors(t *testing.T) {
	tests := []struct {
		name         string
		status       int
		mode         fakeMode
		texts        []string
		batch        int
		wantErr      string // with URL for the fake's base URL
		wantRequests int
		wantStatus   int // of the wrapped *openai.Error, 0 for none
	}{
		{
			name: "401", status: 401, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL refused the request: 401 Unauthorized (invalid_api_key); check the API key named by [providers.memory.embeddings] api_key_env",
			wantRequests: 1, wantStatus: 401,
		},
		{
			name: "403", status: 403, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL refused the request: 403 Forbidden (invalid_request); check the API key named by [providers.memory.embeddings] api_key_env",
			wantRequests: 1, wantStatus: 403,
		},
		{
			name: "404", status: 404, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL answered 404 Not Found (model_not_found); check [providers.memory.embeddings] base_url and model",
			wantRequests: 1, wantStatus: 404,
		},
		{
			name: "400", status: 400, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL rejected a batch of 2 texts: 400 Bad Request (invalid_request); check [providers.memory.embeddings] model, dimensions and batch_size",
			wantRequests: 1, wantStatus: 400,
		},
		{
			name: "429 is retried", status: 429, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL is rate limiting or out of quota: 429 Too Many Requests (rate_limit_exceeded) after 3 attempts; try again later or lower [providers.memory.embeddings] batch_size",
			wantRequests: 3, wantStatus: 429,
		},
		{
			name: "500 is retried", status: 500, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL failed: 500 Internal Server Error (server_error) after 3 attempts; try again later",
			wantRequests: 3, wantStatus: 500,
		},
		{
			name: "503 is retried", status: 503, texts: testTexts(2),
			wantErr:      "embeddings endpoint URL failed: 503 Service Unavailable (server_error) after 3 attempts; try again later",
			wantRequests: 3, wantStatus: 503,
		},
		{
			name: "wrong count", mode: fakeWrongCount, texts: testTexts(4),
			wantErr:      "embeddings endpoint URL returned 3 vectors for 4 texts",
			wantRequests: 1,
		},
		{
			name: "wrong count in second batch", mode: fakeWrongCount, texts: testTexts(5), batch: 3,
			// The first batch of 3 already comes back short.
			wantErr:      "embeddings endpoint URL returned 2 vectors for 3 texts",
			wantRequests: 1,
		},
		{
			name: "empty text", texts: []string{"a", "", "b"},
			wantErr:      "cannot embed text 2 of 3: it is empty",
			wantRequests: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEmbeddings(t, 8)
			f.SetFailure(tt.status)
			f.SetMode(tt.mode)
			e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m", BatchSize: tt.batch})
			got, err := e.Embed(context.Background(), tt.texts)
			if got != nil {
				t.Errorf("Embed returned %d vectors with the error", len(got))
			}
			want := strings.ReplaceAll(tt.wantErr, "URL", f.URL())
			if err == nil || err.Error() != want {
				t.Fatalf("Embed error = %v\nwant %s", err, want)
			}
			checkNoSecrets(t, err)
			if f.Requests() != tt.wantRequests {
				t.Errorf("%d requests, want %d", f.Requests(), tt.wantRequests)
			}
			gotStatus := 0
			if apiErr := (*openai.Error)(nil); errors.As(err, &apiErr) {
				gotStatus = apiErr.StatusCode
			}
			if gotStatus != tt.wantStatus {
				t.Errorf("wrapped *openai.Error has status %d, want %d", gotStatus, tt.wantStatus)
			}
		})
	}
}

// rawAnswer is one canned answer of a rawServer.
type rawAnswer struct {
	status int
	body   string
}

// rawServer answers its requests with answers in turn, repeating the last,
// and counts them.
func rawServer(t *testing.T, answers ...rawAnswer) (url string, requests func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		a := answers[min(n, len(answers)-1)]
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(s.Close)
	return s.URL + "/v1", func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// embeddingList returns an embeddings answer whose data are items.
func embeddingList(items ...string) string {
	return `{"object":"list","model":"m","usage":{"prompt_tokens":1,"total_tokens":1},"data":[` +
		strings.Join(items, ",") + `]}`
}

// base64Vector returns v as the API's base64 encoding.
func base64Vector(v ...float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestEmbedBadAnswers(t *testing.T) {
	ok := func(body string) rawAnswer { return rawAnswer{status: 200, body: body} }
	tests := []struct {
		name       string
		answers    []rawAnswer
		texts      int
		batch      int
		dimensions int
		wantErr    string // exact, with URL for the base URL
		wantPrefix string // when the message ends in a wrapped error's text
		want       [][]float32
		requests   int // 0 means 1
	}{
		{
			name:    "floats",
			answers: []rawAnswer{ok(embeddingList(`{"object":"embedding","index":1,"embedding":[0,2]}`, `{"object":"embedding","index":0,"embedding":[3,4]}`))},
			texts:   2,
			want:    [][]float32{{0.6, 0.8}, {0, 1}},
		},
		{
			name:    "base64 without asking",
			answers: []rawAnswer{ok(embeddingList(`{"object":"embedding","index":0,"embedding":"` + base64Vector(3, 4) + `"}`))},
			texts:   1,
			want:    [][]float32{{0.6, 0.8}},
		},
		{
			name:    "duplicate index",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[1,0]}`, `{"index":0,"embedding":[0,1]}`))},
			texts:   2,
			wantErr: "embeddings endpoint URL returned two vectors with index 0",
		},
		{
			name:    "index out of range",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[1,0]}`, `{"index":2,"embedding":[0,1]}`))},
			texts:   2,
			wantErr: "embeddings endpoint URL returned a vector with index 2 for a batch of 2 texts",
		},
		{
			name:    "negative index",
			answers: []rawAnswer{ok(embeddingList(`{"index":-1,"embedding":[1,0]}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a vector with index -1 for a batch of 1 texts",
		},
		{
			name:    "missing index",
			answers: []rawAnswer{ok(embeddingList(`{"embedding":[1,0]}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a vector without a valid index",
		},
		{
			name:    "empty vector",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[1,0]}`, `{"index":1,"embedding":[]}`))},
			texts:   2,
			wantErr: "embeddings endpoint URL returned an empty vector for text 2",
		},
		{
			name:    "missing vector",
			answers: []rawAnswer{ok(embeddingList(`{"index":0}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a malformed vector for text 1",
		},
		{
			name:    "bad base64",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":"AAAAAAA="}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a malformed vector for text 1",
		},
		{
			name:    "strings in vector",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":["a","b"]}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a malformed vector for text 1",
		},
		{
			name:    "zero vector",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[0,0]}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a zero, NaN or infinite vector for text 1",
		},
		{
			name:    "overflows float32",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[1e39,0]}`))},
			texts:   1,
			wantErr: "embeddings endpoint URL returned a zero, NaN or infinite vector for text 1",
		},
		{
			name:    "differing dimensions in a batch",
			answers: []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[1,0]}`, `{"index":1,"embedding":[1,0,0]}`))},
			texts:   2,
			wantErr: "embeddings endpoint URL returned vectors of differing dimensions (2 and 3)",
		},
		{
			name: "differing dimensions across batches",
			answers: []rawAnswer{
				ok(embeddingList(`{"index":0,"embedding":[1,0]}`)),
				ok(embeddingList(`{"index":0,"embedding":[1,0,0]}`)),
			},
			texts: 2, batch: 1, requests: 2,
			wantErr: "embeddings endpoint URL returned vectors of differing dimensions (2 and 3)",
		},
		{
			name:       "dimensions ignored",
			answers:    []rawAnswer{ok(embeddingList(`{"index":0,"embedding":[1,0]}`))},
			texts:      1,
			dimensions: 3,
			wantErr:    "embeddings endpoint URL returned 2-dimensional vectors, but [providers.memory.embeddings] dimensions = 3; remove dimensions if the model does not support it",
		},
		{
			name: "second batch fails",
			answers: []rawAnswer{
				ok(embeddingList(`{"index":0,"embedding":[1,0]}`)),
				{status: 400, body: `{"error":{"message":"confidential text too long","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			},
			texts: 2, batch: 1, requests: 2,
			wantErr: "embeddings endpoint URL rejected a batch of 1 text: 400 Bad Request (context_length_exceeded); check [providers.memory.embeddings] model, dimensions and batch_size",
		},
		{
			name:    "free text code is dropped",
			answers: []rawAnswer{{status: 400, body: `{"error":{"message":"bad","code":"input 'confidential' is bad"}}`}},
			texts:   1,
			wantErr: "embeddings endpoint URL rejected a batch of 1 text: 400 Bad Request; check [providers.memory.embeddings] model, dimensions and batch_size",
		},
		{
			name:    "error type when no code",
			answers: []rawAnswer{{status: 422, body: `{"error":{"message":"bad","type":"invalid_request_error"}}`}},
			texts:   1,
			wantErr: "embeddings endpoint URL rejected a batch of 1 text: 422 Unprocessable Entity (invalid_request_error); check [providers.memory.embeddings] model, dimensions and batch_size",
		},
		{
			name:    "unusual status",
			answers: []rawAnswer{{status: 302, body: `{}`}},
			texts:   1,
			// A redirect without Location is not followed; the client
			// decodes the body as an answer without data.
			wantErr: "embeddings endpoint URL returned 0 vectors for 1 texts",
		},
		{
			name:    "unknown status code",
			answers: []rawAnswer{{status: 499, body: `{"error":{"message":"x"}}`}},
			texts:   1,
			wantErr: "embeddings endpoint URL rejected a batch of 1 text: 499; check [providers.memory.embeddings] model, dimensions and batch_size",
		},
		{
			name:       "not JSON",
			answers:    []rawAnswer{ok(`{"object":"list","data":[`)},
			texts:      1,
			wantPrefix: "embeddings endpoint URL returned an unusable answer: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, requests := rawServer(t, tt.answers...)
			e := newTestEmbedder(t, embeddingsConfig{BaseURL: url, Model: "m", BatchSize: tt.batch, Dimensions: tt.dimensions})
			got, err := e.Embed(context.Background(), testTexts(tt.texts))
			if want := max(tt.requests, 1); requests() != want {
				t.Errorf("%d requests, want %d", requests(), want)
			}
			switch {
			case tt.want != nil:
				if err != nil {
					t.Fatalf("Embed: %v", err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
				for i := range got {
					for j := range got[i] {
						if len(got[i]) != len(tt.want[i]) || math.Abs(float64(got[i][j]-tt.want[i][j])) > 1e-6 {
							t.Fatalf("got %v, want %v", got, tt.want)
						}
					}
				}
				return
			case err == nil:
				t.Fatalf("Embed succeeded with %v", got)
			case got != nil:
				t.Errorf("Embed returned %d vectors with the error", len(got))
			}
			checkNoSecrets(t, err)
			if tt.wantPrefix != "" {
				if want := strings.ReplaceAll(tt.wantPrefix, "URL", url); !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("Embed error = %v\nwant prefix %s", err, want)
				}
				return
			}
			if want := strings.ReplaceAll(tt.wantErr, "URL", url); err.Error() != want {
				t.Fatalf("Embed error = %v\nwant %s", err, want)
			}
		})
	}
}

func TestEmbedContext(t *testing.T) {
	t.Run("cancelled before", func(t *testing.T) {
		f := newFakeEmbeddings(t, 8)
		e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m"})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got, err := e.Embed(ctx, testTexts(3))
		if got != nil || !errors.Is(err, context.Canceled) || err.Error() != "embedding was cancelled: context canceled" {
			t.Fatalf("Embed = %v, %v; want cancelled", got, err)
		}
		if f.Requests() != 0 {
			t.Errorf("%d requests after cancel", f.Requests())
		}
	})
	t.Run("cancelled during a request", func(t *testing.T) {
		f := newFakeEmbeddings(t, 8)
		f.SetMode(fakeHang)
		e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m"})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancel once the request is at the server, which never answers it.
		go func() {
			select {
			case <-f.FirstRequest():
			case <-ctx.Done():
			}
			cancel()
		}()
		got, err := e.Embed(ctx, testTexts(3))
		if got != nil || !errors.Is(err, context.Canceled) || err.Error() != "embedding was cancelled: context canceled" {
			t.Fatalf("Embed = %v, %v; want cancelled", got, err)
		}
		if f.Requests() != 1 {
			t.Errorf("%d requests, want 1", f.Requests())
		}
	})
	t.Run("cancelled while a batch is answered", func(t *testing.T) {
		f := newFakeEmbeddings(t, 8)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		client := &http.Client{Transport: cancelAfterTransport{cancel: cancel}}
		e, err := newOpenAIEmbedder(embeddingsConfig{BaseURL: f.URL(), Model: "m", BatchSize: 1}, "", client)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Embed(ctx, testTexts(3))
		if got != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("Embed = %v, %v; want cancelled", got, err)
		}
		if f.Requests() != 1 {
			t.Errorf("%d requests, want 1", f.Requests())
		}
	})
}

// cancelAfterTransport cancels a context once a request has been answered,
// so that no later batch may be sent.
type cancelAfterTransport struct {
	cancel context.CancelFunc
}

// RoundTrip sends req and then cancels.
func (c cancelAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	c.cancel()
	return res, err
}

func TestEmbedSlowFailures(t *testing.T) {
	t.Run("request timeout", func(t *testing.T) {
		t.Parallel()
		// In a synctest bubble the second passes as soon as the
		// request waits, however loaded the machine.
		synctest.Test(t, func(t *testing.T) {
			f := newUnservedFakeEmbeddings(t, 8)
			f.SetMode(fakeHang)
			e, err := newOpenAIEmbedder(embeddingsConfig{BaseURL: f.URL(), Model: "m", TimeoutSecs: 1}, testAPIKey, f.Client())
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err := e.Embed(context.Background(), testTexts(2))
			want := "embeddings endpoint " + f.URL() + " did not answer within 1 seconds; raise [providers.memory.embeddings] timeout_secs or lower batch_size: context deadline exceeded"
			if got != nil || err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Embed = %v, %v\nwant %s", got, err, want)
			}
			// A timed-out request is never sent again.
			if f.Requests() != 1 {
				t.Errorf("%d requests, want 1", f.Requests())
			}
			if d := time.Since(start); d != time.Second {
				t.Errorf("Embed gave up after %v, want timeout_secs (1s)", d)
			}
		})
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		s := httptest.NewServer(http.NotFoundHandler())
		url := s.URL + "/v1"
		s.Close()
		e := newTestEmbedder(t, embeddingsConfig{BaseURL: url, Model: "m"})
		got, err := e.Embed(context.Background(), testTexts(2))
		want := "cannot reach embeddings endpoint " + url + " after 3 attempts; check [providers.memory.embeddings] base_url and that the server is running: "
		if got != nil || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Embed = %v, %v\nwant prefix %s", got, err, want)
		}
		checkNoSecrets(t, err)
	})
}

func TestVectorEncodeDecode(t *testing.T) {
	tests := []struct {
		name string
		v    []float32
		want []byte
	}{
		{name: "one", v: []float32{1}, want: []byte{0x00, 0x00, 0x80, 0x3f}},
		{name: "two", v: []float32{-2, 0.5}, want: []byte{0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f}},
		{name: "extremes", v: []float32{math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1)), float32(math.NaN()), 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeVector(tt.v)
			if len(b) != 4*len(tt.v) {
				t.Fatalf("encodeVector gave %d bytes for %d dimensions", len(b), len(tt.v))
			}
			if tt.want != nil && !bytes.Equal(b, tt.want) {
				t.Errorf("encodeVector(%v) = % x, want % x", tt.v, b, tt.want)
			}
			got, err := decodeVector(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.v) {
				t.Fatalf("decoded %d dimensions, want %d", len(got), len(tt.v))
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(tt.v[i]) {
					t.Errorf("dimension %d = %v, want %v", i, got[i], tt.v[i])
				}
			}
		})
	}
}

func TestVectorDecodeBadLengths(t *testing.T) {
	tests := []struct {
		b       []byte
		wantErr string
	}{
		{b: nil, wantErr: "vector blob is empty"},
		{b: []byte{}, wantErr: "vector blob is empty"},
		{b: []byte{1}, wantErr: "vector blob of 1 bytes is not a whole number of float32 values"},
		{b: []byte{1, 2, 3}, wantErr: "vector blob of 3 bytes is not a whole number of float32 values"},
		{b: []byte{1, 2, 3, 4, 5}, wantErr: "vector blob of 5 bytes is not a whole number of float32 values"},
	}
	for _, tt := range tests {
		v, err := decodeVector(tt.b)
		if v != nil || err == nil || err.Error() != tt.wantErr {
			t.Errorf("decodeVector(% x) = %v, %v; want %s", tt.b, v, err, tt.wantErr)
		}
	}
}

func TestFakeEmbeddingsSynonyms(t *testing.T) {
	const dims = 4096
	f := newFakeEmbeddings(t, dims)
	f.Synonyms("car", "Automobile", "vehicle")
	e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m"})
	v, err := e.Embed(context.Background(), []string{"red car", "RED automobile!", "blue vehicle", "green tree", "???"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		a, b int
		want float32
	}{
		{a: 0, b: 1, want: 1},   // same words after synonyms and case
		{a: 0, b: 2, want: 0.5}, // share "car"
		{a: 0, b: 3, want: 0},   // share nothing
		{a: 4, b: 4, want: 1},   // no words is still a unit vector
	}
	for _, tt := range tests {
		if got := embeddings.Dot(v[tt.a], v[tt.b]); math.Abs(float64(got-tt.want)) > 1e-6 {
			t.Errorf("embeddings.Dot(%d, %d) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestFakeEmbeddingsBase64 checks the fake's base64 answers decode, with
// the official client, to its float answers.
func TestFakeEmbeddingsBase64(t *testing.T) {
	f := newFakeEmbeddings(t, 16)
	svc := openai.NewEmbeddingService(option.WithBaseURL(f.URL()), option.WithHTTPClient(f.server.Client()))
	texts := []string{"alpha beta", "gamma gamma delta"}
	embed := func(format openai.EmbeddingNewParamsEncodingFormat) []openai.Embedding {
		t.Helper()
		res, err := svc.New(context.Background(), openai.EmbeddingNewParams{
			Model:          "m",
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
			EncodingFormat: format,
		})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return res.Data
	}
	floats, b64 := embed(openai.EmbeddingNewParamsEncodingFormatFloat), embed(openai.EmbeddingNewParamsEncodingFormatBase64)
	for i, text := range texts {
		want := f.vector(text, 16)
		for _, got := range [][]float64{floats[i].Embedding, b64[i].Embedding} {
			if len(got) != len(want) {
				t.Fatalf("text %d: %d dimensions, want %d", i, len(got), len(want))
			}
			for j := range got {
				if float32(got[j]) != want[j] {
					t.Fatalf("text %d: %v, want %v", i, got, want)
				}
			}
		}
	}
}

func TestFakeEmbeddingsValidatesRequests(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
		wantInputs  int
	}{
		{name: "array", body: `{"model":"m","input":["a","b"]}`, wantStatus: 200, wantInputs: 2},
		{name: "string", body: `{"model":"m","input":"a"}`, wantStatus: 200, wantInputs: 1},
		{name: "all options", body: `{"model":"m","input":["a"],"encoding_format":"float","dimensions":4,"user":"u"}`, wantStatus: 200, wantInputs: 1},
		{name: "content type with charset", contentType: "application/json; charset=utf-8", body: `{"model":"m","input":"a"}`, wantStatus: 200, wantInputs: 1},
		{name: "GET", method: http.MethodGet, wantStatus: 405, wantCode: "method_not_allowed"},
		{name: "wrong path", path: "/embeddings", body: `{"model":"m","input":"a"}`, wantStatus: 404, wantCode: "unknown_url"},
		{name: "form body", contentType: "application/x-www-form-urlencoded", body: "model=m", wantStatus: 415, wantCode: "invalid_content_type"},
		{name: "not JSON", body: `{"model":`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "trailing data", body: `{"model":"m","input":"a"} {}`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "unknown field", body: `{"model":"m","input":"a","temperature":1}`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "no model", body: `{"input":"a"}`, wantStatus: 400, wantCode: "missing_model"},
		{name: "no input", body: `{"model":"m"}`, wantStatus: 400, wantCode: "invalid_input"},
		{name: "empty array", body: `{"model":"m","input":[]}`, wantStatus: 400, wantCode: "invalid_input"},
		{name: "empty string", body: `{"model":"m","input":""}`, wantStatus: 400, wantCode: "invalid_input"},
		{name: "empty string in array", body: `{"model":"m","input":["a",""]}`, wantStatus: 400, wantCode: "invalid_input"},
		{name: "tokens", body: `{"model":"m","input":[[1,2]]}`, wantStatus: 400, wantCode: "invalid_input"},
		{name: "too many inputs", body: `{"model":"m","input":[` + strings.Repeat(`"a",`, 2048) + `"a"]}`, wantStatus: 400, wantCode: "invalid_input"},
		{name: "bad encoding", body: `{"model":"m","input":"a","encoding_format":"int8"}`, wantStatus: 400, wantCode: "invalid_encoding_format"},
		{name: "zero dimensions", body: `{"model":"m","input":"a","dimensions":0}`, wantStatus: 400, wantCode: "invalid_dimensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEmbeddings(t, 4)
			method, path, ct := cmp.Or(tt.method, http.MethodPost), cmp.Or(tt.path, "/v1/embeddings"), cmp.Or(tt.contentType, "application/json")
			req, err := http.NewRequest(method, f.server.URL+path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", ct)
			res, err := f.server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var answer struct {
				Object string `json:"object"`
				Model  string `json:"model"`
				Data   []struct {
					Object    string    `json:"object"`
					Index     int       `json:"index"`
					Embedding []float32 `json:"embedding"`
				} `json:"data"`
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
					TotalTokens  int `json:"total_tokens"`
				} `json:"usage"`
				Error *struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.wantStatus || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d (%s), want %d", res.StatusCode, res.Header.Get("Content-Type"), tt.wantStatus)
			}
			if f.Requests() != 1 {
				t.Errorf("Requests() = %d, want 1", f.Requests())
			}
			if tt.wantStatus != 200 {
				if answer.Error == nil || answer.Error.Code != tt.wantCode || answer.Error.Message == "" || answer.Error.Type != "invalid_request_error" {
					t.Errorf("error = %+v, want code %s", answer.Error, tt.wantCode)
				}
				if len(f.BatchSizes()) != 0 {
					t.Errorf("BatchSizes() = %v for an invalid request", f.BatchSizes())
				}
				return
			}
			if answer.Object != "list" || answer.Model != "m" || len(answer.Data) != tt.wantInputs || answer.Error != nil {
				t.Fatalf("answer = %+v", answer)
			}
			for i, d := range answer.Data {
				if d.Object != "embedding" || d.Index != i || len(d.Embedding) != 4 {
					t.Errorf("data[%d] = %+v", i, d)
				}
			}
			if answer.Usage.PromptTokens != tt.wantInputs || answer.Usage.TotalTokens != tt.wantInputs {
				t.Errorf("usage = %+v, want %d tokens", answer.Usage, tt.wantInputs)
			}
			if !slices.Equal(f.BatchSizes(), []int{tt.wantInputs}) || f.LastModel() != "m" {
				t.Errorf("recorded batches %v and model %q", f.BatchSizes(), f.LastModel())
			}
		})
	}
}

// TestFakeEmbeddingsFailure checks that SetFailure(0) and
// SetMode(fakeNormal) make the fake answer correctly again.
func TestFakeEmbeddingsFailure(t *testing.T) {
	f := newFakeEmbeddings(t, 4)
	e := newTestEmbedder(t, embeddingsConfig{BaseURL: f.URL(), Model: "m"})
	f.SetFailure(http.StatusUnauthorized)
	if _, err := e.Embed(context.Background(), []string{"a"}); err == nil {
		t.Fatal("Embed succeeded against a failing fake")
	}
	f.SetFailure(0)
	f.SetMode(fakeWrongCount)
	if _, err := e.Embed(context.Background(), []string{"a"}); err == nil {
		t.Fatal("Embed succeeded against a fake answering too few vectors")
	}
	f.SetMode(fakeNormal)
	if _, err := e.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("Embed after SetFailure(0) and SetMode(fakeNormal): %v", err)
	}
	if f.Requests() != 3 || !slices.Equal(f.BatchSizes(), []int{1, 1}) {
		t.Errorf("Requests() = %d, BatchSizes() = %v; want 3 and [1 1]", f.Requests(), f.BatchSizes())
	}
}
