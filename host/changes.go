package host

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-host/host/config"
)

// ChangedKeys names the settings whose values differ between old and next,
// as dotted config keys ("autonomy.level", "providers.notes.settings.k",
// "upstream.servers.github.timeout_secs"), sorted. A table or entry that
// only one side has is named once with " (added)" or " (removed)". Values
// are never included: settings and env entries may hold secrets. Source
// (the file's path) is not a setting and is left out.
func ChangedKeys(old, next *config.Config) []string {
	var out []string
	a, b := reflect.ValueOf(*old), reflect.ValueOf(*next)
	for i := range a.NumField() {
		f := a.Type().Field(i)
		switch f.Name {
		case "Source":
			continue
		case "Upstream":
			diffUpstream(old.Upstream.Checked, next.Upstream.Checked, &out)
			continue
		}
		diffValue(strings.ToLower(f.Name), a.Field(i), b.Field(i), &out)
	}
	slices.Sort(out)
	return out
}

// diffUpstream names the [[upstream.servers]] entries added, removed or
// changed, by name.
func diffUpstream(old, next []config.UpstreamServer, out *[]string) {
	byName := func(list []config.UpstreamServer) map[string]config.UpstreamServer {
		m := make(map[string]config.UpstreamServer, len(list))
		for _, s := range list {
			m[s.Name] = s
		}
		return m
	}
	a, b := byName(old), byName(next)
	diffValue("upstream.servers", reflect.ValueOf(a), reflect.ValueOf(b), out)
}

// diffValue appends the keys under path whose values differ between a
// and b.
func diffValue(path string, a, b reflect.Value, out *[]string) {
	for a.Kind() == reflect.Interface || a.Kind() == reflect.Pointer {
		if b.Kind() != a.Kind() || a.IsNil() || b.IsNil() {
			break
		}
		a, b = a.Elem(), b.Elem()
	}
	if !a.IsValid() || !b.IsValid() || a.Kind() != b.Kind() || a.Type() != b.Type() {
		if !reflect.DeepEqual(valueOf(a), valueOf(b)) {
			*out = append(*out, path)
		}
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			f := a.Type().Field(i)
			name := fieldKey(f)
			if name == "" {
				continue
			}
			if f.Name == "Settings" && f.Type == reflect.TypeFor[map[string]any]() {
				// A provider's settings are the other keys of its table.
				diffValue(path, a.Field(i), b.Field(i), out)
				continue
			}
			diffValue(path+"."+name, a.Field(i), b.Field(i), out)
		}
	case reflect.Map:
		if a.Type().Key().Kind() != reflect.String {
			break
		}
		keys := map[string]bool{}
		for _, k := range a.MapKeys() {
			keys[k.String()] = true
		}
		for _, k := range b.MapKeys() {
			keys[k.String()] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			kv := reflect.ValueOf(k).Convert(a.Type().Key())
			av, bv := a.MapIndex(kv), b.MapIndex(kv)
			switch {
			case !av.IsValid():
				*out = append(*out, path+"."+k+" (added)")
			case !bv.IsValid():
				*out = append(*out, path+"."+k+" (removed)")
			default:
				diffValue(path+"."+k, av, bv, out)
			}
		}
		return
	}
	if a.Kind() != reflect.Struct && !reflect.DeepEqual(a.Interface(), b.Interface()) {
		*out = append(*out, path)
	}
}

// valueOf is v's value, nil when v is not valid.
func valueOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// fieldKey is the config key of a struct field: its toml tag, else its
// json tag, else its name in lower case; "" for fields that are no key of
// the file (toml tag "-": a table's name, which is its key already, and
// derived values) and unexported ones.
func fieldKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	if v, ok := f.Tag.Lookup("toml"); ok {
		name, _, _ := strings.Cut(v, ",")
		if name == "-" {
			return ""
		}
		if name != "" {
			return name
		}
	}
	if v, ok := f.Tag.Lookup("json"); ok {
		if name, _, _ := strings.Cut(v, ","); name != "" && name != "-" {
			return name
		}
	}
	return strings.ToLower(f.Name)
}
