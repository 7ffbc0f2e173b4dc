package plugins

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxStderrLine caps one line of a provider's stderr, in bytes; the rest
// of a longer line is dropped.
const maxStderrLine = 64 << 10

// maxStderrFields caps the key/value pairs taken from one JSON log line.
const maxStderrFields = 32

// stderrLog re-emits a provider's stderr under the provider's logger. It
// is the io.Writer go-plugin copies every stderr line to (ClientConfig
// Stderr), and it replaces go-plugin's own parsing of those lines, which
// panics, taking the host down, on a JSON line whose "@message",
// "@level" or "@timestamp" is not a string. JSON lines in hclog's format
// keep their level, message and fields; other lines are logged at debug
// level, except a Go panic's, which are errors.
type stderrLog struct {
	log hclog.Logger

	mu       sync.Mutex
	line     []byte
	overflow bool // the current line passed maxStderrLine
	inPanic  bool
}

// Write takes any slice of the stream and logs each complete line.
func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(s.line); len(chunk) > room {
			chunk = chunk[:max(room, 0)]
			s.overflow = true
		}
		s.line = append(s.line, chunk...)
		if i < 0 {
			break
		}
		s.emit(s.line, s.overflow)
		s.line, s.overflow = s.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (s *stderrLog) emit(line []byte, truncated bool) {
	text := strings.ToValidUTF8(string(bytes.TrimRight(line, "\r")), "\uFFFD")
	if truncated {
		s.log.Debug(text, "truncated_at_bytes", maxStderrLine)
		return
	}
	if level, msg, fields, ok := parseLogLine(line); ok {
		s.log.Log(level, msg, fields...)
		return
	}
	switch {
	case strings.HasPrefix(text, "panic: "), strings.HasPrefix(text, "fatal error: "):
		s.inPanic = true
		s.log.Error(text)
	case s.inPanic:
		s.log.Error(text)
	case strings.HasPrefix(text, "[ERROR]"):
		s.log.Error(text)
	case strings.HasPrefix(text, "[WARN]"):
		s.log.Warn(text)
	case strings.HasPrefix(text, "[INFO]"):
		s.log.Info(text)
	case strings.HasPrefix(text, "[TRACE]"):
		s.log.Trace(text)
	default:
		s.log.Debug(text)
	}
}

// parseLogLine reads one hclog JSON line: an object with a string
// "@message". A missing or unknown "@level" means debug. Fields other
// than hclog's own (@timestamp, @module, @caller) come back as key/value
// pairs, sorted by key.
func parseLogLine(line []byte) (hclog.Level, string, []any, bool) {
	if len(line) == 0 || line[0] != '{' {
		return 0, "", nil, false
	}
	var raw map[string]any
	if json.Unmarshal(line, &raw) != nil {
		return 0, "", nil, false
	}
	msg, ok := raw["@message"].(string)
	if !ok {
		return 0, "", nil, false
	}
	level := hclog.Debug
	if s, ok := raw["@level"].(string); ok {
		if l := hclog.LevelFromString(s); l != hclog.NoLevel && l != hclog.Off {
			level = l
		}
	}
	var fields []any
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		switch k {
		case "@message", "@level", "@timestamp", "@module", "@caller":
			continue
		}
		if len(fields) == 2*maxStderrFields {
			break
		}
		fields = append(fields, k, raw[k])
	}
	return level, msg, fields, true
}

// stderrParsingOff is the logger handed to go-plugin: the same logger,
// except that the sub-logger go-plugin names after the executable, the
// one it parses stderr lines into, is silent, which turns go-plugin's
// parsing off (its stderr lines reach [stderrLog] instead).
type stderrParsingOff struct {
	hclog.Logger
	executable string // the base name of the provider's executable
}

// Named returns a logger whose level is Off for the executable's name
// (go-plugin skips parsing for a logger at Off; a null logger reports
// NoLevel, which does not), else the embedded logger's Named.
func (l stderrParsingOff) Named(name string) hclog.Logger {
	if name == l.executable {
		return hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	}
	return l.Logger.Named(name)
}
