package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
)

// watchDebounce is how long the config file must stay quiet after a change
// before it is reloaded: editors write a file in several steps.
const watchDebounce = 300 * time.Millisecond

// reloadOnSignals reloads the config with load on SIGHUP and, with watch,
// whenever the config file changes, until ctx ends. path is the config
// file ("" for the default location). An invalid file changes nothing:
// the errors, with their keys and lines, are logged.
//
// hup is the channel the caller registered for SIGHUP before it started
// the host, so that a SIGHUP during start-up reloads once it is up instead
// of killing the process (nil on Windows, which has no SIGHUP); stopHup
// ends its delivery.
func reloadOnSignals(ctx context.Context, h *host.Host, log hclog.Logger, load func() (*config.Config, error), path string, watch bool, hup <-chan os.Signal, stopHup func()) error {
	if path == "" {
		p, err := config.DefaultPath()
		if err != nil && watch {
			return fmt.Errorf("--watch: no config file to watch: %w; pass --config", err)
		}
		path = p
	}
	var changes <-chan struct{}
	if watch {
		c, err := watchFile(ctx, log, path)
		if err != nil {
			stopHup()
			return err
		}
		changes = c
	}
	go func() {
		defer stopHup()
		for {
			var why string
			select {
			case <-ctx.Done():
				return
			case <-hup:
				why = "SIGHUP"
			case <-changes:
				why = "the config file changed"
			}
			reload(ctx, h, log, load, why)
		}
	}()
	return nil
}

// reload loads the config and applies it to h, logging what changed.
func reload(ctx context.Context, h *host.Host, log hclog.Logger, load func() (*config.Config, error), why string) {
	cfg, err := load()
	if err != nil {
		log.Error("config reload refused; the running configuration is unchanged", "reason", why, "error", err)
		return
	}
	res, err := h.Reload(ctx, cfg)
	if err != nil {
		log.Error("config reload failed", "reason", why, "error", err)
		return
	}
	// What changed, key by key, at info level; values stay out, as
	// settings may hold secrets.
	for _, k := range res.Changed {
		log.Info("config reload: setting changed", "key", k)
	}
	for _, p := range res.Started {
		log.Info("config reload: provider started", "provider", p)
	}
	for _, p := range res.Stopped {
		log.Info("config reload: provider stopped", "provider", p)
	}
	for _, f := range res.Failed {
		log.Error("provider did not load after the reload", "provider", f.Name, "error", f.Err)
	}
	if len(res.Ignored) > 0 {
		log.Warn("these settings take effect only when openhuman-host restarts", "keys", strings.Join(res.Ignored, ", "))
	}
	// One line at the default level (warn), so that every reload shows in
	// a log kept at the default.
	log.Warn("config reloaded", reloadSummary(why, res)...)
}

// reloadSummaryKeys is how many changed keys the summary line names.
const reloadSummaryKeys = 5

// reloadSummary is the arguments of the one-line summary of a reload:
// why, how many settings changed (naming the first few), and the
// providers started, stopped and failed.
func reloadSummary(why string, res host.ReloadResult) []any {
	changed := "none"
	if n := len(res.Changed); n > 0 {
		changed = strings.Join(res.Changed[:min(n, reloadSummaryKeys)], ", ")
		if n > reloadSummaryKeys {
			changed += fmt.Sprintf(" and %d more", n-reloadSummaryKeys)
		}
	}
	args := []any{"reason", why, "changed", changed}
	list := func(key string, names []string) {
		if len(names) > 0 {
			args = append(args, key, strings.Join(names, ","))
		}
	}
	list("started", res.Started)
	list("stopped", res.Stopped)
	var failed []string
	for _, f := range res.Failed {
		failed = append(failed, f.Name)
	}
	list("failed", failed)
	if len(res.Ignored) > 0 {
		args = append(args, "restart_needed", strings.Join(res.Ignored, ","))
	}
	return args
}

// watchFile reports changes to path (including its creation, removal and
// replacement by rename, as editors save) after watchDebounce of quiet. It
// watches the directory, which must exist.
func watchFile(ctx context.Context, log hclog.Logger, path string) (<-chan struct{}, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--watch %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("--watch: %w", err)
	}
	dir := filepath.Dir(abs)
	// A config created later is picked up too: the directory must exist.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("--watch: create %s: %w", dir, err)
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("--watch: cannot watch %s: %w (create the directory, or pass --config)", dir, err)
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		var timer *time.Timer
		var fire <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) != abs {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(watchDebounce)
				} else {
					timer.Reset(watchDebounce)
				}
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("config file watch error", "error", err)
			case <-fire:
				fire = nil
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}
