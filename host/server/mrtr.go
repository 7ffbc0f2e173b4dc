package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/sdk"
)

// This file serves clients of protocol 2026-07-28 and later, which a
// server may not send requests while it serves a call: it asks them for
// input through multi-round-trip results instead (MCP 2026-07-28,
// SEP-2322). A tools/call answers with an InputRequiredResult carrying
// inputRequests and a requestState; the client retries the call with
// inputResponses and that requestState.
//
// Two kinds of state are used, both sealed with HMAC-SHA256 under the
// host's state key ([Options.StateKey]) and bound to the tool, a hash of
// its arguments, the client and an expiry:
//
//   - a confirmation ("confirm") asks the user before an act tool runs; it
//     holds everything needed, so any replica can check it, and it is
//     spent on first use;
//   - a continuation ("resume") belongs to a call that is running and
//     waits for the client's answer (a sub-agent's sampling request, an
//     upstream server's elicitation); the call is parked in this process
//     until the retry arrives, for at most [parkTTL].
//
// A state that fails its seal, has expired, was spent, or names another
// tool, other arguments or another client is refused with JSON-RPC
// -32602 and an audit row "denied:bad_confirmation".
//
// Replicas that share a database share the state key, so a confirmation
// or relayed state issued by one is accepted by every other (and spent
// once, in the database). A continuation is not: its call is parked in
// the process that issued it. A retry carrying one that reaches another
// replica is refused at once, naming both replicas ("elsewhere"); it
// never waits. The parked call is cancelled when its questions go
// unanswered for parkTTL, and a call on a replica that died ended with
// it.

// Limits of multi-round-trip calls.
const (
	// confirmTTL is how long a confirmation question can be answered.
	confirmTTL = 10 * time.Minute
	// parkTTL is how long a running call waits for the client's answer
	// before it is cancelled.
	parkTTL = 10 * time.Minute
	// maxParked caps the calls waiting for answers at once, and
	// maxParkedPerClient those of one client; a call that would wait
	// beyond either fails its request to the client.
	maxParked          = 256
	maxParkedPerClient = 32
	// maxSpent caps the confirmations remembered as spent before they
	// expire; beyond it new confirmations are refused until some expire.
	maxSpent = 1 << 16
	// maxStateBytes caps a requestState the server accepts, and
	// maxInnerState a provider's own state it seals.
	maxStateBytes = 48 << 10
	maxInnerState = 32 << 10
	// confirmInput is the inputRequests key of a confirmation question.
	confirmInput = "confirm"
)

// BadConfirmation is the denial reason ("denied:bad_confirmation") of a
// retry whose requestState was forged, replayed, expired or bound to
// another call.
const BadConfirmation = "bad_confirmation"

// requestState is what a sealed requestState holds.
type requestState struct {
	Kind   string `json:"k"`           // "confirm" or "resume"
	Tool   string `json:"t"`           // advertised tool name
	Args   string `json:"a"`           // argsDigest of the arguments
	Client string `json:"c"`           // clientDigest of the caller
	Exp    int64  `json:"e"`           // expiry, Unix milliseconds
	Nonce  string `json:"n"`           // random; a confirmation's spend key
	Call   string `json:"p,omitempty"` // parked call id ("resume")
	Round  int    `json:"r,omitempty"` // the parked call's round ("resume")
	Inner  string `json:"i,omitempty"` // the provider's own requestState ("relay")
	// Replica is the replica the parked call runs on ("resume").
	Replica string `json:"rp,omitempty"`
}

// Kinds of requestState.
const (
	stateConfirm = "confirm"
	stateResume  = "resume"
	// stateRelay continues a call whose provider asked for input with a
	// result of its own (an upstream server's InputRequiredResult): it
	// carries the provider's requestState, and is spent on first use.
	stateRelay = "relay"
)

// stateVersion prefixes every sealed state, so a later format can be told
// apart.
const stateVersion = "v1"

// sealer seals and opens requestStates under one key.
type sealer struct{ key []byte }

// seal returns st as "v1.<payload>.<mac>", base64url without padding.
func (k sealer) seal(st requestState) string {
	payload, _ := json.Marshal(st)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return stateVersion + "." + p + "." + base64.RawURLEncoding.EncodeToString(k.mac(p))
}

func (k sealer) mac(payload string) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(stateVersion + "." + payload))
	return m.Sum(nil)
}

// open checks a sealed state's MAC in constant time and decodes it.
func (k sealer) open(s string) (requestState, error) {
	var st requestState
	if len(s) > maxStateBytes {
		return st, fmt.Errorf("it is %d bytes long, more than any this server issues", len(s))
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] != stateVersion {
		return st, errors.New("it is not a state this server issued")
	}
	sum, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sum, k.mac(parts[1])) {
		return st, errors.New("its integrity check failed: it was altered or issued by another key")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return st, errors.New("its payload is not base64url")
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return st, fmt.Errorf("its payload is not readable: %w", err)
	}
	return st, nil
}

// spentSet remembers spent confirmations until they expire.
type spentSet struct {
	mu   sync.Mutex
	seen map[string]int64 // nonce → expiry, Unix ms
}

// spend marks nonce spent and reports whether it was not before. full is
// set when the set is at its cap.
func (s *spentSet) spend(nonce string, exp int64, now time.Time) (fresh, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]int64{}
	}
	if _, ok := s.seen[nonce]; ok {
		return false, false
	}
	if len(s.seen) >= maxSpent {
		ms := now.UnixMilli()
		for n, e := range s.seen {
			if e < ms {
				delete(s.seen, n)
			}
		}
		if len(s.seen) >= maxSpent {
			return false, true
		}
	}
	s.seen[nonce] = exp
	return true, false
}

// argsDigest is the hex SHA-256 of the arguments in a canonical form
// (object keys sorted, no spaces), so a retry that reorders keys still
// matches and one that changes a value does not.
func argsDigest(args json.RawMessage) string {
	canonical := []byte("{}")
	if len(args) > 0 {
		// Numbers stay as written (UseNumber): as float64, integers above
		// 2^53 would collide.
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil && v != nil {
			canonical, _ = json.Marshal(v)
		}
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// clientDigest names the caller a state is bound to: the identity its
// bearer token proved and the client it says it is.
func clientDigest(subject string, c sdk.Caller) string {
	sum := sha256.Sum256([]byte(subject + "\x00" + c.SourceType + "\x00" + c.ClientName))
	return hex.EncodeToString(sum[:16])
}

// confirmation is the client's answer to a confirmation question, for a
// call of a client that is asked through multi-round-trip results.
type confirmation struct {
	answered bool // the retry carried a valid state and an answer
	yes      bool // the answer was accept with confirm = true
	// question is set by the pipeline when it needs to ask.
	question string
}

// ask is one request for client input made by a parked call.
type ask struct {
	req   mcp.InputRequest
	reply chan askReply
}

type askReply struct {
	res mcp.InputResponse
	err error
}

// parkedCall is a call of a multi-round-trip client that runs across
// several requests: its goroutine asks for input (asks), the request
// waiting on it answers with an InputRequiredResult, and the retry
// delivers the answers.
type parkedCall struct {
	id     string
	tool   string
	args   string
	client string
	asks   chan *ask
	done   chan parkedOutcome
	cancel context.CancelFunc
	// values is the context of the request waiting on the call, whose
	// values relate what the call sends (progress) to that request.
	values atomic.Pointer[context.Context]

	mu      sync.Mutex
	round   int
	busy    bool            // a request is waiting on the call
	pending map[string]*ask // asked, not yet answered, by input key
	next    int             // counter of input keys
	expiry  *time.Timer
}

type parkedOutcome struct {
	res *sdk.CallToolResult
	err error
	// question is set when the call stopped to ask for confirmation.
	question string
}

// parkedCtx is a parked call's context: cancelled with the call, with
// the values of the request now waiting on it.
type parkedCtx struct {
	context.Context
	p *parkedCall
}

func (c parkedCtx) Value(key any) any {
	if v := c.p.values.Load(); v != nil && (*v).Err() == nil {
		if val := (*v).Value(key); val != nil {
			return val
		}
	}
	return c.Context.Value(key)
}

// parkedSet holds the parked calls by id.
type parkedSet struct {
	mu    sync.Mutex
	calls map[string]*parkedCall
}

func (ps *parkedSet) add(p *parkedCall) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.calls == nil {
		ps.calls = map[string]*parkedCall{}
	}
	if len(ps.calls) >= maxParked {
		return false
	}
	mine := 0
	for _, c := range ps.calls {
		if c.client == p.client {
			mine++
		}
	}
	if mine >= maxParkedPerClient {
		return false
	}
	ps.calls[p.id] = p
	return true
}

func (ps *parkedSet) get(id string) *parkedCall {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.calls[id]
}

func (ps *parkedSet) remove(p *parkedCall) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.calls[p.id] == p {
		delete(ps.calls, p.id)
	}
}

// errTooManyParked fails a request to the client when maxParked calls, or
// maxParkedPerClient of its client, already wait for answers.
var errTooManyParked = fmt.Errorf("%w: too many calls already wait for this client's answers (at most %d per client, %d in all); answer or cancel those first",
	sdk.ErrClientUnavailable, maxParkedPerClient, maxParked)

// askFunc returns how a parked call asks its client for input: the ask
// goes to the request waiting on the call, which answers with an
// InputRequiredResult, and the reply comes with the client's retry.
func (p *parkedCall) askFunc() func(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	return func(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
		a := &ask{req: req, reply: make(chan askReply, 1)}
		select {
		case p.asks <- a:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case r := <-a.reply:
			return r.res, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// mrtrClient reports whether req's client is asked for input through
// multi-round-trip results (protocol 2026-07-28 and later).
func mrtrClient(req clientRequest) bool { return req.ProtocolVersion() >= statelessVersion }

// canConfirmMRTR reports whether a multi-round-trip client can answer a
// confirmation: it declared form elicitation.
func canConfirmMRTR(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// callMRTR serves a tools/call of a multi-round-trip client: a first
// call, a retry answering a confirmation, or a retry answering a parked
// call's questions. caps are the capabilities req carries.
func (s *Server) callMRTR(ctx context.Context, req *mcp.CallToolRequest, name string, call Call, caps *mcp.ClientCapabilities) (*mcp.CallToolResult, error) {
	v := s.view.Load()
	t, ok := v.tool(name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: s.unknownTool(v, name).Error()}
	}
	client := clientDigest(authSubject(req.Extra), call.Caller)
	args := argsDigest(call.Arguments)
	if canConfirmMRTR(caps) {
		call.confirmation = &confirmation{}
	}
	if req.Params.RequestState == "" && len(req.Params.InputResponses) > 0 {
		// Answers without a state: nothing of the host's is being
		// answered, so they go to the provider as sent (a server that
		// keeps no state may take them), and confirmation still asks.
		if raw, err := json.Marshal(req.Params.InputResponses); err == nil {
			call.inputResponses = raw
		}
	}
	if state := req.Params.RequestState; state != "" {
		st, how, why := s.checkState(state, t.Name, args, client)
		if how != "" {
			return nil, s.refuseState(ctx, t.Name, call, how, why)
		}
		switch st.Kind {
		case stateConfirm, stateRelay:
			if how, why := s.spend(ctx, st); how != "" {
				return nil, s.refuseState(ctx, t.Name, call, how, why)
			}
			if st.Kind == stateRelay {
				// The call was confirmed (if it needed to be) before its
				// provider first ran; its answers go to the provider.
				if call.confirmation != nil {
					call.confirmation.answered, call.confirmation.yes = true, true
				}
				call.requestState = st.Inner
				if len(req.Params.InputResponses) > 0 {
					raw, err := json.Marshal(req.Params.InputResponses)
					if err != nil {
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses: " + err.Error()}
					}
					call.inputResponses = raw
				}
				break
			}
			if call.confirmation != nil {
				if r, ok := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult); ok && r != nil {
					yes, _ := r.Content["confirm"].(bool)
					call.confirmation.answered, call.confirmation.yes = true, r.Action == "accept" && yes
				}
			}
		case stateResume:
			p := s.parked.get(st.Call)
			if p == nil && st.Replica != s.opts.Replica {
				// The call waits in another process: replicas share the
				// key that seals states, not the calls themselves.
				return nil, s.refuseState(ctx, t.Name, call, "elsewhere", fmt.Sprintf(
					"the call it continues runs on replica %q, not on this one (%q): the answers to a running call's questions "+
						"must reach the replica that asked them, and that call is cancelled once they are %s overdue",
					st.Replica, s.opts.Replica, parkTTL))
			}
			if p == nil {
				return nil, s.refuseState(ctx, t.Name, call, "expired", "the call it continues has ended or timed out; call the tool again")
			}
			if err := p.resume(st.Round, req.Params.InputResponses); err != nil {
				return nil, s.refuseState(ctx, t.Name, call, "replayed", err.Error())
			}
			return s.await(ctx, p, call)
		default:
			return nil, s.refuseState(ctx, t.Name, call, "forged", "its kind is unknown")
		}
	}
	p := &parkedCall{id: rand.Text(), tool: t.Name, args: args, client: client, asks: make(chan *ask), done: make(chan parkedOutcome, 1), pending: map[string]*ask{}}
	pctx, cancel := context.WithCancel(s.stopCtx)
	// The call outlives this request, but its spans belong to the trace
	// of the request that started it.
	pctx = trace.ContextWithSpanContext(pctx, trace.SpanContextFromContext(ctx))
	if rs, ok := ctx.Value(requestSpanKey{}).(requestSpan); ok {
		pctx = context.WithValue(pctx, requestSpanKey{}, rs)
	}
	p.cancel = cancel
	p.busy = true
	callCtx := parkedCtx{Context: pctx, p: p}
	entry := &callEntry{session: req.Session, ctx: callCtx, caps: caps, ask: p.askFunc(), cancel: cancel, profile: call.Profile}
	callToken := rand.Text()
	s.calls.Store(callToken, entry)
	call.Caller.CallToken = callToken
	go func() {
		defer s.calls.Delete(callToken)
		defer cancel()
		res, err := s.Call(callCtx, call)
		out := parkedOutcome{res: res, err: err}
		if call.confirmation != nil && call.confirmation.question != "" && !call.confirmation.answered {
			out.question = call.confirmation.question
		}
		p.done <- out
		// A call that ended while no request waited on it (it timed out
		// or was cancelled between rounds) gives up its place at once;
		// a retry then learns it has ended.
		p.mu.Lock()
		idle := !p.busy
		if idle && p.expiry != nil {
			p.expiry.Stop()
		}
		p.mu.Unlock()
		if idle {
			s.parked.remove(p)
		}
	}()
	return s.await(ctx, p, call)
}

// checkState opens a requestState and checks that it has not expired and
// was issued for target (a tool's name, or "prompt:" and a prompt's), the
// arguments digest args and the client digest client. how is "" when it
// passes, else "forged", "expired" or "mismatched", with why explaining.
func (s *Server) checkState(state, target, args, client string) (st requestState, how, why string) {
	st, err := s.states.open(state)
	switch {
	case err != nil:
		return st, "forged", err.Error()
	case st.Exp < s.now().UnixMilli():
		return st, "expired", fmt.Sprintf("it expired at %s", time.UnixMilli(st.Exp).UTC().Format(time.RFC3339))
	case st.Tool != target || st.Args != args || st.Client != client:
		return st, "mismatched", "it was issued for another request, other arguments or another client"
	}
	return st, "", ""
}

// Spender records single-use states durably, shared by every process
// that uses the same database; *audit.Log is one. When [Options.Audit]
// implements it, a used requestState stays used across restarts and
// replicas; otherwise it is remembered in memory.
type Spender interface {
	// Spend records nonce as used until expiresMs (Unix ms) and reports
	// whether it was not used before; an error refuses the state.
	Spend(ctx context.Context, nonce string, expiresMs int64) (bool, error)
}

// spend marks a single-use state used; how is "replayed" when it was
// used before, "busy" when it cannot be recorded.
func (s *Server) spend(ctx context.Context, st requestState) (how, why string) {
	if sp, ok := s.opts.Audit.(Spender); ok {
		fresh, err := sp.Spend(context.WithoutCancel(ctx), st.Nonce, st.Exp)
		switch {
		case err != nil:
			s.log.Error("a used requestState could not be recorded", "error", err)
			return "busy", "the host could not record its use, so it cannot tell a replay apart; retry the retry in a moment"
		case !fresh:
			return "replayed", "it was used already"
		}
		return "", ""
	}
	fresh, full := s.spent.spend(st.Nonce, st.Exp, s.now())
	switch {
	case full:
		return "busy", fmt.Sprintf("more than %d multi-round-trip questions are outstanding; retry in a few minutes", maxSpent)
	case !fresh:
		return "replayed", "it was used already"
	}
	return "", ""
}

// promptMRTR carries a prompts/get of a multi-round-trip client through
// the rounds its provider asks for (SEP-2322): the retry's state is
// checked and its provider state and answers passed on.
func (s *Server) promptMRTR(ctx context.Context, req *mcp.GetPromptRequest, name string, caller sdk.Caller, greq *sdk.GetPromptRequest) (target, args, client string, err error) {
	target = "prompt:" + name
	rawArgs, _ := json.Marshal(req.Params.Arguments)
	args = argsDigest(rawArgs)
	client = clientDigest(authSubject(req.Extra), caller)
	state := req.Params.RequestState
	if state == "" {
		return target, args, client, nil
	}
	st, how, why := s.checkState(state, target, args, client)
	if how == "" && st.Kind != stateRelay {
		how, why = "mismatched", "it was issued for a tool call"
	}
	if how == "" {
		how, why = s.spend(ctx, st)
	}
	if how != "" {
		s.log.Warn("requestState refused", "prompt", name, "client", caller.SourceType, "reason", how)
		return "", "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"invalid requestState (%s): %s; get prompt %s again without requestState to start over", how, why, name)}
	}
	greq.RequestState = st.Inner
	if len(req.Params.InputResponses) > 0 {
		raw, err := json.Marshal(req.Params.InputResponses)
		if err != nil {
			return "", "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses: " + err.Error()}
		}
		greq.InputResponses = raw
	}
	return target, args, client, nil
}

// relayPromptInput passes on a provider's prompts/get result that asks
// for input, as [Server.relayInput] does for tools.
func (s *Server) relayPromptInput(name, target, args, client string, res *sdk.GetPromptResult) (*mcp.GetPromptResult, error) {
	var requests mcp.InputRequestMap
	if err := json.Unmarshal(res.InputRequests, &requests); err != nil || len(requests) == 0 || len(res.RequestState) > maxInnerState {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("prompt %q asked for input in a form the host cannot pass on", name)}
	}
	state := s.states.seal(requestState{
		Kind: stateRelay, Tool: target, Args: args, Client: client,
		Exp: s.now().Add(parkTTL).UnixMilli(), Nonce: rand.Text(), Inner: res.RequestState,
	})
	return &mcp.GetPromptResult{InputRequests: requests, RequestState: state}, nil
}

// resume delivers a retry's answers to p's pending asks; answers it did
// not ask for are ignored, and asks left unanswered are asked again. It
// fails when round is not p's current one (a replayed or concurrent
// retry).
func (p *parkedCall) resume(round int, answers mcp.InputResponseMap) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy || round != p.round {
		return errors.New("it was used already")
	}
	p.busy = true
	p.expiry.Stop()
	for key, a := range p.pending {
		if r, ok := answers[key]; ok && r != nil {
			a.reply <- askReply{res: r}
			delete(p.pending, key)
		}
	}
	return nil
}

// await waits for p to finish or ask for input, while ctx (the request
// of the client now waiting on it) lasts. A finished call gives its
// result; asks give an InputRequiredResult holding every question not
// yet answered; a request that ends first (the client gave up) cancels
// the call.
func (s *Server) await(ctx context.Context, p *parkedCall, call Call) (*mcp.CallToolResult, error) {
	p.values.Store(&ctx)
	defer p.values.Store(nil)
	p.mu.Lock()
	waiting := len(p.pending) > 0
	p.mu.Unlock()
	if !waiting {
		select {
		case out := <-p.done:
			s.parked.remove(p)
			return s.finish(p, call, out)
		case a := <-p.asks:
			p.add(a)
		case <-ctx.Done():
			p.cancel()
			s.parked.remove(p)
			return nil, ctx.Err()
		}
	}
	// Asks made together (several requests in flight) go out together.
	for more := true; more; {
		select {
		case a := <-p.asks:
			p.add(a)
		default:
			more = false
		}
	}
	if s.parked.get(p.id) == nil && !s.parked.add(p) {
		p.mu.Lock()
		for key, a := range p.pending {
			a.reply <- askReply{err: errTooManyParked}
			delete(p.pending, key)
		}
		p.busy = false
		p.mu.Unlock()
		return s.await(ctx, p, call)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.round++
	p.busy = false
	p.expiry = time.AfterFunc(parkTTL, func() {
		s.parked.remove(p)
		p.cancel()
	})
	requests := make(mcp.InputRequestMap, len(p.pending))
	for key, a := range p.pending {
		requests[key] = a.req
	}
	state := s.states.seal(requestState{
		Kind: stateResume, Tool: p.tool, Args: p.args, Client: p.client,
		Exp: s.now().Add(parkTTL).UnixMilli(), Nonce: rand.Text(), Call: p.id, Round: p.round, Replica: s.opts.Replica,
	})
	return &mcp.CallToolResult{InputRequests: requests, RequestState: state}, nil
}

// add records a as pending under a new input key.
func (p *parkedCall) add(a *ask) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.pending[fmt.Sprintf("input-%d", p.next)] = a
}

// finish turns a parked call's outcome into the answer: its result, or a
// confirmation question with a fresh confirmation state.
func (s *Server) finish(p *parkedCall, call Call, out parkedOutcome) (*mcp.CallToolResult, error) {
	if out.question != "" {
		state := s.states.seal(requestState{
			Kind: stateConfirm, Tool: p.tool, Args: p.args, Client: p.client,
			Exp: s.now().Add(confirmTTL).UnixMilli(), Nonce: rand.Text(),
		})
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{confirmInput: &mcp.ElicitParams{Message: out.question, RequestedSchema: confirmSchema}},
			RequestState:  state,
		}, nil
	}
	if out.err == nil && out.res != nil && len(out.res.InputRequests) > 0 {
		return s.relayInput(p, call, out.res)
	}
	return s.toolAnswer(call, out.res, out.err)
}

// relayInput passes on a provider's result that asks for input: its input
// requests under their own keys, and its requestState sealed inside the
// host's (SEP-2322: the client can read it, but not change it).
func (s *Server) relayInput(p *parkedCall, call Call, res *sdk.CallToolResult) (*mcp.CallToolResult, error) {
	var requests mcp.InputRequestMap
	if err := json.Unmarshal(res.InputRequests, &requests); err != nil || len(requests) == 0 {
		s.log.Warn("provider asked for input the host cannot pass on", "tool", p.tool, "error", err)
		return MCPResult(sdk.ErrorResult("%s asked for input in a form the host cannot pass on: %v", p.tool, err)), nil
	}
	if len(res.RequestState) > maxInnerState {
		return MCPResult(sdk.ErrorResult("%s asked for input with a requestState of %d bytes, more than the %d the host passes on", p.tool, len(res.RequestState), maxInnerState)), nil
	}
	state := s.states.seal(requestState{
		Kind: stateRelay, Tool: p.tool, Args: p.args, Client: p.client,
		Exp: s.now().Add(parkTTL).UnixMilli(), Nonce: rand.Text(), Inner: res.RequestState,
	})
	return &mcp.CallToolResult{InputRequests: requests, RequestState: state}, nil
}

// refuseState records a refused requestState (decision
// "denied:bad_confirmation") and returns the JSON-RPC -32602 error for
// it; how says what was wrong ("forged", "expired", "replayed",
// "mismatched", "elsewhere") and why explains it.
func (s *Server) refuseState(ctx context.Context, tool string, call Call, how, why string) error {
	s.log.Warn("requestState refused", "tool", tool, "client", call.Caller.SourceType, "reason", how)
	if s.opts.Audit != nil {
		rec := audit.Record{
			TimeMs:        time.Now().UnixMilli(),
			SessionHash:   call.Caller.SessionHash,
			SourceType:    call.Caller.SourceType,
			ClientName:    call.Caller.ClientName,
			ClientVersion: call.Caller.ClientVersion,
			Tool:          tool,
			Class:         string(s.toolClass(tool)),
			Decision:      audit.DecisionDenied(BadConfirmation),
			Error:         audit.TruncateError(how + ": " + why),
			ArgsSummary:   audit.SummarizeArgs(call.Arguments, s.opts.AuditRules),
		}
		if t, ok := s.view.Load().tool(tool); ok {
			rec.Provider = t.Provider
		}
		_ = s.opts.Audit.Record(context.WithoutCancel(ctx), rec)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"invalid requestState (%s): %s; call %s again without requestState to start over", how, why, tool)}
}

// toolClass is the class of the tool served under name ("" when none).
func (s *Server) toolClass(name string) sdk.PolicyClass {
	if t, ok := s.view.Load().tool(name); ok {
		return t.Class
	}
	return ""
}

// now is the clock of requestState expiries.
func (s *Server) now() time.Time { return time.Now().Add(time.Duration(s.clockSkew.Load())) }

// newStateKey returns a random key for sealing requestStates.
func newStateKey() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return key
}
