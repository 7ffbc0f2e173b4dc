package memory

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tempFiles returns a new temporary directory holding files, a path →
// content map.
func tempFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return dir
}

// importPaths imports paths into p with opts, failing the test on an
// error, and returns the summary.
func importPaths(t *testing.T, p *Provider, opts *ImportOptions, paths ...string) ImportSummary {
	t.Helper()
	sum, err := p.Import(t.Context(), paths, opts)
	if err != nil {
		t.Fatalf("import %v: %v", paths, err)
	}
	return sum
}

// writeFiles creates files under dir from a path → content map.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func countRows(t *testing.T, p *Provider, table string) int64 {
	t.Helper()
	var n int64
	if err := p.store.db.Raw(`SELECT COUNT(*) FROM ` + table).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportThousandFilesTwice imports a folder of 1,000 Markdown files
// twice: the second run changes nothing and reports the same chunks.
func TestImportThousandFilesTwice(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string]string{}
	for i := range 1000 {
		var b strings.Builder
		fmt.Fprintf(&b, "# Note %d\n\n", i)
		for range 1 + rng.IntN(12) {
			b.WriteString(longText(1))
			b.WriteString("\n\n")
		}
		files[fmt.Sprintf("d%d/note-%04d.md", i%7, i)] = b.String()
	}
	writeFiles(t, dir, files)

	var calls []ImportProgress
	first := importPaths(t, p, &ImportOptions{Progress: func(pr ImportProgress) { calls = append(calls, pr) }}, dir)
	chunks := countRows(t, p, "chunks")
	if first.Files != 1000 || first.Written != 1000 || first.Unchanged != 0 || len(first.Skipped) != 0 || int64(first.Chunks) != chunks {
		t.Fatalf("first import = %+v, %d chunks stored", first, chunks)
	}
	if chunks <= 1000 {
		t.Fatalf("only %d chunks for 1000 multi-chunk files", chunks)
	}
	if len(calls) < 2 || calls[len(calls)-1] != (ImportProgress{Done: 1000, Total: 1000, Chunks: first.Chunks}) {
		t.Errorf("progress calls: %d, last %+v", len(calls), calls[len(calls)-1])
	}

	second := importPaths(t, p, nil, dir)
	if second.Files != 1000 || second.Written != 0 || second.Unchanged != 1000 || second.Chunks != first.Chunks {
		t.Errorf("second import = %+v, want every file unchanged and %d chunks", second, first.Chunks)
	}
	if got := countRows(t, p, "chunks"); got != chunks {
		t.Errorf("chunks after second import = %d, want %d", got, chunks)
	}
	if got := countRows(t, p, "documents"); got != 1000 {
		t.Errorf("documents = %d", got)
	}
	checkIndexInStep(t, p)
}

func TestImport(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	dir := tempFiles(t, map[string]string{
		"trip.md":            "Intro line\n\n## Lisbon trip ##\n\nFlights with ana@example.com.",
		"plain.txt":          "# not a heading in text files\nPacking list.",
		"sub/deeper/idea.MD": "\uFEFFNo heading here, #ideas.",
		".hidden/secret.md":  "never imported",
		".dot.md":            "never imported either",
		"image.png":          "binary",
		"empty.md":           " \n\n ",
		"latin1.txt":         "caf\xe9",
	})
	sum := importPaths(t, p, nil, dir)
	wantSkipped := []ImportSkip{
		{Path: filepath.Join(dir, "empty.md"), Reason: "empty"},
		{Path: filepath.Join(dir, "latin1.txt"), Reason: "not UTF-8 text"},
	}
	if d := diff(wantSkipped, sum.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	if sum.Files != 5 || sum.Written != 3 || sum.Chunks != 3 {
		t.Errorf("summary = %+v", sum)
	}
	trip := "file:" + filepath.Join(dir, "trip.md")
	hits := search(t, p, "lisbon flights", 0)
	if len(hits) != 1 || hits[0].DocumentID != trip || hits[0].Title != "Lisbon trip" || hits[0].SourceKind != "document" ||
		hits[0].SourceID != "file:"+dir || hits[0].Namespace != "file" {
		t.Errorf("trip hits = %+v", hits)
	}
	for q, title := range map[string]string{"packing": "plain", "ideas": "idea"} {
		if hits := search(t, p, q, 0); len(hits) != 1 || hits[0].Title != title {
			t.Errorf("search %q = %+v, want title %q", q, hits, title)
		}
	}
	if hits := search(t, p, "never imported", 0); len(hits) != 0 {
		t.Errorf("hidden files imported: %+v", hits)
	}
	src := call[listSourcesResult](t, p, ToolListSources, map[string]any{})
	if len(src.Sources) != 1 || src.Sources[0].SourceID != "file:"+dir || src.Sources[0].DisplayName != "Files imported from "+dir ||
		src.Sources[0].SourceKind != "document" || src.Sources[0].ChunkCount != 3 {
		t.Errorf("sources = %+v", src.Sources)
	}

	// A changed file is updated in place; a file named directly joins its
	// directory's source; other extensions named directly are reported.
	writeFiles(t, dir, map[string]string{"trip.md": "# Lisbon trip\n\nFlights moved to May."})
	sum = importPaths(t, p, nil, filepath.Join(dir, "trip.md"), filepath.Join(dir, "image.png"))
	if sum.Written != 1 || sum.Files != 2 || len(sum.Skipped) != 1 || sum.Skipped[0].Reason != notImportable {
		t.Errorf("re-import = %+v", sum)
	}
	if hits := search(t, p, "may", 0); len(hits) != 1 || hits[0].DocumentID != trip {
		t.Errorf("updated file hits = %+v", hits)
	}
	if hits := search(t, p, "ana", 0); len(hits) != 0 {
		t.Errorf("old content still found: %+v", hits)
	}

	// A file deleted from disk leaves memory when its folder is imported
	// again, unless KeepMissing.
	if err := os.Remove(filepath.Join(dir, "plain.txt")); err != nil {
		t.Fatal(err)
	}
	sum, err := p.Import(t.Context(), []string{dir}, &ImportOptions{KeepMissing: true})
	if err != nil || len(sum.Removed) != 0 {
		t.Fatalf("import keeping missing files = %+v, %v", sum, err)
	}
	if hits := search(t, p, "packing", 0); len(hits) != 1 {
		t.Errorf("KeepMissing removed the deleted file's document")
	}
	sum = importPaths(t, p, nil, dir)
	if d := diff([]string{filepath.Join(dir, "plain.txt")}, sum.Removed); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if hits := search(t, p, "packing", 0); len(hits) != 0 {
		t.Errorf("the deleted file is still found: %+v", hits)
	}
	if hits := search(t, p, "lisbon", 0); len(hits) != 1 {
		t.Errorf("a file still on disk was removed: %+v", hits)
	}
	checkIndexInStep(t, p)
}

func TestImportErrors(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	dir := tempFiles(t, map[string]string{"a.md": "alpha"})
	missing := filepath.Join(dir, "nope")
	_, err := p.Import(t.Context(), []string{filepath.Join(dir, "a.md"), missing}, nil)
	if err == nil || err.Error() != "import: stat "+missing+": no such file or directory" {
		t.Errorf("missing path: %v", err)
	}
	if n := countRows(t, p, "documents"); n != 0 {
		t.Errorf("%d documents written before the error", n)
	}
	if _, err := p.Import(t.Context(), nil, nil); err == nil || err.Error() != "import: name at least one file or directory" {
		t.Errorf("no paths: %v", err)
	}
	if _, err := New(nil).Import(t.Context(), []string{dir}, nil); err == nil {
		t.Error("Import before Configure: want an error")
	}
}

func TestImportTitle(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ path, content, want string }{
		"heading":          {"/x/a.md", "# Hello", "Hello"},
		"later heading":    {"/x/a.md", "text\n\n### Third level ###", "Third level"},
		"seven hashes":     {"/x/a.md", "####### not one", "a"},
		"hashtag":          {"/x/a.md", "#tag only", "a"},
		"empty heading":    {"/x/a.md", "#\n# Real", "Real"},
		"text file":        {"/x/notes.txt", "# Not a title", "notes"},
		"markdown ext":     {"/x/b.markdown", "  ## Indented", "Indented"},
		"no heading":       {"/x/My File.md", "body", "My File"},
		"heading too late": {"/x/c.md", strings.Repeat("line\n", 50) + "# Late", "c"},
	}
	for name, tc := range tests {
		if got := importTitle(tc.path, tc.content); got != tc.want {
			t.Errorf("%s: importTitle = %q, want %q", name, got, tc.want)
		}
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	doc := put(t, p, map[string]any{"title": "S", "content": "mail ana@example.com", "tags": []string{"x"}})
	id := firstChunk(t, p, doc.DocumentID)
	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": id, "tags": []string{"a", "b"}})
	call[noteResult](t, p, ToolNote, map[string]any{"chunk_id": id, "note_text": "a note"})
	s, err := p.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantVersion, wantFile := 4, "memory.db"
	if p.store.postgres {
		// The newest PostgreSQL migration; the path names the database.
		wantVersion, wantFile = 3, filepath.Base(p.store.where)
	}
	if s.Sources != 1 || s.Documents != 2 || s.Chunks != 2 || s.Entities != 1 || s.ChunkTags != 2 || s.Notes != 1 ||
		s.Embeddings != 0 || s.SchemaVersion != wantVersion || s.DBBytes <= 0 || filepath.Base(s.Path) != wantFile {
		t.Errorf("stats = %+v", s)
	}
}

// TestImportLinksAndMoves follows links to files inside the folder
// imported, and outside it only with FollowLinks; never links to
// directories; and drops a source that a document moved out of.
func TestImportLinksAndMoves(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	outside := tempFiles(t, map[string]string{"target.md": "# Linked\n\nlinked wombat text", "sub/deep.md": "never via the link"})
	dir := tempFiles(t, map[string]string{"proj/plan.md": "# Plan\n\nplan text", "proj/inner.txt": "inner koala text"})
	for link, target := range map[string]string{
		"link.md": filepath.Join(outside, "target.md"), "dirlink": filepath.Join(outside, "sub"), "dangling.md": filepath.Join(outside, "nope.md"),
		"inlink.md": filepath.Join("proj", "inner.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// First the plan alone, from its own folder; then the whole tree.
	importPaths(t, p, nil, filepath.Join(dir, "proj", "plan.md"))
	sum := importPaths(t, p, nil, dir)
	wantSkipped := []ImportSkip{
		{Path: filepath.Join(dir, "dangling.md"), Reason: "a symbolic link that leads nowhere: no such file or directory"},
		{Path: filepath.Join(dir, "dirlink"), Reason: "a symbolic link to a folder; links to folders are not followed (import the folder itself)"},
		{Path: filepath.Join(dir, "link.md"), Reason: "a symbolic link to " + filepath.Join(outside, "target.md") + ", outside " + dir + "; --follow-links imports such files"},
	}
	if d := diff(wantSkipped, sum.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	if sum.Files != 6 || sum.Written != 3 || sum.Unchanged != 0 {
		t.Errorf("summary = %+v", sum)
	}
	// The file and the link to it inside the folder are two documents of
	// the same text: search shows the text once, browse both.
	if hits := search(t, p, "koala", 0); len(hits) != 1 {
		t.Errorf("koala hits = %+v, want the text once", hits)
	}
	if got := call[browseResult](t, p, ToolBrowse, map[string]any{"query": "koala"}); got.Total != 2 {
		t.Errorf("koala browse = %+v, want the file and the link to it inside the folder", got)
	}
	if hits := search(t, p, "wombat", 0); len(hits) != 0 {
		t.Errorf("a link out of the folder was followed: %+v", hits)
	}

	sum = importPaths(t, p, &ImportOptions{FollowLinks: true}, dir)
	if len(sum.Skipped) != 2 || sum.Skipped[0].Path != filepath.Join(dir, "dangling.md") || sum.Written != 1 {
		t.Errorf("import with FollowLinks = %+v, want the outside link written and only the dangling and folder links skipped", sum)
	}
	if hits := search(t, p, "wombat", 0); len(hits) != 1 || hits[0].DocumentID != "file:"+filepath.Join(dir, "link.md") {
		t.Errorf("linked file hits = %+v", hits)
	}
	if hits := search(t, p, "never", 0); len(hits) != 0 {
		t.Errorf("directory link followed: %+v", hits)
	}
	src := call[listSourcesResult](t, p, ToolListSources, map[string]any{})
	if len(src.Sources) != 1 || src.Sources[0].SourceID != "file:"+dir {
		t.Errorf("sources after the move = %+v", src.Sources)
	}
}

// TestImportConfinement: links to the environment, to system files and
// out of the folder are never imported by default; /proc is never read,
// even with FollowLinks or when a link to it is named directly.
func TestImportConfinement(t *testing.T) {
	// Not parallel: it sets an environment variable to look for.
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc on this system")
	}
	t.Setenv("OPENHUMAN_IMPORT_CANARY", "canary-secret-value")
	p, _ := newProvider(t)
	dir := tempFiles(t, map[string]string{"notes.md": "ordinary notes"})
	for link, target := range map[string]string{"env.txt": "/proc/self/environ", "passwd.txt": "/etc/passwd", "up.md": "../../../../../../etc/hostname"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []*ImportOptions{nil, {FollowLinks: true}} {
		sum := importPaths(t, p, opts, dir, filepath.Join(dir, "env.txt"))
		reasons := map[string]string{}
		for _, s := range sum.Skipped {
			reasons[filepath.Base(s.Path)] = s.Reason
		}
		if r := reasons["env.txt"]; r != "it is in /proc, whose files are never imported" {
			t.Errorf("FollowLinks %v: env.txt skipped for %q, want /proc refused", opts != nil, r)
		}
		if opts == nil && (!strings.Contains(reasons["passwd.txt"], "outside") || !strings.Contains(reasons["up.md"], "outside")) {
			t.Errorf("links out of the folder were not refused: %v", reasons)
		}
	}
	if hits := search(t, p, "canary", 0); len(hits) != 0 {
		t.Errorf("the environment was imported: %+v", hits)
	}
	// System folders named directly, or reached through /proc/self/root,
	// are refused before any walk.
	sum := importPaths(t, p, nil, "/proc/self", "/proc/self/root"+dir)
	if sum.Files != 2 || len(sum.Skipped) != 2 || sum.Skipped[0].Reason != "it is in /proc, whose files are never imported" {
		t.Errorf("import of /proc paths = %+v, want both refused", sum)
	}
}

// TestImportOddFiles: special files named directly or found in a folder,
// and unreadable folders, are skipped and listed; the rest is imported.
func TestImportOddFiles(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Log("running as root: unreadable folders are readable, that part is not checked")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.md")
	mkfifo(t, fifo)
	p, _ := newProvider(t)
	writeFiles(t, dir, map[string]string{"ok.md": "fine text", "locked/inner.md": "locked text"})
	zero := filepath.Join(dir, "zero.md")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "locked"), 0o755) })

	// Named directly: refused before any read (a FIFO would block, /dev/zero
	// never ends).
	sum := importPaths(t, p, nil, fifo, zero)
	want := []ImportSkip{{Path: fifo, Reason: "not a regular file"}, {Path: zero, Reason: "it is in /dev, whose files are never imported"}}
	if d := diff(want, sum.Skipped); d != "" {
		t.Errorf("named directly, skipped (-want +got):\n%s", d)
	}
	sum = importPaths(t, p, nil, dir)
	reasons := map[string]string{}
	for _, s := range sum.Skipped {
		reasons[filepath.Base(s.Path)] = s.Reason
	}
	if reasons["pipe.md"] != "not a regular file" || reasons["zero.md"] != "it is in /dev, whose files are never imported" {
		t.Errorf("in a folder, skipped = %+v", sum.Skipped)
	}
	if os.Geteuid() != 0 && reasons["locked"] != "cannot be read: permission denied" {
		t.Errorf("unreadable folder not reported: %+v", sum.Skipped)
	}
	if hits := search(t, p, "fine", 0); len(hits) != 1 {
		t.Errorf("the readable file was not imported: %+v", hits)
	}
}
