package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/host/policy"
)

// Many 2026-07-28 clients calling an act at once over HTTP, each with its
// own capabilities in _meta, are each asked to confirm or refused by what
// their own request declares, whichever capabilities the other requests
// carried (the host keeps the last ones it decoded).
func TestConfirmFollowsEachRequestsCapabilities(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{Level: policy.Supervised})
	s := newFakeServer(t, &Options{Policy: pol, Audit: &memAudit{}, ConfirmActs: ConfirmRequired})
	ts := serveHTTP(t, s, nil)
	variants := []struct {
		caps   string
		canAsk bool
	}{
		{`{"elicitation":{"form":{}}}`, true},
		{`{}`, false},
		{`{"elicitation":{}}`, true},
		{`{"elicitation":{"url":{}}}`, false},
		{`{"elicitation":{"url":{},"form":{}}}`, true},
		{`{"elicitation":null}`, false},
		{`{"sampling":{},"roots":{"listChanged":true}}`, false},
		{`{"Elicitation":{"form":{}}}`, false},
		{`{"elicitation":{"URL":{}}}`, true},
		{`{"elicitation":{"form":{}},"experimental":{"n":-0}}`, true},
		{`{"experimental":{"n":0}}`, false},
	}
	const clients, calls = 16, 22
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range calls {
				v := variants[(c+i)%len(variants)]
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` +
					`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
					`"io.modelcontextprotocol/clientInfo":{"name":"c` + fmt.Sprint(c) + `","version":"1"},` +
					`"io.modelcontextprotocol/clientCapabilities":` + v.caps + `},` +
					`"name":"fake_store","arguments":{"title":"t"}}}`
				req, err := http.NewRequest(http.MethodPost, ts.URL+"/", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "fake_store")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Error(err)
					return
				}
				var res struct {
					Result struct {
						ResultType   string `json:"resultType"`
						RequestState string `json:"requestState"`
						IsError      bool   `json:"isError"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(sseData(string(b))), &res); err != nil {
					t.Errorf("caps %s: %v in %s", v.caps, err, b)
					continue
				}
				asked := res.Result.ResultType == "input_required" && res.Result.RequestState != ""
				if asked != v.canAsk || (!asked && !res.Result.IsError) {
					t.Errorf("caps %s: asked %v (error %v), want asked %v: %s", v.caps, asked, res.Result.IsError, v.canAsk, b)
				}
			}
		})
	}
	wg.Wait()
}
