package host

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
)

// ReloadGrace is how long calls running in a provider that a reload stops
// get to finish before the provider's process is stopped.
const ReloadGrace = 10 * time.Second

// ReloadResult says what a [Host.Reload] changed.
type ReloadResult struct {
	// Started lists the providers started (new, enabled, changed or
	// previously failed), Stopped those stopped (removed, disabled or
	// changed), Failed those that did not start, with the reason.
	Started, Stopped []string
	Failed           []plugins.Failure
	// Ignored lists the changed settings a reload cannot apply (transport,
	// address, data directory, audit, log level); they take effect when
	// the server restarts.
	Ignored []string
	// Changed names every setting whose value differs from the running
	// config's ([ChangedKeys]), Ignored ones included; empty when the
	// file says what the running config says.
	Changed []string
}

// Reload makes the running host match cfg, which the caller has already
// loaded and validated: providers that are new, enabled, changed or failed
// are started; removed, disabled or changed ones are stopped (calls
// running in them get ReloadGrace to finish); the security policy, tool
// timeouts and confirmation mode are replaced; and the server swaps its
// catalog, which sends notifications/tools/list_changed (and resources) to
// every connected session when the lists change. Settings a reload cannot
// change are listed in the result and keep their values. It fails, having
// changed nothing, only when cfg's policy is invalid or ctx ends first.
func (h *Host) Reload(ctx context.Context, cfg *config.Config) (ReloadResult, error) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	var res ReloadResult
	pol, err := configPolicy(cfg)
	if err != nil {
		return res, fmt.Errorf("security policy: %w", err)
	}
	res.Ignored = ignoredChanges(h.Config, cfg)
	res.Changed = ChangedKeys(h.Config, cfg)
	var failed []plugins.Failure
	specs, err := providerSpecs(cfg, h.dataDir, h.opts, &failed)
	if err != nil {
		return res, err
	}
	current := map[string]*plugins.Provider{}
	running := make([]runningProvider, 0, len(h.Providers))
	for _, p := range h.Providers {
		current[p.Name] = p
		running = append(running, runningProvider{Spec: p.Spec(), Failed: p.Status().State == plugins.StateFailed})
	}
	plan := planReload(running, specs)
	keep := providersNamed(current, plan.Keep)
	// New instances start before the old ones stop, so a changed
	// provider's tools keep answering; a replacement that fails to start
	// leaves the old instance running.
	loaded, startFailed, err := h.manager.Start(ctx, plan.Start)
	if err != nil {
		return res, fmt.Errorf("start providers: %w", err)
	}
	started := map[string]bool{}
	for _, p := range loaded {
		res.Started = append(res.Started, p.Name)
		started[p.Name] = true
	}
	failedNow := map[string]bool{}
	for _, name := range plan.Stop {
		failedNow[name] = current[name].Status().State == plugins.StateFailed
	}
	stays, stopped := plan.settle(started, failedNow)
	for _, name := range stays {
		keep = append(keep, current[name])
		h.log.Error("the changed provider did not start; the running one stays", "provider", name)
	}
	retire := providersNamed(current, stopped)
	res.Stopped = stopped
	for _, f := range startFailed {
		if slices.ContainsFunc(keep, func(p *plugins.Provider) bool { return p.Name == f.Name }) {
			continue
		}
		failed = append(failed, f)
	}
	// The result reports every start that failed, also those whose old
	// instance stays.
	res.Failed = append(slices.Clone(failed), startFailedKept(startFailed, keep)...)

	h.changeMu.Lock()
	// Keep the config order: built-ins first, then third-party by name.
	byName := map[string]*plugins.Provider{}
	for _, p := range append(keep, loaded...) {
		byName[p.Name] = p
	}
	var providers []*plugins.Provider
	for _, spec := range specs {
		if p, ok := byName[spec.Name]; ok {
			providers = append(providers, p)
		}
	}
	h.Providers, h.Failed, h.Config = providers, failed, cfg
	cat, dispatchers, notLoaded := h.merge()
	pol.Inherit(h.policy)
	h.policy = pol
	h.Server.Reconfigure(h.serverOptions(cfg, pol))
	h.Server.Update(cat, dispatchers, notLoaded)
	for _, p := range loaded {
		// Replacements and newly enabled providers learn what the
		// connected sessions asked of the instances before them.
		h.replayed[p.Name] = p.Pid()
		go h.Server.Replay(context.Background(), p.Name)
	}
	h.writeStatus()
	h.changeMu.Unlock()
	warnUnmatchedPatterns(h.log, cat, "autonomy.allowed_tools", cfg.Autonomy.AllowedTools)
	warnUnmatchedPatterns(h.log, cat, "autonomy.denied_tools", cfg.Autonomy.DeniedTools)
	warnUnmatchedPatterns(h.log, cat, "tools", slices.Sorted(maps.Keys(cfg.Tools)))

	// Retired instances no longer get calls; those running get
	// ReloadGrace to finish.
	var wg sync.WaitGroup
	for _, p := range retire {
		wg.Go(func() { h.manager.Stop(p, ReloadGrace) })
	}
	wg.Wait()
	h.changeMu.Lock()
	h.writeStatus()
	h.changeMu.Unlock()
	return res, nil
}

// runningProvider is what reload planning knows of a running provider.
type runningProvider struct {
	// Spec is the spec it was started from.
	Spec plugins.Spec
	// Failed is whether it failed too often to be restarted.
	Failed bool
}

// reloadPlan is what a reload does with the providers, by name.
type reloadPlan struct {
	// Keep are the running providers left as they are: same spec, not
	// failed.
	Keep []string
	// Stop are the running providers to stop: removed or disabled ones,
	// and changed or failed ones, which Start replaces.
	Stop []string
	// Start are the specs to start: new, changed or failed providers.
	Start []plugins.Spec
	// wanted are the names of the providers the new config runs.
	wanted map[string]bool
}

// planReload compares the running providers with the specs of the new
// config. Keep, Start and the changed providers of Stop come in the order
// of specs, then the removed ones in the order of running.
func planReload(running []runningProvider, specs []plugins.Spec) reloadPlan {
	byName := map[string]runningProvider{}
	for _, r := range running {
		byName[r.Spec.Name] = r
	}
	plan := reloadPlan{wanted: map[string]bool{}}
	for _, spec := range specs {
		plan.wanted[spec.Name] = true
		r, ok := byName[spec.Name]
		switch {
		case ok && sameSpec(r.Spec, spec) && !r.Failed:
			plan.Keep = append(plan.Keep, spec.Name)
		case ok:
			plan.Stop = append(plan.Stop, spec.Name)
			plan.Start = append(plan.Start, spec)
		default:
			plan.Start = append(plan.Start, spec)
		}
	}
	for _, r := range running {
		if !plan.wanted[r.Spec.Name] {
			plan.Stop = append(plan.Stop, r.Spec.Name)
		}
	}
	return plan
}

// settle decides, once the plan's starts are done, which of the providers
// it stops stay running after all: a changed one whose replacement did
// not start (started says which did) and which has not failed (failed
// says which have, by now). It returns those, and the ones to stop, both
// in the order of Stop.
func (plan reloadPlan) settle(started, failed map[string]bool) (stay, stop []string) {
	for _, name := range plan.Stop {
		if plan.wanted[name] && !started[name] && !failed[name] {
			stay = append(stay, name)
			continue
		}
		stop = append(stop, name)
	}
	return stay, stop
}

// providersNamed returns the providers of byName with the given names, in
// their order.
func providersNamed(byName map[string]*plugins.Provider, names []string) []*plugins.Provider {
	out := make([]*plugins.Provider, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out
}

// startFailedKept returns the failures of providers whose old instance
// stays running (failures of others are already in the host's list).
func startFailedKept(failed []plugins.Failure, keep []*plugins.Provider) []plugins.Failure {
	var out []plugins.Failure
	for _, f := range failed {
		if slices.ContainsFunc(keep, func(p *plugins.Provider) bool { return p.Name == f.Name }) {
			out = append(out, f)
		}
	}
	return out
}

// sameSpec reports whether two specs launch the same provider the same way.
func sameSpec(a, b plugins.Spec) bool {
	return a.Name == b.Name && a.Path == b.Path && slices.Equal(a.Args, b.Args) && a.SHA256 == b.SHA256 && a.Verify == b.Verify &&
		bytes.Equal(a.Config, b.Config) && a.DataDir == b.DataDir && maps.Equal(a.Secrets, b.Secrets) && a.StartTimeout == b.StartTimeout &&
		a.Revision == b.Revision && (a.InProcess == nil) == (b.InProcess == nil)
}

// ignoredChanges names the settings that differ between old and next but
// need a restart.
func ignoredChanges(old, next *config.Config) []string {
	var out []string
	add := func(changed bool, key string) {
		if changed {
			out = append(out, key)
		}
	}
	add(old.Server.Transport != next.Server.Transport, "server.transport")
	add(old.Server.Host != next.Server.Host, "server.host")
	add(old.Server.Port != next.Server.Port, "server.port")
	add(old.Server.DataDir != next.Server.DataDir, "server.data_dir")
	add(old.Server.LogLevel != next.Server.LogLevel, "server.log_level")
	add(old.Server.ProviderStartTimeoutSecs != next.Server.ProviderStartTimeoutSecs, "server.provider_start_timeout_secs")
	add(old.Server.MaxRequestBodyBytes != next.Server.MaxRequestBodyBytes, "server.max_request_body_bytes")
	add(old.Server.SessionIdleTimeoutSecs != next.Server.SessionIdleTimeoutSecs, "server.session_idle_timeout_secs")
	add(old.Server.StdioCloseGraceSecs != next.Server.StdioCloseGraceSecs, "server.stdio_close_grace_secs")
	add(old.Server.StdioExitTimeoutSecs != next.Server.StdioExitTimeoutSecs, "server.stdio_exit_timeout_secs")
	add(!slices.Equal(old.Server.AllowedOrigins, next.Server.AllowedOrigins), "server.allowed_origins")
	add(old.Audit.RetainDays != next.Audit.RetainDays, "audit.retain_days")
	add(old.Audit.QueueSize != next.Audit.QueueSize, "audit.queue_size")
	add(old.Storage.Driver != next.Storage.Driver, "storage.driver")
	add(old.Storage.DSNEnv != next.Storage.DSNEnv, "storage.dsn_env")
	return out
}
