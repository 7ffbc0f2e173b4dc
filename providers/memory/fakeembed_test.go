package memory

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// fakeMode makes a fakeEmbeddings answer wrongly, for the error paths of
// clients.
type fakeMode int

const (
	// fakeNormal answers correctly.
	fakeNormal fakeMode = iota
	// fakeWrongCount leaves out the vector of the last input.
	fakeWrongCount
	// fakeShuffled lists the vectors in reverse order, each with its
	// correct index, as the API is allowed to.
	fakeShuffled
	// fakeHang answers nothing until the client gives up or the test
	// ends.
	fakeHang
)

// fakeEmbeddings is an OpenAI-compatible /embeddings endpoint for tests.
// Its vectors are deterministic bags of words: each lower-cased word (split
// on anything but letters and digits), after mapping synonyms to one
// canonical word, adds 1 to dimension fnv32a(word) % dims, so that texts
// sharing words, or synonyms, are similar. A text without words gets 1 in
// dimension fnv32a("") % dims, since the real API never answers a zero
// vector. Vectors are not normalised, so clients must normalise them.
//
// It checks requests as strictly as the real API where client misuse would
// show (method, path, JSON body with model and a string or an array of
// 1..2048 non-empty strings, no unknown fields, encoding_format float or
// base64, positive dimensions, which then replace dims), records them and
// can be told to fail. Its error answers carry retry-after-ms: 1, which the
// official client honours, so that retries in tests take no time.
type fakeEmbeddings struct {
	server *httptest.Server
	dims   int
	done   chan struct{} // closed when the test ends, releasing fakeHang
	first  chan struct{} // closed when the first request arrives

	mu            sync.Mutex
	requests      int
	batchSizes    []int
	lastModel     string
	lastDims      int
	lastHeaders   http.Header
	failureStatus int
	mode          fakeMode
	synonyms      map[string]string
	refuse        string // inputs containing it get a 400 context_length_exceeded
	delay         time.Duration
}

// Refuse makes the server answer 400 context_length_exceeded to any
// request with an input containing substr, as a real endpoint does for a
// text longer than its model takes; "" turns it off.
func (f *fakeEmbeddings) Refuse(substr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = substr
}

// SetDelay makes every request wait d (or until the client hangs up)
// before it is answered.
func (f *fakeEmbeddings) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// newFakeEmbeddings starts a fake endpoint whose vectors have dims
// dimensions; t.Cleanup closes it.
func newFakeEmbeddings(t *testing.T, dims int) *fakeEmbeddings {
	t.Helper()
	f := newUnservedFakeEmbeddings(t, dims)
	f.server = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	// Registered after newUnservedFakeEmbeddings's cleanup, so it runs
	// before it: Close waits for handlers, which end once done is
	// closed.
	t.Cleanup(f.server.Close)
	return f
}

// newUnservedFakeEmbeddings is a fake endpoint without a server: reach it
// with [fakeEmbeddings.Client], which works in a synctest bubble, where
// time moves only when every goroutine of the bubble waits on the
// bubble's channels and timers, never on the network. Create it inside
// the bubble.
func newUnservedFakeEmbeddings(t *testing.T, dims int) *fakeEmbeddings {
	t.Helper()
	if dims < 1 {
		t.Fatalf("newFakeEmbeddings: dims must be positive, got %d", dims)
	}
	f := &fakeEmbeddings{dims: dims, done: make(chan struct{}), first: make(chan struct{}), synonyms: map[string]string{}}
	t.Cleanup(func() { close(f.done) })
	return f
}

// URL returns the base URL to put in base_url; it ends in /v1. Without a
// server, it names a host that does not exist: only [fakeEmbeddings.Client]
// reaches it.
func (f *fakeEmbeddings) URL() string {
	if f.server == nil {
		return "http://embeddings.invalid/v1"
	}
	return f.server.URL + "/v1"
}

// Client returns an HTTP client whose requests, to any host, f answers in
// the caller's goroutine, without a network.
func (f *fakeEmbeddings) Client() *http.Client {
	return &http.Client{Transport: handlerTransport{http.HandlerFunc(f.serveHTTP)}}
}

// handlerTransport answers requests with a handler, as a server would.
type handlerTransport struct {
	h http.Handler
}

// RoundTrip serves req with the handler; a request whose context ends
// while it is served fails with the context's error, as on a network.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// FirstRequest returns a channel closed when the first request reaches
// the server.
func (f *fakeEmbeddings) FirstRequest() <-chan struct{} { return f.first }

// Requests returns how many requests reached the server, valid or not.
func (f *fakeEmbeddings) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// BatchSizes returns the number of inputs of each valid request, in order.
func (f *fakeEmbeddings) BatchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batchSizes)
}

// SetFailure makes every request answer status with an OpenAI-style error
// body; 0 makes requests succeed again.
func (f *fakeEmbeddings) SetFailure(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failureStatus = status
}

// SetMode makes successful answers wrong in the way mode says.
func (f *fakeEmbeddings) SetMode(mode fakeMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
}

// Synonyms maps each of words to canon, so that texts using any of them
// embed alike, e.g. Synonyms("car", "automobile", "vehicle").
func (f *fakeEmbeddings) Synonyms(canon string, words ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range words {
		f.synonyms[strings.ToLower(w)] = strings.ToLower(canon)
	}
}

// LastAuthorization returns the Authorization header of the last request,
// "" if it had none.
func (f *fakeEmbeddings) LastAuthorization() string {
	return f.LastHeaders().Get("Authorization")
}

// LastHeaders returns the headers of the last request.
func (f *fakeEmbeddings) LastHeaders() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastHeaders.Clone()
}

// LastModel returns the model of the last valid request.
func (f *fakeEmbeddings) LastModel() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastModel
}

// LastDimensions returns the dimensions parameter of the last valid
// request, 0 if it had none.
func (f *fakeEmbeddings) LastDimensions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastDims
}

// vector returns the bag-of-words vector of text with dims dimensions.
func (f *fakeEmbeddings) vector(text string, dims int) []float32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := make([]float32, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		words = []string{""}
	}
	for _, w := range words {
		if canon, ok := f.synonyms[w]; ok {
			w = canon
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	return v
}

// fakeEmbedRequest is the body of a POST /v1/embeddings request.
type fakeEmbedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           *string         `json:"user"`
}

// fakeEmbedItem is one vector of an answer; Embedding is a []float32 or a
// base64 string.
type fakeEmbedItem struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// serveHTTP answers one request.
func (f *fakeEmbeddings) serveHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.requests++; f.requests == 1 {
		close(f.first)
	}
	f.lastHeaders = r.Header.Clone()
	failure, mode := f.failureStatus, f.mode
	f.mu.Unlock()

	if r.Method != http.MethodPost {
		fakeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use POST, not "+r.Method)
		return
	}
	if r.URL.Path != "/v1/embeddings" {
		fakeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "unknown path "+r.URL.Path)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		fakeError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "invalid_content_type", "the body must be application/json")
		return
	}
	if failure != 0 {
		typ, code := "invalid_request_error", "invalid_request"
		switch {
		case failure == http.StatusUnauthorized:
			code = "invalid_api_key"
		case failure == http.StatusNotFound:
			code = "model_not_found"
		case failure == http.StatusTooManyRequests:
			typ, code = "requests", "rate_limit_exceeded"
		case failure >= 500:
			typ, code = "server_error", "server_error"
		}
		w.Header().Set("retry-after-ms", "1")
		fakeError(w, failure, typ, code, fmt.Sprintf("fake failure %d", failure))
		return
	}
	if mode == fakeHang {
		// The server notices a client hanging up only once the body
		// has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}

	var req fakeEmbedRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fakeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "invalid body: "+err.Error())
		return
	}
	if dec.More() {
		fakeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "trailing data after the body")
		return
	}
	inputs, msg := fakeInputs(req.Input)
	f.mu.Lock()
	refuse, delay := f.refuse, f.delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		}
	}
	for _, in := range inputs {
		if refuse != "" && strings.Contains(in, refuse) {
			fakeError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "input too long")
			return
		}
	}
	switch {
	case msg != "":
		fakeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_input", msg)
		return
	case req.Model == "":
		fakeError(w, http.StatusBadRequest, "invalid_request_error", "missing_model", "model is required")
		return
	case req.EncodingFormat != nil && *req.EncodingFormat != "float" && *req.EncodingFormat != "base64":
		fakeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_encoding_format", "encoding_format must be float or base64")
		return
	case req.Dimensions != nil && *req.Dimensions < 1:
		fakeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_dimensions", "dimensions must be positive")
		return
	}
	dims := f.dims
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	base64Format := req.EncodingFormat != nil && *req.EncodingFormat == "base64"

	f.mu.Lock()
	f.batchSizes = append(f.batchSizes, len(inputs))
	f.lastModel = req.Model
	f.lastDims = 0
	if req.Dimensions != nil {
		f.lastDims = *req.Dimensions
	}
	f.mu.Unlock()

	items := make([]fakeEmbedItem, 0, len(inputs))
	tokens := 0
	for i, text := range inputs {
		v := f.vector(text, dims)
		for _, x := range v {
			tokens += int(x)
		}
		item := fakeEmbedItem{Object: "embedding", Index: i, Embedding: v}
		if base64Format {
			b := make([]byte, 0, 4*len(v))
			for _, x := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
			}
			item.Embedding = base64.StdEncoding.EncodeToString(b)
		}
		items = append(items, item)
	}
	switch mode {
	case fakeWrongCount:
		items = items[:len(items)-1]
	case fakeShuffled:
		slices.Reverse(items)
	}
	fakeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   items,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

// fakeInputs decodes the input field: a non-empty string or an array of 1
// to 2048 non-empty strings. It returns a message for the client when input
// is anything else, such as the token arrays this fake does not support.
func fakeInputs(raw json.RawMessage) ([]string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "input is required"
	}
	var inputs []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "input is not a valid string"
		}
		inputs = []string{s}
	} else if err := json.Unmarshal(raw, &inputs); err != nil {
		return nil, "input must be a string or an array of strings"
	}
	if len(inputs) == 0 || len(inputs) > embeddings.MaxBatchSize {
		return nil, fmt.Sprintf("input must hold 1 to %d strings, got %d", embeddings.MaxBatchSize, len(inputs))
	}
	for i, s := range inputs {
		if s == "" {
			return nil, fmt.Sprintf("input[%d] is empty", i)
		}
	}
	return inputs, ""
}

// fakeError writes an OpenAI-style error answer.
func fakeError(w http.ResponseWriter, status int, typ, code, msg string) {
	fakeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
}

// fakeJSON writes v as a JSON answer with status.
func fakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
