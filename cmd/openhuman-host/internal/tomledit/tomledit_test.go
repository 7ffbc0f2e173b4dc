package tomledit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"

	"github.com/openhuman/openhuman-host/host/config"
)

func TestSetProviderEntry(t *testing.T) {
	t.Parallel()
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	existing := "# my config\n[server]\nlog_level = \"info\"\n\n[providers.hello]\n# keep me\ncommand = \"/old/path\"\nargs = [\n  \"--a\",\n  \"--b\", # two\n]\nsha256 = \"" + strings.Repeat("f", 64) + "\"\ngreeting_suffix = \"!\"\n\n[autonomy]\nlevel = \"full\"\n"
	tests := map[string]struct {
		doc     string
		args    []string
		force   bool
		want    string
		wantErr string
	}{
		"new file": {
			doc:  "",
			args: []string{"-v", `quote"d`},
			want: "[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nargs = [\"-v\", \"quote\\\"d\"]\n",
		},
		"appended to a file without a final newline": {
			doc:  "[server]\nlog_level = \"info\"",
			want: "[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n",
		},
		"existing table refused without force": {
			doc:     existing,
			wantErr: "[providers.hello] already exists; pass --force",
		},
		"force keeps other keys, comments and args": {
			doc:   existing,
			force: true,
			want:  "# my config\n[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n# keep me\nargs = [\n  \"--a\",\n  \"--b\", # two\n]\ngreeting_suffix = \"!\"\n\n[autonomy]\nlevel = \"full\"\n",
		},
		"force with args replaces a multi-line array": {
			doc:   existing,
			args:  []string{"--c"},
			force: true,
			want:  "# my config\n[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nargs = [\"--c\"]\n# keep me\ngreeting_suffix = \"!\"\n\n[autonomy]\nlevel = \"full\"\n",
		},
		"invalid TOML is left alone": {
			doc:     "[server\n",
			wantErr: "not valid TOML, fix it first",
		},
		"force leaves multi-line strings alone": {
			doc: "[providers.hello]\ncommand = \"/old/path\"\nprompt = \"\"\"\ncommand = never obey\nargs = [\n[not a table]\n\"\"\"\n" +
				"note = '''\nsha256 = \"x\"\n'''\nsha256 = \"" + strings.Repeat("f", 64) + "\"\nargs = [\"--a\"]\n\n[autonomy]\nlevel = \"full\"\n",
			args:  []string{"--c"},
			force: true,
			want: "[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nargs = [\"--c\"]\nprompt = \"\"\"\ncommand = never obey\nargs = [\n[not a table]\n\"\"\"\n" +
				"note = '''\nsha256 = \"x\"\n'''\n\n[autonomy]\nlevel = \"full\"\n",
		},
		"force with a multi-line array holding brackets in strings": {
			doc:   "[providers.hello]\nargs = [\n  \"]\", # not the end\n  \"--x\",\n]\ncommand = \"/old\"\nkeep = 1\n",
			args:  []string{},
			force: true,
			want:  "[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nkeep = 1\n",
		},
		"force with quoted keys and header": {
			doc:   "[ providers . \"hello\" ] # mine\n\"command\" = \"/old\"\n'sha256' = \"" + strings.Repeat("f", 64) + "\"\nx = 1\n",
			force: true,
			want:  "[ providers . \"hello\" ] # mine\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nx = 1\n",
		},
		"CRLF file, appended": {
			doc:  "[server]\r\nlog_level = \"info\"\r\n",
			args: []string{"-v"},
			want: "[server]\r\nlog_level = \"info\"\r\n\r\n[providers.hello]\r\ncommand = \"/new/hello\"\r\nsha256 = \"" + sum + "\"\r\nargs = [\"-v\"]\r\n",
		},
		"CRLF file, forced": {
			doc:   "[providers.hello]\r\ncommand = \"/old\"\r\nx = 1\r\n",
			force: true,
			want:  "[providers.hello]\r\ncommand = \"/new/hello\"\r\nsha256 = \"" + sum + "\"\r\nx = 1\r\n",
		},
		"byte order mark kept": {
			doc:  "\ufeff[server]\nlog_level = \"info\"\n",
			want: "\ufeff[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n",
		},
		"byte order mark kept with force": {
			doc:   "\ufeff[providers.hello]\ncommand = \"/old\"\n",
			force: true,
			want:  "\ufeff[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n",
		},
		"readable args": {
			args: []string{"<&>", "tab\there", "two\nlines", "bell\a", "back\\slash", "caf\u00e9", "c1\u0085"},
			want: "[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n" +
				`args = ["<&>", "tab\there", "two\nlines", "bell\u0007", "back\\slash", "café", "c1\u0085"]` + "\n",
		},
		"inline table refused": {
			doc:     "[providers]\nhello = { command = \"/old\" }\n",
			force:   true,
			wantErr: "edit it by hand",
		},
		"an append that would break the file is refused": {
			doc:     "providers = { memory = { enabled = true } }\n",
			wantErr: "edit the file by hand",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := SetProviderEntry([]byte(tc.doc), "hello", "/new/hello", sum, tc.args, tc.force)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
			if _, err := config.Parse(got, "test.toml"); err != nil {
				t.Errorf("result does not load: %v", err)
			}
		})
	}
}

func TestSetProviderEntryRefusesOtherChanges(t *testing.T) {
	t.Parallel()
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	doc := "[server]\nlog_level = \"info\"\nnan = nan\n\n[providers.hello]\ncommand = \"/old\"\nx = 1\n"
	var before map[string]any
	if err := toml.Unmarshal([]byte(doc), &before); err != nil {
		t.Fatal(err)
	}
	good := "[server]\nlog_level = \"info\"\nnan = nan\n\n[providers.hello]\ncommand = \"/new\"\nsha256 = \"" + sum + "\"\nx = 1\n"
	if err := checkEdit(before, []byte(good), "hello", "/new", sum, nil); err != nil {
		t.Errorf("a good edit: %v", err)
	}
	for edited, wantErr := range map[string]string{
		strings.Replace(good, "x = 1", "x = 2", 1):                  "would change other values",
		strings.Replace(good, "log_level = \"info\"\n", "", 1):      "would change other values",
		strings.Replace(good, "[server]\n", "[server]\ny = 1\n", 1): "would change other values",
		strings.Replace(good, "/new", "/other", 1):                  "cannot edit",
		good + "[server\n": "would not be valid TOML",
	} {
		var b map[string]any
		_ = toml.Unmarshal([]byte(doc), &b)
		if err := checkEdit(b, []byte(edited), "hello", "/new", sum, nil); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("checkEdit(%q) = %v, want %q", edited, err, wantErr)
		}
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "<&>", `a"b\c`, "tab\tnl\ncr\rff\fbs\b", "\x00\x1f\x7f\u0085\u009f", "café ✓ 文字", "'''\"\"\""} {
		q := String(s)
		var v struct{ S string }
		if err := toml.Unmarshal([]byte("s = "+q), &v); err != nil || v.S != s {
			t.Errorf("String(%q) = %s, decodes to %q, %v", s, q, v.S, err)
		}
		if strings.ContainsFunc(q, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }) {
			t.Errorf("String(%q) = %q holds control characters", s, q)
		}
	}
}
