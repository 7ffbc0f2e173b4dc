package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/sdk"
)

// historyArgs are memory_history's arguments. Offset is filled in with
// its default, 0, when the call leaves it out; Version and MaxTokens are
// 0 when the call gives none.
type historyArgs struct {
	DocumentID string `json:"document_id" jsonschema:"The document's id, e.g. mcp/mcp-store-trip-plan." schema:"minLength=1,maxLength=4096"`
	Version    int    `json:"version,omitzero" jsonschema:"A version number from the list; returns that version's text." schema:"minimum=1"`
	Offset     int    `json:"offset,omitzero" jsonschema:"With version: where to start reading its text, in bytes (next_offset of the previous call)." schema:"minimum=0,maximum=1000000,default=0"`
	MaxTokens  int    `json:"max_tokens,omitzero" jsonschema:"Upper bound on the size of the result, in tokens (estimated at 4 bytes each): a version's text is cut to fit (default 8000) and next_offset says where to go on." schema:"minimum=100,maximum=1000000"`
}

// maxVersion is the largest version number memory_history reads.
const maxVersion = 1<<31 - 1

// versionView is one kept version; Content is set only when one version
// was asked for.
type versionView struct {
	Version       int    `json:"version" gorm:"column:version" schema:"minimum=1"`
	Title         string `json:"title" gorm:"column:title" jsonschema:"The document's title in that version."`
	Bytes         int64  `json:"bytes" gorm:"column:bytes" jsonschema:"Size of that version's content, bytes of UTF-8." schema:"minimum=0"`
	ContentSHA256 string `json:"content_sha256" gorm:"column:content_sha256"`
	UpdatedMS     int64  `json:"updated_ms" gorm:"column:updated_ms" jsonschema:"When that version was written, Unix milliseconds."`
	ReplacedMS    int64  `json:"replaced_ms" gorm:"column:replaced_ms" jsonschema:"When it was replaced, Unix milliseconds."`
	Content       string `json:"content,omitempty" gorm:"column:content" jsonschema:"Only when version was given: the full text."`
}

// historyResult is memory_history's structured content.
type historyResult struct {
	DocumentID string        `json:"document_id"`
	Versions   []versionView `json:"versions"`
	// NextOffset, when one version's text did not fit max_tokens, is the
	// offset to read the rest from.
	NextOffset *int `json:"next_offset,omitempty" jsonschema:"Present when the version's text was cut: pass it as offset to read on." schema:"minimum=1"`
}

// versions returns document id's kept versions, newest first, with the
// content of version only (all without content when version is 0). It
// reports false when the caller's scope holds no document with that id.
func (s *store) versions(ctx context.Context, sc scope, id string, version int) ([]versionView, bool, error) {
	db := s.db.WithContext(ctx)
	cond, vars := sc.cond("namespace")
	q := `SELECT COUNT(*) FROM documents WHERE id = ?`
	if cond != "" {
		q += " AND " + cond
	}
	var n int64
	if err := db.Raw(q, append([]any{id}, vars...)...).Scan(&n).Error; err != nil {
		return nil, false, fmt.Errorf("look up document: %w", err)
	}
	if n == 0 {
		return nil, false, nil
	}
	content := "'' AS content"
	where := "document_id = ?"
	args := []any{id}
	if version > 0 {
		content, where, args = "content", where+" AND version = ?", append(args, version)
	}
	rows := []versionView{}
	err := db.Raw(`SELECT version, title, `+byteLength(db, "content")+` AS bytes, content_sha256, updated_ms, replaced_ms, `+content+`
		FROM document_versions WHERE `+where+` ORDER BY version DESC`, args...).Scan(&rows).Error
	if err != nil {
		return nil, false, fmt.Errorf("read versions: %w", err)
	}
	return rows, true, nil
}

func runHistory(ctx context.Context, p *Provider, st *store, args historyArgs) (*sdk.CallToolResult, historyResult, error) {
	id, version, offset, budget := strings.TrimSpace(args.DocumentID), args.Version, args.Offset, args.MaxTokens
	if version > maxVersion {
		return nil, historyResult{}, argErrorf("argument \"version\" must be an integer from 1 to %d, got %d", maxVersion, version)
	}
	if budget == 0 {
		budget = defaultVersionTokens
	}
	if version == 0 && offset > 0 {
		return nil, historyResult{}, argErrorf("argument \"offset\" reads a version's text: give version too")
	}
	rows, ok, err := st.versions(ctx, scopeOf(ctx), id, version)
	if err != nil {
		return nil, historyResult{}, err
	}
	if !ok {
		return nil, historyResult{}, argErrorf("no document has id %s; get document ids from memory_store, memory_search or tree_browse", quoteShort(id))
	}
	if version > 0 && len(rows) == 0 {
		return nil, historyResult{}, argErrorf("document %s has no version %d; call memory_history without version to list the kept ones", quoteShort(id), version)
	}
	res := historyResult{DocumentID: id, Versions: rows}
	var b strings.Builder
	switch {
	case version > 0:
		v := &rows[0]
		if offset > len(v.Content) {
			return nil, historyResult{}, argErrorf("offset %d is past the end of version %d (%d bytes)", offset, version, len(v.Content))
		}
		for offset > 0 && offset < len(v.Content) && !utf8.RuneStart(v.Content[offset]) {
			offset-- // a character boundary
		}
		// The text appears twice, in the text block and the structured
		// content: each gets half the budget.
		part := cutUTF8(v.Content[offset:], budget*bytesPerToken/2)
		if end := offset + len(part); end < len(v.Content) {
			res.NextOffset = &end
		}
		v.Content = part
		fmt.Fprintf(&b, "Version %d of %s (title %s, replaced at %d ms), bytes %d to %d of %d:\n%s", v.Version, id, quoteShort(v.Title),
			v.ReplacedMS, offset, offset+len(part), v.Bytes, part)
		if res.NextOffset != nil {
			fmt.Fprintf(&b, "\n[cut to fit max_tokens %d: call again with offset %d for the rest]", budget, *res.NextOffset)
		}
	case len(rows) == 0:
		fmt.Fprintf(&b, "%s has no previous versions: it was never replaced, or they were older than the %d days memory keeps them.", id, int(p.keepVersions.Hours()/24))
	default:
		fmt.Fprintf(&b, "%s has %s, newest first:", id, plural(len(rows), "previous version"))
		for _, v := range rows {
			fmt.Fprintf(&b, "\n- version %d: title %s, %d bytes, replaced at %d ms", v.Version, quoteShort(v.Title), v.Bytes, v.ReplacedMS)
		}
	}
	return sdk.TextResult(b.String()), res, nil
}

// historyTool is memory_history's catalog entry; its schemas come from
// historyArgs and historyResult.
var historyTool = sdk.Tool{
	Name:  ToolHistory,
	Title: "Previous versions of a memory document",
	Description: "List the previous versions of a document that memory_store or memory_note replaced, newest " +
		"first, or read one in full by its version number. Replaced text is kept for the number of days the " +
		"operator configured (30 by default); memory_forget removes a document's versions with it.",
	Annotations: readAnnotations("Previous versions of a memory document"),
	Class:       sdk.ClassRead,
}
