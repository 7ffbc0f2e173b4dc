-- Keys every replica shares, such as the one that seals multi-round-trip
-- requestStates.

-- +goose Up
CREATE TABLE mcp_shared_keys (
	name VARCHAR(64) PRIMARY KEY,
	key  BYTEA NOT NULL
);

-- +goose Down
DROP TABLE mcp_shared_keys;
