package config

import (
	"errors"
	"fmt"
	"sort"
)

// Error is one invalid config value. Load and Parse return a single *Error or
// several joined with errors.Join, in file order; use errors.As to inspect
// them. Environment overrides are checked once the file is valid.
type Error struct {
	// Source is the file path (or Parse's source) the value came from; empty
	// when it came from an environment variable.
	Source string
	// Line is the 1-based line of the key in Source, 0 when not known.
	Line int
	// Env is the environment variable the value came from, or empty.
	Env string
	// Key is the dotted key path, such as "autonomy.level",
	// "providers.example.sha256" or "autonomy.allowed_tools[1]"; empty only
	// for a syntax error the key of which could not be found.
	Key string
	// Msg says what is wrong and what is accepted.
	Msg string
}

// Error formats e as "source:line: key: msg" for a file value and
// "environment variable NAME: key: msg" for an override.
func (e *Error) Error() string {
	var where string
	switch {
	case e.Env != "":
		where = "environment variable " + e.Env
	case e.Line > 0:
		where = fmt.Sprintf("%s:%d", e.Source, e.Line)
	default:
		where = e.Source
	}
	if e.Key == "" {
		return where + ": " + e.Msg
	}
	return where + ": " + e.Key + ": " + e.Msg
}

// joinErrors orders errs by line (environment errors last) and joins them;
// a single error is returned as is.
func joinErrors(errs []*Error) error {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if (a.Env == "") != (b.Env == "") {
			return a.Env == ""
		}
		return a.Line < b.Line
	})
	if len(errs) == 1 {
		return errs[0]
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}
