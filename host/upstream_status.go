package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
	"github.com/openhuman/openhuman-host/sdk"
)

// upstreamStatusWait bounds the host's read of the upstream provider's
// per-server state.
const upstreamStatusWait = 2 * time.Second

// UpstreamServers returns the state of each enabled upstream server, as
// the upstream provider reports it now; nil when that provider is not
// running or does not answer within 2 s.
func (h *Host) UpstreamServers() []upstreamwire.ServerStatus { return h.upstreamServers() }

// upstreamServers reads the state of each upstream server from the
// upstream provider ([upstreamwire.StatusURI]); nil when that provider is not
// running or does not answer within upstreamStatusWait.
func (h *Host) upstreamServers() []upstreamwire.ServerStatus {
	if h.manager == nil {
		return nil
	}
	for _, p := range h.manager.Providers() {
		if p.Name != upstreamName(h.opts.Builtins) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), upstreamStatusWait)
		defer cancel()
		res, err := p.ReadResource(ctx, &sdk.ReadResourceRequest{URI: upstreamwire.StatusURI})
		if err != nil || len(res.Contents) != 1 {
			return nil
		}
		var out []upstreamwire.ServerStatus
		if json.Unmarshal([]byte(res.Contents[0].Text), &out) != nil {
			return nil
		}
		return out
	}
	return nil
}

// unknownHint says why a tool is not served: the built-in provider of its
// namespace is disabled (disabledHint), or it has the prefix of an
// upstream server that is not connected, whose state and error it gives.
func (h *Host) unknownHint(cfg *config.Config) func(string) string {
	disabled := disabledHint(cfg, h.opts.Builtins)
	servers := cfg.Upstream.Checked
	return func(tool string) string {
		if hint := disabled(tool); hint != "" {
			return hint
		}
		var owner *config.UpstreamServer
		for i, s := range servers {
			if s.NamedByPrefix(tool) {
				owner = &servers[i]
				break
			}
		}
		if owner == nil {
			return ""
		}
		if !owner.Enabled {
			return fmt.Sprintf("it belongs to upstream server %q, which is disabled (enabled = false)", owner.Name)
		}
		for _, st := range h.upstreamServers() {
			if st.Name != owner.Name {
				continue
			}
			switch {
			case st.State == upstreamwire.StateConnecting:
				return fmt.Sprintf("it belongs to upstream server %q, which is still connecting; its tools appear once it is up", st.Name)
			case st.State == upstreamwire.StateFailed && st.NextAttempt.IsZero():
				return fmt.Sprintf("it belongs to upstream server %q, which cannot start: %s", st.Name, st.Error)
			case st.State == upstreamwire.StateFailed:
				return fmt.Sprintf("it belongs to upstream server %q, which is down (%s); it is tried again in %s",
					st.Name, st.Error, time.Until(st.NextAttempt).Round(time.Second))
			default:
				return fmt.Sprintf("upstream server %q does not list it (run `openhuman-host upstream check %s` to see its tools)", st.Name, st.Name)
			}
		}
		return ""
	}
}
