-- What the role replicas connect as (openhuman_app) may do in the
-- openhuman database, and nothing more: read and write the rows of the
-- audit log, the act budget's advisory lock, the used single-use states,
-- the shared key and the memory provider's tables; no DDL. Run it as the role that owns the tables
-- (openhuman_owner, which ran `openhuman-host migrate`), after every
-- migration: GRANT is idempotent, and a newer version's tables need their
-- grants. docs/deploy.md has the whole set-up; test/replicas runs the
-- replicas with exactly these grants.

GRANT USAGE ON SCHEMA public TO openhuman_app;
-- Rows of calls (INSERT), their outcomes (UPDATE), the budget's count
-- (SELECT) and [audit] retain_days pruning (DELETE).
GRANT SELECT, INSERT, UPDATE, DELETE ON mcp_audit TO openhuman_app;
-- Used single-use requestStates, pruned once expired.
GRANT SELECT, INSERT, DELETE ON mcp_spent_states TO openhuman_app;
-- The key that seals requestStates: the first replica stores it.
GRANT SELECT, INSERT ON mcp_shared_keys TO openhuman_app;
-- Replicas check the schema version when they start; only migrate changes it.
GRANT SELECT ON audit_migrations TO openhuman_app;
-- The memory provider: documents, their chunks and what hangs off them.
-- Its triggers keep the full-text vectors and memory_state in step with
-- the rows, under the rights of whoever writes them.
GRANT SELECT, INSERT, UPDATE, DELETE ON sources, documents, chunks, chunk_tags, entities, chunk_entities,
	chunk_embeddings, document_versions, memory_state TO openhuman_app;
GRANT SELECT ON memory_migrations TO openhuman_app;
