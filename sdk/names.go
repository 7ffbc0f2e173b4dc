package sdk

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxClientNameLen is the longest tool or prompt name, in bytes, that the
// host advertises to MCP clients.
const MaxClientNameLen = 64

// clientNameHashLen is how many hex digits of a name's SHA-256 end a name
// that [ClientName] had to shorten.
const clientNameHashLen = 8

// IsClientName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$, the
// only tool names that Claude Desktop, claude.ai connectors and
// OpenAI-style function calling (Claude Code, Codex, Copilot) accept.
// Claude Desktop hides a server's whole tool list when one name fails
// this check, so the host advertises every tool and prompt under a name
// that passes it (see [ClientName]).
func IsClientName(name string) bool {
	if name == "" || len(name) > MaxClientNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !clientNameByte(name[i]) {
			return false
		}
	}
	return true
}

func clientNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ClientName returns the name under which the host advertises to MCP
// clients a tool or prompt that a provider declares as name. It is the
// host's one mapping of names:
//
//   - every character outside [a-zA-Z0-9_-] becomes "_", so the dotted
//     "hello.greet" is advertised as "hello_greet";
//   - a result longer than [MaxClientNameLen] bytes is cut to 55 bytes
//     and ends with "_" and the first 8 hex digits of the SHA-256 of
//     name, so long names stay distinct and stable.
//
// A name that [IsClientName] accepts is returned unchanged, and
// ClientName(ClientName(n)) == ClientName(n). The host also applies
// ClientName to the names clients send in tools/call and prompts/get, so
// a call by the declared (dotted) name still reaches the tool. Two
// declared names with one client name collide: the host keeps the first
// provider's (in config order) and refuses the other with a logged reason.
func ClientName(name string) string {
	if IsClientName(name) || name == "" {
		return name
	}
	mapped := strings.Map(func(r rune) rune {
		if r < 0x80 && clientNameByte(byte(r)) {
			return r
		}
		return '_'
	}, name)
	if len(mapped) <= MaxClientNameLen {
		return mapped
	}
	sum := sha256.Sum256([]byte(name))
	return mapped[:MaxClientNameLen-clientNameHashLen-1] + "_" + hex.EncodeToString(sum[:])[:clientNameHashLen]
}

// ClientNameGlob maps a path.Match pattern written for declared or dotted
// tool names ("notes.*") to one that matches the names [ClientName]
// gives ("notes_*"): every "." becomes "_". The host applies it to
// [autonomy] allowed_tools and denied_tools, and the agent provider to
// sub-agent tool scopes, so configurations written with dotted names
// keep their meaning.
func ClientNameGlob(pattern string) string {
	return strings.ReplaceAll(pattern, ".", "_")
}
