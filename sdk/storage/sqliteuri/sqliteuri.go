// Package sqliteuri builds SQLite URI filenames ("file:" URIs, as
// github.com/mattn/go-sqlite3 and SQLite itself open them) from file
// paths, so that any character in a path is escaped rather than read as a
// parameter, and so that Windows paths with a drive letter open the file
// they name.
package sqliteuri

import (
	"net/url"
	"path/filepath"
)

// File returns the "file:" URI for the database at path with the query
// params (already encoded, without the "?"; may be empty). An absolute
// path is written with an empty authority, "file:///home/u/a.db" or, for
// a Windows path with a drive letter, "file:///C:/Users/u/a.db", the form
// SQLite documents for Windows; a relative path stays relative.
// See https://sqlite.org/uri.html.
func File(path, params string) string {
	return fromSlash(filepath.ToSlash(path), params)
}

func fromSlash(p, params string) string {
	if hasDrive(p) {
		p = "/" + p
	}
	uri := "file:"
	if len(p) > 0 && p[0] == '/' {
		uri += "//"
	}
	uri += (&url.URL{Path: p}).EscapedPath()
	if params != "" {
		uri += "?" + params
	}
	return uri
}

// hasDrive reports whether p starts with a Windows drive: a letter, a
// colon and a slash.
func hasDrive(p string) bool {
	return len(p) >= 3 && p[1] == ':' && p[2] == '/' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}
