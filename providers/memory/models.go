package memory

// sourceKindNote is the kind of sources that memory.store writes into;
// sources.kind also allows chat, email and document.
const sourceKindNote = "note"

// sourceRow is a row of sources: where documents come from, such as
// mcp:<namespace> for memory.store.
type sourceRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	Kind        string `gorm:"column:kind"`
	DisplayName string `gorm:"column:display_name"`
	CreatedMS   int64  `gorm:"column:created_ms"`
	UpdatedMS   int64  `gorm:"column:updated_ms"`
}

// TableName maps sourceRow to its table.
func (sourceRow) TableName() string { return "sources" }

// documentRow is a row of documents. Tags is a JSON array of strings.
type documentRow struct {
	ID        string `gorm:"column:id;primaryKey"`
	SourceID  string `gorm:"column:source_id"`
	Namespace string `gorm:"column:namespace"`
	Key       string `gorm:"column:key"`
	Title     string `gorm:"column:title"`
	Tags      string `gorm:"column:tags"`
	CreatedMS int64  `gorm:"column:created_ms"`
	UpdatedMS int64  `gorm:"column:updated_ms"`
}

// TableName maps documentRow to its table.
func (documentRow) TableName() string { return "documents" }

// chunkRow is a row of chunks. The table's integer pk, which is also the
// chunk's rowid in chunks_fts, is assigned by SQLite and not mapped.
type chunkRow struct {
	ID         string `gorm:"column:id;primaryKey"`
	DocumentID string `gorm:"column:document_id"`
	Seq        int    `gorm:"column:seq"`
	Content    string `gorm:"column:content"`
	CreatedMS  int64  `gorm:"column:created_ms"`
	UpdatedMS  int64  `gorm:"column:updated_ms"`
}

// TableName maps chunkRow to its table.
func (chunkRow) TableName() string { return "chunks" }
