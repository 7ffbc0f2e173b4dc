package memory

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestExportMarkdown(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	out := filepath.Join(t.TempDir(), "export")
	sum, err := f.p.ExportMarkdown(context.Background(), out, nil)
	if err != nil {
		t.Fatalf("ExportMarkdown: %v", err)
	}
	if sum.Documents != 4 || sum.Folders != 2 || sum.Bytes == 0 {
		t.Errorf("summary %+v, want 4 documents in 2 folders", sum)
	}
	var files []string
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		info, _ := d.Info()
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
			if rel == "." {
				return nil
			}
		} else {
			files = append(files, filepath.ToSlash(rel))
		}
		if runtime.GOOS != "windows" && info.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", rel, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"mcp/mcp-store-alpha-plan.md", "mcp/mcp-store-gamma.md",
		"work/mcp-note-" + f.beta.ChunkIDs[0] + ".md", "work/mcp-store-beta-notes.md"}
	if d := diff(wantFiles, files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	body, err := os.ReadFile(filepath.Join(out, "mcp", "mcp-store-alpha-plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	if err := f.p.store.db.Raw(`SELECT content FROM chunks WHERE document_id = ? ORDER BY seq`, f.alpha.DocumentID).Scan(&pieces).Error; err != nil {
		t.Fatal(err)
	}
	content := strings.Join(pieces, "")
	want := "---\ntitle: \"Alpha <plan>\"\nid: \"mcp/mcp-store-alpha-plan\"\nsource: \"mcp:mcp\"\ntags: [\"plan\", \"alpha\"]\n" +
		"updated: 2023-11-14T22:13:20.000Z\n---\n\n" + content
	if !strings.HasSuffix(content, "\n") {
		want += "\n"
	}
	if string(body) != want {
		t.Errorf("alpha's file:\n%.400s\nwant:\n%.400s", body, want)
	}
	note, _ := os.ReadFile(filepath.Join(out, "work", "mcp-note-"+f.beta.ChunkIDs[0]+".md"))
	if !strings.Contains(string(note), "annotates: \""+f.beta.ChunkIDs[0]+"\"\n---\n\nCheck the figures with @ana.\n") {
		t.Errorf("the note's file:\n%s", note)
	}

	// A folder that is not empty is refused, unless overwriting.
	if _, err := f.p.ExportMarkdown(context.Background(), out, nil); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("ExportMarkdown into a non-empty folder = %v", err)
	}
	if err := os.WriteFile(filepath.Join(out, "mcp", "mcp-store-gamma.md"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err = f.p.ExportMarkdown(context.Background(), out, &MarkdownExportOptions{Overwrite: true, Namespaces: []string{"mcp"}})
	if err != nil || sum.Documents != 2 || sum.Folders != 0 {
		t.Fatalf("ExportMarkdown with Overwrite = %+v, %v", sum, err)
	}
	gamma, _ := os.ReadFile(filepath.Join(out, "mcp", "mcp-store-gamma.md"))
	if !strings.HasSuffix(string(gamma), "---\n\nNothing to see.\n") {
		t.Errorf("gamma's file after overwriting:\n%s", gamma)
	}
}

func TestSafeName(t *testing.T) {
	t.Parallel()
	checkMapping(t, "safeName", safeName, map[string]string{
		"mcp-store-plan":        "mcp-store-plan",
		`a<b>c:d"e/f\g|h?i*j`:   "a_b_c_d_e_f_g_h_i_j",
		"tab\there\x00":         "tab_here_",
		".hidden":               "_hidden",
		"trailing. . ":          "trailing",
		"   ":                   "untitled",
		"":                      "untitled",
		"CON":                   "_CON",
		"nul.txt":               "_nul.txt",
		"Com1":                  "_Com1",
		"LPT¹":                  "_LPT¹",
		"console":               "console",
		"ünïcødé 日本":            "ünïcødé 日本",
		strings.Repeat("é", 80): strings.Repeat("é", 50),
	})
	if got := keyBase("/home/ana/notes/Plan.MD"); got != "Plan" {
		t.Errorf("keyBase of a path = %q", got)
	}
	used := map[string]bool{}
	var got []string
	for _, n := range []string{"Plan", "plan", "PLAN", "plan-2"} {
		got = append(got, uniqueName(n, ".md", used))
	}
	if want := []string{"Plan.md", "plan-2.md", "PLAN-3.md", "plan-2-2.md"}; !slices.Equal(got, want) {
		t.Errorf("uniqueName = %q, want %q", got, want)
	}
}
