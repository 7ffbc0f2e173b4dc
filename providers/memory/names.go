package memory

// Tool names served by the memory provider, as clients see them.
const (
	// ToolStore saves a titled document into memory.
	ToolStore = "memory_store"
	// ToolSearch runs a full-text search over stored chunks.
	ToolSearch = "memory_search"
	// ToolReadChunk returns one chunk in full.
	ToolReadChunk = "tree_read_chunk"
	// ToolRecall finds chunks that answer a question: by meaning when an
	// embedder is configured, else by any of its words.
	ToolRecall = "memory_recall"
	// ToolNote attaches a note to a chunk.
	ToolNote = "memory_note"
	// ToolTag replaces a chunk's tag set.
	ToolTag = "tree_tag"
	// ToolBrowse lists chunks newest first under filters.
	ToolBrowse = "tree_browse"
	// ToolTopEntities ranks the entities found in memory.
	ToolTopEntities = "tree_top_entities"
	// ToolListSources lists where memory came from.
	ToolListSources = "tree_list_sources"
	// ToolForget deletes chunks, documents, sources or namespaces from
	// memory.
	ToolForget = "memory_forget"
	// ToolHistory lists and reads the previous versions of a document.
	ToolHistory = "memory_history"
)
