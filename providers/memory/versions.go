package memory

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

const (
	// defaultKeepVersionsDays is how long a replaced document keeps its
	// previous text when keep_versions_days is not set.
	defaultKeepVersionsDays = 30
	// maxKeepVersionsDays bounds keep_versions_days (ten years).
	maxKeepVersionsDays = 3650
)

// pendingReplacement is a replacement being written, with what the
// document had before.
type pendingReplacement struct {
	replacement
	previousChunks int
}

// keepPrevious measures how doc changes existing inside tx and, when doc
// asks for it and the title or content changes, keeps existing's text as
// its next version in document_versions. Versions replaced longer ago than
// the store keeps them are deleted.
func (s *store) keepPrevious(tx *gorm.DB, existing *documentRow, doc document, nowMS int64) (*pendingReplacement, error) {
	rep := &pendingReplacement{}
	rep.TitleChanged = existing.Title != doc.Title
	for _, p := range doc.Pieces {
		rep.Bytes += int64(len(p))
	}
	changed := rep.TitleChanged || existing.ContentSHA256 != doc.ContentSHA256
	if !doc.KeepVersion || s.keepVersions <= 0 || !changed {
		var m struct {
			N     int   `gorm:"column:n"`
			Bytes int64 `gorm:"column:bytes"`
		}
		err := tx.Raw(`SELECT COUNT(*) AS n, COALESCE(SUM(`+byteLength(tx, "content")+`), 0) AS bytes
			FROM chunks WHERE document_id = ?`, existing.ID).Scan(&m).Error
		if err != nil {
			return nil, fmt.Errorf("measure document %s: %w", existing.ID, err)
		}
		rep.previousChunks, rep.PreviousBytes = m.N, m.Bytes
		return rep, s.pruneVersions(tx, nowMS)
	}
	var pieces []string
	if err := tx.Raw(`SELECT content FROM chunks WHERE document_id = ? ORDER BY seq`, existing.ID).Scan(&pieces).Error; err != nil {
		return nil, fmt.Errorf("read document %s: %w", existing.ID, err)
	}
	content := strings.Join(pieces, "")
	rep.previousChunks, rep.PreviousBytes = len(pieces), int64(len(content))
	var last int
	if err := tx.Raw(`SELECT COALESCE(MAX(version), 0) FROM document_versions WHERE document_id = ?`, existing.ID).Scan(&last).Error; err != nil {
		return nil, fmt.Errorf("read versions of %s: %w", existing.ID, err)
	}
	rep.Version = last + 1
	err := tx.Exec(`INSERT INTO document_versions (document_id, version, title, tags, content, content_sha256, updated_ms, replaced_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		existing.ID, rep.Version, existing.Title, existing.Tags, content, existing.ContentSHA256, existing.UpdatedMS, nowMS).Error
	if err != nil {
		return nil, fmt.Errorf("keep version %d of %s: %w", rep.Version, existing.ID, err)
	}
	return rep, s.pruneVersions(tx, nowMS)
}

// pruneVersions deletes the versions replaced longer ago than the store
// keeps them.
func (s *store) pruneVersions(tx *gorm.DB, nowMS int64) error {
	cutoff := nowMS - s.keepVersions.Milliseconds()
	if err := tx.Exec(`DELETE FROM document_versions WHERE replaced_ms < ?`, cutoff).Error; err != nil {
		return fmt.Errorf("delete expired versions: %w", err)
	}
	return nil
}
