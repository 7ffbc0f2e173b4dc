package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/sdk"
)

// sessionInfo is what the host keeps about one MCP session: its client's
// provenance, fixed by the first initialize and kept for the whole session
// on every transport.
type sessionInfo struct {
	sourceType    string
	clientName    string
	clientVersion string
	hash          string
	// token identifies the session to providers while it is connected
	// (sdk.Caller.SessionToken).
	token string
	// protocolVersion is the MCP version the client asked for.
	protocolVersion string
	// capabilities is what the client declared, as JSON.
	capabilities json.RawMessage

	// mu guards what the session asked providers to keep, which a
	// provider that restarts is told again (Server.Replay).
	// closed is set once the session has ended.
	closed atomic.Bool

	mu    sync.Mutex
	level string          // the last logging/setLevel
	subs  map[string]bool // resources/subscribe URIs not unsubscribed
}

// remember records what a provider restarted later must be told again:
// level when not empty, and uri subscribed (on) or not.
func (info *sessionInfo) remember(level, uri string, on bool) {
	info.mu.Lock()
	defer info.mu.Unlock()
	if level != "" {
		info.level = level
	}
	if uri == "" {
		return
	}
	if on {
		if info.subs == nil {
			info.subs = map[string]bool{}
		}
		info.subs[uri] = true
	} else {
		delete(info.subs, uri)
	}
}

// caller is the sdk.Caller of a request made in ss, without call-specific
// fields (progress and call tokens, depth).
func (s *Server) caller(ss *mcp.ServerSession) sdk.Caller {
	return s.session(ss).caller()
}

// clientRequest is what every request a client sends tells about it: on
// protocol 2026-07-28 and later from the request's own _meta (SEP-2575),
// before that from the session's initialize ([requestClientInfo],
// [requestClientCapabilities]).
type clientRequest interface {
	GetSession() mcp.Session
	GetParams() mcp.Params
	GetExtra() *mcp.RequestExtra
	ProtocolVersion() string
}

// callerOf is the sdk.Caller of req without call-specific fields. A
// request of protocol 2026-07-28 or later carries its own protocol
// version and capabilities. Over HTTP it belongs to no session (the
// go-sdk serves it in a session of its own that ends with it): it is
// attributed to its client, named by its _meta client info and the
// identity its bearer token proved ([Server.client]). On stdio the
// connection is the session, as before. ReadsStructuredContent follows
// the settings in force now, so a reload reaches connected sessions.
func (s *Server) callerOf(req clientRequest) sdk.Caller {
	c, _ := s.callerAndCapabilities(req)
	return c
}

// callerAndCapabilities is callerOf that also returns the capabilities a
// request of protocol 2026-07-28 or later carries (nil for others), read
// once: each read decodes them from the request's _meta.
func (s *Server) callerAndCapabilities(req clientRequest) (sdk.Caller, *mcp.ClientCapabilities) {
	c, caps := s.clientCaller(req)
	c.ReadsStructuredContent = s.settings.Load().readsStructured(c.ClientName, c.ProtocolVersion)
	return c, caps
}

// clientCaller is callerAndCapabilities without what the settings add.
func (s *Server) clientCaller(req clientRequest) (sdk.Caller, *mcp.ClientCapabilities) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	version := req.ProtocolVersion()
	if version < statelessVersion {
		return s.caller(ss), nil
	}
	caps, capsJSON := clientCapabilities(req, true)
	var info *sessionInfo
	if extra := req.GetExtra(); extra != nil && extra.Header != nil && ss != nil && ss.ID() == "" {
		info = s.client(authSubject(extra), requestClientInfo(req), caps)
	} else {
		info = s.session(ss)
	}
	c := info.caller()
	c.ProtocolVersion = cleanClientText(version)
	c.ClientCapabilities = capsJSON
	return c, caps
}

// authSubject is the identity a request's bearer token proved ("" when
// it carried none, as on stdio).
func authSubject(extra *mcp.RequestExtra) string {
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	return extra.TokenInfo.UserID
}

// Limits of the clients known without sessions.
const (
	// clientIdle forgets a client (protocol 2026-07-28 and later) that
	// sent nothing for this long; providers are then told its "session"
	// ended, so state they keep for it (upstream sessions) is released.
	clientIdle = 30 * time.Minute
	// maxClients caps the clients known at once; requests of clients
	// beyond it are attributed alike but get no state of their own.
	maxClients = 4096
)

// client returns the info of the client that subject and impl name, on
// protocol 2026-07-28 and later: one per (subject, name, version,
// capabilities), with an audit session hash and a session token derived
// from those, so that its requests are attributed and served alike though
// each arrives on its own (MCP 2026-07-28 has no sessions). Capabilities
// are part of the key because requests declare their own: state kept for
// a client (an upstream session that declared what it can do) must match
// what the request declares. It is forgotten after clientIdle.
func (s *Server) client(subject string, impl *mcp.Implementation, caps *mcp.ClientCapabilities) *sessionInfo {
	var name, version string
	if impl != nil {
		name, version = cleanClientText(impl.Name), cleanClientText(impl.Version)
	}
	capsJSON, _ := json.Marshal(caps)
	key := subject + "\x00" + name + "\x00" + version + "\x00" + string(capsJSON)
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if c, ok := s.clients[key]; ok {
		c.idle.Reset(clientIdle)
		return c.info
	}
	info := &sessionInfo{sourceType: SourceType(name), clientName: name, clientVersion: version}
	if name == "" {
		info.sourceType = "mcp"
	}
	sum := sha256.Sum256([]byte("client\x00" + key))
	info.hash = audit.SessionHash(hex.EncodeToString(sum[:]))
	info.capabilities = capsJSON
	if len(s.clients) >= maxClients {
		return info
	}
	info.token = rand.Text()
	c := &knownClient{info: info}
	c.idle = time.AfterFunc(clientIdle, func() {
		s.clientsMu.Lock()
		if s.clients[key] != c {
			s.clientsMu.Unlock()
			return
		}
		delete(s.clients, key)
		s.clientsMu.Unlock()
		s.sessionClosed(info.caller())
	})
	if s.clients == nil {
		s.clients = map[string]*knownClient{}
	}
	s.clients[key] = c
	return info
}

// knownClient is a client of protocol 2026-07-28 or later the server
// has seen lately.
type knownClient struct {
	info *sessionInfo
	idle *time.Timer
}

// caller is the session's sdk.Caller without call-specific fields.
func (info *sessionInfo) caller() sdk.Caller {
	return sdk.Caller{
		SourceType:      info.sourceType,
		SessionHash:     info.hash,
		ClientName:      info.clientName,
		ClientVersion:   info.clientVersion,
		SessionToken:    info.token,
		ProtocolVersion: info.protocolVersion,
		// Shared, never changed: providers only read it.
		ClientCapabilities: info.capabilities,
	}
}

// session returns the session's info, creating it on first sight. The
// entry is dropped when the session ends.
func (s *Server) session(ss *mcp.ServerSession) *sessionInfo {
	if ss == nil {
		return &sessionInfo{sourceType: "mcp"}
	}
	if v, ok := s.sessions.Load(ss); ok {
		return v.(*sessionInfo)
	}
	info := &sessionInfo{sourceType: "mcp"}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		info.clientName = cleanClientText(p.ClientInfo.Name)
		info.clientVersion = cleanClientText(p.ClientInfo.Version)
		info.sourceType = SourceType(p.ClientInfo.Name)
	}
	if p := ss.InitializeParams(); p != nil {
		info.protocolVersion = cleanClientText(p.ProtocolVersion)
		if p.Capabilities != nil {
			info.capabilities, _ = json.Marshal(p.Capabilities)
		}
	}
	id := ss.ID()
	if id == "" {
		// stdio sessions have no id; a random one still tells sessions
		// apart in the audit log.
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	info.hash = audit.SessionHash(id)
	info.token = rand.Text()
	if v, loaded := s.sessions.LoadOrStore(ss, info); loaded {
		return v.(*sessionInfo)
	}
	s.tokens.Store(info.token, ss)
	s.sessionOpened()
	opened := time.Now()
	go func() {
		_ = ss.Wait()
		s.sessionEnded(opened, info.protocolVersion, sessionTransport(ss))
		info.closed.Store(true)
		s.cancelCalls(ss)
		s.sessions.Delete(ss)
		s.tokens.Delete(info.token)
		s.sessionClosed(info.caller())
	}()
	return info
}

// maxClientText caps a client's self-reported name and version, in
// characters.
const maxClientText = 128

// cleanClientText makes a client-supplied string safe to store and log:
// control characters dropped, at most maxClientText characters.
func cleanClientText(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			continue
		}
		if n == maxClientText {
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// SourceType returns the audit source type of an MCP client:
// "mcp:" + the client's name in lower-case ASCII letters and digits, every
// other run of characters turned into one "-" and trimmed; "mcp" when
// nothing is left. "Claude Desktop" → "mcp:claude-desktop".
func SourceType(clientName string) string {
	name := sdk.NamePart(clientName, 64)
	if name == "" {
		return "mcp"
	}
	return "mcp:" + name
}
