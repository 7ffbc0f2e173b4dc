// Package wineprefix makes throwaway Wine prefixes in which programs Go
// built for Windows run. Debian's Wine 8.0 lacks bcryptprimitives.dll,
// whose ProcessPrng the Go runtime needs at start (every Windows 10 and 11
// has it), so a prefix without it gets a small ProcessPrng built with
// MinGW-w64 in its system32; the programs run there are unchanged. The
// Windows test and `make release` (which runs each Windows binary once)
// use it.
package wineprefix

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed shim/bcryptprimitives.c
var shimSource []byte

// Prefix is one Wine prefix.
type Prefix struct {
	// Launcher is the wine command.
	Launcher string
	// Dir is the prefix (WINEPREFIX).
	Dir string
	// Env is the environment Wine runs with in the prefix: this process's,
	// without WINE*, DISPLAY and WAYLAND_DISPLAY, plus WINEPREFIX, no debug
	// output and no offer to install Mono or Gecko.
	Env []string
}

// New makes and initialises (wineboot --init) a prefix in dir/prefix with
// the wine command launcher, and builds the ProcessPrng shim into it with
// cc (x86_64-w64-mingw32-gcc) when Wine has no bcryptprimitives.dll. Call
// Close when done, also after an error.
func New(ctx context.Context, launcher, cc, dir string) (*Prefix, error) {
	p := &Prefix{Launcher: launcher, Dir: filepath.Join(dir, "prefix")}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "WINE") || k == "DISPLAY" || k == "WAYLAND_DISPLAY" {
			continue
		}
		p.Env = append(p.Env, kv)
	}
	p.Env = append(p.Env, "WINEPREFIX="+p.Dir, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
	if out, err := p.Command(ctx, "wineboot", "--init").CombinedOutput(); err != nil {
		return p, fmt.Errorf("wineboot --init in %s: %w\n%s", p.Dir, err, out)
	}
	dll := filepath.Join(p.Dir, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if _, err := os.Stat(dll); !errors.Is(err, os.ErrNotExist) {
		return p, err
	}
	src := filepath.Join(dir, "bcryptprimitives.c")
	if err := os.WriteFile(src, shimSource, 0o600); err != nil {
		return p, fmt.Errorf("write the ProcessPrng shim: %w", err)
	}
	if out, err := exec.CommandContext(ctx, cc, "-O2", "-shared", "-o", dll, src, "-ladvapi32").CombinedOutput(); err != nil {
		return p, fmt.Errorf("build the ProcessPrng shim with %s: %w\n%s", cc, err, out)
	}
	return p, nil
}

// Command is wine running args in the prefix.
func (p *Prefix) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.Launcher, args...)
	cmd.Env = p.Env
	return cmd
}

// Close stops the prefix's wineserver, which ends whatever still runs in
// the prefix.
func (p *Prefix) Close() error {
	kill := exec.Command(filepath.Join(filepath.Dir(p.Launcher), "wineserver"), "-k")
	kill.Env = p.Env
	if err := kill.Run(); err != nil {
		return fmt.Errorf("stop the wineserver of %s: %w", p.Dir, err)
	}
	return nil
}
