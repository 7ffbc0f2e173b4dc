package server

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/host/toolindex"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/embeddings"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// embedDims is the dimension of fakeEmbedder's vectors: large enough
// that the few words of these tests do not collide.
const embedDims = 4096

// fakeEmbedder is an OpenAI-compatible /embeddings endpoint. Its vectors
// are bags of words: each lower-cased word, after mapping synonyms to one
// canonical word, adds 1 to dimension fnv32a(word) % embedDims, so texts
// that share words or synonyms are similar; a few function words are left
// out, as real models weigh them little. It counts requests and inputs,
// can fail every request with a status, and can hold the requests of tool
// texts (which have a line break, unlike queries) until released,
// announcing each on arrived.
type fakeEmbedder struct {
	url      string
	synonyms map[string]string
	arrived  chan struct{} // one send per request, when held is set

	mu       sync.Mutex
	requests int
	inputs   []string
	status   int
	held     chan struct{} // tool requests wait until it is closed
}

// fakeStopWords are left out of the fake's vectors.
var fakeStopWords = map[string]bool{"a": true, "an": true, "the": true, "on": true, "to": true, "for": true, "his": true, "of": true}

func newFakeEmbedder(t *testing.T, synonyms map[string]string) *fakeEmbedder {
	t.Helper()
	f := &fakeEmbedder{synonyms: synonyms, arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	t.Cleanup(srv.Close)
	t.Cleanup(f.release) // runs first: Close waits for held handlers
	f.url = srv.URL + "/v1"
	return f
}

func (f *fakeEmbedder) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests++
	f.inputs = append(f.inputs, req.Input...)
	status, held := f.status, f.held
	f.mu.Unlock()
	if held != nil && strings.Contains(req.Input[0], "\n") {
		f.arrived <- struct{}{}
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		// Retries come at once.
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
		return
	}
	res := openai.CreateEmbeddingResponse{Model: req.Model, Data: make([]openai.Embedding, len(req.Input))}
	for i, text := range req.Input {
		res.Data[i] = openai.Embedding{Index: int64(i), Embedding: f.vector(text)}
	}
	_ = json.NewEncoder(w).Encode(res)
}

// vector is the fake's (unnormalised) vector of text.
func (f *fakeEmbedder) vector(text string) []float64 {
	v := make([]float64, embedDims)
	words := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if fakeStopWords[w] {
			continue
		}
		if c, ok := f.synonyms[w]; ok {
			w = c
		}
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		v[h.Sum32()%embedDims]++
		words++
	}
	if words == 0 {
		v[0] = 1
	}
	return v
}

// hold makes requests of tool texts wait, each announced on arrived,
// until release.
func (f *fakeEmbedder) hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = make(chan struct{})
}

// release lets held requests, and those to come, through.
func (f *fakeEmbedder) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held != nil {
		close(f.held)
		f.held = nil
	}
}

// fail makes every request answer status; 0 answers again.
func (f *fakeEmbedder) fail(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = status
}

// counts returns the requests and the inputs received so far.
func (f *fakeEmbedder) counts() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, slices.Clone(f.inputs)
}

// embeddingsFor returns tool_search embeddings through the shared client
// at f.
func embeddingsFor(t *testing.T, f *fakeEmbedder) *Embeddings {
	t.Helper()
	c, err := embeddings.New(embeddings.Config{BaseURL: f.url, Model: "fake-embed", BatchSize: 2}, "[discovery.embeddings]", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Embeddings{Embedder: c, QueryTimeout: c.Config().Timeout()}
}

// kitTool is a read tool of the "kit" provider.
func kitTool(name, title, description string) sdk.Tool {
	return sdk.Tool{Name: "kit." + name, Title: title, Description: description, InputSchema: json.RawMessage(`{"type":"object"}`), Class: sdk.ClassRead}
}

// kitTools are a few tools whose texts share no word with "ping the
// courier on his mobile".
func kitTools() []sdk.Tool {
	return []sdk.Tool{
		kitTool("send_sms", "Send SMS", "Send an SMS text message to a phone number."),
		kitTool("create_event", "Create event", "Create an event on the calendar."),
		kitTool("get_weather", "Weather", "Get the weather forecast for a city."),
	}
}

// kitCatalog is the catalog of tools.
func kitCatalog(tools ...sdk.Tool) *catalog.Catalog {
	if len(tools) == 0 {
		tools = kitTools()
	}
	return catalog.Build(nil, []catalog.Source{{Provider: "kit", Catalog: &sdk.Catalog{Name: "kit", Tools: tools}}})
}

// kitSynonyms make the fake see the courier query's words as the SMS
// tool's.
var kitSynonyms = map[string]string{"ping": "sms", "mobile": "phone"}

// embedServer serves cat to discovery clients (every client gets the
// profile "lean") with emb, logging at warn into the returned buffer.
func embedServer(t *testing.T, cat *catalog.Catalog, emb *Embeddings) (*Server, *testwait.Buffer) {
	t.Helper()
	pol := testPolicy(t, policy.Options{})
	lean := profilePolicy(t, pol, policy.Profile{Name: "lean"})
	logs := &testwait.Buffer{}
	s, err := New(cat, map[string]Dispatcher{"kit": defaultProvider()}, &Options{
		Policy: pol, Profile: "lean", Embeddings: emb,
		Profiles: map[string]*Profile{"lean": {Policy: lean, Discovery: true}},
		Logger:   hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.CancelCalls)
	return s, logs
}

// waitVectors waits until s embeds no tools in the background.
func waitVectors(t *testing.T, s *Server) {
	t.Helper()
	s.vectors.mu.Lock()
	running, idle := s.vectors.running, s.vectors.idle
	s.vectors.mu.Unlock()
	if !running {
		return
	}
	select {
	case <-idle:
	case <-t.Context().Done():
		t.Fatal("the tools were never embedded")
	}
}

// searchResult is tool_search's structured content.
type searchResult struct {
	Mode             string      `json:"mode"`
	FallbackReason   string      `json:"fallback_reason"`
	WithoutEmbedding int         `json:"without_embedding"`
	Tools            []FoundTool `json:"tools"`
}

// search calls tool_search and decodes its result.
func search(t *testing.T, cs *mcp.ClientSession, query string, k int) (searchResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolSearch, Arguments: map[string]any{"query": query, "k": k}})
	if err != nil || res.IsError {
		t.Fatalf("tool_search %q = %+v, %v", query, res, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out searchResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("tool_search's structured content %s: %v", b, err)
	}
	return out, textOf(res)
}

func names(tools []FoundTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// TestToolSearchHybrid: with embeddings, a task that shares no word with
// the right tool finds it first; by keywords alone it finds nothing. A
// tool first in both rankings scores 2/(60+1).
func TestToolSearchHybrid(t *testing.T) {
	t.Parallel()
	f := newFakeEmbedder(t, kitSynonyms)
	s, logs := embedServer(t, kitCatalog(), embeddingsFor(t, f))
	waitVectors(t, s)
	cs := connectVersion(t, s, "Claude Desktop", nil, "")

	got, text := search(t, cs, "ping the courier on his mobile", 3)
	// The other tools' similarity is 0: they are left out.
	if got.Mode != SearchHybrid || got.FallbackReason != "" || !slices.Equal(names(got.Tools), []string{"kit_send_sms"}) {
		t.Fatalf("hybrid tool_search = %+v (%q); want kit_send_sms alone, mode hybrid", got, text)
	}
	if sim := got.Tools[0].Similarity; sim == nil || *sim <= 0 || *sim > 1 {
		t.Errorf("kit_send_sms similarity = %v, want in (0, 1]", sim)
	}
	if text != "kit_send_sms: Send an SMS text message to a phone number." {
		t.Errorf("text = %q, want kit_send_sms's line alone", text)
	}
	// The SMS tool is the only one with a cosine above 0 and no tool
	// matches by keywords: rank 1 of one ranking.
	if want := 1.0 / 61; math.Abs(got.Tools[0].Score-want) > 1e-12 {
		t.Errorf("score = %v, want %v", got.Tools[0].Score, want)
	}

	got, _ = search(t, cs, "weather forecast", 1)
	if got.Mode != SearchHybrid || !slices.Equal(names(got.Tools), []string{"kit_get_weather"}) {
		t.Fatalf("tool_search weather = %+v, want kit_get_weather", got)
	}
	if want := 2.0 / 61; math.Abs(got.Tools[0].Score-want) > 1e-12 {
		t.Errorf("score of the first in both rankings = %v, want %v", got.Tools[0].Score, want)
	}

	// Three tools, then two queries: every text went once.
	requests, inputs := f.counts()
	if requests != 4 || len(inputs) != 5 || inputs[3] != "ping the courier on his mobile" || inputs[4] != "weather forecast" {
		t.Errorf("endpoint got %d requests with %q; want 2 for the tools (batch size 2) and one per query", requests, inputs)
	}
	if l := logs.String(); l != "" {
		t.Errorf("logged %q, want nothing", l)
	}

	// The same server without embeddings finds nothing and says keyword.
	plain, _ := embedServer(t, kitCatalog(), nil)
	got, text = search(t, connectVersion(t, plain, "Claude Desktop", nil, ""), "ping the courier on his mobile", 3)
	if got.Mode != SearchKeyword || got.FallbackReason != "" || len(got.Tools) != 0 || text != "No tool matches; try other words for the task." {
		t.Errorf("keyword tool_search = %+v (%q); want no tool and no fallback note", got, text)
	}
}

// TestToolSearchBeforeVectors: while the tools are being embedded,
// tools/list and tool_search answer without waiting, by keywords, and say
// why; once embedded, tool_search fuses.
func TestToolSearchBeforeVectors(t *testing.T) {
	t.Parallel()
	f := newFakeEmbedder(t, kitSynonyms)
	f.hold()
	s, _ := embedServer(t, kitCatalog(), embeddingsFor(t, f))
	<-f.arrived // the background request is held
	cs := connectVersion(t, s, "Claude Desktop", nil, "")
	if got, want := listedTools(t, cs), []string{ToolCall, ToolDescribe, ToolSearch}; !slices.Equal(got, want) {
		t.Errorf("tools/list = %v, want %v", got, want)
	}
	got, text := search(t, cs, "weather forecast", 3)
	const reason = "the tools' embeddings are not ready yet"
	if got.Mode != SearchKeyword || got.FallbackReason != reason || !slices.Equal(names(got.Tools), []string{"kit_get_weather"}) {
		t.Errorf("tool_search before the vectors = %+v", got)
	}
	if want := "kit_get_weather: Get the weather forecast for a city.\n(Ranked by keywords only: " + reason + ".)"; text != want {
		t.Errorf("text = %q, want %q", text, want)
	}
	f.release()
	waitVectors(t, s)
	if got, _ := search(t, cs, "ping the courier on his mobile", 1); got.Mode != SearchHybrid || !slices.Equal(names(got.Tools), []string{"kit_send_sms"}) {
		t.Errorf("tool_search once embedded = %+v", got)
	}

	// A tool added later is found by keywords until it is embedded.
	f.hold()
	s.Update(kitCatalog(append(kitTools(), kitTool("track_parcel", "Track parcel", "Track a parcel delivery."))...), s.view.Load().providers, nil)
	<-f.arrived
	got, text = search(t, cs, "track my parcel", 3)
	if got.Mode != SearchHybrid || got.WithoutEmbedding != 1 || len(got.Tools) == 0 || got.Tools[0].Name != "kit_track_parcel" || got.Tools[0].Similarity != nil {
		t.Errorf("tool_search with one tool not embedded = %+v", got)
	}
	if !strings.HasSuffix(text, "\n(1 tool has no embedding yet and was ranked by keywords only.)") {
		t.Errorf("text = %q, want the note last", text)
	}
	f.release()
	waitVectors(t, s)
}

// TestToolSearchEndpointFails: when the endpoint fails, tool_search ranks
// by keywords and says why, and the failure is logged once however many
// searches follow; the endpoint is not asked again for a while.
func TestToolSearchEndpointFails(t *testing.T) {
	t.Parallel()
	t.Run("tools", func(t *testing.T) {
		t.Parallel()
		f := newFakeEmbedder(t, kitSynonyms)
		f.fail(http.StatusInternalServerError)
		s, logs := embedServer(t, kitCatalog(), embeddingsFor(t, f))
		waitVectors(t, s)
		cs := connectVersion(t, s, "Claude Desktop", nil, "")
		want := "the embeddings endpoint failed less than a minute ago: embeddings endpoint " + f.url +
			" failed: 500 Internal Server Error (server_error) after 3 attempts; try again later"
		for range 3 {
			got, text := search(t, cs, "weather forecast", 3)
			if got.Mode != SearchKeyword || got.FallbackReason != want || !slices.Equal(names(got.Tools), []string{"kit_get_weather"}) {
				t.Fatalf("tool_search = %+v, want keyword mode because %s", got, want)
			}
			if !strings.HasSuffix(text, "\n(Ranked by keywords only: "+want+".)") {
				t.Errorf("text = %q, want the reason last", text)
			}
		}
		if requests, _ := f.counts(); requests != 3 {
			t.Errorf("endpoint got %d requests, want the background's 3 attempts only", requests)
		}
		if n := strings.Count(logs.String(), "[WARN]"); n != 1 || !strings.Contains(logs.String(), "embedding the tools for tool_search failed") {
			t.Errorf("logs = %q, want one warning", logs.String())
		}
	})
	t.Run("query", func(t *testing.T) {
		t.Parallel()
		f := newFakeEmbedder(t, kitSynonyms)
		s, logs := embedServer(t, kitCatalog(), embeddingsFor(t, f))
		waitVectors(t, s)
		cs := connectVersion(t, s, "Claude Desktop", nil, "")
		f.fail(http.StatusServiceUnavailable)
		failure := "embeddings endpoint " + f.url + " failed: 503 Service Unavailable (server_error) after 3 attempts; try again later"
		got, _ := search(t, cs, "weather forecast", 3)
		if got.Mode != SearchKeyword || got.FallbackReason != "the embeddings endpoint failed: "+failure || !slices.Equal(names(got.Tools), []string{"kit_get_weather"}) {
			t.Errorf("tool_search = %+v", got)
		}
		got, _ = search(t, cs, "weather forecast", 3)
		if got.Mode != SearchKeyword || got.FallbackReason != "the embeddings endpoint failed less than a minute ago: "+failure {
			t.Errorf("second tool_search = %+v", got)
		}
		if requests, _ := f.counts(); requests != 2+3 {
			t.Errorf("endpoint got %d requests, want 2 for the tools and 3 attempts of the first query", requests)
		}
		if n := strings.Count(logs.String(), "[WARN]"); n != 1 || !strings.Contains(logs.String(), "embedding a tool_search query failed") {
			t.Errorf("logs = %q, want one warning", logs.String())
		}
	})
}

// TestToolVectorsCache: a catalog change embeds only the tools that are
// new or whose text changed; the same catalog again embeds nothing; a new
// embedder embeds everything again.
func TestToolVectorsCache(t *testing.T) {
	t.Parallel()
	f := newFakeEmbedder(t, kitSynonyms)
	s, _ := embedServer(t, kitCatalog(), embeddingsFor(t, f))
	waitVectors(t, s)
	if _, inputs := f.counts(); len(inputs) != 3 {
		t.Fatalf("first catalog: %d texts embedded, want 3", len(inputs))
	}

	tools := kitTools()
	tools[1].Description = "Create an event on the calendar, with attendees."
	changed := kitCatalog(append(tools, kitTool("track_parcel", "Track parcel", "Track a parcel delivery by courier."))...)
	v := s.view.Load()
	s.Update(changed, v.providers, nil)
	waitVectors(t, s)
	requests, inputs := f.counts()
	want := []string{"kit create event\nCreate event\nCreate an event on the calendar, with attendees.", "kit track parcel\nTrack parcel\nTrack a parcel delivery by courier."}
	if got := inputs[3:]; !sameSet(got, want) {
		t.Errorf("after the change, embedded %q; want only %q", got, want)
	}

	s.Update(changed, v.providers, nil)
	waitVectors(t, s)
	if again, _ := f.counts(); again != requests {
		t.Errorf("the same catalog again sent %d requests", again-requests)
	}
	// The parcel tool shares "courier" with the task, by keywords and by
	// meaning, so it ranks first; the SMS tool by meaning only.
	cs := connectVersion(t, s, "Claude Desktop", nil, "")
	if got, _ := search(t, cs, "ping the courier on his mobile", 2); got.Mode != SearchHybrid || got.WithoutEmbedding != 0 ||
		!slices.Equal(names(got.Tools), []string{"kit_track_parcel", "kit_send_sms"}) {
		t.Errorf("tool_search after the change = %+v", got)
	}

	set := *s.settings.Load()
	set.Embeddings = embeddingsFor(t, f)
	_, before := f.counts()
	s.Reconfigure(set)
	waitVectors(t, s)
	if _, after := f.counts(); len(after)-len(before) != 4 {
		t.Errorf("a new embedder embedded %d texts, want all 4", len(after)-len(before))
	}
}

// TestToolVectorsStop: stopping the server ends the background embedding
// without logging a failure.
func TestToolVectorsStop(t *testing.T) {
	t.Parallel()
	f := newFakeEmbedder(t, kitSynonyms)
	f.hold()
	s, logs := embedServer(t, kitCatalog(), embeddingsFor(t, f))
	<-f.arrived
	s.CancelCalls()
	waitVectors(t, s)
	if l := logs.String(); l != "" {
		t.Errorf("logged %q on stop", l)
	}
}

// TestFuse checks reciprocal rank fusion on its own.
func TestFuse(t *testing.T) {
	t.Parallel()
	got := fuse(3, []string{"a", "b", "c"}, []string{"c", "d"})
	// b and d tie at 1/62 and go by name.
	want := []toolindex.Hit{{Name: "c", Score: 1.0/63 + 1.0/61}, {Name: "a", Score: 1.0 / 61}, {Name: "b", Score: 1.0 / 62}}
	if len(got) != len(want) {
		t.Fatalf("fuse = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || math.Abs(got[i].Score-want[i].Score) > 1e-12 {
			t.Errorf("fuse[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if got := fuse(5); len(got) != 0 {
		t.Errorf("fuse of nothing = %v", got)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestToolText: what is embedded for a tool is bounded.
func TestToolText(t *testing.T) {
	t.Parallel()
	tool := &catalog.Tool{Tool: sdk.Tool{Name: "kit_send_sms", Title: "Send SMS", Description: strings.Repeat("é", 3*maxEmbedRunes)}}
	text := toolText(tool)
	if n := len([]rune(text)); n != maxEmbedRunes || !strings.HasPrefix(text, "kit send sms\nSend SMS\né") {
		t.Errorf("toolText = %d runes starting %q", n, fmt.Sprintf("%.20s", text))
	}
}
