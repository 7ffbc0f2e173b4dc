// Package builtin is the registry of the providers compiled into
// openhuman-host. Each built-in declares its facts as an [sdk.Manifest] in
// its own package; one package of the binary registers them all, once, at
// init (internal/builtins); the host's config, launch, server and audit
// code read them from here and name no provider. Adding a built-in thus
// touches its own package and one line of the registering package.
//
// A process has one registry, [Registered]; [NewRegistry] makes others,
// for tests and for hosts given their own ([host.Options].Builtins).
package builtin

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
)

// Provider is one built-in provider: its static facts and how to make it.
type Provider struct {
	// Manifest holds the facts the host reads before launching the
	// provider.
	Manifest sdk.Manifest
	// New makes the provider, with the logger its lines go to: in a
	// process of its own (`openhuman-host provider <name>`), or in the
	// host's when it runs there (sdk.Manifest.InProcess, or the
	// operator's process setting). Required.
	New func(log hclog.Logger) sdk.Provider
}

// Registry is an ordered set of built-in providers with unique names,
// namespaces and environment variables. Its order is the order providers
// are registered in, which is the order they are started and listed in.
// A Registry is read-only once made and safe for concurrent use; the zero
// value is empty.
type Registry struct {
	providers []Provider
}

var (
	nameRE      = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	namespaceRE = regexp.MustCompile(`^[a-zA-Z0-9-][a-zA-Z0-9_-]{0,62}_$`)
	envVarRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// NewRegistry returns a registry of ps in that order. It fails, naming
// the provider and the fact, for a name that is invalid or taken (also as
// another's reserved name), a namespace that is invalid or overlaps
// another's (one a prefix of the other), an environment variable another
// override already uses, an incomplete ConfigDir, a DefaultConfig that is
// not TOML holding the provider's [providers.<name>] table alone (or is
// set for a provider with a Section), or a nil New.
func NewRegistry(ps ...Provider) (*Registry, error) {
	r := &Registry{}
	for _, p := range ps {
		if err := r.check(p); err != nil {
			return nil, err
		}
		r.providers = append(r.providers, p)
	}
	return r, nil
}

// check reports why p cannot join r.
func (r *Registry) check(p Provider) error {
	m := p.Manifest
	if !nameRE.MatchString(m.Name) {
		return fmt.Errorf("built-in provider %q: the name must match %s", m.Name, nameRE)
	}
	if p.New == nil {
		return fmt.Errorf("built-in provider %s: New is nil", m.Name)
	}
	if m.ConfigDir != nil && (m.ConfigDir.Setting == "" || m.ConfigDir.Default == "" || m.ConfigDir.Holds == "") {
		return fmt.Errorf("built-in provider %s: ConfigDir needs Setting, Default and Holds", m.Name)
	}
	if err := checkDefaultConfig(m); err != nil {
		return err
	}
	reserved := r.reservedNames()
	if m.ConfigDir != nil {
		reserved = append(reserved, m.ConfigDir.Default)
	}
	for _, q := range r.providers {
		if q.Manifest.Name == m.Name {
			return fmt.Errorf("built-in provider %s is registered twice", m.Name)
		}
		if m.ConfigDir != nil && q.Manifest.Name == m.ConfigDir.Default {
			return fmt.Errorf("built-in provider %s: its config directory name %q is the name of built-in provider %s", m.Name, m.ConfigDir.Default, q.Manifest.Name)
		}
	}
	if slices.Contains(reserved, m.Name) {
		return fmt.Errorf("built-in provider %s: the name is reserved by another built-in's config directory", m.Name)
	}
	for _, ns := range m.Namespaces {
		if !namespaceRE.MatchString(ns) {
			return fmt.Errorf("built-in provider %s: namespace %q must be letters, digits, _ and - ending in _", m.Name, ns)
		}
		for _, q := range r.providers {
			for _, other := range q.Manifest.Namespaces {
				if strings.HasPrefix(ns, other) || strings.HasPrefix(other, ns) {
					return fmt.Errorf("built-in provider %s: namespace %q overlaps %q of built-in provider %s", m.Name, ns, other, q.Manifest.Name)
				}
			}
		}
	}
	for i, e := range m.Env {
		if !envVarRE.MatchString(e.Var) || e.Key == "" {
			return fmt.Errorf("built-in provider %s: environment override %q of key %q needs a variable name and a key", m.Name, e.Var, e.Key)
		}
		if q, ok := r.envOwner(e.Var); ok {
			return fmt.Errorf("built-in provider %s: environment variable %s already overrides a key of built-in provider %s", m.Name, e.Var, q)
		}
		if slices.ContainsFunc(m.Env[:i], func(f sdk.EnvOverride) bool { return f.Var == e.Var }) {
			return fmt.Errorf("built-in provider %s: environment variable %s is listed twice", m.Name, e.Var)
		}
	}
	return nil
}

// envOwner names the provider whose override uses variable v.
func (r *Registry) envOwner(v string) (string, bool) {
	for _, p := range r.providers {
		for _, e := range p.Manifest.Env {
			if e.Var == v {
				return p.Manifest.Name, true
			}
		}
	}
	return "", false
}

// reservedNames are the provider names r's built-ins keep for their
// config directories.
func (r *Registry) reservedNames() []string {
	var out []string
	for _, p := range r.providers {
		if d := p.Manifest.ConfigDir; d != nil {
			out = append(out, d.Default)
		}
	}
	return out
}

// Providers returns r's providers in registration order; a copy.
func (r *Registry) Providers() []Provider {
	if r == nil {
		return nil
	}
	return slices.Clone(r.providers)
}

// Names returns the names of r's providers in registration order.
func (r *Registry) Names() []string {
	var out []string
	for _, p := range r.Providers() {
		out = append(out, p.Manifest.Name)
	}
	return out
}

// Lookup returns the provider called name; ok is false when r has none.
func (r *Registry) Lookup(name string) (p Provider, ok bool) {
	for _, p := range r.Providers() {
		if p.Manifest.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Tabled returns the names of the providers configured by a
// [providers.<name>] table (no Manifest.Section), in registration order.
func (r *Registry) Tabled() []string {
	var out []string
	for _, p := range r.Providers() {
		if p.Manifest.Section == "" {
			out = append(out, p.Manifest.Name)
		}
	}
	return out
}

// IsTabled reports whether name is a provider of r configured by a
// [providers.<name>] table.
func (r *Registry) IsTabled(name string) bool {
	p, ok := r.Lookup(name)
	return ok && p.Manifest.Section == ""
}

// BySection returns the provider whose settings come from the host's
// config section section ("[[upstream.servers]]"); ok is false when r
// has none.
func (r *Registry) BySection(section string) (p Provider, ok bool) {
	for _, p := range r.Providers() {
		if section != "" && p.Manifest.Section == section {
			return p, true
		}
	}
	return Provider{}, false
}

// AuditRules returns the audit rules of all r's providers together, each
// key once, in registration order.
func (r *Registry) AuditRules() sdk.AuditRules {
	var out sdk.AuditRules
	add := func(dst *[]string, keys []string) {
		for _, k := range keys {
			if !slices.Contains(*dst, k) {
				*dst = append(*dst, k)
			}
		}
	}
	for _, p := range r.Providers() {
		a := p.Manifest.Audit
		add(&out.Identifiers, a.Identifiers)
		add(&out.Lists, a.Lists)
		add(&out.ResultRefs, a.ResultRefs)
	}
	return out
}

// process is the process's registry, behind mu.
var (
	mu      sync.RWMutex
	process = &Registry{}
)

// Register adds ps, in order, to the process's registry ([Registered]).
// It fails as [NewRegistry] does, also for a clash with a provider
// registered before, and then adds none of ps.
func Register(ps ...Provider) error {
	mu.Lock()
	defer mu.Unlock()
	next, err := NewRegistry(append(slices.Clone(process.providers), ps...)...)
	if err != nil {
		return err
	}
	process = next
	return nil
}

// MustRegister is [Register] for init functions: it panics on an error.
func MustRegister(ps ...Provider) {
	if err := Register(ps...); err != nil {
		panic(err)
	}
}

// Registered returns the process's registry: every provider registered
// so far, empty before any. The result does not change when more are
// registered later.
func Registered() *Registry {
	mu.RLock()
	defer mu.RUnlock()
	return process
}
