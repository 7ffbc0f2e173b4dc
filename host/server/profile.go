package server

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

// ProfilePathPrefix is the path under which the HTTP transport serves each
// profile: /profile/<name> is the MCP endpoint of the clients of
// [profiles.<name>]; / serves clients of no profile, or the one their
// name selects ([Profile].Clients).
const ProfilePathPrefix = "/profile/"

// profileHeader carries the profile the request's path named from the
// HTTP transport to the server; a client's own header of that name is
// dropped.
const profileHeader = "Openhuman-Profile"

// Profile is one [profiles.<name>] table as the server applies it.
type Profile struct {
	// Policy is the profile's policy, from [policy.Policy.ForProfile].
	Policy *policy.Policy
	// ConfirmActs replaces Options.ConfirmActs for the profile; "" keeps it.
	ConfirmActs string
	// Clients are the clientInfo.name values that get the profile when
	// neither the path nor [Options.Profile] chooses one.
	Clients []string
	// Discovery lists, in tools/list, only the tools matching Pinned and
	// the meta-tools ToolSearch, ToolDescribe and ToolCall, through which
	// the client finds and calls every other tool it may call.
	Discovery bool
	// Pinned are glob patterns, as in allowed_tools, of the tools a
	// Discovery profile still lists.
	Pinned []string
	// Resources are the resource URIs or globs (* and ? match any
	// character, "/" too) the profile serves; empty serves all.
	Resources []string
	// ExcludeResources are resource URIs or globs the profile never
	// serves; they win over Resources.
	ExcludeResources []string
}

// servesResource reports whether a client of the named profile may list
// and read the resource (or template) at uri.
func (set *Options) servesResource(profile, uri string) bool {
	p := set.Profiles[profile]
	if profile == "" || p == nil {
		return profile == ""
	}
	if uriMatch(p.ExcludeResources, uri) {
		return false
	}
	return len(p.Resources) == 0 || uriMatch(p.Resources, uri)
}

// uriMatch reports whether uri matches one of globs, in which * matches
// any run of characters and ? any one character, "/" included.
func uriMatch(globs []string, uri string) bool {
	for _, g := range globs {
		if globMatch(g, uri) {
			return true
		}
	}
	return false
}

// globMatch matches s against g (* any run, ? any one character).
func globMatch(g, s string) bool {
	gr, sr := []rune(g), []rune(s)
	// star and mark remember the last * and where its run ended, to
	// backtrack to: linear in practice, never exponential.
	star, mark := -1, 0
	i, j := 0, 0
	for j < len(sr) {
		switch {
		case i < len(gr) && (gr[i] == '?' || gr[i] == sr[j]):
			i++
			j++
		case i < len(gr) && gr[i] == '*':
			star, mark = i, j
			i++
		case star >= 0:
			i, mark = star+1, mark+1
			j = mark
		default:
			return false
		}
	}
	for i < len(gr) && gr[i] == '*' {
		i++
	}
	return i == len(gr)
}

// resourcesFor narrows a resources/list or resources/templates/list result
// to what a client of the named profile may read.
func (s *Server) resourcesFor(res mcp.Result, profile string) mcp.Result {
	if profile == "" {
		return res
	}
	set := s.settings.Load()
	switch r := res.(type) {
	case *mcp.ListResourcesResult:
		if r != nil {
			out := *r
			out.Resources = kept(r.Resources, func(x *mcp.Resource) bool { return set.servesResource(profile, x.URI) })
			return &out
		}
	case *mcp.ListResourceTemplatesResult:
		if r != nil {
			out := *r
			out.ResourceTemplates = kept(r.ResourceTemplates, func(x *mcp.ResourceTemplate) bool { return set.servesResource(profile, x.URITemplate) })
			return &out
		}
	}
	return res
}

// kept returns the entries of list that keep accepts, in order; nil when
// it accepts none.
func kept[E any](list []E, keep func(E) bool) []E {
	var out []E
	for _, x := range list {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// profileOf returns the profile of a client request: [Options.Profile]
// when set (serve --profile), else the one the HTTP path named, else the
// one the client's name selects, else "".
func (s *Server) profileOf(req mcp.Request, clientName string) string {
	if s.opts.Profile != "" {
		return s.opts.Profile
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		if p := extra.Header.Get(profileHeader); p != "" {
			return p
		}
	}
	return s.settings.Load().profileOfClient(clientName)
}

// profileOfClient returns the profile whose Clients name clientName, or "".
func (set *Options) profileOfClient(clientName string) string {
	for name, p := range set.Profiles {
		if slices.Contains(p.Clients, clientName) {
			return name
		}
	}
	return ""
}

// forProfile returns the settings a call of the named profile runs with:
// set with the profile's policy and confirm_acts. A profile that is no
// longer configured (a reload removed it) is an error to give the client.
func (set *Options) forProfile(name string) (*Options, error) {
	if name == "" {
		return set, nil
	}
	p, ok := set.Profiles[name]
	if !ok || p.Policy == nil {
		return nil, fmt.Errorf("this client's profile %q is not in the config (any more): reconnect, or use one of: %s",
			name, strings.Join(set.profileNames(), ", "))
	}
	eff := *set
	eff.Policy = p.Policy
	if p.ConfirmActs != "" {
		eff.ConfirmActs = p.ConfirmActs
	}
	return &eff, nil
}

// confirmRequired reports whether set refuses act tools to a client that
// cannot be asked to confirm them: confirm_acts = "required" under the
// supervised level.
func (set *Options) confirmRequired() bool {
	return set.ConfirmActs == ConfirmRequired && set.Policy != nil && set.Policy.Level() == policy.Supervised
}

// profileNames lists the configured profiles, sorted; "(none)" when there
// are none.
func (set *Options) profileNames() []string {
	if len(set.Profiles) == 0 {
		return []string{"(none)"}
	}
	return slices.Sorted(maps.Keys(set.Profiles))
}

// listing reports, for a client of the named profile under the settings
// in force, which registered tools of v its tools/list shows: those its
// policy allows, and in discovery mode only the pinned ones and the
// meta-tools, which other clients do not see. A client that cannot be
// asked to confirm (canConfirm false) is not shown the act tools that
// confirm_acts = "required" would refuse it.
func listing(all *Options, profile string, v *view, canConfirm bool) (func(name string) bool, error) {
	set, err := all.forProfile(profile)
	if err != nil {
		return nil, err
	}
	var p *Profile
	if profile != "" {
		p = all.Profiles[profile]
	}
	discovery := p != nil && p.Discovery
	return func(name string) bool {
		if isMetaTool(name) {
			return discovery
		}
		t, ok := v.tools[name]
		if !ok {
			return false
		}
		if profile != "" && set.Policy != nil && set.Policy.Refusal(t.Name, policy.Class(t.Class)) != nil {
			return false
		}
		if !canConfirm && set.confirmRequired() && t.Class == sdk.ClassAct {
			return false
		}
		return !discovery || pinned(p.Pinned, name)
	}, nil
}

// listedFor narrows a tools/list result to what a client of the named
// profile, which can or cannot be asked to confirm an act, sees
// ([listing]). The tools every client is refused were never registered.
func (s *Server) listedFor(res mcp.Result, profile string, canConfirm bool) mcp.Result {
	r, ok := res.(*mcp.ListToolsResult)
	if !ok || r == nil {
		return res
	}
	out := *r
	out.Tools = make([]*mcp.Tool, 0, len(r.Tools))
	show, err := listing(s.settings.Load(), profile, s.view.Load(), canConfirm)
	if err != nil {
		return &out
	}
	for _, t := range r.Tools {
		if show(t.Name) {
			out.Tools = append(out.Tools, t)
		}
	}
	return &out
}

// profileViews is, per profile (and "" for none) and for clients that
// can and cannot be asked to confirm, the sorted names of the tools of v
// they see in tools/list under set; keys are the profile's name followed
// by "+confirm" or "-confirm".
func profileViews(set *Options, v *view) map[string][]string {
	out := map[string][]string{}
	names := append([]string{""}, slices.Sorted(maps.Keys(set.Profiles))...)
	for _, view := range []struct {
		suffix     string
		canConfirm bool
	}{{"+confirm", true}, {"-confirm", false}} {
		for _, name := range names {
			if list, ok := profileView(set, v, name, view.canConfirm); ok {
				out[name+view.suffix] = list
			}
		}
	}
	return out
}

// profileView is the sorted names of the tools of v that a client of the
// named profile sees in tools/list under set; false when the profile is
// not configured.
func profileView(set *Options, v *view, name string, canConfirm bool) ([]string, bool) {
	show, err := listing(set, name, v, canConfirm)
	if err != nil {
		return nil, false
	}
	var list []string
	for n := range v.tools {
		if show(n) {
			list = append(list, n)
		}
	}
	for _, n := range metaTools {
		if show(n) {
			list = append(list, n)
		}
	}
	sort.Strings(list)
	return list, true
}

// announceToolsChanged sends notifications/tools/list_changed to every
// session, for a change the go-sdk cannot see (a profile's tools): it
// registers one listed tool again, unchanged, which the go-sdk announces.
func (s *Server) announceToolsChanged(v *view) {
	var first *catalog.Tool
	for _, t := range v.tools {
		if first == nil || t.Name < first.Name {
			first = t
		}
	}
	if first != nil {
		if err := s.addTool(first); err != nil {
			s.log.Warn("announcing a changed tool list failed", "tool", first.Name, "error", err)
		}
	}
}

// routeProfile serves ProfilePathPrefix+<name> as the MCP endpoint of the
// profile <name> (404 for a name the config lacks) and / as the endpoint
// of clients of no profile; other paths get 404.
func (s *Server) routeProfile(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(profileHeader)
		switch {
		case r.URL.Path == "/":
		case strings.HasPrefix(r.URL.Path, ProfilePathPrefix):
			name := strings.TrimPrefix(r.URL.Path, ProfilePathPrefix)
			set := s.settings.Load()
			if _, ok := set.Profiles[name]; !ok {
				http.Error(w, fmt.Sprintf("Not Found: no profile named %q; the profiles are: %s", name, strings.Join(set.profileNames(), ", ")), http.StatusNotFound)
				return
			}
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/"
			r2.Header.Set(profileHeader, name)
			r = r2
		default:
			http.Error(w, "Not Found: the MCP endpoint is / (or "+ProfilePathPrefix+"<name> for a profile)", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}
