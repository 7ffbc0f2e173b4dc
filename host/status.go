package host

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
)

// StatusReport is what a serving host publishes about itself in its
// status file.
type StatusReport struct {
	// Pid is the host's process id.
	Pid int `json:"pid"`
	// Replica is the server's name among replicas ([server] replica, or
	// the host name and port); absent in reports written before it was
	// added.
	Replica string `json:"replica,omitempty"`
	// Started is when the host started.
	Started time.Time `json:"started"`
	// Updated is when the report was written.
	Updated time.Time `json:"updated"`
	// Providers lists every enabled provider, loaded or not, in config
	// order of loading.
	Providers []plugins.Status `json:"providers"`
	// Audit is the health of the audit log; nil in reports written before
	// it was added.
	Audit *AuditStatus `json:"audit,omitempty"`
	// Upstream is the state of each enabled upstream server, as the
	// upstream provider last reported it; empty without one.
	Upstream []upstreamwire.ServerStatus `json:"upstream,omitempty"`
}

// AuditStatus is the health of a host's audit log in its [StatusReport].
type AuditStatus struct {
	// Queued is how many rows wait for the writer.
	Queued int `json:"queued"`
	// Dropped counts the rows of reads and outcomes of acts not recorded
	// since start because the queue was full.
	Dropped uint64 `json:"dropped"`
	// FailingSince is when the current run of failed writes began; absent
	// when the last write succeeded. Acts are refused while their row
	// cannot be written.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// LastError is the last failed write's error while failing.
	LastError string `json:"last_error,omitempty"`
}

// auditStatus is h's audit health for its status report.
func (h *Host) auditStatus() *AuditStatus {
	if h.audit == nil {
		return nil
	}
	st := h.audit.Status()
	out := &AuditStatus{Queued: st.Queued, Dropped: st.Dropped, LastError: st.LastError}
	if !st.FailingSince.IsZero() {
		out.FailingSince = &st.FailingSince
	}
	return out
}

// auditWatchEvery is how often a serving host looks at its audit log's
// health to rewrite its status file when it changed.
const auditWatchEvery = 5 * time.Second

// watchAudit rewrites the status file whenever the audit log starts or
// stops failing or drops rows, until stop is closed.
func (h *Host) watchAudit(stop <-chan struct{}) {
	t := time.NewTicker(auditWatchEvery)
	defer t.Stop()
	var last audit.Status
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		st := h.audit.Status()
		ups := h.upstreamServers()
		h.changeMu.Lock()
		changed := !slices.Equal(ups, h.lastUpstream)
		h.lastUpstream = ups
		if changed || st.Dropped != last.Dropped || st.FailingSince != last.FailingSince {
			h.writeStatus()
		}
		h.changeMu.Unlock()
		last = st
	}
}

// Status returns the state of every enabled provider: those that loaded
// with their current state, then those that did not load as failed with
// the reason.
func (h *Host) Status() []plugins.Status {
	out := make([]plugins.Status, 0, len(h.Providers)+len(h.Failed))
	for _, p := range h.Providers {
		out = append(out, p.Status())
	}
	for _, f := range h.Failed {
		out = append(out, plugins.Status{Name: f.Name, State: plugins.StateFailed, Since: h.started, LastError: f.Err.Error()})
	}
	return out
}

// writeStatus replaces the status file, when there is one, atomically
// (a temporary file renamed over it), so readers never see half a report.
func (h *Host) writeStatus() {
	if h.statusFile == "" {
		return
	}
	var replica string
	if h.Server != nil {
		replica = h.Server.Replica()
	}
	report := StatusReport{Pid: os.Getpid(), Replica: replica, Started: h.started, Updated: time.Now(), Providers: h.Status(), Audit: h.auditStatus(),
		Upstream: h.lastUpstream}
	if err := writeJSONFile(h.statusFile, report); err != nil {
		h.log.Warn("provider status file not written", "path", h.statusFile, "error", err)
	}
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".status-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
