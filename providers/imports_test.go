// Package providers_test holds the rule that keeps the built-in providers
// written as any provider is: each package under providers/ may import,
// from this repository, only the SDK (github.com/openhuman/openhuman-host/sdk
// and its packages) and the packages of its own provider
// (providers/<name>/...), and so may its tests. So a built-in never leans
// on the host's internals, and could move to a module of its own.
package providers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the host module's path.
const module = "github.com/openhuman/openhuman-host"

// listed is one package as go list -json describes it.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// builds are the configurations whose imports are checked: a file
// imports only under its build constraints, and the providers have files
// for each platform, with and without cgo and the FTS5 tag.
var builds = [][]string{
	{"GOOS=linux", "CGO_ENABLED=1", "GOFLAGS=-tags=sqlite_fts5"},
	{"GOOS=linux", "CGO_ENABLED=0", "GOFLAGS="},
	{"GOOS=darwin", "CGO_ENABLED=1", "GOFLAGS=-tags=sqlite_fts5"},
	{"GOOS=windows", "CGO_ENABLED=1", "GOFLAGS=-tags=sqlite_fts5"},
}

// packages lists every package of the host module in each of builds,
// with the imports of its code and of its tests merged across them, by
// import path: once for all the tests.
var packages = sync.OnceValues(func() (map[string]*listed, error) {
	all := map[string]*listed{}
	for _, env := range builds {
		cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Error", module+"/...")
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list with %v: %w: %s", env, err, stderr.Bytes())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listed
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("decode go list's output with %v: %w", env, err)
			}
			if p.Error != nil {
				return nil, fmt.Errorf("go list with %v cannot load %s: %s", env, p.ImportPath, p.Error.Err)
			}
			q := all[p.ImportPath]
			if q == nil {
				q = &listed{ImportPath: p.ImportPath}
				all[p.ImportPath] = q
			}
			q.Imports = union(q.Imports, p.Imports)
			q.TestImports = union(q.TestImports, append(p.TestImports, p.XTestImports...))
		}
	}
	return all, nil
})

// listPackages is [packages], failing the test when go list does.
func listPackages(t *testing.T) map[string]*listed {
	t.Helper()
	all, err := packages()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// union is a and b without repeats, sorted.
func union(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
}

// provider is the provider directory pkg belongs to, such as
// module+"/providers/upstream" for module+"/providers/upstream/upstreamwire";
// "" when pkg is not in one.
func provider(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module+"/providers/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return module + "/providers/" + name
}

// inRepository is whether pkg is a package of this repository outside the
// SDK, which the rule restricts.
func inRepository(pkg string) bool {
	return (pkg == module || strings.HasPrefix(pkg, module+"/")) && !isSDK(pkg)
}

// isSDK is whether pkg is the SDK or one of its packages.
func isSDK(pkg string) bool { return pkg == module+"/sdk" || strings.HasPrefix(pkg, module+"/sdk/") }

// within is whether pkg is dir or a package under it.
func within(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// violations are the imports of pkg, by its code or by its tests alike,
// that break the rule.
func violations(pkg string, imports []string) []string {
	own := provider(pkg)
	var bad []string
	for _, imp := range imports {
		if inRepository(imp) && !within(imp, own) {
			bad = append(bad, imp)
		}
	}
	return bad
}

// Each provider package, and each of its tests, imports from this
// repository only the SDK and its own provider's packages.
func TestProvidersImportOnlyTheSDK(t *testing.T) {
	t.Parallel()
	all := listPackages(t)
	checked := 0
	for _, p := range all {
		if provider(p.ImportPath) == "" {
			continue
		}
		checked++
		for _, imp := range violations(p.ImportPath, p.Imports) {
			t.Errorf("%s imports %s: a provider may import from this repository only %s/sdk/... and its own %s/...",
				p.ImportPath, imp, module, strings.TrimPrefix(provider(p.ImportPath), module+"/"))
		}
		for _, imp := range violations(p.ImportPath, p.TestImports) {
			t.Errorf("a test of %s imports %s: a provider's tests may import from this repository only %s/sdk/... and their own %s/...",
				p.ImportPath, imp, module, strings.TrimPrefix(provider(p.ImportPath), module+"/"))
		}
	}
	if checked < 4 {
		t.Fatalf("checked %d provider packages, want at least the 4 built-ins: go list found %d packages", checked, len(all))
	}
}

// A provider's package that code outside its provider imports (a tool
// names package such as providers/memory/memorytool, or the relay's
// contract providers/upstream/upstreamwire) is a leaf: it imports only
// the standard library and the SDK, so that its importers build none of
// the provider's dependencies. One that only tests outside its provider
// import (a fake server for tests, such as providers/agent/scriptedllm)
// may import other modules too, but from this repository still only the
// SDK.
func TestProviderContractsAreLeaves(t *testing.T) {
	t.Parallel()
	all := listPackages(t)
	importers := map[string][]string{} // provider subpackage → importers outside its provider
	byCode := map[string]bool{}        // provider subpackage → whether code outside its provider imports it
	for _, p := range all {
		for _, imp := range union(p.Imports, p.TestImports) {
			own := provider(imp)
			if own == "" || imp == own || within(p.ImportPath, own) {
				continue
			}
			if !slices.Contains(importers[imp], p.ImportPath) {
				importers[imp] = append(importers[imp], p.ImportPath)
			}
			if slices.Contains(p.Imports, imp) {
				byCode[imp] = true
			}
		}
	}
	if len(importers) == 0 {
		t.Fatal("no provider package is imported from outside its provider; want at least providers/upstream/upstreamwire")
	}
	for pkg, by := range importers {
		p := all[pkg]
		if p == nil {
			t.Errorf("%s, imported by %v, is not a package of this module", pkg, by)
			continue
		}
		for _, imp := range leafViolations(p.Imports, byCode[pkg]) {
			want := "only the standard library and the SDK"
			if !byCode[pkg] {
				want = "from this repository only the SDK"
			}
			t.Errorf("%s imports %s, but it must import %s: %v import it from outside %s",
				pkg, imp, want, slices.Sorted(slices.Values(by)), strings.TrimPrefix(provider(pkg), module+"/"))
		}
	}
}

// leafViolations are the imports of a provider package imported from
// outside its provider that break the rule: any package of this
// repository but the SDK's, and when code (byCode), not only tests,
// imports it, any package outside the standard library and the SDK.
func leafViolations(imports []string, byCode bool) []string {
	var bad []string
	for _, imp := range imports {
		if inRepository(imp) || (byCode && !isSDK(imp) && isNotStandard(imp)) {
			bad = append(bad, imp)
		}
	}
	return bad
}

// isNotStandard is whether pkg is outside Go's standard library, whose
// import paths have no dot in their first element.
func isNotStandard(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return strings.Contains(first, ".")
}

// The rule's pieces classify as they should.
func TestRuleParts(t *testing.T) {
	t.Parallel()
	upstream := module + "/providers/upstream"
	for _, c := range []struct {
		pkg, imp string
		bad      bool
	}{
		{upstream, module + "/sdk", false},
		{upstream, module + "/sdk/mcpwire", false},
		{upstream, module + "/sdk/testwait", false},
		{upstream, module + "/providers/upstream/upstreamwire", false},
		{upstream, module + "/providers/upstream/oauthtest", false},
		{upstream + "/upstreamwire", module + "/providers/upstream", false},
		{upstream, "github.com/modelcontextprotocol/go-sdk/mcp", false},
		{upstream, "net/http", false},
		{upstream, module + "/internal/telemetry", true},
		{upstream, module + "/host/config", true},
		{upstream, module + "/providers/memory/memorytool", true},
		{upstream, module + "/providers/agent/scriptedllm", true},
		{upstream, module + "/providers/upstreamx", true},
		{upstream, module + "/sdkx", true},
		{upstream, module + "/internal/testwait", true},
		{upstream, module + "/internal/storage", true},
		{module + "/providers/memory", module + "/internal/storagetest", true},
		{module + "/providers/memory", module + "/sdk/storage", false},
		{module + "/providers/memory", module + "/sdk/storage/pgtest", false},
	} {
		got := violations(c.pkg, []string{c.imp})
		if want := c.bad; (len(got) == 1 && got[0] == c.imp) != want || (!want && len(got) != 0) {
			t.Errorf("violations(%s, [%s]) = %v; want bad %v", c.pkg, c.imp, got, want)
		}
	}
	for _, c := range []struct {
		imp    string
		byCode bool
		bad    bool
	}{
		{"net/http", true, false},
		{module + "/sdk/mcpwire", true, false},
		{"github.com/modelcontextprotocol/go-sdk/mcp", true, true},
		{"github.com/modelcontextprotocol/go-sdk/mcp", false, false},
		{module + "/providers/upstream", true, true},
		{module + "/providers/upstream", false, true},
		{module + "/internal/telemetry", false, true},
		{module + "/sdk/testwait", false, false},
	} {
		got := leafViolations([]string{c.imp}, c.byCode)
		if want := c.bad; (len(got) == 1 && got[0] == c.imp) != want || (!want && len(got) != 0) {
			t.Errorf("leafViolations([%s], by code %v) = %v; want bad %v", c.imp, c.byCode, got, want)
		}
	}
	if got := fmt.Sprint(isNotStandard("net/http"), isNotStandard("golang.org/x/net"), isNotStandard(module)); got != "false true true" {
		t.Errorf("isNotStandard(net/http, golang.org/x/net, module) = %s, want false true true", got)
	}
}
