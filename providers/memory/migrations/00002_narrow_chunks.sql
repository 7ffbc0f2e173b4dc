-- Chunk rows hold their text and vector out of line, in the chunks
-- table's TOAST table, whenever a row is large enough to be TOASTed at
-- all (about 2 KB): a chunk's row in the table itself is then about a
-- hundred bytes instead of 1.5 KB of text beside a pointer to its vector.
--
-- The ranking reads a word's chunks as a bitmap scan of the GIN index,
-- which visits the table's pages that hold them to read their pks and
-- lengths. With the text inline, a word in most chunks visits most of the
-- table (133 MB at 100k chunks, more than PostgreSQL's default
-- shared_buffers); with narrow rows it visits a few MB (20 MB at 100k
-- chunks), which stay cached. Reading a chunk's text costs one more TOAST
-- fetch, which only the few chunks a call returns pay.
--
-- Rows written before this migration keep their layout until they are
-- rewritten; VACUUM FULL chunks rewrites them all at once.

-- +goose Up
ALTER TABLE chunks SET (toast_tuple_target = 128);

-- +goose Down
ALTER TABLE chunks RESET (toast_tuple_target);
