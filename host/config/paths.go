package config

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
)

// appDir is the name of openhuman-host's directory inside the operating
// system's config and data directories.
const appDir = "openhuman-host"

// DefaultConfigDir returns the directory that holds the default config file
// and the user's sub-agent definitions (agents/), by the conventions of the
// operating system, whatever variables a GUI client that launches the
// server leaves out of its environment:
//
//   - Linux and other Unix systems: $XDG_CONFIG_HOME/openhuman-host, or
//     ~/.config/openhuman-host when that variable is unset or not absolute
//     (GUI clients often launch servers without it);
//   - macOS: ~/Library/Application Support/openhuman-host (XDG variables
//     are not read);
//   - Windows: %APPDATA%\openhuman-host (the roaming application data
//     folder, from the shell when the variable is missing).
//
// It fails only when the home directory cannot be found.
func DefaultConfigDir() (string, error) {
	return configFolder.dir(osEnviron)
}

// DefaultDataDir returns the data directory used when server.data_dir,
// OPENHUMAN_DATA_DIR and --data-dir are all unset, by the conventions of
// the operating system:
//
//   - Linux and other Unix systems: $XDG_DATA_HOME/openhuman-host, or
//     ~/.local/share/openhuman-host when that variable is unset or not
//     absolute;
//   - macOS: ~/Library/Application Support/openhuman-host, the same
//     directory as the config;
//   - Windows: %LOCALAPPDATA%\openhuman-host (the local application data
//     folder, which does not roam with the user's profile).
//
// It fails only when the home directory cannot be found.
func DefaultDataDir() (string, error) {
	return dataFolder.dir(osEnviron)
}

// environ is the process environment as the loader sees it, replaceable in
// tests.
type environ struct {
	// getenv returns a variable's value; empty counts as unset.
	getenv func(string) string
	// home returns the user's home directory.
	home func() (string, error)
	// goos is the operating system whose conventions apply (runtime.GOOS
	// values); tests choose another than the one they run on.
	goos string
	// folder returns a Windows known folder, folderRoaming or folderLocal,
	// as the shell knows it, without the environment. Nil elsewhere.
	folder func(id string) (string, error)
}

// Known folders environ.folder resolves.
const (
	folderRoaming = "RoamingAppData"
	folderLocal   = "LocalAppData"
)

var osEnviron = environ{getenv: os.Getenv, home: homeDir, goos: runtime.GOOS, folder: knownFolder}

// homeDir returns the user's home directory: $HOME ($USERPROFILE on
// Windows) as os.UserHomeDir reads it, or, when the variable is missing,
// as the system's user database has it.
func homeDir() (string, error) {
	home, err := os.UserHomeDir()
	if err == nil && home != "" {
		return home, nil
	}
	if u, uerr := user.Current(); uerr == nil && u.HomeDir != "" {
		return u.HomeDir, nil
	}
	if err == nil {
		err = errors.New("home directory unknown")
	}
	return "", err
}

func defaultPath(env environ) (string, error) {
	dir, err := configFolder.dir(env)
	if err != nil {
		return "", fmt.Errorf("find default config path: %w", err)
	}
	return filepath.Join(dir, "config.toml"), nil
}

// appFolder is where each operating system keeps one kind of
// application directory, by its conventions.
type appFolder struct {
	// windowsVar names the variable (APPDATA), windowsID the known folder
	// and windowsRel the place under the home directory that hold it on
	// Windows, in that order of preference.
	windowsVar, windowsID, windowsRel string
	// macRel is its place under the home directory on macOS.
	macRel string
	// xdgVar names the XDG base directory variable, and xdgRel the place
	// under the home directory when it is unset, elsewhere.
	xdgVar, xdgRel string
}

var (
	// configFolder holds DefaultConfigDir.
	configFolder = appFolder{
		windowsVar: "APPDATA", windowsID: folderRoaming, windowsRel: filepath.Join("AppData", "Roaming"),
		macRel: filepath.Join("Library", "Application Support"),
		xdgVar: "XDG_CONFIG_HOME", xdgRel: ".config",
	}
	// dataFolder holds DefaultDataDir.
	dataFolder = appFolder{
		windowsVar: "LOCALAPPDATA", windowsID: folderLocal, windowsRel: filepath.Join("AppData", "Local"),
		macRel: filepath.Join("Library", "Application Support"),
		xdgVar: "XDG_DATA_HOME", xdgRel: filepath.Join(".local", "share"),
	}
)

// dir returns openhuman-host's directory inside the folder, by the
// conventions of env's operating system.
func (f appFolder) dir(env environ) (string, error) {
	var base string
	var err error
	switch env.goos {
	case "windows":
		base, err = windowsFolder(env, f.windowsVar, f.windowsID, f.windowsRel)
	case "darwin":
		base, err = underHome(env, f.macRel)
	default:
		base, err = xdgHome(env, f.xdgVar, f.xdgRel)
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(base, appDir), nil
}

func dataDir(configured string, env environ) (string, error) {
	if configured == "" {
		dir, err := dataFolder.dir(env)
		if err != nil {
			return "", fmt.Errorf("find data directory: %w; set server.data_dir", err)
		}
		return dir, nil
	}
	p, err := expandHome(configured, env)
	if err != nil {
		return "", fmt.Errorf("server.data_dir: %w", err)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("server.data_dir: must be an absolute path or start with ~/; got %q", configured)
	}
	return filepath.Clean(p), nil
}

// xdgHome returns the XDG base directory named by variable, or home/fallback.
// The XDG spec says relative values are invalid and must be ignored.
func xdgHome(env environ, variable, fallback string) (string, error) {
	if v := env.getenv(variable); v != "" && filepath.IsAbs(v) {
		return filepath.Clean(v), nil
	}
	return underHome(env, fallback)
}

// windowsFolder returns the folder the variable names when it is absolute,
// else the known folder id as the shell has it, else home/fallback, the
// folder's standard place.
func windowsFolder(env environ, variable, id, fallback string) (string, error) {
	if v := env.getenv(variable); v != "" && filepath.IsAbs(v) {
		return filepath.Clean(v), nil
	}
	if env.folder != nil {
		if dir, err := env.folder(id); err == nil && dir != "" && filepath.IsAbs(dir) {
			return filepath.Clean(dir), nil
		}
	}
	return underHome(env, fallback)
}

// underHome returns rel inside the home directory.
func underHome(env environ, rel string) (string, error) {
	home, err := env.home()
	if err != nil {
		return "", err
	}
	if home == "" {
		return "", errors.New("home directory unknown")
	}
	return filepath.Join(home, rel), nil
}

// homePrefixed reports whether p is "~" or starts with "~/" (on Windows
// also "~\"), which expandHome replaces with the home directory.
func homePrefixed(p string) bool {
	return p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "~"+string(filepath.Separator))
}

// expandHome replaces a leading "~" or "~/" with the home directory.
func expandHome(p string, env environ) (string, error) {
	if !homePrefixed(p) {
		return p, nil
	}
	home, err := env.home()
	if err != nil {
		return "", fmt.Errorf("expand ~: %w", err)
	}
	if home == "" {
		return "", errors.New("expand ~: home directory unknown")
	}
	return filepath.Join(home, p[1:]), nil
}
