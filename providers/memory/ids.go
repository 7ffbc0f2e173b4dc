package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"sync"

	"github.com/openhuman/openhuman-host/sdk"
)

const (
	// storeKeyPrefix starts the upsert key of documents written by
	// memory_store.
	storeKeyPrefix = "mcp-store-"
	// maxSlugLen bounds the slug part of a key, in bytes (slugs are ASCII).
	maxSlugLen = 64
	// noteKeyPrefix starts the key of the note memory_note writes about a
	// chunk: mcp-note-<chunk id>.
	noteKeyPrefix = "mcp-note-"
	// chunkIDPrefix starts every chunk id.
	chunkIDPrefix = "chk_"
)

// contentHash is the hex SHA-256 of a document's whole content.
func contentHash(content string) string {
	h := sha256.New()
	hashString(h, content)
	return hex.EncodeToString(h.Sum(nil))
}

// hashBuffers lend hashString its buffer.
var hashBuffers = sync.Pool{New: func() any { return new([4096]byte) }}

// hashString writes s to h through a pooled buffer: converting a chunk or
// a whole file to a []byte would copy all of it to a new allocation.
func hashString(h hash.Hash, s string) {
	buf := hashBuffers.Get().(*[4096]byte)
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	hashBuffers.Put(buf)
}

// slug turns a title into lower-case ASCII letters and digits with every
// other run of characters replaced by one "-", trimmed of dashes and cut to
// maxSlugLen bytes; a title with no ASCII letter or digit becomes
// "untitled".
func slug(title string) string {
	s := sdk.NamePart(title, maxSlugLen)
	if s == "" {
		return "untitled"
	}
	return s
}

// storeKey is the upsert key memory_store uses for a title.
func storeKey(title string) string {
	return storeKeyPrefix + slug(title)
}

// disambiguatedKey is the key used when key already belongs to a document
// with a different title: the first 8 hex digits of SHA-256(title) are
// appended, so titles that slug alike never overwrite each other.
func disambiguatedKey(key, title string) string {
	return disambiguatedKeyN(key, title, 4)
}

// disambiguatedKeyN appends the first 2n hex digits of SHA-256(title) to
// key; n is at most 32. Longer suffixes are the fallback when a shorter
// one is taken too (a title crafted to collide).
func disambiguatedKeyN(key, title string, n int) string {
	sum := sha256.Sum256([]byte(title))
	return key + "-" + hex.EncodeToString(sum[:n])
}

// sourceIDForNamespace is the source that memory_store writes into:
// "mcp:<namespace>", where the memory came from. It is not the caller's
// sdk.Caller.SourceType ("mcp:<client>", who called), though both start
// with "mcp:".
func sourceIDForNamespace(namespace string) string {
	return "mcp:" + namespace
}

// documentID is a document's id: namespace and key are unique together.
func documentID(namespace, key string) string {
	return namespace + "/" + key
}

// chunkID is a stable content hash: the same text at the same position of
// the same document always has the same id.
func chunkID(documentID string, seq int, content string) string {
	h := sha256.New()
	hashString(h, documentID)
	h.Write([]byte{0})
	hashString(h, strconv.Itoa(seq))
	h.Write([]byte{0})
	hashString(h, content)
	var sum [sha256.Size]byte
	return chunkIDPrefix + hex.EncodeToString(h.Sum(sum[:0])[:12])
}
