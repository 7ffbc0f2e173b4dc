package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// document is the shape of a config file. Its sections point into the Config
// being built, so keys a file leaves out keep their current (default) values.
type document struct {
	Server    *ServerConfig             `toml:"server"`
	Autonomy  *AutonomyConfig           `toml:"autonomy"`
	Audit     *AuditConfig              `toml:"audit"`
	Storage   *StorageConfig            `toml:"storage"`
	Telemetry *TelemetryConfig          `toml:"telemetry"`
	Profiles  map[string]ProfileConfig  `toml:"profiles"`
	Tools     map[string]ToolOverride   `toml:"tools"`
	Providers map[string]map[string]any `toml:"providers"`
	Upstream  *UpstreamConfig           `toml:"upstream"`
	Discovery *DiscoveryConfig          `toml:"discovery"`
}

var documentType = reflect.TypeFor[document]()

// decodeInto merges the TOML document data over c and validates the result.
// On error c is left partly updated.
func decodeInto(c *Config, data []byte, source string) error {
	ix := indexPositions(data)
	d := &decoder{source: source, data: data, ix: ix}
	doc := document{Server: &c.Server, Autonomy: &c.Autonomy, Audit: &c.Audit, Storage: &c.Storage, Telemetry: &c.Telemetry, Upstream: &c.Upstream, Discovery: &c.Discovery}
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&doc)
	var strict *toml.StrictMissingError
	var de *toml.DecodeError
	switch {
	case err == nil:
	case errors.As(err, &strict):
		// Strict errors are found after the whole document is decoded, so
		// the values can still be validated and every problem reported.
		d.unknownKeys(strict)
	case errors.As(err, &de):
		d.decodeError(de)
		return joinErrors(d.errs)
	default:
		return fmt.Errorf("%s: %w", source, err)
	}
	for name, pc := range doc.Profiles {
		pc.Name = name
		if c.Profiles == nil {
			c.Profiles = map[string]ProfileConfig{}
		}
		c.Profiles[name] = pc
	}
	for name, o := range doc.Tools {
		o.Name = name
		if c.Tools == nil {
			c.Tools = map[string]ToolOverride{}
		}
		c.Tools[name] = o
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Providers)) {
		c.Providers[name] = d.provider(name, c.Providers[name], doc.Providers[name])
	}
	d.validate(c)
	if len(d.errs) > 0 {
		return joinErrors(d.errs)
	}
	return nil
}

// decoder collects the errors of one document.
type decoder struct {
	source string
	data   []byte
	ix     *positions
	errs   []*Error
	failed map[string]bool // paths with an error recorded
}

// fail records an error about the value at path, unless one is recorded
// already: a value of the wrong type is not also reported as missing.
func (d *decoder) fail(path, format string, args ...any) {
	if d.failed[path] {
		return
	}
	if d.failed == nil {
		d.failed = map[string]bool{}
	}
	d.failed[path] = true
	d.errs = append(d.errs, &Error{Source: d.source, Line: d.ix.line(path), Key: path, Msg: fmt.Sprintf(format, args...)})
}

// unknownKeys reports each key the document has and the schema lacks, once
// per unknown table or key, listing the keys that are accepted there.
func (d *decoder) unknownKeys(strict *toml.StrictMissingError) {
	seen := map[string]bool{}
	for i := range strict.Errors {
		e := &strict.Errors[i]
		row, _ := e.Position()
		parts := d.ix.fullKey(e.Key(), row)
		if len(parts) == 0 {
			d.errs = append(d.errs, &Error{Source: d.source, Line: row, Key: d.ix.keyOnLine(d.data, row), Msg: "unknown key"})
			continue
		}
		known, parent := resolveSchema(parts)
		if known >= len(parts) {
			known = len(parts) - 1
		}
		path := joinKeys(parts[:known+1])
		if seen[path] {
			continue
		}
		seen[path] = true
		line := d.ix.line(path)
		if _, ok := d.ix.paths[path]; !ok {
			line = row
		}
		d.errs = append(d.errs, &Error{Source: d.source, Line: line, Key: path, Msg: unknownKeyMsg(parts[:known], parent)})
	}
}

func unknownKeyMsg(parent []string, t reflect.Type) string {
	keys := fieldKeys(t)
	if len(keys) == 0 {
		return "unknown key"
	}
	if len(parent) == 0 {
		return "unknown key; valid top-level tables are " + strings.Join(keys, ", ")
	}
	return fmt.Sprintf("unknown key; valid keys in [%s] are %s", joinKeys(parent), strings.Join(keys, ", "))
}

// decodeError reports a syntax or type error. Type errors get a message in
// TOML terms; others keep go-toml's message.
func (d *decoder) decodeError(de *toml.DecodeError) {
	line, _ := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	parts := d.ix.fullKey(de.Key(), line)
	if known, _ := resolveSchema(parts); len(parts) > 0 && known == len(parts) {
		if path, m, ok := d.typeMismatch(parts); ok {
			d.errs = append(d.errs, &Error{Source: d.source, Line: d.ix.line(path), Key: path, Msg: m})
			return
		}
	}
	d.errs = append(d.errs, &Error{Source: d.source, Line: line, Key: d.ix.keyOnLine(d.data, line), Msg: msg})
}

// typeMismatch compares the schema's type at parts with the document's value
// and describes the difference, pointing at the offending array element
// when there is one.
func (d *decoder) typeMismatch(parts []string) (path, msg string, ok bool) {
	path = joinKeys(parts)
	t := schemaType(parts)
	got := d.ix.kind(path)
	if got == unstable.Invalid {
		return "", "", false
	}
	if t.Kind() == reflect.Slice && got == unstable.Array {
		want := describeType(t.Elem())
		for i := 0; ; i++ {
			elem := index(path, i)
			k := d.ix.kind(elem)
			if k == unstable.Invalid {
				return "", "", false
			}
			if describeKind(k) != want {
				return elem, fmt.Sprintf("must be %s; got %s", want, describeKind(k)), true
			}
		}
	}
	want := describeType(t)
	if want == "" || want == describeKind(got) {
		return "", "", false
	}
	return path, fmt.Sprintf("must be %s; got %s", want, describeKind(got)), true
}

// resolveSchema follows parts through the document type and returns how many
// parts name known fields, and the type the last known part leads to.
func resolveSchema(parts []string) (int, reflect.Type) {
	t := documentType
	for i, part := range parts {
		t = deref(t)
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByKey(t, part)
			if !ok {
				return i, t
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		default:
			// Scalars and free-form values accept no further keys: the
			// decoder reports those as type errors, not unknown keys.
			return len(parts), t
		}
	}
	return len(parts), t
}

func schemaType(parts []string) reflect.Type {
	_, t := resolveSchema(parts)
	return deref(t)
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tagName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldKeys lists the TOML keys of a struct type, sorted.
func fieldKeys(t reflect.Type) []string {
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if k := tagName(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// describeType names a schema type the way describeKind names TOML values;
// "" for types that take any value.
func describeType(t reflect.Type) string {
	t = deref(t)
	if t.Kind() == reflect.Slice {
		switch deref(t.Elem()).Kind() {
		case reflect.String:
			return "an array of strings"
		case reflect.Map, reflect.Struct:
			return "an array of tables"
		}
		return "an array"
	}
	if k, ok := tomlKinds[t.Kind()]; ok {
		return describeKind(k)
	}
	return ""
}

// tomlKinds are the TOML kinds of the schema's scalar and table types.
var tomlKinds = map[reflect.Kind]unstable.Kind{
	reflect.String:  unstable.String,
	reflect.Bool:    unstable.Bool,
	reflect.Int:     unstable.Integer,
	reflect.Int64:   unstable.Integer,
	reflect.Float64: unstable.Float,
	reflect.Map:     unstable.Table,
	reflect.Struct:  unstable.Table,
}

func describeKind(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Bool:
		return "a boolean"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Array:
		return "an array"
	case unstable.Table, unstable.InlineTable:
		return "a table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date or time"
	}
	return "a value"
}
