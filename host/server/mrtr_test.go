package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/policy"
)

// mrtrClient connects a 2026-07-28 client that declares form elicitation
// and handles multi-round-trip results itself (the go-sdk's automatic
// retry is off), so the test sees each InputRequiredResult.
func manualMRTRClient(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, s, "Claude Desktop", &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked this way")
		},
	}, "2026-07-28")
}

func confirmServer(t *testing.T) (*Server, *memAudit) {
	t.Helper()
	pol := testPolicy(t, policy.Options{Level: policy.Supervised})
	a := &memAudit{}
	s := newFakeServer(t, &Options{Policy: pol, Audit: a, ConfirmActs: ConfirmWhenSupported})
	return s, a
}

var yes = mcp.InputResponseMap{confirmInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}

// question calls fake.store with args and returns the confirmation state,
// checking the InputRequiredResult's shape.
func question(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fake_store", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || len(res.InputRequests) != 1 {
		t.Fatalf("first call = %+v, want an InputRequiredResult with one input request and a requestState", res)
	}
	ask, ok := res.InputRequests[confirmInput].(*mcp.ElicitParams)
	if !ok {
		t.Fatalf("input requests = %#v, want an elicitation under %q", res.InputRequests, confirmInput)
	}
	if !strings.Contains(ask.Message, "Allow Claude Desktop to run fake_store?") || !strings.Contains(ask.Message, "title: "+strconv.Quote(args["title"].(string))) {
		t.Errorf("question = %q, want the tool and the title being written", ask.Message)
	}
	return res.RequestState
}

// wantRefused checks that err is JSON-RPC -32602 naming how the state was
// wrong.
func wantRefused(t *testing.T, what string, res *mcp.CallToolResult, err error, how string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "invalid requestState ("+how+")") {
		t.Errorf("%s = %+v, %v; want JSON-RPC -32602 invalid requestState (%s)", what, res, err, how)
	}
}

// TestConfirmationStateRefusals is the host's version of the conformance
// tampered-state scenario: a 2026-07-28 client is asked to confirm an act
// through an InputRequiredResult; a forged, replayed, expired or
// mismatched requestState is each refused with JSON-RPC -32602 and an
// audit row denied:bad_confirmation, and the act runs only on a valid
// state carrying a yes.
func TestConfirmationStateRefusals(t *testing.T) {
	t.Parallel()
	s, a := confirmServer(t)
	cs := manualMRTRClient(t, s)
	ctx := context.Background()
	args := map[string]any{"title": "Launch plan"}
	retry := func(args map[string]any, state string, answers mcp.InputResponseMap) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: args, InputResponses: answers, RequestState: state})
	}

	state := question(t, cs, args)
	if rows := a.all(); len(rows) != 0 {
		t.Fatalf("asking wrote audit rows: %+v", rows)
	}
	res, err := retry(args, state+"-TAMPERED", yes)
	wantRefused(t, "forged state", res, err, "forged")
	// One character of the payload changed keeps the format but not the MAC.
	parts := strings.Split(state, ".")
	flipped := []byte(parts[1])
	flipped[len(flipped)/2] ^= 1
	res, err = retry(args, parts[0]+"."+string(flipped)+"."+parts[2], yes)
	wantRefused(t, "altered payload", res, err, "forged")
	res, err = retry(map[string]any{"title": "Other plan"}, state, yes)
	wantRefused(t, "state for other arguments", res, err, "mismatched")

	res, err = retry(args, state, yes)
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("valid retry = %+v, %v; want the tool's result", res, err)
	}
	res, err = retry(args, state, yes)
	wantRefused(t, "replayed state", res, err, "replayed")

	expiring := question(t, cs, args)
	s.clockSkew.Store(int64(confirmTTL + time.Minute))
	res, err = retry(args, expiring, yes)
	wantRefused(t, "expired state", res, err, "expired")
	s.clockSkew.Store(0)

	declined := question(t, cs, args)
	res, err = retry(args, declined, mcp.InputResponseMap{confirmInput: &mcp.ElicitResult{Action: "decline"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "you did not confirm it") {
		t.Errorf("declined = %+v, %v; want an isError result saying it was not confirmed", res, err)
	}

	var got []string
	for _, r := range a.all() {
		got = append(got, r.Decision)
		if r.Tool != "fake_store" || r.SourceType != "mcp:claude-desktop" {
			t.Errorf("row = %+v", r)
		}
	}
	want := []string{
		"denied:bad_confirmation", "denied:bad_confirmation", "denied:bad_confirmation",
		"allowed",
		"denied:bad_confirmation", "denied:bad_confirmation",
		"denied:not_confirmed",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit decisions = %v, want %v", got, want)
	}
}

// TestConfirmationStateFromAnotherHost: a state sealed under another key
// (another host, or this one before its key changed) is forged.
func TestConfirmationStateFromAnotherHost(t *testing.T) {
	t.Parallel()
	s1, _ := confirmServer(t)
	s2, a2 := confirmServer(t)
	args := map[string]any{"title": "Launch plan"}
	state := question(t, manualMRTRClient(t, s1), args)
	res, err := manualMRTRClient(t, s2).CallTool(context.Background(), &mcp.CallToolParams{Name: "fake_store", Arguments: args, InputResponses: yes, RequestState: state})
	wantRefused(t, "other host's state", res, err, "forged")
	if rows := a2.all(); len(rows) != 1 || rows[0].Decision != "denied:bad_confirmation" {
		t.Errorf("audit rows = %+v", rows)
	}
}

// TestConfirmDetailsShowEverything: values are quoted with line breaks,
// control and format characters escaped, so a value cannot fake lines of
// the question or hide the next argument; long strings are cut.
func TestConfirmDetailsShowEverything(t *testing.T) {
	t.Parallel()
	got := confirmDetails(json.RawMessage(`{"content":"eggs\n(namespace: personal)\n\n\n","namespace":"shared-evil","title":"x\u202e\u0007\u001b[2J","n":{"k":"a\u202eb"},"long":"` + strings.Repeat("a", 500) + `"}`))
	want := "Arguments:\n" +
		`content: "eggs\n(namespace: personal)\n\n\n"` + "\n" +
		`long: "` + strings.Repeat("a", confirmValueChars) + `…"` + "\n" +
		`n: {"k":"a\u202eb"}` + "\n" +
		`namespace: "shared-evil"` + "\n" +
		`title: "x\u202e\a\x1b[2J"`
	if got != want {
		t.Errorf("details =\n%s\nwant\n%s", got, want)
	}
	if strings.Count(got, "\n") != 5 {
		t.Errorf("%d lines, want one per argument", strings.Count(got, "\n")+1)
	}
}

// TestArgsDigestKeepsBigIntegers: integers beyond 2^53 differ in the
// digest; key order and spacing do not.
func TestArgsDigestKeepsBigIntegers(t *testing.T) {
	t.Parallel()
	a := argsDigest(json.RawMessage(`{"level":9007199254740992,"region":"eu"}`))
	if b := argsDigest(json.RawMessage(`{"level":9007199254740993,"region":"eu"}`)); a == b {
		t.Error("2^53 and 2^53+1 have the same digest")
	}
	if b := argsDigest(json.RawMessage(`{ "region": "eu", "level": 9007199254740992 }`)); a != b {
		t.Error("reordered keys changed the digest")
	}
}

// TestConfirmationSpentAcrossRestarts: with the audit log as the record of
// used states, a confirmation used before a restart (or by another
// process with the same key and database) is refused as replayed.
func TestConfirmationSpentAcrossRestarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	key := newStateKey()
	start := func() (*Server, *audit.Log) {
		log, err := audit.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		pol, _ := policy.New(policy.Options{Level: policy.Supervised})
		s := newFakeServer(t, &Options{Policy: pol, Audit: log, ConfirmActs: ConfirmWhenSupported, StateKey: key})
		return s, log
	}
	args := map[string]any{"title": "Launch plan"}
	s1, log1 := start()
	cs1 := manualMRTRClient(t, s1)
	state := question(t, cs1, args)
	if res, err := cs1.CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: args, InputResponses: yes, RequestState: state}); err != nil || res.IsError {
		t.Fatalf("first use = %+v, %v", res, err)
	}
	_ = cs1.Close()
	if err := log1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s2, log2 := start()
	defer log2.Close(ctx)
	res, err := manualMRTRClient(t, s2).CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: args, InputResponses: yes, RequestState: state})
	wantRefused(t, "the state used before the restart", res, err, "replayed")
}
