package host

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestPrivateDataDir(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix file modes")
	}
	for name, tc := range map[string]struct {
		chosen   bool
		want     os.FileMode
		wantLog  string
		existing bool
	}{
		"created":                    {want: 0o700},
		"default and world-readable": {existing: true, want: 0o700, wantLog: "made the data directory private"},
		"chosen and world-readable":  {existing: true, chosen: true, want: 0o755, wantLog: "run chmod 700 on it"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			if tc.existing {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			if err := privateDataDir(dir, tc.chosen, hclog.New(&hclog.LoggerOptions{Output: &logs})); err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != tc.want {
				t.Errorf("mode = %04o, want %04o", got, tc.want)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log = %q, want %q", logs.String(), tc.wantLog)
			}
		})
	}
}
