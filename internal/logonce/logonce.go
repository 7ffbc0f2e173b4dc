// Package logonce collapses repeated log lines: a warning or error that
// says the same thing again (same logger name, level, message and
// arguments) within a window is counted instead of written, and the next
// time it is written, after the window, it carries how many times it was
// held back. The host's warnings about a config (a deny pattern that
// matches no tool, a setting a reload cannot apply) come back on every
// start of a provider and every reload; an operator reads them once.
package logonce

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultWindow is how long a line is held back after it was written,
// when [Options.Window] is 0.
const DefaultWindow = 10 * time.Minute

// RepeatedKey is the argument a line written again after the window
// carries: how many times it was held back since it was last written.
const RepeatedKey = "repeated"

// maxLines caps the distinct lines remembered; past it the one written
// longest ago is forgotten (and may be written again at once).
const maxLines = 1024

// Options configures [Wrap]; a nil *Options uses every default.
type Options struct {
	// Window is how long after a line was written its repeats are held
	// back. Default 0 means [DefaultWindow]; a negative value disables
	// collapsing.
	Window time.Duration
	// Level is the least level collapsed. Default hclog.NoLevel means
	// hclog.Warn: debug and info lines are always written.
	Level hclog.Level
	// Now is the clock. Default nil means time.Now.
	Now func() time.Time
}

// Wrap returns a logger that writes through l but collapses repeated
// lines of o.Level and above. Loggers derived from it (Named, With,
// ResetNamed) share its memory. It is safe for concurrent use.
func Wrap(l hclog.Logger, o *Options) hclog.Logger {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.Level == hclog.NoLevel {
		opts.Level = hclog.Warn
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Window < 0 {
		return l
	}
	return &logger{Logger: l, s: &state{opts: opts, lines: map[string]*line{}}}
}

// state is what every logger derived from one Wrap shares.
type state struct {
	opts  Options
	mu    sync.Mutex
	lines map[string]*line
}

// line is a line written, and its repeats held back since.
type line struct {
	written time.Time
	held    int
}

// admit reports whether the line key is written now, and how many of its
// repeats were held back since it was last written.
func (s *state) admit(key string) (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if ln, ok := s.lines[key]; ok {
		if now.Sub(ln.written) < s.opts.Window {
			ln.held++
			return false, 0
		}
		held := ln.held
		ln.written, ln.held = now, 0
		return true, held
	}
	if len(s.lines) >= maxLines {
		oldest := ""
		for k, ln := range s.lines {
			if oldest == "" || ln.written.Before(s.lines[oldest].written) {
				oldest = k
			}
		}
		delete(s.lines, oldest)
	}
	s.lines[key] = &line{written: now}
	return true, 0
}

// logger is an hclog.Logger that collapses repeats.
type logger struct {
	hclog.Logger
	s *state
}

// key identifies a line: logger name, implied arguments, level, message
// and arguments.
func (l *logger) key(level hclog.Level, msg string, args []any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%d\x00%s", l.Logger.Name(), level, msg)
	for _, a := range append(l.Logger.ImpliedArgs(), args...) {
		fmt.Fprintf(&b, "\x00%v", a)
	}
	return b.String()
}

// Log writes msg at level unless it repeats a line written within the
// window.
func (l *logger) Log(level hclog.Level, msg string, args ...any) {
	// Lines the logger drops anyway are not remembered.
	if level < l.s.opts.Level || level < l.Logger.GetLevel() {
		l.Logger.Log(level, msg, args...)
		return
	}
	ok, held := l.s.admit(l.key(level, msg, args))
	if !ok {
		return
	}
	if held > 0 {
		args = append(args[:len(args):len(args)], RepeatedKey, held)
	}
	l.Logger.Log(level, msg, args...)
}

// Trace is Log at hclog.Trace.
func (l *logger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }

// Debug is Log at hclog.Debug.
func (l *logger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }

// Info is Log at hclog.Info.
func (l *logger) Info(msg string, args ...any) { l.Log(hclog.Info, msg, args...) }

// Warn is Log at hclog.Warn.
func (l *logger) Warn(msg string, args ...any) { l.Log(hclog.Warn, msg, args...) }

// Error is Log at hclog.Error.
func (l *logger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// With returns a collapsing logger with args implied.
func (l *logger) With(args ...any) hclog.Logger {
	return &logger{Logger: l.Logger.With(args...), s: l.s}
}

// Named returns a collapsing logger with name appended.
func (l *logger) Named(name string) hclog.Logger {
	return &logger{Logger: l.Logger.Named(name), s: l.s}
}

// ResetNamed returns a collapsing logger named name.
func (l *logger) ResetNamed(name string) hclog.Logger {
	return &logger{Logger: l.Logger.ResetNamed(name), s: l.s}
}
