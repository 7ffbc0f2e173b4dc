package host

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/host/server"
)

// Names of the checks of [Host.Ready], in their order.
const (
	ReadyProviders = "providers"
	ReadyAudit     = "audit"
	ReadyStorage   = "storage"
)

// Ready runs the readiness checks of a serving host within ctx, in this
// order:
//
//   - providers: every enabled provider is running (a disabled one is not
//     checked); one starting, restarting or failed fails it, with its
//     state and last error.
//   - audit: the audit log takes rows ([audit.Log.Check]): its database
//     is open, its last write succeeded, and it accepts a write
//     transaction; the database is named as a path, or as PostgreSQL
//     host:port/database.
//   - storage: the data directory (provider data, status files, the
//     state key) accepts a new file, created and removed at once.
//
// Upstream servers are not checked: their state is theirs, and a replica
// would otherwise be taken out of a load balancer for a server it cannot
// fix. Ready is cheap (one small transaction and one file), so probes may
// call it every few seconds. It is [server.Ready] for
// [server.HTTPOptions].
func (h *Host) Ready(ctx context.Context) []server.ReadyCheck {
	return []server.ReadyCheck{h.readyProviders(), h.readyAudit(ctx), h.readyStorage()}
}

func (h *Host) readyProviders() server.ReadyCheck {
	h.changeMu.Lock()
	status := h.Status()
	h.changeMu.Unlock()
	c := server.ReadyCheck{Name: ReadyProviders, OK: true}
	var running, bad []string
	for _, st := range status {
		if st.State == plugins.StateRunning {
			running = append(running, st.Name)
			continue
		}
		c.OK = false
		msg := fmt.Sprintf("%s is %s", st.Name, st.State)
		if st.LastError != "" {
			msg += ": " + oneLine(st.LastError, 200)
		}
		bad = append(bad, msg)
	}
	switch {
	case !c.OK:
		c.Detail = strings.Join(bad, "; ")
	case len(running) == 0:
		c.Detail = "no provider is enabled"
	default:
		c.Detail = fmt.Sprintf("%d running: %s", len(running), strings.Join(running, ", "))
	}
	return c
}

func (h *Host) readyAudit(ctx context.Context) server.ReadyCheck {
	if h.audit == nil {
		return server.ReadyCheck{Name: ReadyAudit, Detail: "no audit log is open"}
	}
	if err := h.audit.Check(ctx); err != nil {
		return server.ReadyCheck{Name: ReadyAudit, Detail: oneLine(err.Error(), 300)}
	}
	return server.ReadyCheck{Name: ReadyAudit, OK: true, Detail: h.audit.Where() + " takes rows"}
}

func (h *Host) readyStorage() server.ReadyCheck {
	f, err := os.CreateTemp(h.dataDir, ".ready-*")
	if err != nil {
		return server.ReadyCheck{Name: ReadyStorage, Detail: "the data directory accepts no new file: " + oneLine(err.Error(), 300)}
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	if cerr != nil || rerr != nil {
		return server.ReadyCheck{Name: ReadyStorage, Detail: fmt.Sprintf("the data directory %s: %v", h.dataDir, firstErr(cerr, rerr))}
	}
	return server.ReadyCheck{Name: ReadyStorage, OK: true, Detail: "data directory " + h.dataDir + " is writable"}
}

// firstErr is the first error of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// oneLine squeezes s onto one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
