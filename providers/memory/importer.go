package memory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// importNamespace holds imported files; their keys are absolute paths
	// and their document ids file:<path>.
	importNamespace = "file"
	// maxImportBytes bounds one imported file. Larger files are skipped
	// and reported, never cut.
	maxImportBytes = 16 << 20
	// importBatchChunks and importBatchFiles bound one write transaction
	// of an import, so a running server's writes wait at most for one
	// batch. Every transaction has a cost of its own (FTS5 writes an index
	// segment at each commit), so a batch is as large as that allows.
	importBatchChunks = 512
	importBatchFiles  = 256
)

// importExtensions are the file types an import loads, compared without
// regard to case.
var importExtensions = []string{".md", ".markdown", ".txt"}

// ImportSummary says what [Provider.Import] did.
type ImportSummary struct {
	// Files counts the files found: those with an importable extension in
	// the directories named, and every file named directly.
	Files int
	// Written counts the files stored because they were new or changed;
	// Unchanged those already stored with the same content and title.
	Written, Unchanged int
	// Chunks counts the chunks of every imported file, written or
	// unchanged: importing the same files again gives the same number.
	Chunks int
	// Skipped lists files that were not imported, with the reason.
	Skipped []ImportSkip
	// Removed lists the files whose documents were removed because the
	// file is no longer on disk (see [ImportOptions.KeepMissing]), sorted.
	Removed []string
	// Elapsed is the wall-clock time of the import.
	Elapsed time.Duration
}

// ImportSkip is a file an import did not load and why.
type ImportSkip struct {
	Path   string
	Reason string
}

// ImportProgress is reported after every batch an import writes.
type ImportProgress struct {
	// Done counts the files handled so far, out of Total.
	Done, Total int
	// Chunks counts the chunks of the files handled so far.
	Chunks int
}

// importFile is a file to import, with the source it belongs to.
type importFile struct {
	path    string
	rootDir string
	// target is path with every symbolic link resolved, as checked when
	// the file was found; the file is read only if it still resolves there.
	target string
}

// ImportOptions configures [Provider.Import]. A nil *ImportOptions means
// the defaults.
type ImportOptions struct {
	// FollowLinks imports files that symbolic links point to outside the
	// folder being imported. Default false: such links are skipped and
	// reported. Files under /proc, /sys and /dev, and anything that is not
	// a regular file, are never read either way.
	FollowLinks bool
	// Progress, when not nil, is called after each batch written.
	Progress func(ImportProgress)
	// KeepMissing keeps the documents of files that were imported before
	// from a folder imported again (or from the folder of a file named)
	// but are no longer on disk. Default false: they are removed, with
	// their notes, versions and entities, as memory_forget would.
	KeepMissing bool
}

// Import loads Markdown and text files (.md, .markdown, .txt) into memory
// as documents of source kind "document", one source per directory named
// (file:<absolute directory>; a file named directly belongs to its
// directory's source). Directories are walked recursively, skipping
// hidden entries (names starting with a dot) and symbolic links to
// directories. A symbolic link to a file is followed only when the file
// resolves inside the folder being imported (or the folder of a file
// named directly), unless opts.FollowLinks; files under /proc, /sys and
// /dev and anything that is not a regular file are never read. Every
// skipped path is listed in the summary with the reason. Each file's title is its first Markdown heading,
// else its name without the extension; its document id is file:<absolute
// path>. Importing again is idempotent: unchanged files are left alone,
// changed files are updated in place. Files that are not valid UTF-8,
// empty, or larger than 16 MiB are skipped and listed in the summary.
//
// Documents of files imported before from the same folders (the folders
// named, and the folders of the files named) whose files are no longer on
// disk are removed, and listed in the summary, unless opts.KeepMissing.
//
// Every path must exist; otherwise Import returns an error before writing
// anything. opts.Progress, when not nil, is called after each batch. Writes
// are committed in batches of at most 256 files and about 512 chunks (a
// larger file is a batch of its own), so an interrupted import keeps the
// batches it finished; running it again completes it.
func (p *Provider) Import(ctx context.Context, paths []string, opts *ImportOptions) (ImportSummary, error) {
	start := time.Now()
	var o ImportOptions
	if opts != nil {
		o = *opts
	}
	progress := o.Progress
	p.mu.Lock()
	st := p.store
	p.mu.Unlock()
	if st == nil {
		return ImportSummary{}, errors.New("memory provider is not configured")
	}
	var sum ImportSummary
	files, roots, err := collectImportFiles(paths, o.FollowLinks, &sum)
	if err != nil {
		return sum, err
	}
	// Files counts what was found: importable files and the links and
	// files named directly that were skipped while looking.
	sum.Files = len(files) + len(sum.Skipped)

	// Files are read, cut into chunks and hashed for the next batch while
	// the one before is written: the writer waits on SQLite, and reading
	// need not wait for it.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	batches := make(chan importBatch, 1)
	go readImportBatches(rctx, files, batches)
	for b := range batches {
		sum.Skipped = append(sum.Skipped, b.skipped...)
		if len(b.docs) == 0 {
			continue
		}
		results, err := st.putDocuments(ctx, b.docs, true)
		if err != nil {
			stop()
			for range batches {
			}
			return sum, fmt.Errorf("import: %w", err)
		}
		var fresh []chunkRow
		for i, r := range results {
			if r.Unchanged {
				sum.Unchanged++
			} else {
				sum.Written++
			}
			sum.Chunks += len(b.docs[i].Pieces)
			fresh = append(fresh, r.Fresh...)
		}
		p.afterWrite(ctx, fresh)
		if progress != nil {
			progress(ImportProgress{Done: b.read, Total: len(files), Chunks: sum.Chunks})
		}
	}
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	if !o.KeepMissing {
		if sum.Removed, err = st.removeMissingFiles(ctx, roots); err != nil {
			return sum, fmt.Errorf("import: %w", err)
		}
	}
	sum.Elapsed = time.Since(start)
	p.logger.Info("imported files", "files", sum.Files, "written", sum.Written, "unchanged", sum.Unchanged,
		"skipped", len(sum.Skipped), "chunks", sum.Chunks, "elapsed", sum.Elapsed)
	return sum, nil
}

// importBatch is the documents of one write of an import, with the files
// skipped since the batch before.
type importBatch struct {
	docs    []document
	skipped []ImportSkip
	// read counts the files read so far, this batch's and skipped ones
	// included.
	read int
}

// readImportBatches reads files in order into batches of at most
// importBatchFiles files and importBatchChunks chunks (or one file, of
// any size) and sends them to out, which it closes when done or when ctx
// ends.
func readImportBatches(ctx context.Context, files []importFile, out chan<- importBatch) {
	defer close(out)
	var b importBatch
	chunks := 0
	send := func() bool {
		select {
		case out <- b:
			b, chunks = importBatch{read: b.read}, 0
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return
		}
		doc, reason := readImportFile(f)
		b.read++
		if reason != "" {
			b.skipped = append(b.skipped, ImportSkip{Path: f.path, Reason: reason})
			continue
		}
		b.docs = append(b.docs, doc)
		chunks += len(doc.Pieces)
		if len(b.docs) >= importBatchFiles || chunks >= importBatchChunks {
			if !send() {
				return
			}
		}
	}
	if len(b.docs) > 0 || len(b.skipped) > 0 {
		send()
	}
}

// notImportable is the skip reason of files with another extension named
// directly.
const notImportable = "not a .md, .markdown or .txt file"

// collectImportFiles resolves paths to the files to import, sorted by
// path and without duplicates, and the folders whose sources they belong
// to. Files named directly with another extension, and links and special
// files the import must not read, are added to sum.Skipped.
func collectImportFiles(paths []string, follow bool, sum *ImportSummary) ([]importFile, []string, error) {
	if len(paths) == 0 {
		return nil, nil, errors.New("import: name at least one file or directory")
	}
	var roots []string
	seen := map[string]bool{}
	var files []importFile
	skip := func(path, reason string) { sum.Skipped = append(sum.Skipped, ImportSkip{Path: path, Reason: reason}) }
	// consider adds the file at path (found under root, whose real path is
	// realRoot) unless it must be skipped.
	consider := func(path, root, realRoot string, walked fs.DirEntry) {
		if seen[path] {
			return
		}
		var target, reason string
		if walked != nil && walked.Type().IsRegular() {
			// A regular file the walk found is no link, and every folder
			// on its way from root is a real one (the walk enters no
			// link), so its real path is realRoot's with the same rest:
			// no need to resolve it component by component. Reading
			// checks again that the path still leads there.
			rel, err := filepath.Rel(root, path)
			if err != nil {
				skip(path, "cannot be read: "+err.Error())
				return
			}
			target = filepath.Join(realRoot, rel)
			if systemPath(target) {
				skip(path, "it is in "+systemDirOf(target)+", whose files are never imported")
				return
			}
		} else if target, reason = checkImportPath(path, realRoot, follow); reason != "" {
			skip(path, reason)
			return
		}
		seen[path] = true
		files = append(files, importFile{path: path, rootDir: root, target: target})
	}
	for _, arg := range paths {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, nil, fmt.Errorf("import: %s: %w", arg, err)
		}
		info, err := os.Stat(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("import: %w", err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil && (systemPath(abs) || systemPath(real)) {
			skip(abs, "it is in "+nonEmptyDir(systemDirOf(abs), systemDirOf(real))+", whose files are never imported")
			continue
		}
		if !info.IsDir() {
			if !importable(abs) {
				skip(abs, notImportable)
				continue
			}
			root := filepath.Dir(abs)
			realRoot, err := filepath.EvalSymlinks(root)
			if err != nil {
				return nil, nil, fmt.Errorf("import: %w", err)
			}
			consider(abs, root, realRoot, nil)
			continue
		}
		realRoot, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("import: %w", err)
		}
		walkRoot := abs
		if li, err := os.Lstat(abs); err == nil && li.Mode()&fs.ModeSymlink != 0 {
			// The folder named is itself a link: walk where it points.
			walkRoot = realRoot
		}
		err = filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == walkRoot {
					return fmt.Errorf("import: %w", err)
				}
				// An unreadable folder or entry is reported, and the
				// walk goes on with the rest.
				skip(path, "cannot be read: "+unwrapPathError(err))
				if d != nil && d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if path != walkRoot && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case d.Type()&fs.ModeSymlink != 0 && !importable(path):
				// Say so when it leads to a folder, whose files a reader
				// might expect to be imported.
				if info, err := os.Stat(path); err == nil && info.IsDir() {
					skip(path, "a symbolic link to a folder; links to folders are not followed (import the folder itself)")
				}
			case !d.IsDir() && importable(path):
				consider(path, walkRoot, realRoot, d)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		roots = append(roots, walkRoot)
	}
	slices.SortFunc(files, func(a, b importFile) int { return strings.Compare(a.path, b.path) })
	for _, f := range files {
		roots = append(roots, f.rootDir)
	}
	slices.Sort(roots)
	return files, slices.Compact(roots), nil
}

// checkImportPath decides whether the file at path, found while importing
// the folder whose real path (links resolved) is realRoot, may be read. It
// returns path with every link resolved, or the reason to skip it: a
// broken link; a link to a directory or to anything but a regular file; a
// path under /proc, /sys or /dev; or, unless follow, a link whose target
// is outside realRoot. Links to directories are never followed, so a walk
// never loops.
func checkImportPath(path, realRoot string, follow bool) (string, string) {
	li, err := os.Lstat(path)
	if err != nil {
		return "", "cannot be read: " + unwrapPathError(err)
	}
	link := li.Mode()&fs.ModeSymlink != 0
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", "a symbolic link that leads nowhere: " + unwrapPathError(err)
	}
	if systemPath(target) {
		return "", "it is in " + systemDirOf(target) + ", whose files are never imported"
	}
	info, err := os.Stat(target)
	switch {
	case err != nil:
		return "", "cannot be read: " + unwrapPathError(err)
	case link && !info.Mode().IsRegular():
		return "", "a symbolic link to something other than a file"
	case !info.Mode().IsRegular():
		return "", "not a regular file"
	case link && !follow && !within(realRoot, target):
		return "", "a symbolic link to " + target + ", outside " + realRoot + "; --follow-links imports such files"
	}
	return target, ""
}

// systemDirs hold the kernel's and devices' pseudo-files, never imported:
// /proc/self/environ reads as a regular file and holds the environment.
var systemDirs = []string{"/proc", "/sys", "/dev"}

// systemPath reports whether path (with links resolved) is in one of
// systemDirs.
func systemPath(path string) bool { return systemDirOf(path) != "" }

func systemDirOf(path string) string {
	if filepath.Separator != '/' {
		return ""
	}
	for _, d := range systemDirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return d
		}
	}
	return ""
}

// nonEmptyDir returns a, or b when a is empty.
func nonEmptyDir(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// within reports whether path is root or inside it; both are clean
// absolute paths.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// unwrapPathError drops the operation and path that *fs.PathError adds,
// since skip reasons are listed next to their path already.
func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// importable reports whether path has an extension an import loads.
func importable(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return slices.Contains(importExtensions, ext)
}

// readImportFile reads f and returns the document to write, or a reason to
// skip it.
func readImportFile(f importFile) (document, string) {
	file, err := os.Open(f.target)
	if err != nil {
		return document{}, "cannot be read: " + unwrapPathError(err)
	}
	defer file.Close()
	info, err := file.Stat()
	switch {
	case err != nil:
		return document{}, "cannot be read: " + unwrapPathError(err)
	case !info.Mode().IsRegular():
		return document{}, "not a regular file"
	case !stillResolves(f, info):
		return document{}, "it was replaced while being imported; import it again"
	case info.Size() > maxImportBytes:
		return document{}, fmt.Sprintf("larger than %d MiB (%d bytes)", maxImportBytes>>20, info.Size())
	}
	// Read one byte past the limit: a file that grew since Stat is
	// refused, never read whole. The buffer has room for the size Stat
	// gave, so a file that did not change is read without growing it.
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(file, maxImportBytes+1)); err != nil {
		return document{}, "cannot be read: " + unwrapPathError(err)
	}
	data := buf.Bytes()
	if len(data) > maxImportBytes {
		return document{}, fmt.Sprintf("larger than %d MiB (it grew while being read)", maxImportBytes>>20)
	}
	if !utf8.Valid(data) {
		return document{}, "not UTF-8 text"
	}
	content := strings.TrimPrefix(string(data), "\uFEFF")
	if strings.TrimSpace(content) == "" {
		return document{}, "empty"
	}
	id := importNamespace + ":" + f.path
	pieces := splitChunks(content, maxChunkRunes)
	ids := make([]string, len(pieces))
	for seq, p := range pieces {
		ids[seq] = chunkID(id, seq, p)
	}
	return document{
		ID:            id,
		SourceID:      importNamespace + ":" + f.rootDir,
		SourceKind:    SourceKindDocument,
		SourceName:    "Files imported from " + f.rootDir,
		Namespace:     importNamespace,
		Key:           f.path,
		Title:         importTitle(f.path, content),
		Tags:          []string{},
		Pieces:        pieces,
		ChunkIDs:      ids,
		ContentSHA256: contentHash(content),
	}, ""
}

// stillResolves reports whether f.path still leads to the file that was
// opened (info), so that a link swapped in after the file was checked is
// not read.
func stillResolves(f importFile, info fs.FileInfo) bool {
	target, err := filepath.EvalSymlinks(f.path)
	if err != nil || target != f.target {
		return false
	}
	now, err := os.Stat(target)
	return err == nil && os.SameFile(now, info)
}

// importTitle is a file's first Markdown ATX heading ("# Title") within its
// first 50 lines, else its name without the extension; at most
// maxTitleRunes characters.
func importTitle(path, content string) string {
	title := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".md" || ext == ".markdown" {
		sc := bufio.NewScanner(strings.NewReader(content))
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for i := 0; i < 50 && sc.Scan(); i++ {
			line := strings.TrimSpace(sc.Text())
			if h := strings.TrimLeft(line, "#"); len(h) < len(line) && len(line)-len(h) <= 6 && strings.HasPrefix(h, " ") {
				if h = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(h), "#")); h != "" {
					title = h
					break
				}
			}
		}
	}
	if strings.TrimSpace(title) == "" {
		title = filepath.Base(path)
	}
	if utf8.RuneCountInString(title) > maxTitleRunes {
		title = string([]rune(title)[:maxTitleRunes])
	}
	return title
}

// Stats counts what memory holds.
type Stats struct {
	Sources, Documents, Chunks, Entities, ChunkTags, Notes int64
	// Embeddings counts chunks with an embedding from any model.
	Embeddings int64
	// SchemaVersion is the database's schema version (on PostgreSQL, its
	// newest memory migration).
	SchemaVersion int
	// DBBytes is the size of memory.db with its write-ahead log, in bytes;
	// on PostgreSQL, of the memory tables with their indexes.
	DBBytes int64
	// Path is the database file; on PostgreSQL, the server and database,
	// without credentials.
	Path string
}

// statsCounts is the columns of Stats's query that SQLite and PostgreSQL
// share: sources, documents, chunks, entities with mentions, chunk tags,
// notes and chunk embeddings, in Stats's field order.
const statsCounts = `(SELECT COUNT(*) FROM sources),
		(SELECT COUNT(*) FROM documents),
		(SELECT COUNT(*) FROM chunks),
		(SELECT COUNT(*) FROM entities WHERE mention_count > 0),
		(SELECT COUNT(*) FROM chunk_tags),
		(SELECT COUNT(*) FROM documents WHERE key LIKE 'mcp-note-%'),
		(SELECT COUNT(*) FROM chunk_embeddings)`

// Stats returns counts of what memory holds and the database's size.
func (p *Provider) Stats(ctx context.Context) (Stats, error) {
	p.mu.Lock()
	st := p.store
	p.mu.Unlock()
	if st == nil {
		return Stats{}, errors.New("memory provider is not configured")
	}
	if st.postgres {
		return st.statsPostgres(ctx)
	}
	var s Stats
	err := st.db.WithContext(ctx).Raw(`SELECT `+statsCounts+`,
		(SELECT MAX(version) FROM schema_migrations)`).Row().Scan(
		&s.Sources, &s.Documents, &s.Chunks, &s.Entities, &s.ChunkTags, &s.Notes, &s.Embeddings, &s.SchemaVersion)
	if err != nil {
		return Stats{}, fmt.Errorf("memory stats: %w", err)
	}
	s.Path = st.path
	for _, suffix := range []string{"", "-wal"} {
		if info, err := os.Stat(st.path + suffix); err == nil {
			s.DBBytes += info.Size()
		}
	}
	return s, nil
}

// removeMissingFiles forgets the imported documents of the sources of
// roots whose files no longer exist, and returns their paths, sorted. A
// file that cannot be checked (a folder without permission, say) is kept.
func (s *store) removeMissingFiles(ctx context.Context, roots []string) ([]string, error) {
	if len(roots) == 0 {
		return nil, nil
	}
	sources := make([]string, len(roots))
	for i, r := range roots {
		sources[i] = importNamespace + ":" + r
	}
	var docs []struct {
		ID  string `gorm:"column:id"`
		Key string `gorm:"column:key"`
	}
	err := s.db.WithContext(ctx).Raw(`SELECT id, key FROM documents WHERE namespace = ? AND source_id IN ? ORDER BY key`,
		importNamespace, sources).Scan(&docs).Error
	if err != nil {
		return nil, fmt.Errorf("list imported documents: %w", err)
	}
	var gone, ids []string
	for _, d := range docs {
		if _, err := os.Lstat(d.Key); errors.Is(err, fs.ErrNotExist) {
			gone, ids = append(gone, d.Key), append(ids, d.ID)
		}
	}
	for batch := range slices.Chunk(ids, 500) {
		if _, err := s.forget(ctx, forgetSelector{DocumentIDs: batch, Namespaces: []string{importNamespace}, Scope: unrestricted}, false); err != nil {
			return nil, fmt.Errorf("remove documents of missing files: %w", err)
		}
	}
	return gone, nil
}
