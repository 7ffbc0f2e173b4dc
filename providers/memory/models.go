package memory

// Source kinds, the values sources.kind allows.
const (
	// SourceKindChat is a conversation.
	SourceKindChat = "chat"
	// SourceKindEmail is a mailbox or thread.
	SourceKindEmail = "email"
	// SourceKindDocument is a file or document collection, such as what
	// "openhuman-host memory import" loads.
	SourceKindDocument = "document"
	// SourceKindNote is what memory_store and memory_note write.
	SourceKindNote = "note"
)

// sourceKinds lists the source kinds in the order errors name them.
var sourceKinds = []string{SourceKindChat, SourceKindEmail, SourceKindDocument, SourceKindNote}

// sourceRow is a row of sources: where documents come from, such as
// mcp:<namespace> for memory_store or file:<directory> for an import.
type sourceRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	Kind        string `gorm:"column:kind"`
	DisplayName string `gorm:"column:display_name"`
	CreatedMS   int64  `gorm:"column:created_ms"`
	UpdatedMS   int64  `gorm:"column:updated_ms"`
}

// TableName maps sourceRow to its table.
func (sourceRow) TableName() string { return "sources" }

// documentRow is a row of documents. Tags is a JSON array of strings;
// NoteChunkID is set on the documents memory_note writes.
type documentRow struct {
	ID            string  `gorm:"column:id;primaryKey"`
	SourceID      string  `gorm:"column:source_id"`
	Namespace     string  `gorm:"column:namespace"`
	Key           string  `gorm:"column:key"`
	Title         string  `gorm:"column:title"`
	Tags          string  `gorm:"column:tags"`
	NoteChunkID   *string `gorm:"column:note_chunk_id"`
	ContentSHA256 string  `gorm:"column:content_sha256"`
	CreatedMS     int64   `gorm:"column:created_ms"`
	UpdatedMS     int64   `gorm:"column:updated_ms"`
}

// TableName maps documentRow to its table.
func (documentRow) TableName() string { return "documents" }

// chunkRow is a row of chunks. PK, assigned by SQLite on insert, is also
// the chunk's rowid in chunks_fts and the key of its entities and
// embedding.
type chunkRow struct {
	PK         int64  `gorm:"column:pk;primaryKey;autoIncrement"`
	ID         string `gorm:"column:id"`
	DocumentID string `gorm:"column:document_id"`
	Seq        int    `gorm:"column:seq"`
	Content    string `gorm:"column:content"`
	CreatedMS  int64  `gorm:"column:created_ms"`
	UpdatedMS  int64  `gorm:"column:updated_ms"`
}

// TableName maps chunkRow to its table.
func (chunkRow) TableName() string { return "chunks" }
