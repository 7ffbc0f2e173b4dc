-- The caller's profile ([profiles.<name>]), which its own act budget
-- counts by.

-- +goose Up
ALTER TABLE mcp_audit ADD COLUMN profile TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE mcp_audit DROP COLUMN profile;
