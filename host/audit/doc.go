// Package audit keeps the host's audit log (DESIGN §11): one row in the SQLite table mcp_audit for every
// attempt to call a tool, allowed or denied, written off the hot path and never dropped.
//
// [Open] opens (and migrates) the database and starts one background writer. [Log.Record] enqueues a row on
// a bounded queue and blocks when the queue is full, so a slow disk slows callers down instead of losing
// rows; the writer commits whatever is queued in batches, one transaction per batch, and retries a failed
// batch until it succeeds. [Log.Flush] waits for the rows recorded before it, and [Log.Close] flushes and
// closes; rows are discarded only when the database stays unusable at Close, and Close says how many.
//
// [Log.List] and [Log.Stats] answer the `audit list` and `audit stats` commands. [SummarizeArgs],
// [TruncateError] and [SessionHash] turn call data into what may be stored: identifiers, sizes and counts,
// never bodies or raw session ids.
package audit
