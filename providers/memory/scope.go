package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// anyNamespace, in a scope's namespaces or a tool's namespaces argument,
// stands for every namespace the caller may use.
const anyNamespace = "*"

// anyClient, in a scope's clients, matches every client that no other
// scope names.
const anyClient = "*"

// scopeConfig is one [[providers.memory.scopes]] entry: the clients it
// applies to and the namespaces they may read, write and forget in.
type scopeConfig struct {
	// Clients are MCP clientInfo.name values, matched exactly
	// ("openhuman-host" for command-line calls), or "*" for every client
	// no other entry names.
	Clients []string `json:"clients"`
	// Profiles are names of the host's [profiles.<name>] tables
	// (sdk.Caller.Profile): a caller of one of them gets this scope,
	// whatever its client name.
	Profiles []string `json:"profiles"`
	// Namespaces are the namespaces the clients may use; the first is
	// where memory_store writes when no namespace is given. "*" allows
	// every namespace (and as the only entry makes "mcp" the default).
	Namespaces []string `json:"namespaces"`
}

// scope is what a caller may see and change: every namespace, or the
// listed ones.
type scope struct {
	// all is set when every namespace is allowed.
	all bool
	// namespaces are the allowed namespaces when all is false, sorted.
	namespaces []string
	// def is where memory_store writes when given no namespace.
	def string
}

// unrestricted is the scope of a caller no scope entry names: every
// namespace, writing to "mcp" by default.
var unrestricted = scope{all: true, def: defaultNamespace}

// allows reports whether the scope includes namespace ns.
func (sc scope) allows(ns string) bool {
	if sc.all {
		return true
	}
	_, ok := slices.BinarySearch(sc.namespaces, ns)
	return ok
}

// narrow applies a tool's namespaces argument: nil or ["*"] keeps the
// scope; otherwise the result holds exactly the namespaces asked for, each
// of which the scope must allow.
func (sc scope) narrow(asked []string) (scope, *argError) {
	if len(asked) == 0 || slices.Contains(asked, anyNamespace) {
		return sc, nil
	}
	var out []string
	for _, ns := range asked {
		if !sc.allows(ns) {
			return sc, argErrorf(`namespace %s is outside what this client may read (%s)`, quoteShort(ns), sc.describe())
		}
		out = append(out, ns)
	}
	slices.Sort(out)
	return scope{namespaces: slices.Compact(out), def: sc.def}, nil
}

// describe names the scope's namespaces for messages.
func (sc scope) describe() string {
	if sc.all {
		return "every namespace"
	}
	return "namespaces " + strings.Join(sc.namespaces, ", ")
}

// cond returns an SQL condition restricting the namespace column col to
// the scope, with its variables; "" when every namespace is allowed.
func (sc scope) cond(col string) (string, []any) {
	if sc.all {
		return "", nil
	}
	return col + " IN ?", []any{sc.namespaces}
}

// scopes maps clients to their scopes, from [[providers.memory.scopes]].
type scopes struct {
	byClient  map[string]scope
	byProfile map[string]scope
	// other is the "*" entry's scope, or unrestricted.
	other scope
}

// newScopes checks the configured entries and indexes them.
func newScopes(entries []scopeConfig) (scopes, error) {
	out := scopes{byClient: map[string]scope{}, byProfile: map[string]scope{}, other: unrestricted}
	seenOther := false
	for i, e := range entries {
		where := fmt.Sprintf("[[providers.memory.scopes]] entry %d", i+1)
		if len(e.Clients) == 0 && len(e.Profiles) == 0 {
			return out, fmt.Errorf("%s: clients must list at least one client name (or \"*\"), or profiles at least one profile", where)
		}
		if len(e.Namespaces) == 0 {
			return out, fmt.Errorf("%s: namespaces must list at least one namespace (or \"*\")", where)
		}
		sc := scope{}
		for _, ns := range e.Namespaces {
			if ns == anyNamespace {
				sc.all = true
				continue
			}
			if !namespaceRE.MatchString(ns) {
				return out, fmt.Errorf("%s: namespace %q must match %s or be \"*\"", where, ns, namespacePattern)
			}
			if sc.def == "" {
				sc.def = ns
			}
			sc.namespaces = append(sc.namespaces, ns)
		}
		if sc.def == "" {
			sc.def = defaultNamespace
		}
		if sc.all {
			sc.namespaces = nil
		} else {
			slices.Sort(sc.namespaces)
			sc.namespaces = slices.Compact(sc.namespaces)
		}
		for _, p := range e.Profiles {
			if strings.TrimSpace(p) == "" {
				return out, fmt.Errorf("%s: a profile name is empty", where)
			}
			if _, dup := out.byProfile[p]; dup {
				return out, fmt.Errorf("%s: profile %q is named by an earlier entry too", where, p)
			}
			out.byProfile[p] = sc
		}
		for _, c := range e.Clients {
			if strings.TrimSpace(c) == "" {
				return out, fmt.Errorf("%s: a client name is empty", where)
			}
			if c == anyClient {
				if seenOther {
					return out, fmt.Errorf(`%s: clients = ["*"] appears in more than one entry`, where)
				}
				seenOther, out.other = true, sc
				continue
			}
			if _, dup := out.byClient[c]; dup {
				return out, fmt.Errorf("%s: client %q is named by an earlier entry too", where, c)
			}
			out.byClient[c] = sc
		}
	}
	return out, nil
}

// of returns the scope of caller: its profile's, else its client's, else
// the "*" entry's.
func (s scopes) of(caller sdk.Caller) scope {
	if sc, ok := s.byProfile[caller.Profile]; ok && caller.Profile != "" {
		return sc
	}
	if sc, ok := s.byClient[caller.ClientName]; ok {
		return sc
	}
	return s.other
}

type scopeKey struct{}

// withScope returns ctx carrying the caller's scope for the tool handlers.
func withScope(ctx context.Context, sc scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, sc)
}

// scopeOf returns the scope ctx carries, unrestricted when none.
func scopeOf(ctx context.Context) scope {
	if sc, ok := ctx.Value(scopeKey{}).(scope); ok {
		return sc
	}
	return unrestricted
}
