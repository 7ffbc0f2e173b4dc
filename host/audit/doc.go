// Package audit keeps the host's audit log: one row in the table mcp_audit (SQLite, or PostgreSQL shared by
// replicas) for every attempt to call a tool, allowed or denied.
//
// [Open] opens (and migrates) the database and starts one background writer. The rule that keeps the log
// complete without ever hanging a call:
//
//   - An act is written before it runs: [Log.Begin] commits a pending row (and applies the hourly act
//     budget shared by every process on the database) and the act is dispatched only when it succeeds;
//     when the row cannot be written (a full disk, a damaged database) the act is refused with an error
//     that names the audit failure. [Log.Complete] then queues the outcome. A host killed during a call
//     leaves a pending row, never no row.
//   - Everything else (denied attempts, reads, outcomes) is queued by [Log.Record] and [Log.Complete] on a
//     bounded queue that never blocks: when it is full, the row is dropped, counted in [Log.Status] and
//     logged. The writer commits the queue in batches, one transaction per batch, and retries a failed
//     batch with backoff, so it recovers by itself when the disk does.
//
// [Log.Flush] waits for the rows recorded before it, and [Log.Close] flushes and closes; rows are
// discarded only when the database stays unusable at Close, and Close says how many. With
// [Options.Repair] a damaged database is moved aside at Open and a fresh one started.
//
// [Log.List] and [Log.Stats] answer the `audit list` and `audit stats` commands. [SummarizeArgs],
// [TruncateError] and [SessionHash] turn call data into what may be stored: identifiers, sizes and counts,
// never bodies or raw session ids.
package audit
