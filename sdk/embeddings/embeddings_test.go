package embeddings

import (
	"context"
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
)

func TestConfigValidate(t *testing.T) {
	const (
		url   = "https://api.openai.com/v1"
		model = "text-embedding-3-small"
		tbl   = "[discovery.embeddings] "
	)
	defaults := func(c Config) Config {
		if c.BatchSize == 0 {
			c.BatchSize = 64
		}
		if c.TimeoutSecs == 0 {
			c.TimeoutSecs = 30
		}
		return c
	}
	tests := map[string]struct {
		cfg     Config
		want    Config // when wantErr is ""
		wantErr string
	}{
		"defaults": {
			cfg:  Config{BaseURL: url, Model: model},
			want: Config{BaseURL: url, Model: model, BatchSize: 64, TimeoutSecs: 30},
		},
		"lower bounds": {
			cfg:  Config{BaseURL: url, Model: model, APIKeyEnv: "OPENAI_API_KEY", BatchSize: 1, TimeoutSecs: 1, Dimensions: 1},
			want: Config{BaseURL: url, Model: model, APIKeyEnv: "OPENAI_API_KEY", BatchSize: 1, TimeoutSecs: 1, Dimensions: 1},
		},
		"upper bounds": {
			cfg:  Config{BaseURL: url, Model: model, BatchSize: 2048, TimeoutSecs: 600, Dimensions: 16384},
			want: Config{BaseURL: url, Model: model, BatchSize: 2048, TimeoutSecs: 600, Dimensions: 16384},
		},
		"local http root":      {cfg: Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "nomic-embed-text"}},
		"trailing slash":       {cfg: Config{BaseURL: "https://api.openai.com/v1/", Model: model}},
		"upper-case scheme":    {cfg: Config{BaseURL: "HTTPS://api.openai.com/v1", Model: model}},
		"host only":            {cfg: Config{BaseURL: "http://localhost:8080", Model: model}},
		"api_key_env _ first":  {cfg: Config{BaseURL: url, Model: model, APIKeyEnv: "_KEY_2"}},
		"api_key_env lower":    {cfg: Config{BaseURL: url, Model: model, APIKeyEnv: "my_key"}},
		"base_url missing":     {cfg: Config{Model: model}, wantErr: tbl + `base_url is required, e.g. base_url = "https://api.openai.com/v1"`},
		"base_url ftp":         {cfg: Config{BaseURL: "ftp://x", Model: model}, wantErr: tbl + `base_url must be an http or https URL, got "ftp://x"`},
		"base_url no scheme":   {cfg: Config{BaseURL: "api.openai.com/v1", Model: model}, wantErr: tbl + `base_url must be an http or https URL, got "api.openai.com/v1"`},
		"base_url no host":     {cfg: Config{BaseURL: "http:///v1", Model: model}, wantErr: tbl + `base_url must be an http or https URL, got "http:///v1"`},
		"base_url opaque":      {cfg: Config{BaseURL: "http:api.openai.com", Model: model}, wantErr: tbl + `base_url must be an http or https URL, got "http:api.openai.com"`},
		"base_url unparsable":  {cfg: Config{BaseURL: "http://[::1", Model: model}, wantErr: tbl + `base_url must be an http or https URL, got "http://[::1"`},
		"base_url password":    {cfg: Config{BaseURL: "https://user:sk-pass@api.example.com/v1", Model: model}, wantErr: tbl + "base_url must not contain a user name or password; name the environment variable holding the API key in api_key_env"},
		"base_url bad with @":  {cfg: Config{BaseURL: "ftp://user:sk-pass@x", Model: model}, wantErr: tbl + "base_url must be an http or https URL"},
		"base_url query":       {cfg: Config{BaseURL: url + "?api-version=1", Model: model}, wantErr: tbl + `base_url must not have a query or fragment, got "https://api.openai.com/v1?api-version=1"`},
		"base_url empty query": {cfg: Config{BaseURL: url + "?", Model: model}, wantErr: tbl + `base_url must not have a query or fragment, got "https://api.openai.com/v1?"`},
		"base_url fragment":    {cfg: Config{BaseURL: url + "#x", Model: model}, wantErr: tbl + `base_url must not have a query or fragment, got "https://api.openai.com/v1#x"`},
		"base_url endpoint":    {cfg: Config{BaseURL: url + "/embeddings", Model: model}, wantErr: tbl + `base_url is the API root, requests go to <base_url>/embeddings; drop the trailing /embeddings from "https://api.openai.com/v1/embeddings"`},
		"base_url endpoint/":   {cfg: Config{BaseURL: url + "/embeddings/", Model: model}, wantErr: tbl + `base_url is the API root, requests go to <base_url>/embeddings; drop the trailing /embeddings from "https://api.openai.com/v1/embeddings/"`},
		"model missing":        {cfg: Config{BaseURL: url}, wantErr: tbl + `model is required, e.g. model = "text-embedding-3-small"`},
		"model blank":          {cfg: Config{BaseURL: url, Model: " \t"}, wantErr: tbl + `model is required, e.g. model = "text-embedding-3-small"`},
		"api_key_env is a key": {cfg: Config{BaseURL: url, Model: model, APIKeyEnv: "sk-proj-abc123"}, wantErr: tbl + "api_key_env must be the name of an environment variable holding the key (letters, digits and _, not starting with a digit, e.g. OPENAI_API_KEY), not the key itself"},
		"api_key_env digit":    {cfg: Config{BaseURL: url, Model: model, APIKeyEnv: "1KEY"}, wantErr: tbl + "api_key_env must be the name of an environment variable holding the key (letters, digits and _, not starting with a digit, e.g. OPENAI_API_KEY), not the key itself"},
		"batch_size negative":  {cfg: Config{BaseURL: url, Model: model, BatchSize: -1}, wantErr: tbl + "batch_size must be between 1 and 2048, got -1"},
		"batch_size too big":   {cfg: Config{BaseURL: url, Model: model, BatchSize: 2049}, wantErr: tbl + "batch_size must be between 1 and 2048, got 2049"},
		"timeout negative":     {cfg: Config{BaseURL: url, Model: model, TimeoutSecs: -1}, wantErr: tbl + "timeout_secs must be between 1 and 600, got -1"},
		"timeout too big":      {cfg: Config{BaseURL: url, Model: model, TimeoutSecs: 601}, wantErr: tbl + "timeout_secs must be between 1 and 600, got 601"},
		"dimensions negative":  {cfg: Config{BaseURL: url, Model: model, Dimensions: -1}, wantErr: tbl + "dimensions must be 0 (the model's default) or between 1 and 16384, got -1"},
		"dimensions too big":   {cfg: Config{BaseURL: url, Model: model, Dimensions: 16385}, wantErr: tbl + "dimensions must be 0 (the model's default) or between 1 and 16384, got 16385"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.Validate("[discovery.embeddings]")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Validate() = %v, want %s", err, tt.wantErr)
				}
				var ce *ConfigError
				wantKey, _, _ := strings.Cut(strings.TrimPrefix(tt.wantErr, tbl), " ")
				if !errors.As(err, &ce) || ce.Table != "[discovery.embeddings]" || ce.Key != wantKey {
					t.Errorf("Validate() = %#v, want a *ConfigError of key %s", err, wantKey)
				}
				if strings.Contains(err.Error(), "sk-") {
					t.Errorf("error repeats a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			want := tt.want
			if want == (Config{}) {
				want = defaults(tt.cfg)
			}
			if cfg != want {
				t.Errorf("after Validate: %+v, want %+v", cfg, want)
			}
			// Validate is idempotent.
			again := cfg
			if err := again.Validate("[discovery.embeddings]"); err != nil || again != cfg {
				t.Errorf("second Validate() = %v, %+v", err, again)
			}
		})
	}
}

func TestDotNormalize(t *testing.T) {
	s := float32(math.Sqrt2 / 2)
	normTests := []struct {
		name   string
		v      []float32
		want   []float32
		wantOK bool
	}{
		{name: "3-4-5", v: []float32{3, 4}, want: []float32{0.6, 0.8}, wantOK: true},
		{name: "unit", v: []float32{0, -1, 0}, want: []float32{0, -1, 0}, wantOK: true},
		{name: "huge", v: []float32{1e30, 1e30}, want: []float32{s, s}, wantOK: true},
		{name: "tiny", v: []float32{1e-30, -1e-30}, want: []float32{s, -s}, wantOK: true},
		{name: "zero", v: []float32{0, 0}, want: []float32{0, 0}},
		{name: "empty", v: []float32{}, want: []float32{}},
		{name: "NaN", v: []float32{1, float32(math.NaN())}},
		{name: "Inf", v: []float32{1, float32(math.Inf(1))}, want: []float32{1, float32(math.Inf(1))}},
	}
	for _, tt := range normTests {
		t.Run(tt.name, func(t *testing.T) {
			v := slices.Clone(tt.v)
			if ok := Normalize(v); ok != tt.wantOK {
				t.Fatalf("Normalize(%v) = %v, want %v", tt.v, ok, tt.wantOK)
			}
			if tt.want == nil {
				return
			}
			for i := range v {
				if math.Abs(float64(v[i]-tt.want[i])) > 1e-6 && !(math.IsInf(float64(v[i]), 1) && math.IsInf(float64(tt.want[i]), 1)) {
					t.Fatalf("Normalize(%v) left %v, want %v", tt.v, v, tt.want)
				}
			}
		})
	}

	u := []float32{1, 2, 3, 4}
	Normalize(u)
	dotTests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{name: "identical unit vectors", a: u, b: u, want: 1},
		{name: "opposite", a: []float32{0.6, 0.8}, b: []float32{-0.6, -0.8}, want: -1},
		{name: "orthogonal", a: []float32{1, 0}, b: []float32{0, 1}, want: 0},
		{name: "45 degrees", a: []float32{1, 0}, b: []float32{s, s}, want: s},
		{name: "different lengths", a: []float32{1, 0}, b: []float32{1, 0, 0}, want: 0},
		{name: "empty", a: nil, b: nil, want: 0},
	}
	for _, tt := range dotTests {
		if got := Dot(tt.a, tt.b); math.Abs(float64(got-tt.want)) > 1e-6 {
			t.Errorf("%s: Dot = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// testKey is the API key the client tests configure; no error may hold it.
const testKey = "sk-test-secret-key"

// fakeServer is an OpenAI-compatible /embeddings endpoint that answers
// each input with the vector vectors maps it to (unknown inputs get
// {1, 0, 0}), or status with an OpenAI-style error when status is set.
type fakeServer struct {
	url     string
	vectors map[string][]float64

	mu      sync.Mutex
	status  int
	batches [][]string
	auth    string
}

func newFakeServer(t *testing.T, vectors map[string][]float64) *fakeServer {
	t.Helper()
	f := &fakeServer{vectors: vectors}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		status := f.status
		f.auth = r.Header.Get("Authorization")
		if err := json.Unmarshal(body, &req); err == nil {
			f.batches = append(f.batches, req.Input)
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "1")
		if r.URL.Path != "/v1/embeddings" {
			status = http.StatusNotFound
		}
		if status != 0 {
			w.WriteHeader(status)
			// The message quotes the key, as some servers do; it must not
			// reach the error.
			fmt.Fprintf(w, `{"error":{"message":"bad key %s","type":"invalid_request_error","code":"invalid_api_key"}}`, testKey)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		items := make([]item, len(req.Input))
		for i, in := range req.Input {
			v, ok := f.vectors[in]
			if !ok {
				v = []float64{1, 0, 0}
			}
			items[i] = item{Object: "embedding", Index: i, Embedding: v}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": items})
	}))
	t.Cleanup(s.Close)
	f.url = s.URL + "/v1"
	return f
}

func (f *fakeServer) setStatus(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = status
}

func (f *fakeServer) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sizes []int
	for _, b := range f.batches {
		sizes = append(sizes, len(b))
	}
	return sizes
}

// TestClientEmbeds: vectors come back normalised, in the order of the
// texts, in batches of batch_size, with the key as a bearer token.
func TestClientEmbeds(t *testing.T) {
	f := newFakeServer(t, map[string][]float64{"a": {3, 4, 0}, "b": {0, 0, 2}, "c": {0, 5, 0}})
	c, err := New(Config{BaseURL: f.url, Model: "m", BatchSize: 2}, "[discovery.embeddings]", testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Embed(context.Background(), []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.6, 0.8, 0}, {0, 0, 1}, {0, 1, 0}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("vector %d = %v, want %v", i, got[i], want[i])
		}
	}
	if sizes := f.batchSizes(); !slices.Equal(sizes, []int{2, 1}) {
		t.Errorf("batch sizes %v, want [2 1]", sizes)
	}
	if f.auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q", f.auth)
	}
	if c.Model() != "m" || c.Config().TimeoutSecs != DefaultTimeoutSecs {
		t.Errorf("Model() = %q, Config() = %+v", c.Model(), c.Config())
	}
	if _, err := c.Embed(context.Background(), []string{"a", ""}); err == nil || err.Error() != "cannot embed text 2 of 2: it is empty" {
		t.Errorf("Embed of an empty text = %v", err)
	}
}

// TestClientErrorsNameTheTable: errors point at the caller's config table
// and never repeat the key, which the server's message quotes.
func TestClientErrorsNameTheTable(t *testing.T) {
	const table = "[discovery.embeddings]"
	tests := []struct {
		status  int
		wantErr string
	}{
		{http.StatusUnauthorized, "embeddings endpoint URL refused the request: 401 Unauthorized (invalid_api_key); check the API key named by [discovery.embeddings] api_key_env"},
		{http.StatusNotFound, "embeddings endpoint URL answered 404 Not Found (invalid_api_key); check [discovery.embeddings] base_url and model"},
		{http.StatusBadRequest, "embeddings endpoint URL rejected a batch of 1 text: 400 Bad Request (invalid_api_key); check [discovery.embeddings] model, dimensions and batch_size"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			f := newFakeServer(t, nil)
			f.setStatus(tt.status)
			c, err := New(Config{BaseURL: f.url, Model: "m"}, table, testKey, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Embed(context.Background(), []string{"hello"})
			want := strings.ReplaceAll(tt.wantErr, "URL", f.url)
			if err == nil || err.Error() != want {
				t.Fatalf("Embed() = %v, want %s", err, want)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the key: %v", err)
			}
			if got := IsTextRefusal(err); got != (tt.status == http.StatusBadRequest) {
				t.Errorf("IsTextRefusal = %v", got)
			}
		})
	}
	// A dimensions mismatch names the table too.
	f := newFakeServer(t, nil)
	c, err := New(Config{BaseURL: f.url, Model: "m", Dimensions: 8}, table, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Embed(context.Background(), []string{"x"})
	want := "embeddings endpoint " + f.url + " returned 3-dimensional vectors, but [discovery.embeddings] dimensions = 8; remove dimensions if the model does not support it"
	if err == nil || err.Error() != want {
		t.Errorf("Embed() = %v, want %s", err, want)
	}
	// New validates, naming the table.
	if _, err := New(Config{Model: "m"}, table, "", nil); err == nil || !strings.HasPrefix(err.Error(), table+" base_url is required") {
		t.Errorf("New without base_url = %v", err)
	}
}
