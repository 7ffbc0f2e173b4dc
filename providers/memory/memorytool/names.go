// Package memorytool names the memory provider's tools, as clients see them. It
// holds only constants, so that tests and tools outside the provider can
// name its tools without importing the provider itself; the provider's
// own Tool* constants are these.
package memorytool

// Tool names served by the memory provider, as clients see them.
const (
	// Store saves a titled document into memory.
	Store = "memory_store"
	// Search runs a full-text search over stored chunks.
	Search = "memory_search"
	// ReadChunk returns one chunk in full.
	ReadChunk = "tree_read_chunk"
	// Recall finds chunks that answer a question: by meaning when an
	// embedder is configured, else by any of its words.
	Recall = "memory_recall"
	// Note attaches a note to a chunk.
	Note = "memory_note"
	// Tag replaces a chunk's tag set.
	Tag = "tree_tag"
	// Browse lists chunks newest first under filters.
	Browse = "tree_browse"
	// TopEntities ranks the entities found in memory.
	TopEntities = "tree_top_entities"
	// ListSources lists where memory came from.
	ListSources = "tree_list_sources"
	// Forget deletes chunks, documents, sources or namespaces from
	// memory.
	Forget = "memory_forget"
	// History lists and reads the previous versions of a document.
	History = "memory_history"
)
