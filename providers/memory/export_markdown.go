package memory

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxMarkdownName bounds a file or folder name of a Markdown export before
// its disambiguating suffix and extension, in bytes: with them it stays
// well under the 255 bytes (or UTF-16 units) every common file system
// allows.
const maxMarkdownName = 100

// MarkdownExportOptions configures [Provider.ExportMarkdown]. A nil
// *MarkdownExportOptions exports every namespace into a new or empty
// folder.
type MarkdownExportOptions struct {
	// Namespaces limits the export to these namespaces (exact names);
	// empty (the default) exports all.
	Namespaces []string
	// Overwrite allows a folder that is not empty: files of the export
	// replace files with the same names, other files are left alone.
	// Default false: a non-empty folder is refused.
	Overwrite bool
}

// MarkdownExportSummary says what [Provider.ExportMarkdown] wrote.
type MarkdownExportSummary struct {
	// Documents counts the files written, one per document; Folders the
	// namespace folders.
	Documents, Folders int
	// Bytes is the size of the files written, in bytes.
	Bytes int64
}

// ExportMarkdown writes every document to dir as Markdown, for reading
// and for other tools: one folder per namespace and in it one .md file
// per document, holding a front matter block (title, id, source, tags,
// updated as RFC 3339 UTC with milliseconds, and for a note the chunk it
// annotates) and then the document's chunks concatenated in order (which
// gives back the stored text exactly), with a final line break added when
// it has none. Folder and file names are made from the namespace and the
// key (for a key that is a file path, its base name without .md,
// .markdown or .txt): characters Windows, macOS or Linux refuse
// (< > : " / \ | ? *, control characters) become "_", a leading dot,
// trailing dots and spaces and Windows' reserved device names (CON, NUL,
// COM1, ...) are avoided, names are cut to 100 bytes, and names equal
// regardless of case get -2, -3, ... appended in key order. Files are
// created with mode 0600 and folders 0700. It is not a backup: import
// reads [Provider.Export]'s JSON Lines, not this.
//
// dir is created when missing; an existing dir must be a folder, and
// empty unless opts.Overwrite. Everything is read in one read
// transaction, so the files are one consistent snapshot. It fails when
// the provider is not configured, ctx ends, or a file cannot be written;
// the files written by then stay.
func (p *Provider) ExportMarkdown(ctx context.Context, dir string, opts *MarkdownExportOptions) (MarkdownExportSummary, error) {
	var o MarkdownExportOptions
	if opts != nil {
		o = *opts
	}
	var sum MarkdownExportSummary
	st, err := p.configuredStore()
	if err != nil {
		return sum, err
	}
	if err := prepareExportDir(dir, o.Overwrite); err != nil {
		return sum, fmt.Errorf("memory export: %w", err)
	}
	w := &markdownWriter{dir: dir, overwrite: o.Overwrite, sum: &sum, folders: map[string]bool{}}
	err = readSnapshot(ctx, st, func(tx *snapshot) error {
		filter, args := namespaceFilter("d.namespace", o.Namespaces)
		return eachRow(ctx, tx, "documents", `SELECT d.id, d.namespace, d.key, d.title, d.tags, d.source_id, d.note_chunk_id, d.updated_ms,
			COALESCE(c.content, '') FROM documents d LEFT JOIN chunks c ON c.document_id = d.id
			WHERE `+filter+` ORDER BY d.namespace, d.key, c.seq`, args, func(rows *sql.Rows) error {
			var d markdownDoc
			var content string
			if err := rows.Scan(&d.id, &d.namespace, &d.key, &d.title, &d.tags, &d.source, &d.note, &d.updatedMS, &content); err != nil {
				return fmt.Errorf("read documents: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			return w.add(d, content)
		})
	})
	if cerr := w.closeFile(); err == nil {
		err = cerr
	}
	if err != nil {
		return sum, fmt.Errorf("memory export to %s: %w", dir, err)
	}
	p.logger.Info("exported memory as Markdown", "documents", sum.Documents, "folders", sum.Folders)
	return sum, nil
}

// prepareExportDir creates dir (0700) when missing, and refuses one that
// is not a folder or, unless overwrite, not empty.
func prepareExportDir(dir string, overwrite bool) error {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	if len(names) > 0 && !overwrite {
		return fmt.Errorf("%s is not empty; choose a new or empty folder, or overwrite the files in it", dir)
	}
	return nil
}

// markdownDoc is a document's row as the Markdown export reads it.
type markdownDoc struct {
	id, namespace, key, title, tags, source string
	note                                    *string
	updatedMS                               int64
}

// markdownWriter writes the files of a Markdown export, one document's
// rows after another.
type markdownWriter struct {
	dir       string
	overwrite bool
	sum       *MarkdownExportSummary
	// folders holds the folder names used, lower-cased; namespace is the
	// current namespace, folder its folder and files the file names used
	// in it, lower-cased.
	folders   map[string]bool
	namespace string
	folder    string
	files     map[string]bool
	docID     string
	f         *os.File
	bw        *bufio.Writer
	// last is the last byte of content written to the current file.
	last byte
}

// add writes one row: a chunk's content, starting the document's file
// when it is the document's first.
func (w *markdownWriter) add(d markdownDoc, content string) error {
	if w.f == nil || d.id != w.docID {
		if err := w.closeFile(); err != nil {
			return err
		}
		if err := w.openFile(d); err != nil {
			return err
		}
	}
	if content != "" {
		if _, err := w.bw.WriteString(content); err != nil {
			return fmt.Errorf("write %s: %w", w.f.Name(), err)
		}
		w.last = content[len(content)-1]
	}
	return nil
}

func (w *markdownWriter) openFile(d markdownDoc) error {
	if w.files == nil || d.namespace != w.namespace {
		name := uniqueName(safeName(d.namespace), "", w.folders)
		w.namespace, w.folder, w.files = d.namespace, filepath.Join(w.dir, name), map[string]bool{}
		if err := os.Mkdir(w.folder, 0o700); errors.Is(err, fs.ErrExist) && w.overwrite {
			if info, err := os.Lstat(w.folder); err != nil || !info.IsDir() {
				return fmt.Errorf("%s exists and is not a folder", w.folder)
			}
		} else if err != nil {
			return fmt.Errorf("create %s: %w", w.folder, err)
		} else {
			w.sum.Folders++
		}
	}
	path := filepath.Join(w.folder, uniqueName(safeName(keyBase(d.key)), ".md", w.files))
	if w.overwrite {
		if info, err := os.Lstat(path); err == nil && !info.IsDir() {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("replace %s: %w", path, err)
			}
		}
	}
	// O_EXCL: a file is never written through a link left in the folder.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	w.f, w.bw, w.docID, w.last = f, bufio.NewWriter(f), d.id, '\n'
	var tags []string
	if err := json.Unmarshal([]byte(d.tags), &tags); err != nil || tags == nil {
		tags = []string{}
	}
	fm := "---\ntitle: " + yamlString(d.title) + "\nid: " + yamlString(d.id) + "\nsource: " + yamlString(d.source) +
		"\ntags: " + yamlList(tags) + "\nupdated: " + time.UnixMilli(d.updatedMS).UTC().Format("2006-01-02T15:04:05.000Z07:00") + "\n"
	if d.note != nil {
		fm += "annotates: " + yamlString(*d.note) + "\n"
	}
	if _, err := w.bw.WriteString(fm + "---\n\n"); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	w.sum.Documents++
	return nil
}

// closeFile finishes the current file, if any.
func (w *markdownWriter) closeFile() error {
	if w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	var err error
	if w.last != '\n' {
		err = w.bw.WriteByte('\n')
	}
	if err == nil {
		err = w.bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if info, err := os.Stat(f.Name()); err == nil {
		w.sum.Bytes += info.Size()
	}
	return nil
}

// yamlString quotes s as a YAML double-quoted scalar (JSON's string
// syntax is a subset of it).
func yamlString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// yamlList writes tags as a YAML flow sequence of double-quoted strings.
func yamlList(tags []string) string {
	parts := make([]string, len(tags))
	for i, t := range tags {
		parts[i] = yamlString(t)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// keyBase is the part of a key a file is named after: for a key that is a
// file path (as imports write), its base name without a .md, .markdown or
// .txt extension; else the key.
func keyBase(key string) string {
	if i := strings.LastIndexAny(key, `/\`); i >= 0 {
		key = key[i+1:]
		if ext := filepath.Ext(key); importable(key) && len(ext) < len(key) {
			key = key[:len(key)-len(ext)]
		}
	}
	return key
}

// windowsReserved are the device names Windows refuses as file names, with
// any extension, in any case.
var windowsReserved = map[string]bool{"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true}

func init() {
	for _, d := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³"} {
		windowsReserved["COM"+d] = true
		windowsReserved["LPT"+d] = true
	}
}

// safeName turns s into a file or folder name every common file system
// accepts: characters Windows refuses (< > : " / \ | ? * and control
// characters) become "_", a leading dot becomes "_" (no hidden files), the
// name is cut to maxMarkdownName bytes at a character boundary, trailing
// dots and spaces are dropped (Windows drops them itself), an empty name
// becomes "untitled" and a Windows device name (CON, nul.txt, COM1, ...)
// gets a leading "_".
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || strings.ContainsRune(`<>:"/\|?*`, r) || r == utf8.RuneError:
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	name := b.String()
	if len(name) > maxMarkdownName {
		cut := maxMarkdownName
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	name = strings.TrimRight(strings.TrimLeft(name, " "), ". ")
	if strings.HasPrefix(name, ".") {
		name = "_" + name[1:]
	}
	if name == "" {
		return "untitled"
	}
	stem, _, _ := strings.Cut(name, ".")
	if windowsReserved[strings.ToUpper(strings.TrimRight(stem, " "))] {
		name = "_" + name
	}
	return name
}

// uniqueName returns name+ext, or name-2+ext, name-3+ext and so on, the
// first not in used regardless of case, and records it in used.
func uniqueName(name, ext string, used map[string]bool) string {
	candidate := name + ext
	for n := 2; used[strings.ToLower(candidate)]; n++ {
		candidate = name + "-" + strconv.Itoa(n) + ext
	}
	used[strings.ToLower(candidate)] = true
	return candidate
}
