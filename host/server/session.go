package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/internal/slug"
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
	go func() {
		_ = ss.Wait()
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
	name := slug.Cut(slug.Make(clientName), 64)
	if name == "" {
		return "mcp"
	}
	return "mcp:" + name
}
